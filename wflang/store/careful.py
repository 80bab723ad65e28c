"""The careful path of an ``advance`` transaction (``wflang.store.advance``): a batch
whose stepping or storing failed runs again with each instance a transition at a time,
each in a savepoint of its own, so that one that cannot be stepped or stored (a
poisonous instance) is dead-lettered with the reason and never stops the others; and an
instance whose stored state cannot be decoded is set aside as it is read.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

from attrs import define, evolve, field

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime import step as st
from wflang.runtime.ir import Value
from wflang.runtime.lifecycle import INSTANCE, StatusEvent
from wflang.runtime.outcome import bounded
from wflang.runtime.table import Table
from wflang.store import carried as carried_step
from wflang.store import rows
from wflang.store.backend import Param, Tx
from wflang.store.claims import Claims
from wflang.store.effects import outbox_end, stop_work
from wflang.store.status import StatusRows
from wflang.store.step_rows import OUTBOX_INSERT, outbox_row

log = logging.getLogger("wflang.store")

#: An event to step an instance with: (event, idempotency key, actor, reason, inbox row id).
Event = tuple[rt.Event, str, str | None, str | None, int | None]
#: A transition taken: (event or None for the start, idempotency key, actor, reason,
#: inbox row id, start input, the step).
Done = tuple[
    rt.Event | None, str, str | None, str | None, int | None, dict[str, Value] | None, st.Step
]


class Poisoned(Exception):
    """Stepping or storing some instance of a batch failed: run it again, carefully."""


@define
class Work:
    """One locked instance and the events to step it with, in order."""

    id: str
    row: rows.Locked
    table: Table
    instance: rt.Instance | None
    events: list[Event] = field(factory=list)


class Careful:
    """The careful path of ``Advance`` (its base): what it needs of the transaction is
    declared here, and stepping and writing (``_step``, ``_write``, ``_flush``) are its."""

    tx: Tx
    now: int
    claims: Claims
    unavailable: Callable[[BaseException], bool]
    status_rows: StatusRows
    decoded: dict[str, rt.Instance]
    columns: dict[str, carried_step.Moving]
    updates: list[tuple[tuple[bool, ...], tuple[Param, ...]]]
    history: list[tuple[Param, ...]]
    consumed: list[tuple[Param, ...]]
    fired: list[tuple[Param, ...]]
    finished: list[str]
    statuses: list[StatusEvent]
    outbox: list[tuple[Param, ...]]
    scheduled: int
    transitions: int
    more: bool

    def _step(self, w: Work) -> None:
        raise NotImplementedError

    def _write(self, w: Work, done: Sequence[Done]) -> None:
        raise NotImplementedError

    def _flush(self) -> None:
        raise NotImplementedError

    def _unreadable(self, row: rows.Locked, table: Table, err: Exception) -> None:
        """Dead-letter an instance whose stored state cannot be decoded (a corrupt or
        foreign document): its row says so, its calls and timers stop, an outbox event
        tells; the state is kept as it is, for a person to repair (or purge)."""
        reason = f"{rows.UNREADABLE}: {bounded(err)}"
        dead = rt.Status.DEAD_LETTERED.value
        if not self.tx.execute(
            "UPDATE wf_instance SET status = ?, wake_at = NULL, waiting_on = NULL, updated_at = ? "
            "WHERE id = ? AND status <> ?",
            (dead, self.now, row.id, dead),
        ):
            return  # set aside already (its inbox rows wait for the repair)
        log.error("instance dead-lettered: " + reason, extra={"instance": row.id}, exc_info=err)
        stop_work(self.tx, self.claims, row.id, self.now)
        end = rt.Finish(rt.Status.DEAD_LETTERED, None, reason)
        outbox_end(self.tx, row.id, row.seq, table, end, self.now)
        # a status change as any dead letter's, though no step made it (no state to step)
        change = StatusEvent(row.id, table.workflow, table.version, row.seq, self.now,
                             INSTANCE, dead, error=reason)  # fmt: skip
        self.statuses.append(change)
        if self.status_rows is not StatusRows.NONE:
            self.tx.execute(OUTBOX_INSERT, outbox_row(change))

    def _step_alone(self, w: Work) -> None:
        """Step one instance a transition at a time, each written at once in a savepoint
        of its own; the first that fails dead-letters the instance instead (its event
        taken, as any event is). The events after it stay in the inbox: the
        dead-lettered instance takes them next time as it takes any event (ignored,
        unless an operator's)."""
        steps: list[Event | None] = [None] if w.instance is None else []  # None: the start
        inst = w.instance
        for item in [*steps, *w.events]:
            one = evolve(w, instance=inst, events=[] if item is None else [item])
            try:
                with self._isolated():
                    self._step(one)
                    self._flush()
            except Exception as err:
                if self.unavailable(err):
                    raise
                self._dead_letter(one, item, err)
                self.more = True  # the events after it wait in its inbox, due now
                return
            inst = self.decoded[w.id]

    def _dead_letter(self, w: Work, item: Event | None, err: Exception) -> None:
        """Write ``item`` (None: the start) as the transition that dead-letters ``w``."""
        reason = bounded(err)
        log.error(
            "instance dead-lettered: stepping it failed",
            extra={"instance": w.id, "reason": reason},
            exc_info=err,
        )
        inst = w.instance
        input: dict[str, Value] | None = None
        if inst is None:  # the start failed: an instance with its input (if readable)
            try:
                input = dict(codec.loads(w.row.input_text))
            except Exception:
                input = {}
            inst = rt.Instance(
                w.id, w.table.workflow, w.table.version, rt.Status.RUNNING, input, {},
                seed=w.row.seed,
            )  # fmt: skip
        result = st.dead_letter(w.table, inst, self.now, reason)
        start: Event | tuple[None, str, str | None, str | None, None] = (
            None, "start", w.row.created_by, w.row.created_reason, None
        )  # fmt: skip
        event, key, actor, why, row_id = item or start
        try:
            with self._isolated():
                self._write(w, [(event, key, actor, why, row_id, input, result)])
                self._flush()
        except Exception as again:
            if self.unavailable(again):
                raise
            # Nothing of it could be written: it stays as it was, and the others go on.
            log.error(
                "instance could not be dead-lettered",
                extra={"instance": w.id, "reason": bounded(again)},
                exc_info=again,
            )

    @contextlib.contextmanager
    def _isolated(self) -> Iterator[None]:
        """A savepoint: if the block raises, what it wrote is undone, and so is what it
        added to this transaction's pending rows and counts."""
        lengths = (len(self.updates), len(self.history), len(self.consumed), len(self.fired),
                   len(self.finished), len(self.statuses), len(self.outbox))  # fmt: skip
        mark = (self.claims.mark(), dict(self.decoded), dict(self.columns), self.scheduled,
                self.transitions)  # fmt: skip
        self.tx.execute("SAVEPOINT wf_step")
        try:
            yield
        except BaseException:
            self.tx.execute("ROLLBACK TO SAVEPOINT wf_step")
            self.tx.execute("RELEASE SAVEPOINT wf_step")
            n_up, n_hist, n_cons, n_fired, n_fin, n_stat, n_out = lengths
            del self.updates[n_up:], self.history[n_hist:], self.consumed[n_cons:]
            del self.fired[n_fired:], self.finished[n_fin:]
            del self.statuses[n_stat:], self.outbox[n_out:]
            claims, self.decoded, self.columns, self.scheduled, self.transitions = mark
            self.claims.restore(claims)
            raise
        self.tx.execute("RELEASE SAVEPOINT wf_step")
