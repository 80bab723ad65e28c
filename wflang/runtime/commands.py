"""What each command of a step means: the one interpreter of commands.

The step function decides; its commands say what must happen outside the
instance (a call, a human task, a timer, a child instance, the end). What each
one means is written here once: the id of the child a call starts
(``ids.child_id``), the event a cancelled child is given, the event a finished
child sends its parent, what a call to a workflow that is not there means.
The in-memory engine and the durable stores implement ``Effects``, which only
carries out or persists what ``interpret`` hands it; neither decides anything
of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from wflang.runtime import instance as rt
from wflang.runtime.ids import child_id, instance_seed

#: What a cancelled parent asks of each child it started.
PARENT_CANCEL = rt.CancelRequested(True, "parent cancelled it")

#: The event a finished child instance sends its parent.
ChildOutcome = rt.ChildCompleted | rt.ChildFailed


class Effects(Protocol):
    """What one runtime (the engine, a store) does with the commands of one step of
    one instance: carry them out or persist them, as it is told."""

    def schedule_task(self, task: rt.ScheduleTask) -> None:
        """A service call is due now."""

    def open_human_task(self, task: rt.CreateHumanTask) -> None:
        """A person's task opens."""

    def cancel_task(self, key: str) -> None:
        """The open call or human task ``key`` is no longer wanted (if still open)."""

    def start_timer(self, timer_id: str, due: int) -> None:
        """Fire ``timer_id`` at ``due`` (a time passed fires at once)."""

    def cancel_timer(self, timer_id: str) -> None:
        """Forget ``timer_id`` if it has not fired."""

    def start_child(self, instance_id: str, seed: int, call: rt.StartChild) -> None:
        """Start a child instance with this id and seed (whose parent is this instance
        and its call key ``call.key``)."""

    def cancel_child(self, call_key: str, instance_ids: Sequence[str]) -> None:
        """Give the child started by ``call_key`` (the first of ``instance_ids`` that
        exists) the ``PARENT_CANCEL`` event."""

    def send(self, send: rt.Send) -> None:
        """Signal an instance, or publish a message, once (by ``send.key``): a target
        that is not there, or does not take the payload, is not reached."""

    def finish(self, end: rt.Finish) -> None:
        """The instance has ended (or is dead-lettered): its open tasks and timers go."""

    def tell_parent(self, event: ChildOutcome) -> None:
        """Deliver a finished child's outcome to its parent (never a dead letter's)."""


def interpret(
    effects: Effects,
    instance_id: str,
    parent_key: str | None,
    commands: Sequence[rt.Command],
) -> None:
    """Hand the commands of a step of ``instance_id`` (a child of the call
    ``parent_key``, or None) to ``effects``, in order."""
    for c in commands:
        COMMANDS[type(c)](effects, instance_id, parent_key, c)


def child_ids(instance_id: str, call_key: str) -> tuple[str, ...]:
    """The ids a child started by ``call_key`` may have: ``ids.child_id``, then the
    form of the stores before ids were bounded (the parent's id and the key)."""
    return (child_id(instance_id, call_key), f"{instance_id}/{call_key}")


def child_outcome(call_key: str, end: rt.Finish) -> ChildOutcome:
    """What a finished child tells the call that started it: its output when it
    completed, else a failure named by its error (or its status)."""
    if end.status is rt.Status.COMPLETED:
        return rt.ChildCompleted(call_key, dict(end.output or {}))
    return rt.ChildFailed(call_key, end.error or end.status.value, end.payload)


def not_deployed(call: rt.StartChild) -> rt.ChildFailed:
    """A call to a workflow (or version) that is not there fails, as a handler error would."""
    return rt.ChildFailed(call.key, f"workflow '{call.workflow}' is not deployed")


def _start_child(e: Effects, iid: str, parent_key: str | None, c: rt.StartChild) -> None:
    child = child_id(iid, c.key)
    e.start_child(child, instance_seed(child), c)


def _finish(e: Effects, iid: str, parent_key: str | None, c: rt.Finish) -> None:
    e.finish(c)
    # A dead letter is no outcome (ops may retry it): the parent waits on.
    if parent_key is not None and c.status is not rt.Status.DEAD_LETTERED:
        e.tell_parent(child_outcome(parent_key, c))


COMMANDS: dict[type, Callable[[Effects, str, str | None, Any], None]] = {
    rt.ScheduleTask: lambda e, iid, pk, c: e.schedule_task(c),
    rt.CreateHumanTask: lambda e, iid, pk, c: e.open_human_task(c),
    rt.CancelTask: lambda e, iid, pk, c: e.cancel_task(c.key),
    rt.StartTimer: lambda e, iid, pk, c: e.start_timer(c.id, c.due),
    rt.CancelTimer: lambda e, iid, pk, c: e.cancel_timer(c.id),
    rt.StartChild: _start_child,
    rt.CancelChild: lambda e, iid, pk, c: e.cancel_child(c.key, child_ids(iid, c.key)),
    rt.Send: lambda e, iid, pk, c: e.send(c),
    rt.Finish: _finish,
}
"""Each command kind and what it asks of the effects (the completeness test checks that
every kind of ``rt.Command`` is here)."""
