"""Async service calls waiting for their token (issue 15): what ``Client.pending_calls``
and ``wf tasks list`` show beside the human tasks. A call is pending from the commit of
its hand-off (its row ``waiting``, ``updated_at`` then) until the client answers it or
its interrupting timeout cancels it; its deadline is that timeout's timer, read off the
instance's state (the timer the step function set when the task was entered)."""

from __future__ import annotations

from wflang.runtime import instance as rt
from wflang.runtime.keys import HEARTBEAT, boundary_index, key_token
from wflang.runtime.table import Table, TaskEntry, heartbeat_refused, not_under_way
from wflang.store.records import IllegalAction, InstanceInfo, TaskInfo
from wflang.store.records import PendingCall as PendingCall  # noqa: PLC0414  # for the client
from wflang.store.sql import Store
from wflang.store.status import TaskKind, TaskStatus

#: At most this many listed (as ``wf tasks list`` lists human tasks).
LIMIT = 1000


def pending_calls(
    store: Store, instance_id: str | None = None, workflow: str | None = None
) -> list[PendingCall]:
    """The async calls waiting for their token, the longest waiting first (of one
    instance, of one workflow's instances)."""
    waiting = store.tasks(
        kind=TaskKind.SERVICE, status=TaskStatus.WAITING, instance_id=instance_id, limit=LIMIT
    )
    infos: dict[str, InstanceInfo] = {}
    found: list[PendingCall] = []
    for task in waiting:
        info = infos.get(task.instance_id) or infos.setdefault(
            task.instance_id, store.instance(task.instance_id)
        )
        if info.instance is None or (workflow is not None and info.workflow != workflow):
            continue
        table = store.table_for(info.table_hash)
        found.append(
            PendingCall(
                key=task.key,
                instance_id=task.instance_id,
                workflow=info.workflow,
                version=info.version,
                node=task.node,
                service=task.service or "",
                since=task.updated_at,
                deadline=_deadline(table, info.instance, task),
            )
        )
    return sorted(found, key=lambda c: (c.since, c.key))


def heartbeat(store: Store, key: str, actor: str | None) -> TaskInfo:
    """Deliver a heartbeat of the async call ``key`` (its token) to its instance: its
    heartbeat timeout starts again when a worker takes it. A call not under way (or
    not a service call), or one that declares no heartbeat, is refused."""
    task = store.task(key)
    if task.kind != TaskKind.SERVICE or task.status not in (TaskStatus.RUNNING, TaskStatus.WAITING):
        raise IllegalAction(not_under_way(key, task.kind, task.status))
    table = store.table_for(store.instance(task.instance_id).table_hash)
    problem = heartbeat_refused(table, key, task.node)
    if problem is not None:
        raise IllegalAction(problem)
    store.deliver(task.instance_id, rt.TaskHeartbeat(key), actor=actor)
    return task


def _entry(table: Table, node: str) -> TaskEntry:
    entry = next((s.entry for s in table.states if s.name == node), None)
    return entry if isinstance(entry, TaskEntry) else TaskEntry("service")


def _deadline(table: Table, instance: rt.Instance, task: TaskInfo) -> int | None:
    """When the call times out: its interrupting timeout, or its heartbeat timeout if
    that comes first (the earliest of them)."""
    token = key_token(task.key)
    timers = _entry(table, task.node).timers
    dues = [
        t.due
        for t in instance.timers
        if t.token == token
        and (
            t.purpose == HEARTBEAT
            or ((k := boundary_index(t.purpose)) is not None and k < len(timers)
                and timers[k].interrupting)
        )
    ]  # fmt: skip
    return min(dues, default=None)
