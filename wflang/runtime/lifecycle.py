"""Lifecycle events: every status change of an instance and of its tasks in one step.

``lifecycle(before, step, event, at)`` reads them off what the step function gave (the
instance before and after, and the event), so the engine, the test kit and both stores
derive the same events from the same step: a store writes each to its outbox in the
step's transaction, and the engine and the worker hand them to the hooks registered
with ``on_status`` (``notify``: a hook that raises is logged, never breaks a step).

An instance is ``started``, then ``waiting`` and ``resumed`` (waiting for the world
and back to work, or back to work after a dead letter), ``compensating``,
``dead_lettered``, and at its end ``completed``, ``failed``, ``cancelled`` or
``compensated``. A task (a service call or a person's task) is ``started`` (each
attempt; a later attempt is ``retrying``), then ``completed``, ``failed`` (its
attempt failed: a retry, a route or a dead letter follows) or ``cancelled`` (a
boundary timer, a cancel or the end of its scope stopped it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from attrs import frozen

from wflang.runtime import instance as rt
from wflang.runtime.keys import key_token, task_key
from wflang.runtime.table import Table
from wflang.runtime.waiting import TASKS

log = logging.getLogger("wflang.lifecycle")

INSTANCE, TASK = "instance", "task"

#: The event an instance's new status is, by its status before (None: the start).
_INSTANCE_EVENTS = {
    rt.Status.RUNNING: "resumed",
    rt.Status.WAITING: "waiting",
    rt.Status.COMPENSATING: "compensating",
    rt.Status.DEAD_LETTERED: "dead_lettered",
    rt.Status.COMPLETED: "completed",
    rt.Status.FAILED: "failed",
    rt.Status.CANCELLED: "cancelled",
    rt.Status.COMPENSATED: "compensated",
}


@frozen(slots=False)  # made from a dict of its fields: see ``_event``
class StatusEvent:
    """One status change: of the instance (``subject`` ``instance``) or of one of its
    tasks (``task``: its ``node``, idempotency ``key`` and ``attempt``), at history
    step ``seq`` (time ``at``, epoch milliseconds)."""

    instance_id: str
    workflow: str
    version: int
    seq: int
    at: int
    subject: str
    status: str
    node: str | None = None
    key: str | None = None
    attempt: int | None = None
    error: str | None = None  # a failed task's error, or the instance's


#: A hook: called once per event, after the step that caused it was kept.
StatusHook = Callable[[StatusEvent], None]


def lifecycle(
    table: Table, before: rt.Instance | None, after: rt.Instance, event: rt.Event | None, at: int
) -> list[StatusEvent]:
    """The status changes of the step from ``before`` (None: the start) to ``after``:
    the instance's first, then its tasks' in token order."""
    out: list[StatusEvent] = []
    iid, seq = after.id, after.seq
    base = {"instance_id": iid, "workflow": after.workflow, "version": after.version,
            "seq": seq, "at": at}  # fmt: skip
    if before is None:
        out.append(_event(base, INSTANCE, "started", None, None, None, None))
        if after.status is not _RUNNING:
            status = _INSTANCE_EVENTS[after.status]
            out.append(_event(base, INSTANCE, status, None, None, None, after.error))
    elif after.status is not before.status:
        status = _INSTANCE_EVENTS[after.status]
        out.append(_event(base, INSTANCE, status, None, None, None, after.error))
    old_tasks = _tasks(before.tokens) if before is not None else _NONE
    new_tasks = _tasks(after.tokens)
    if not old_tasks and not new_tasks:
        return out
    names = table.states
    answered = event.key if type(event) in _ANSWERS else None  # type: ignore[union-attr]
    for token_id, token in old_tasks.items():
        now = new_tasks.get(token_id)
        if now is not None and _same_task(now, token):
            continue
        error = None
        if answered is not None and key_token(answered) == token_id:
            if type(event) is rt.TaskCompleted:
                status = "completed"
            else:
                status, error = "failed", event.error  # type: ignore[union-attr]
        else:
            status = "cancelled"
        out.append(_task_event(base, iid, names[token.state].name, token, status, error))
    for token_id, token in new_tasks.items():
        was = old_tasks.get(token_id)
        if was is None or not _same_task(was, token):
            status = "retrying" if token.attempt > 1 else "started"
            out.append(_task_event(base, iid, names[token.state].name, token, status, None))
    return out


_RUNNING = rt.Status.RUNNING
_ANSWERS = (rt.TaskCompleted, rt.TaskFailed)
_NONE: dict[int, rt.Token] = {}
_new = object.__new__
_set_dict = object.__setattr__


def _event(
    base: dict[str, object],
    subject: str,
    status: str,
    node: str | None,
    key: str | None,
    attempt: int | None,
    error: str | None,
) -> StatusEvent:
    """A ``StatusEvent`` made from a complete dict of its fields: the step's hot path
    makes two or three, and the attrs constructor costs more than the rest of it
    (as ``runtime.step.build`` does; ``tests/test_lifecycle.py`` compares the two)."""
    fields = base.copy()
    fields["subject"], fields["status"], fields["node"] = subject, status, node
    fields["key"], fields["attempt"], fields["error"] = key, attempt, error
    made: StatusEvent = _new(StatusEvent)
    _set_dict(made, "__dict__", fields)
    return made


def _task_event(base: dict[str, object], iid: str, node: str, token: rt.Token, status: str,
                error: str | None) -> StatusEvent:  # fmt: skip
    key = task_key(iid, node, token.visit, token.id, token.attempt)
    return _event(base, TASK, status, node, key, token.attempt, error)


def _same_task(a: rt.Token, b: rt.Token) -> bool:
    """Whether two tokens wait at the same task attempt (its state, visit and attempt)."""
    return a.state == b.state and a.visit == b.visit and a.attempt == b.attempt


def _tasks(tokens: Iterable[rt.Token]) -> dict[int, rt.Token]:
    return {t.id: t for t in tokens if t.waiting in _TASK_WAITS}


_TASK_WAITS = frozenset(TASKS)


def notify(hooks: Sequence[StatusHook], events: Iterable[StatusEvent]) -> None:
    """Hand each event to each hook; a hook that raises is logged and the others go on."""
    for event in events:
        for hook in hooks:
            try:
                hook(event)
            except Exception:
                log.exception(
                    "a status hook raised on %s %s of %s", event.subject, event.status,
                    event.instance_id,
                )  # fmt: skip
