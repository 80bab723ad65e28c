"""The rows each command of a step writes: the store's ``commands.Effects``.

``wflang.runtime.commands.interpret`` decides what a command means (the child's
id, the event a cancelled child gets, what a finished child tells its parent);
``StoreEffects`` writes it, in the transaction of the step that emitted it.
"""

from __future__ import annotations

from collections.abc import Sequence

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.commands import PARENT_CANCEL, ChildOutcome, not_deployed
from wflang.runtime.keys import PARENT_CANCEL_DELIVERY, child_delivery
from wflang.runtime.table import Table
from wflang.store import inbox, rows, sends
from wflang.store.backend import Dialect, Tx, chunks, placeholders
from wflang.store.catalog import Catalog
from wflang.store.claims import Claims
from wflang.store.status import (
    IS_LIVE,
    OF_INSTANCE,
    PENDING,
    OutboxKind,
    TaskKind,
    TaskStatus,
)

#: The statements, built once (a status written into the text: see ``store.status``).
_SCHEDULE = (
    "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, "
    "status, run_at, created_at, updated_at) "
    f"VALUES (?, ?, ?, '{TaskKind.SERVICE}', ?, ?, ?, '{TaskStatus.READY}', ?, ?, ?) "
    "ON CONFLICT (key) DO NOTHING"
)
_OPEN_HUMAN = (
    "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, form, "
    "assignee, status, run_at, created_at, updated_at) "
    f"VALUES (?, ?, ?, '{TaskKind.HUMAN}', ?, ?, 1, ?, ?, '{TaskStatus.OPEN}', ?, ?, ?) "
    "ON CONFLICT (key) DO NOTHING"
)
_CANCEL = (
    f"UPDATE wf_task SET status = '{TaskStatus.CANCELLED}', lease_owner = NULL, "
    "lease_expires_at = NULL, updated_at = ? "
)
_CANCEL_TASK = _CANCEL + f"WHERE key = ? AND {IS_LIVE}"
_CANCEL_ALL = _CANCEL + f"WHERE {OF_INSTANCE} AND {IS_LIVE}"
_FINISHED = (OutboxKind.FINISHED.value, OutboxKind.DEAD_LETTERED.value)


class StoreEffects:
    """The rows the commands of one instance's steps write, in one transaction."""

    def __init__(
        self,
        tx: Tx,
        claims: Claims,
        *,
        now: int,
        instance_id: str,
        table: Table,
        seq: int,
        parent_id: str | None,
        dialect: Dialect,
        catalog: Catalog,
    ) -> None:
        self.tx, self.claims, self.now = tx, claims, now
        self.dialect, self.catalog = dialect, catalog
        self.instance_id, self.table, self.seq, self.parent_id = instance_id, table, seq, parent_id
        self.scheduled = 0  # tasks and inbox rows written for others to act on
        self.due_now = False  # it made something due now besides those (``Advanced.more``)

    def schedule_task(self, c: rt.ScheduleTask) -> None:
        if self.claims.takes(c.service):
            self.claims.claim_new(self.instance_id, c)  # a free slot: it starts out claimed
            return
        self.scheduled += 1
        now = self.now
        self.tx.write(
            _SCHEDULE,
            (c.key, self.instance_id, c.node, c.service, codec.dumps(c.args), c.attempt,
             now, now, now),
        )  # fmt: skip

    def open_human_task(self, c: rt.CreateHumanTask) -> None:
        now = self.now
        self.tx.write(
            _OPEN_HUMAN,
            (c.key, self.instance_id, c.node, c.kind, codec.dumps(c.args),
             codec.dumps(list(c.form)), c.assignee, now, now, now),
        )  # fmt: skip

    def cancel_task(self, key: str) -> None:
        self.claims.unclaim(lambda t: t.key == key)
        self.tx.write(_CANCEL_TASK, (self.now, key))

    def start_timer(self, timer_id: str, due: int) -> None:
        self.due_now |= due <= self.now
        self.tx.write(
            "INSERT INTO wf_timer (instance_id, timer_id, due_at) VALUES (?, ?, ?) "
            "ON CONFLICT (instance_id, timer_id) DO NOTHING",
            (self.instance_id, timer_id, due),
        )

    def cancel_timer(self, timer_id: str) -> None:
        self.tx.write(
            "DELETE FROM wf_timer WHERE instance_id = ? AND timer_id = ?",
            (self.instance_id, timer_id),
        )

    def start_child(self, child: str, seed: int, c: rt.StartChild) -> None:
        self.due_now = True  # the child, or a not-deployed failure in this inbox
        if c.version is None:
            found = self.tx.query(
                "SELECT version, hash FROM wf_workflow WHERE name = ? "
                "ORDER BY version DESC LIMIT 1",
                (c.workflow,),
            )
        else:
            found = self.tx.query(
                "SELECT version, hash FROM wf_workflow WHERE name = ? AND version = ?",
                (c.workflow, c.version),
            )
        if not found:
            inbox.post(
                self.tx, self.instance_id, not_deployed(c), child_delivery(c.key), at=self.now
            )
            return
        version, digest = found[0]
        now = self.now
        self.tx.write(
            "INSERT INTO wf_instance (id, workflow, version, table_hash, status, input, seed, "
            "parent_id, parent_key, wake_at, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (child, c.workflow, rows.integer(version), rows.text(digest), PENDING,
             codec.dumps(c.input), seed, self.instance_id, c.key, now, now, now),
        )  # fmt: skip

    def cancel_child(self, call_key: str, instance_ids: Sequence[str]) -> None:
        self.due_now = True
        for (child,) in self.tx.query(
            f"SELECT id FROM wf_instance WHERE id IN ({placeholders(len(instance_ids))}) "
            "AND parent_id = ?",
            (*instance_ids, self.instance_id),
        ):
            inbox.post(
                self.tx, rows.text(child), PARENT_CANCEL, PARENT_CANCEL_DELIVERY, at=self.now
            )

    def send(self, c: rt.Send) -> None:
        d, catalog, sender = self.dialect, self.catalog, self.instance_id
        reached = sends.send(self.tx, d, catalog, now=self.now, sender=sender, seq=self.seq, c=c)
        self.scheduled += len(reached)

    def finish(self, c: rt.Finish) -> None:
        stop_work(self.tx, self.claims, self.instance_id, self.now)
        outbox_end(self.tx, self.instance_id, self.seq, self.table, c, self.now)

    def tell_parent(self, event: ChildOutcome) -> None:
        assert self.parent_id is not None, "only a child has a parent to tell"
        self.due_now = True
        inbox.post(self.tx, self.parent_id, event, child_delivery(event.key), at=self.now)


def cancel_calls(tx: Tx, keys: Sequence[str], now: int) -> None:
    """Cancel these calls, whatever their status."""
    for part in chunks(keys):
        tx.write(f"{_CANCEL}WHERE key IN ({placeholders(len(part))})", (now, *part))


def stop_work(tx: Tx, claims: Claims, instance_id: str, now: int) -> None:
    """Cancel an instance's calls and human tasks and forget its timers' rows."""
    claims.unclaim(lambda t: t.instance_id == instance_id)
    tx.write(_CANCEL_ALL, (now, *(instance_id,) * 3))
    tx.write("DELETE FROM wf_timer WHERE instance_id = ?", (instance_id,))


def outbox_end(tx: Tx, instance_id: str, seq: int, table: Table, end: rt.Finish, now: int) -> None:
    """The outbox row of an instance that ended: ``instance.finished`` once, or
    ``instance.dead_lettered`` each time it is dead-lettered (ops may retry it)."""
    payload = {
        "workflow": table.workflow,
        "version": table.version,
        "status": end.status.value,
        "output": end.output,
        "error": end.error,
    }
    dead = end.status is rt.Status.DEAD_LETTERED
    tx.write(
        "INSERT INTO wf_outbox (instance_id, seq, kind, payload, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (instance_id, seq, _FINISHED[dead], codec.dumps(payload), now),
    )
