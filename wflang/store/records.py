"""What the store hands out: plain frozen records, decoded from rows."""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from wflang.runtime import instance as rt
from wflang.runtime.engine import HistoryEntry
from wflang.runtime.ir import Value
from wflang.runtime.lifecycle import StatusEvent
from wflang.runtime.table import Table


class StoreError(Exception):
    """A request the store refuses; the message says why. Nothing was changed."""


class UnknownInstance(StoreError):
    def __init__(self, instance_id: str) -> None:
        super().__init__(f"no instance '{instance_id}'")
        self.instance_id = instance_id


class UnknownWorkflow(StoreError):
    pass


class UnknownTask(StoreError):
    pass


class VersionConflict(StoreError):
    """The same workflow name and version deployed with different content."""


class IllegalAction(StoreError):
    """An action the instance's (or task's) current status does not allow."""


@frozen
class Deployed:
    name: str
    version: int
    hash: str
    table: Table
    deployed_at: int


@frozen
class Creation:
    """An instance to create in the transaction that starts it (``Store.advance``'s
    ``create``, ``Worker.run_new``): ``Store.create``'s arguments."""

    deployed: Deployed
    input: Mapping[str, Value]
    instance_id: str
    actor: str | None = None
    reason: str | None = None


@frozen
class VersionInfo:
    """A deployed version and how many of its instances are still running (drain)."""

    name: str
    version: int
    hash: str
    deployed_at: int
    running: int
    finished: int
    latest: bool


@frozen
class InstanceInfo:
    id: str
    workflow: str
    version: int
    table_hash: str
    status: str  # pending until the start transition, then the instance's status
    input: dict[str, Value]
    instance: rt.Instance | None
    parent_id: str | None
    wake_at: int | None
    created_at: int
    updated_at: int  # when it last moved: its last transition (or its creation)
    #: Why the stored state could not be decoded (``instance`` is then None): the row
    #: is dead-lettered and kept as it is, for a person to repair or purge.
    unreadable: str | None = None
    #: What it waits on (``runtime.waiting.waiting_on``): none once it has finished.
    waiting_on: tuple[str, ...] = ()


@frozen
class HistoryRow:
    entry: HistoryEntry
    idempotency_key: str
    actor: str | None
    reason: str | None
    worker: str | None


@frozen
class PendingEvent:
    """An event delivered to an instance and not taken by a step yet (a signal sent
    before the instance waits for it, an operator's action waiting for a worker)."""

    event: rt.Event
    actor: str | None
    reason: str | None
    available_at: int


@frozen
class TaskInfo:
    key: str
    instance_id: str
    node: str
    kind: str  # service | human
    service: str | None
    args: dict[str, Value]
    attempt: int
    form: tuple[str, ...]
    assignee: str | None
    status: str  # ready | running | open | waiting | done | cancelled | interrupted
    claims: int
    lease_owner: str | None
    lease_epoch: int
    created_at: int
    updated_at: int = 0  # its last change of status (an async call's: the hand-off)


@frozen
class PendingCall:
    """An async service call waiting for the client to answer it with its token
    (``key``): since the hand-off committed (``since``), until its interrupting timeout
    (``deadline``, None without one), epoch milliseconds."""

    key: str
    instance_id: str
    workflow: str
    version: int
    node: str
    service: str
    since: int
    deadline: int | None


@frozen
class ClaimedTask:
    """A service call leased to a worker until ``expires_at``; ``epoch`` fences its result."""

    key: str
    instance_id: str
    node: str
    service: str
    args: dict[str, Value]
    attempt: int
    epoch: int
    expires_at: int


@frozen
class TaskResult:
    """What a handler did, to commit under the lease it ran with."""

    key: str
    epoch: int
    event: rt.TaskCompleted | rt.TaskFailed
    instance_id: str | None = None  # known to the worker: saves looking it up


@frozen
class Advanced:
    """What one ``advance`` transaction did."""

    transitions: int  # committed steps (history rows)
    instances: int  # instances stepped
    results: int  # handler results committed
    stale: int  # handler results refused: their lease had been lost
    claimed: tuple[ClaimedTask, ...]
    finished: tuple[str, ...]  # instances that ended (a dead letter is no end: ops may retry)
    at: int  # the database time of the transaction
    #: The status changes its steps made (``runtime.lifecycle``), each also in the outbox.
    statuses: tuple[StatusEvent, ...] = ()
    #: Whether work may be due now that it left (a worker goes again at once): it did not
    #: look for ready instances (a carried step) or found as many as it could take, or
    #: its steps made work due for an instance (a child, an inbox row, a call left ready,
    #: a timer due already). False: it took all there was when it read.
    more: bool = True


@frozen
class Stats:
    """Queue depth and lag, for metrics and ``wf ops``."""

    now: int
    ready_tasks: int
    running_tasks: int
    open_human_tasks: int
    oldest_ready_ms: int  # how long the oldest ready task has waited (0: none)
    due_timers: int
    pending_events: int
    instances: dict[str, int]


@frozen
class OutboxEvent:
    """An event for other systems, written in the transaction of the step that caused it
    (``instance.finished`` once, when the instance ends; ``instance.dead_lettered`` each
    time it is dead-lettered: the workflow, version, status, output and error;
    ``signal.sent`` and ``message.sent`` for each send task: its key, name, target,
    payload and the instances it reached)."""

    id: int
    instance_id: str
    seq: int
    kind: str
    payload: dict[str, Value]
    created_at: int
