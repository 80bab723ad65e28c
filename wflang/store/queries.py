"""What the store tells: instances, histories, tasks, the outbox and queue statistics,
read in one snapshot each, as typed records (``wflang.store.rows``)."""

from __future__ import annotations

from collections.abc import Sequence

from wflang.runtime import codec
from wflang.store import rows
from wflang.store.backend import Dialect, Param, Tx, placeholders
from wflang.store.browse import InstanceQuery, instance_page
from wflang.store.records import (
    HistoryRow,
    InstanceInfo,
    OutboxEvent,
    PendingEvent,
    Stats,
    TaskInfo,
    UnknownInstance,
    UnknownTask,
)
from wflang.store.status import IS_LIVE, OF_INSTANCE, TaskKind, TaskStatus

INT64_MAX = 2**63 - 1

_INSTANCE_SELECT = f"SELECT {rows.INSTANCE_COLUMNS} FROM wf_instance"
_TASK_SELECT = f"SELECT {rows.TASK_COLUMNS} FROM wf_task"


def schema_version(tx: Tx) -> int:
    """The newest migration applied; 0 for a store that has none."""
    try:
        found = tx.query("SELECT max(version) FROM wf_schema")
    except Exception:  # no wf_schema table: nothing was ever migrated
        return 0
    return rows.integer(found[0][0]) if found and found[0][0] is not None else 0


def instance(tx: Tx, instance_id: str) -> InstanceInfo:
    found = tx.query(_INSTANCE_SELECT + " WHERE id = ?", (instance_id,))
    if not found:
        raise UnknownInstance(instance_id)
    return rows.instance_info(found[0])


def instances(
    tx: Tx,
    dialect: Dialect,
    *,
    status: str | None,
    workflow: str | None,
    limit: int,
    waiting_on: str | None = None,
    moved_before: int | None = None,
) -> list[InstanceInfo]:
    """Instances, oldest first; ``waiting_on``: those waiting on that label
    (``waiting.waiting_on``); ``moved_before``: the active ones that have not moved
    since that time (stuck), the longest still first (the first page of
    ``browse.instance_page``)."""
    query = InstanceQuery(
        status=status, workflow=workflow, waiting_on=waiting_on, moved_before=moved_before,
        limit=limit,
    )  # fmt: skip
    return list(instance_page(tx, dialect, query).instances)


def history(tx: Tx, instance_id: str) -> list[HistoryRow]:
    found = tx.query(
        f"SELECT {rows.HISTORY_COLUMNS} FROM wf_history WHERE instance_id = ? ORDER BY seq",
        (instance_id,),
    )
    if not found and not tx.query("SELECT 1 FROM wf_instance WHERE id = ?", (instance_id,)):
        raise UnknownInstance(instance_id)
    return [rows.history_row(r) for r in found]


def pending(tx: Tx, instance_id: str) -> list[PendingEvent]:
    """The events in an instance's inbox that no step has taken yet, oldest first."""
    found = tx.query(
        "SELECT event, actor, reason, available_at FROM wf_inbox "
        "WHERE instance_id = ? AND consumed_seq IS NULL ORDER BY id",
        (instance_id,),
    )
    return [
        PendingEvent(
            codec.load_event(rows.text(event)),
            rows.maybe_text(actor),
            rows.maybe_text(reason),
            rows.integer(at),
        )
        for event, actor, reason, at in found
    ]


def tasks(
    tx: Tx, *, kind: str | None, status: str | None, instance_id: str | None, limit: int
) -> list[TaskInfo]:
    where, params = _where((("kind", kind), ("status", status)))
    if instance_id:  # a range of the key (``status.tasks_of``)
        where += f"{' AND' if where else ' WHERE'} {OF_INSTANCE}"
        params += (instance_id,) * 3
    found = tx.query(_TASK_SELECT + where + " ORDER BY created_at, key LIMIT ?", (*params, limit))
    return [rows.task_info(r) for r in found]


def task(tx: Tx, key: str) -> TaskInfo:
    found = tx.query(_TASK_SELECT + " WHERE key = ?", (key,))
    if not found:
        raise UnknownTask(f"no task '{key}'")
    return rows.task_info(found[0])


def outbox(tx: Tx, *, limit: int, after: int, kinds: Sequence[str] = ()) -> list[OutboxEvent]:
    """Events not published yet, oldest first (ids above ``after``; of ``kinds`` only,
    if any are given)."""
    of_kinds = f" AND kind IN ({placeholders(len(kinds))})" if kinds else ""
    found = tx.query(
        f"SELECT {rows.OUTBOX_COLUMNS} FROM wf_outbox "
        f"WHERE published_at IS NULL AND id > ?{of_kinds} ORDER BY id LIMIT ?",
        # ids are 64-bit
        (max(-1, min(after, INT64_MAX)), *kinds, max(0, min(limit, INT64_MAX))),
    )
    return [rows.outbox_event(r) for r in found]


def stats(tx: Tx, now: int) -> Stats:
    counts = {
        rows.text(s): rows.integer(n)
        for s, n in tx.query("SELECT status, count(*) FROM wf_instance GROUP BY status")
    }
    live: dict[tuple[str, str], tuple[int, object]] = {
        (rows.text(k), rows.text(s)): (rows.integer(n), oldest)
        for k, s, n, oldest in tx.query(
            "SELECT kind, status, count(*), min(run_at) FROM wf_task "
            f"WHERE {IS_LIVE} GROUP BY kind, status"
        )
    }
    due = tx.query("SELECT count(*) FROM wf_timer WHERE due_at <= ?", (now,))
    pending = tx.query(
        "SELECT count(*) FROM wf_inbox WHERE consumed_seq IS NULL AND available_at <= ?",
        (now,),
    )
    ready, oldest = live.get((TaskKind.SERVICE, TaskStatus.READY), (0, None))
    running = live.get((TaskKind.SERVICE, TaskStatus.RUNNING), (0, None))[0]
    return Stats(
        now=now,
        ready_tasks=ready,
        running_tasks=running,
        open_human_tasks=live.get((TaskKind.HUMAN, TaskStatus.OPEN), (0, None))[0],
        oldest_ready_ms=max(0, now - rows.integer(oldest)) if oldest is not None else 0,
        due_timers=rows.scalar(due),
        pending_events=rows.scalar(pending),
        instances=counts,
    )


def _where(filters: tuple[tuple[str, str | None], ...]) -> tuple[str, list[Param]]:
    """`` WHERE column = ? AND ...`` for the filters given (a None or empty one is left
    out), and its parameters."""
    given = [(column, value) for column, value in filters if value]
    if not given:
        return "", []
    return " WHERE " + " AND ".join(f"{c} = ?" for c, _ in given), [v for _, v in given]
