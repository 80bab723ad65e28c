"""What a token waits for: a kind, and for a signal or a message its name (and the
message's correlation text).

A token keeps it as text (``Token.waiting``, a plain ``str``), the form the stores
persist: ``task``, ``signal:NAME``, ``message:NAME:CORRELATION``, … ``awaiting``
makes that text and ``parse`` reads it back; nothing else splits it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Protocol

from attrs import frozen


class Wait(enum.StrEnum):
    """The kinds of wait (a kind's text is its stored form, or its prefix)."""

    IDLE = ""  # not in flight: its call failed (dead-lettered), or a retry is being made
    ENTERING = "entering"  # queued to act at its state within this step
    TASK = "task"  # a service task's handler
    HUMAN = "human"  # a user or manual task
    CHILD = "child"  # a called workflow
    TIMER = "timer"  # a sleep, or a wait until an instant
    RETRY = "retry"  # the backoff before its next attempt
    JOIN = "join"  # the branches or items of its parallel or map
    SIGNAL = "signal"  # ``signal:NAME``
    MESSAGE = "message"  # ``message:NAME:CORRELATION``
    FIRST = "first"  # a ``first``: a token of its own per arm waits for the arm's event


#: The kinds that name what they wait for after a colon.
_NAMED = (Wait.SIGNAL, Wait.MESSAGE)
#: The waits for a task's handler or a person, answered by a task's key (as text).
TASKS = (Wait.TASK.value, Wait.HUMAN.value)


@frozen
class Waiting:
    """``Token.waiting`` read back."""

    kind: Wait
    name: str = ""  # the signal or message
    correlation: str | None = None  # a message's correlation text


def awaiting(kind: Wait, name: str = "", correlation: str | None = None) -> str:
    """The stored form of a wait: the kind, then for a signal or message its name and
    for a message its correlation text (which may itself hold ``:``)."""
    if kind not in _NAMED:
        return kind.value
    text = f"{kind.value}:{name}"
    return text if correlation is None else f"{text}:{correlation}"


def parse(text: str) -> Waiting:
    """The wait a token's ``waiting`` text stands for; a ValueError for text that no
    step writes."""
    kind, colon, rest = text.partition(":")
    try:
        wait = Wait(kind)
    except ValueError:
        raise ValueError(f"not a wait: {text!r}") from None
    if wait not in _NAMED:
        if colon:
            raise ValueError(f"not a wait: {text!r}")
        return Waiting(wait)
    name, colon, correlation = rest.partition(":")
    if wait is Wait.SIGNAL or not colon:
        return Waiting(wait, rest)  # (a message wait always has one; a signal's name is all)
    return Waiting(wait, name, correlation)


def takes(waiting: str, kind: str, name: str, correlation: str | None) -> bool:
    """Whether a token waiting for ``waiting`` takes a signal or message of this kind and
    name; ``correlation`` is a published message's text. A message sent to the instance
    itself (no correlation) goes to any wait for its name."""
    want = f"{kind}:{name}"
    if correlation is not None:
        return waiting == f"{want}:{correlation}"
    return waiting == want or (kind == Wait.MESSAGE and waiting.startswith(want + ":"))


def completable(waiting: str, signals: bool = True) -> bool:
    """Whether an operator may complete (or retry) a step whose token waits for
    ``waiting``: a task, a call, a retry's backoff, a dead-lettered step (its call failed,
    or a workflow error stopped it ``entering``), or (``signals``) a signal or message
    wait."""
    return waiting in _COMPLETABLE or (signals and waiting.startswith(_NAMED_PREFIXES))


_COMPLETABLE = frozenset(
    kind.value for kind in (Wait.TASK, Wait.HUMAN, Wait.CHILD, Wait.RETRY, Wait.IDLE, Wait.ENTERING)
)
_NAMED_PREFIXES = tuple(f"{kind.value}:" for kind in _NAMED)


def at_rest(tokens: Iterable[HasWait]) -> bool:
    """Whether an instance with these tokens waits for the world (``Status.WAITING``):
    it has tokens, and each waits for a signal, a message, a timer, a person, a called
    workflow, or the branches or items of its parallel or map. A service task's call or
    its retry's backoff is work under way (running)."""
    rest = False
    for token in tokens:
        waiting = token.waiting
        if waiting not in _AT_REST and not waiting.startswith(_NAMED_PREFIXES):
            return False
        rest = True
    return rest


class HasWait(Protocol):
    @property
    def waiting(self) -> str: ...

    @property
    def catching(self) -> tuple[str, ...]: ...


_AT_REST = frozenset(
    kind.value for kind in (Wait.HUMAN, Wait.CHILD, Wait.TIMER, Wait.JOIN, Wait.FIRST)
)


#: What ``wf list --waiting-on`` calls each kind of wait (a signal or a message is also
#: named: ``signal:NAME``, ``message:NAME``); a join, or a token about to act, is none,
#: and so is a ``first``'s own token: each of its arms' tokens is labelled.
_LABELS = {
    Wait.TASK.value: "task",
    Wait.HUMAN.value: "person",
    Wait.CHILD.value: "child",
    Wait.TIMER.value: "timer",
    Wait.RETRY.value: "retry",
}
#: The labels ``waiting_on`` gives, as ``wf list --waiting-on`` documents them.
LABELS = ("signal:NAME", "message:NAME", "timer", "person", "task", "retry", "child")


def waiting_on(tokens: Iterable[HasWait]) -> tuple[str, ...]:
    """What an instance with these tokens waits on (a boundary signal or message of a
    node it is at included), each once, sorted: ``signal:approval``,
    ``message:paid`` (without its correlation), ``timer``, ``person``, ``task`` (a service
    call), ``retry`` (its backoff), ``child`` (a called workflow)."""
    found: set[str] = set()
    for token in tokens:
        for text in (token.waiting, *token.catching):  # a boundary event's too
            label = _LABELS.get(text)
            if label is not None:
                found.add(label)
            elif text.startswith(_NAMED_PREFIXES):
                kind, _, rest = text.partition(":")
                found.add(f"{kind}:{rest.partition(':')[0] if kind == Wait.MESSAGE else rest}")
    return tuple(sorted(found))


def wait_label(text: str) -> str:
    """A label as ``wf list --waiting-on`` takes it (``human`` for ``person``), or a
    ValueError that says which labels there are."""
    kind, colon, name = text.partition(":")
    kind = "person" if kind == "human" else kind
    if kind in _LABELS.values() and not colon:
        return kind
    if kind in (Wait.SIGNAL, Wait.MESSAGE) and name and ":" not in name:
        return f"{kind}:{name}"
    raise ValueError(f"'{text}' is not something an instance waits on: use {', '.join(LABELS)}")
