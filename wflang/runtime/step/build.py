"""Frozen values made fast: the one module that builds tokens, joins and instances
without their constructors.

A step changes a token two or three times and makes a new instance every time;
calling the attrs constructors for each cost more than the rest of the change (and
a ``Step`` and a ``ScheduleTask`` come with most steps). So a
step works on mutable drafts and on dicts of fields, and makes the frozen value by
handing it a complete dict of its fields (``object.__new__`` and the ``__dict__``).
``tests/test_step_build.py`` checks that every value made here has exactly the
attrs fields of its class, and equals the value its constructor makes.

An instance made on the general path also keeps, beside its fields (not one of them:
not compared, not serialised), its tokens, timers and joins by id (``index_of``), so
that the next general step copies three dicts instead of rebuilding them one value at
a time. The common path needs no index: it finds its token in the tuple
(``position``) and makes the new tuples by slicing, so a step of a wide parallel
costs no copy of a dict of all its tokens.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from typing import Any

from wflang.runtime import instance as rt
from wflang.runtime.instance import NO_TOKEN
from wflang.runtime.ir import Value
from wflang.runtime.keys import task_key
from wflang.runtime.step.values import BEFORE, Step
from wflang.runtime.waiting import Wait

_new = object.__new__
_set_dict = object.__setattr__
_ID = operator.attrgetter("id")
_JOIN_TOKEN = operator.attrgetter("token")
#: Where an instance made here keeps its tokens, timers and joins by id.
_INDEX = "_step_index"
#: Waits as the text a token keeps (``Wait`` members are a ``str`` subclass).
_IDLE, _ENTERING, _TASK = Wait.IDLE.value, Wait.ENTERING.value, Wait.TASK.value


class Draft:
    """A token changed during one step: mutable, and frozen into a ``Token`` by
    ``token_of``. A draft never leaves its step.

    Its ``__dict__`` holds exactly a ``Token``'s fields: a draft of a token is a copy of
    the token's ``__dict__`` (one C call), and ``token_of`` gives the token the
    draft's ``__dict__``, without a copy or a constructor.
    """

    id: int
    state: int
    parent: int
    index: int
    attempt: int
    waiting: str
    side: bool
    compensating: bool
    locals: tuple[tuple[str, Value], ...]
    visit: int
    catching: tuple[str, ...]

    def __init__(self, id: int, state: int, parent: int = NO_TOKEN, index: int = 0,
                 side: bool = False, compensating: bool = False,
                 locals: tuple[tuple[str, Value], ...] = ()) -> None:  # fmt: skip
        """A new token (the defaults of ``Token`` for the rest), in field order."""
        self.id, self.state, self.parent, self.index = id, state, parent, index
        self.attempt, self.waiting, self.side, self.compensating = 1, _IDLE, side, compensating
        self.locals, self.visit, self.catching = locals, 0, ()


#: A token's fields, by name (its ``__dict__``).
TokenFields = dict[str, Any]
#: A token as a step sees it: the instance's, or this step's draft of it.
AnyToken = rt.Token | Draft


def draft_of(token: AnyToken) -> Draft:
    """A draft with the fields of ``token``."""
    draft: Draft = _new(Draft)
    draft.__dict__ = token.__dict__.copy()
    return draft


def token_of(draft: Draft) -> rt.Token:
    """The frozen token of a draft, which must not change afterwards (it shares its dict)."""
    return token_with(draft.__dict__)


def token_with(fields: TokenFields) -> rt.Token:
    """A frozen token with these fields (all of them, owned by the token from now on)."""
    token: rt.Token = _new(rt.Token)
    _set_dict(token, "__dict__", fields)
    return token


def token_fields(
    id: int, state: int, parent: int, index: int, waiting: str, visit: int
) -> TokenFields:
    """The fields of a new token outside a map, not a side path or a compensation."""
    return {
        "id": id, "state": state, "parent": parent, "index": index, "attempt": 1,
        "waiting": waiting, "side": False, "compensating": False, "locals": (), "visit": visit,
        "catching": (),
    }  # fmt: skip


def entered(fields: TokenFields, state: int, visit: int) -> None:
    """A token's fields as it enters ``state`` at step ``visit``: its first attempt
    there, about to act (``Run.enter``, and the common path's arrivals)."""
    fields["state"], fields["attempt"], fields["waiting"], fields["visit"] = (
        state, 1, _ENTERING, visit
    )  # fmt: skip


def counted(join: rt.Join, ok: bool, index: int, output: dict[str, Value], keeps: bool,
            collected: tuple[Value, ...] = ()) -> rt.Join:  # fmt: skip
    """``join`` once a branch or item (``index``) ended, ``ok`` or not; ``keeps``: a
    map's join keeps each completed item's output (and what its ``collect``s gave)."""
    fields = join.__dict__.copy()
    if ok:
        fields["completed"] += 1
        if keeps:
            fields["results"] = (*join.results, (index, output))
        if collected:
            fields["collected"] = (*join.collected, (index, collected))
    else:
        fields["failed"] += 1
    new: rt.Join = _new(rt.Join)
    _set_dict(new, "__dict__", fields)
    return new


Index = tuple[dict[int, AnyToken], dict[str, rt.Timer], dict[int, rt.Join]]


def index_of(inst: rt.Instance) -> Index:
    """Fresh dicts of an instance's tokens, timers and joins by id, in their order:
    copies of those the step that made it left, or built from its fields."""
    index: Index | None = inst.__dict__.get(_INDEX)
    if index is not None:
        tokens, timers, joins = index
        return tokens.copy(), timers.copy(), joins.copy()
    return (
        dict(zip(map(_ID, inst.tokens), inst.tokens, strict=True)),
        dict(zip(map(_ID, inst.timers), inst.timers, strict=True)) if inst.timers else {},
        dict(zip(map(_JOIN_TOKEN, inst.joins), inst.joins, strict=True)) if inst.joins else {},
    )


def position(tokens: tuple[rt.Token, ...], token_id: int, end: int, next_token: int) -> int:
    """Where the token ``token_id`` is among ``tokens[:end]`` (an instance's tokens;
    ``end`` at most their number; ``next_token`` the instance's), or -1.

    A step keeps the tokens in id order (a new token comes after all the others, and
    takes the instance's next id), ids are unique and not negative: a token no earlier
    one has left is at its id, one no later one has left is as far from the end as its
    id from ``next_token`` (a fan-out's branches answered in order), and any other is
    found by a binary search. For tokens in another order (an instance made by hand)
    it may miss a token that is there: the common path then hands the event to the
    general path, which looks the token up by id."""
    if token_id < end:
        end = token_id + 1
    if end and tokens[end - 1].id == token_id:  # none before it has gone
        return end - 1
    at = len(tokens) - (next_token - token_id)  # none after it has gone
    if 0 <= at < end and tokens[at].id == token_id:
        return at
    at = bisect_left(tokens, token_id, 0, end, key=_ID)
    return at if at < end and tokens[at].id == token_id else -1


def frozen(
    old: rt.Instance,
    context: dict[str, Value],
    index: Index,
    commands: tuple[rt.Command, ...],
    decisions: tuple[str, ...],
    changes: dict[str, object],
) -> Step:
    """``stepped`` with the tokens, timers and joins of ``index`` (all frozen, and never
    changed afterwards), which the new instance keeps for the next step; ``changes``
    (the step's own dict) gets the new timers and joins.

    The dicts keep insertion order, and tokens are inserted in id order, so the tuples
    come out in a stable order without sorting."""
    tokens, timers, joins = index
    changes["timers"] = tuple(timers.values()) if timers else ()
    changes["joins"] = tuple(joins.values()) if joins else ()
    # (every draft is frozen by now: ``Run.freeze``)
    frozen_tokens: tuple[rt.Token, ...] = tuple(tokens.values())  # type: ignore[arg-type]
    return stepped(old, context, frozen_tokens, commands, decisions, changes, index)


def stepped(
    old: rt.Instance,
    context: dict[str, Value],
    tokens: tuple[rt.Token, ...],
    commands: tuple[rt.Command, ...],
    decisions: tuple[str, ...],
    changes: dict[str, object] | None = None,
    index: Index | None = None,
) -> Step:
    """The step that made the instance after ``old``: its context, its tokens and other
    fields ``changes`` (the timers and joins, if they changed), and ``index`` to keep
    for the next step (see ``index_of``).

    A copy of the old one's ``__dict__`` (its id, workflow, version and seed never
    change), about half the cost of calling the 20-field constructor."""
    fields = old.__dict__.copy()
    fields["context"] = context
    fields["tokens"] = tokens
    fields["seq"] = old.seq + 1
    if changes is not None:
        fields.update(changes)
    if index is not None:
        fields[_INDEX] = index
    elif _INDEX in fields:  # the old one's, which no longer holds
        del fields[_INDEX]
    inst: rt.Instance = _new(rt.Instance)
    _set_dict(inst, "__dict__", fields)
    step: Step = _new(Step)
    _set_dict(step, "__dict__", {
        "instance": inst, "commands": commands, "decisions": decisions,
        BEFORE: old.context,  # ``Step.changes``, found when first asked
    })  # fmt: skip
    return step


def call(
    fields: TokenFields, iid: str, node: str, service: str, args: dict[str, Value]
) -> rt.ScheduleTask:
    """A token (its ``fields``) now waits at the service task ``node`` of instance
    ``iid``: the command calling the task's handler (``rt.ScheduleTask``, the commonest
    command), keyed by the token's visit and attempt."""
    fields["waiting"] = _TASK
    token, attempt = fields["id"], fields["attempt"]
    command: rt.ScheduleTask = _new(rt.ScheduleTask)
    _set_dict(command, "__dict__", {
        "key": task_key(iid, node, fields["visit"], token, attempt), "token": token,
        "node": node, "service": service, "args": args, "attempt": attempt,
    })  # fmt: skip
    return command
