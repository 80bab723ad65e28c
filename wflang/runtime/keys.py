"""Every key and id the runtime derives, each formatted (and, where read back, parsed)
here only: the step function, the engine, the stores and the client all call these.

- a task's or call's idempotency key, ``INSTANCE:NODE:VISIT:TOKEN:ATTEMPT``;
- a timer's id, ``TASK_KEY:PURPOSE``, and its purpose (``sleep``, ``until``,
  ``retry``, ``after`` (an arm of a ``first``) or ``boundary:K``);
- a child instance's id, ``ROOT/HASH`` (``ids.child_id``, with the instance seeds);
- the inbox keys that make a delivery unique (``Delivery``): ``signal:NAME:KEY``,
  ``message:NAME:KEY``, ``msg:PUBLICATION``, ``timer:TIMER_ID``, ``task:TASK_KEY``,
  ``child:CALL_KEY``, ``cancel:parent``; and in a store's history, the key of the
  event a step took (``inbox:ROW`` for one taken from an inbox row), read back by
  ``parse_delivery``.

Node names are identifiers (no ``:``) and the numbers are decimal, so a key parses
from the right whatever the instance id holds.
"""

from __future__ import annotations

import enum

from attrs import frozen

from wflang.runtime.ids import child_id
from wflang.runtime.waiting import Wait

__all__ = [
    "AFTER",
    "END_OF_SCOPE",
    "PARENT_CANCEL_DELIVERY",
    "RETRY",
    "SLEEP",
    "UNTIL",
    "Delivery",
    "TaskKey",
    "boundary",
    "boundary_index",
    "child_delivery",
    "child_id",
    "delivery_key",
    "inbox_row_delivery",
    "key_token",
    "parse_delivery",
    "parse_task_key",
    "publication_delivery",
    "task_delivery",
    "task_key",
    "timer_delivery",
    "timer_id",
]

#: The node name in the keys of a token that left its scope (it has no node).
END_OF_SCOPE = "(end of scope)"


@frozen
class TaskKey:
    """The parts of a task's or call's idempotency key."""

    instance: str
    node: str
    visit: int
    token: int
    attempt: int


#: What follows the instance's id in a task key: a store finds an instance's tasks as
#: the keys from its id and this up to its id and the next character (``store.status``).
INSTANCE_END = ":"


def task_key(instance: str, node: str, visit: int, token: int, attempt: int) -> str:
    """The idempotency key of the task or call a token starts at a node: it names the
    instance, the node, the step its visit began, the token and the attempt, so an
    answer for an earlier attempt or visit, or for a cancelled task, is recognised."""
    return f"{instance}{INSTANCE_END}{node}:{visit}:{token}:{attempt}"


def key_token(key: str) -> int | None:
    """The token a task key names (what a step looks up first); None if malformed."""
    try:
        return int(key.rsplit(":", 2)[-2])
    except (IndexError, ValueError):
        return None


def parse_task_key(key: str) -> TaskKey | None:
    """The parts of a key made by ``task_key``; None for anything else."""
    parts = key.rsplit(":", 4)
    if len(parts) != 5:
        return None
    instance, node, visit, token, attempt = parts
    try:
        return TaskKey(instance, node, int(visit), int(token), int(attempt))
    except ValueError:
        return None


# ------------------------------------------------------------------ timers

SLEEP, UNTIL, RETRY = "sleep", "until", "retry"
#: The timer of a ``first``'s ``after`` arm (on the arm's own token).
AFTER = "after"
#: An async task's heartbeat timeout: set when its call is scheduled, again at each
#: heartbeat (``TaskHeartbeat``); firing, it times the task out.
HEARTBEAT = "heartbeat"
_BOUNDARY = "boundary:"


def boundary(k: int, firing: int = 1) -> str:
    """The purpose of a node's ``k``-th boundary timer (``timeout`` and ``every`` in their
    source order); a repeating one's later firings are ``boundary:K:N`` (the N-th), so
    that each firing has an id, and an inbox key, of its own."""
    return f"{_BOUNDARY}{k}" if firing == 1 else f"{_BOUNDARY}{k}:{firing}"


def boundary_index(purpose: str) -> int | None:
    """``k`` of a boundary timer's purpose; None for any other purpose."""
    found = _boundary(purpose)
    return None if found is None else found[0]


def boundary_firing(purpose: str) -> int:
    """Which firing of its timer a boundary timer's purpose is (1 for the first)."""
    found = _boundary(purpose)
    return 1 if found is None else found[1]


def _boundary(purpose: str) -> tuple[int, int] | None:
    if not purpose.startswith(_BOUNDARY):
        return None
    k, _, firing = purpose[len(_BOUNDARY) :].partition(":")
    try:
        return int(k), int(firing or "1")
    except ValueError:
        return None


def timer_id(task_key: str, purpose: str) -> str:
    """A timer's id: the key its token has at its node (see ``task_key``), and why."""
    return f"{task_key}:{purpose}"


# ------------------------------------------------------------------ inboxes


class Delivery(enum.StrEnum):
    """What brought an event to an instance: the prefix of its inbox key (before the
    first ``:``), and of the key a store's history records for the step that took it."""

    SIGNAL = Wait.SIGNAL.value  # ``signal:NAME:KEY``, a signal sent with a key
    MESSAGE = Wait.MESSAGE.value  # ``message:NAME:KEY``, a message sent or published with a key
    PUBLICATION = "msg"  # ``msg:ID``, a message published without a key
    TIMER = "timer"  # ``timer:TIMER_ID``, a timer's firing
    TASK = "task"  # ``task:TASK_KEY``, a task's outcome (a result, an operator's, a loss)
    CHILD = "child"  # ``child:CALL_KEY``, a called workflow's outcome
    CANCEL = "cancel"  # ``cancel:parent``, the parent's cancel of its child
    INBOX = "inbox"  # ``inbox:ROW``, in the history only: the inbox row a step took


def delivery_key(kind: str, name: str, key: str) -> str:
    """What makes a signal or a message with a ``key`` one delivery to an instance:
    ``signal:NAME:KEY`` or ``message:NAME:KEY`` (``kind`` is the event's, a
    ``Delivery.SIGNAL`` or ``Delivery.MESSAGE``). A key is unique per kind and name, so
    the keys of a signal and of a message (or of two signals) never collide; the step,
    the stores' inboxes and the engine all use this one form."""
    return f"{kind}:{name}:{key}"


def timer_delivery(timer: str) -> str:
    """The inbox key of a timer's firing: it fires once, however often it is asked to."""
    return f"{Delivery.TIMER}:{timer}"


def publication_delivery(message_id: int) -> str:
    """The inbox key of a message published without a key: its publication's own."""
    return f"{Delivery.PUBLICATION}:{message_id}"


def task_delivery(key: str) -> str:
    """The inbox key of a task's outcome (a human task's answer, an interrupted call) and
    the history's key of a step that took a task's result: a task ends once."""
    return f"{Delivery.TASK}:{key}"


def child_delivery(call_key: str) -> str:
    """The inbox key of a called workflow's outcome, by the call's key: told once."""
    return f"{Delivery.CHILD}:{call_key}"


#: The inbox key of a parent's cancel of its child: a child is cancelled once.
PARENT_CANCEL_DELIVERY = f"{Delivery.CANCEL}:parent"


def inbox_row_delivery(row_id: int) -> str:
    """The history's key of a step that took the event of inbox row ``row_id``."""
    return f"{Delivery.INBOX}:{row_id}"


def parse_delivery(key: str) -> tuple[Delivery, str] | None:
    """The kind of a key made above and what follows its first ``:`` (for a signal or
    message ``NAME:KEY``); None for any other text."""
    kind, colon, rest = key.partition(":")
    if not colon:
        return None
    try:
        return Delivery(kind), rest
    except ValueError:
        return None
