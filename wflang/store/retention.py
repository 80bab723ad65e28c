"""Retention: delete finished instances and everything they left behind.

A store only grows: every step appends a history row, every call leaves a task
row, every signal an inbox row. ``purge`` removes instances that ended before a
cut-off, together with their history (its checkpoints and archived steps too),
tasks, inbox rows, timers and subscriptions, a batch per transaction, and published
messages that expired before the cut-off. It never removes what someone may still need:

* only instances whose status is one of ``statuses`` (completed, failed,
  cancelled and compensated by default: a dead-lettered instance waits for an
  operator, so it is purged only when asked for by name);
* not a parent whose child has not ended (the child will report to it), nor a
  child whose parent has not ended (the parent may cancel or read it); a
  dead-lettered relative has not ended: an operator may retry it;
* outbox rows that were not published yet stay (they carry their own payload),
  so purging never hides an event from a consumer.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from wflang.runtime.instance import Status
from wflang.store import status
from wflang.store.backend import Dialect, Tx, chunks, placeholders
from wflang.store.rows import scalar
from wflang.store.status import FINISHED, OF_INSTANCE, one_of, tasks_of

#: Statuses purged unless the caller names others: the instance has nothing left to do.
ENDED = status.ENDED
#: Statuses that can be purged at all (running and pending instances never).
PURGEABLE = (*ENDED, Status.DEAD_LETTERED.value)

#: The tables with an ``instance_id`` column, deleted before the instance row.
_OWNED = ("wf_history", "wf_task", "wf_inbox", "wf_timer", "wf_subscription", "wf_outbox",
          "wf_checkpoint", "wf_history_archive")  # fmt: skip
#: Rows of those tables that stay: outbox rows nobody has published yet.
_KEEP = {"wf_outbox": " AND published_at IS NOT NULL"}
#: Instances whose task rows one statement deletes: a range of the key each, joined by OR
#: (``status.tasks_of``), a few at a time (SQLite limits an expression's depth).
_TASKS_AT_ONCE = 100


@frozen
class Purged:
    """What one ``purge`` removed (or, in a dry run, would remove)."""

    instances: tuple[str, ...]
    rows: dict[str, int]  # table -> rows deleted
    more: bool  # the batch was full: call again for the rest


def purge_batch(
    tx: Tx,
    dialect: Dialect,
    *,
    ended_before: int,
    statuses: Sequence[str],
    workflow: str | None,
    limit: int,
    dry_run: bool,
) -> Purged:
    """Delete up to ``limit`` instances that ended before ``ended_before`` (epoch ms).

    ``dry_run`` deletes nothing and counts everything that would go, all batches
    together; its ``instances`` are the first ``limit`` of them.
    """
    where, params = _candidates(statuses, ended_before, workflow)
    # by ``wf_instance_ended``, in its order (SQLite without statistics would read every
    # finished instance of these statuses off the index by status, and sort them)
    ended = dialect.indexed_by.format("wf_instance_ended")
    rows = tx.query(
        f"SELECT i.id FROM wf_instance i{ended} WHERE {where} ORDER BY i.updated_at, i.id "
        f"LIMIT ?{'' if dry_run else dialect.skip_locked}",
        (*params, limit),
    )
    ids = tuple(str(iid) for (iid,) in rows)
    if dry_run:
        chosen = f"SELECT i.id FROM wf_instance i{ended} WHERE {where}"
        counts = {
            table: _scalar(tx, f"SELECT count(*) FROM {table} WHERE instance_id IN ({chosen})"
                           + _KEEP.get(table, ""), params)
            for table in _OWNED if table != "wf_task"
        }  # fmt: skip
        # each instance's range of the key (a join would leave the planner no estimate)
        of_each = f"(SELECT count(*) FROM wf_task WHERE {tasks_of('i.id')})"
        counts["wf_task"] = _scalar(
            tx,
            f"SELECT coalesce(sum({of_each}), 0) FROM wf_instance i{ended} WHERE {where}",
            params,
        )
        counts["wf_instance"] = _scalar(tx, f"SELECT count(*) FROM ({chosen}) AS c", params)
        counts["wf_message"] = _scalar(
            tx, "SELECT count(*) FROM wf_message WHERE expires_at < ?", (ended_before,)
        )
        return Purged(instances=ids, rows=counts, more=False)
    # Published messages that expired before the cut-off (their keys are forgotten).
    counts = {
        "wf_message": tx.execute("DELETE FROM wf_message WHERE expires_at < ?", (ended_before,))
    }
    if ids:
        marks = placeholders(len(ids))
        for table in _OWNED:
            if table == "wf_task":  # a range of its key each (``status.tasks_of``)
                counts[table] = sum(
                    tx.execute(
                        "DELETE FROM wf_task WHERE "
                        + " OR ".join([f"({OF_INSTANCE})"] * len(part)),
                        [iid for iid in part for _ in range(3)],
                    )
                    for part in chunks(ids, _TASKS_AT_ONCE)
                )
                continue
            counts[table] = tx.execute(
                f"DELETE FROM {table} WHERE instance_id IN ({marks})" + _KEEP.get(table, ""), ids
            )
        counts["wf_instance"] = tx.execute(f"DELETE FROM wf_instance WHERE id IN ({marks})", ids)
    return Purged(instances=ids, rows=counts, more=len(ids) == limit)


def _candidates(
    statuses: Sequence[str], ended_before: int, workflow: str | None
) -> tuple[str, list[str | int]]:
    """The WHERE clause (on ``wf_instance i``) of the instances to purge, and its params."""
    unknown = sorted(set(statuses) - set(PURGEABLE))
    if unknown or not statuses:
        raise ValueError(
            f"cannot purge status {', '.join(unknown) or '(none)'}: only {', '.join(PURGEABLE)}"
        )
    ended = placeholders(len(ENDED))
    where = [
        # the finished statuses as written in the index ``wf_instance_ended``'s condition:
        # only then may the database use it (the chosen ones are among them)
        one_of("i.status", FINISHED),
        f"i.status IN ({placeholders(len(statuses))})",
        "i.updated_at < ?",
        # Nobody may still need it: no relative that has not ended (a dead-lettered one
        # can be retried, and would report to its parent or read its child).
        "NOT EXISTS (SELECT 1 FROM wf_instance c WHERE c.parent_id = i.id "
        f"AND c.status NOT IN ({ended}))",
        "(i.parent_id IS NULL OR NOT EXISTS (SELECT 1 FROM wf_instance p "
        f"WHERE p.id = i.parent_id AND p.status NOT IN ({ended})))",
    ]
    params: list[str | int] = [*statuses, ended_before, *ENDED, *ENDED]
    if workflow is not None:
        where.append("i.workflow = ?")
        params.append(workflow)
    return " AND ".join(where), params


def _scalar(tx: Tx, sql: str, params: Sequence[str | int]) -> int:
    return scalar(tx.query(sql, params))
