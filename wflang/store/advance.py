"""The body of one ``advance`` transaction (see ``wflang.store.sql``).

In one transaction: commit handler results (each fenced by the lease epoch it
ran with), lock the instances they and anything due (inbox rows, timers) wake,
step each through its events in time order with the pure step function, write
what the steps did (the instance, its history, consumed inbox rows, fired
timers, and the rows of its commands: ``wflang.store.effects``), and lease due
calls to the worker (``wflang.store.claims``).

A step that cannot be stepped or stored (a poisonous instance) never stops the
others: the transaction is run again carefully, each instance a transition at
a time in a savepoint, and the one that fails is dead-lettered with the reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from itertools import compress
from operator import ne

from wflang import faults
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime import step as st
from wflang.runtime.commands import interpret
from wflang.runtime.correlation import awaited_messages
from wflang.runtime.history import DEFAULT as DEFAULT_HISTORY
from wflang.runtime.history import HistoryPolicy
from wflang.runtime.ir import Value
from wflang.runtime.keys import inbox_row_delivery, task_delivery, timer_delivery
from wflang.runtime.lifecycle import INSTANCE, StatusEvent, lifecycle
from wflang.runtime.limits import Limits
from wflang.runtime.outcome import checked
from wflang.runtime.table import asynchronous
from wflang.runtime.waiting import waiting_on
from wflang.store import carried as carried_step
from wflang.store import compaction, inbox, messages, reads, rows
from wflang.store.backend import Dialect, Param, Pending, Row, Tx, chunks, fused, placeholders
from wflang.store.careful import Careful, Done, Poisoned, Work
from wflang.store.catalog import Catalog
from wflang.store.claims import Claims
from wflang.store.effects import StoreEffects, cancel_calls
from wflang.store.instance_cache import InstanceCache
from wflang.store.records import Advanced, TaskResult
from wflang.store.status import StatusRows, TaskStatus, ended
from wflang.store.step_rows import (
    CONSUME,
    FUSED_HISTORY,
    HISTORY_INSERT,
    HISTORY_ROW,
    OUTBOX_INSERT,
    fusable,
    outbox_row,
    update_instance,
)

log = logging.getLogger("wflang.store")


class Advance(Careful):
    """One ``advance`` transaction of a worker."""

    def __init__(
        self,
        tx: Tx,
        dialect: Dialect,
        *,
        now: int,
        worker: str,
        catalog: Catalog,
        cache: InstanceCache,
        unavailable: Callable[[BaseException], bool],
        claims: Claims,
        limits: Limits,
        careful: bool = False,
        status_rows: StatusRows = StatusRows.INSTANCES,
        history: HistoryPolicy | None = DEFAULT_HISTORY,
        now_sql: str = "",
    ) -> None:
        """``now_sql``: the database's clock as SQL that gives the same time in every
        statement of the transaction (``Dialect.tx_now``), for ``now`` to be read with
        the first statements instead of before them ("": ``now`` is the time)."""
        self.tx, self.d, self.now, self.worker = tx, dialect, now, worker
        self.now_sql = now_sql
        self.catalog, self.cache, self.unavailable = catalog, cache, unavailable
        self.claims = claims
        self.limits = limits
        self.history_policy = history  # how much history each instance keeps
        self.careful = careful  # step each instance on its own (see _step_all)
        self.status_rows = status_rows  # which lifecycle events are outbox rows too
        self.transitions = 0
        self.scheduled = 0  # tasks and inbox rows this transaction made for others
        self.decoded: dict[str, rt.Instance] = {}  # for the store's cache, once committed
        #: the instance rows to write: which columns besides ``state`` and ``seq``
        #: changed (a flag per column of ``step_rows.MOVING``), then the values to set and the id
        self.updates: list[tuple[tuple[bool, ...], tuple[Param, ...]]] = []
        #: each written instance's ``step_rows.MOVING`` columns as this transaction left them
        self.columns: dict[str, carried_step.Moving] = {}
        self.history: list[tuple[Param, ...]] = []
        self.consumed: list[tuple[Param, ...]] = []
        self.fired: list[tuple[Param, ...]] = []
        self.finished: list[str] = []
        self.statuses: list[StatusEvent] = []  # for the worker's hooks, once committed
        self.outbox: list[tuple[Param, ...]] = []  # their outbox rows, until ``_flush``
        self.rows: dict[str, rows.Locked] = {}  # the instance rows locked, as read
        #: a carried step's transaction, its guard not sent yet (``_flush`` may carry it)
        self.guarded: carried_step.Guarded | None = None
        #: this machine's clock when the database's was read (``now_sql``), if it was
        self.read_at: int | None = None
        self.more = self.carried = False  # ``Advanced.more``; a carried step's
        #: a carried step's answer to whether anything is due for the slot it frees
        self.probed: Pending | None = None
        self.delivered = False  # a carried step's: it steps an inbox row as announced
        self.clock_sql = ""  # a carried step's: the database's clock, if it is the store's

    def run(
        self, results: Sequence[TaskResult], limit: int, hinted: Sequence[str] = ()
    ) -> Advanced:
        work: dict[str, Work] = {}
        keyed = self._result_instances(results)
        ids = sorted(set(keyed.values()))
        # 1-3 are sent together and answered in one round trip (PostgreSQL's pipeline;
        # two statements there, ``reads.send_reads``), with the database's clock and,
        # when no results come, the calls due for the worker's free slots (5.):
        # 1. lock the instances the results belong to (waiting: their steps are short);
        # 2. fence each result: it commits only under the epoch it ran with, unexpired;
        # 3. lock other ready instances, skipping those another worker holds;
        # and read the inbox of the first ones and of those a delivery announced (of the
        # others, if any, it follows).
        tx, d, at = self.tx, self.d, self._at()
        clock = reads.Clocked(self.now_sql) if self.now_sql else None
        fence = [(r.key, r.epoch, keyed.get(r.key)) for r in results]
        read = set(ids).union(hinted)
        # 5.'s candidates, in this round trip, for a worker woken by new work (a signal's
        # step claims one call of several free slots). With results to commit their
        # steps mostly fill the slots they freed: asked after the steps, if any slot is
        # left (not locking calls that other workers could take meanwhile). SQLite has
        # no round trips to spare.
        asks = not results and not d.single_writer
        due = self.claims.due_queries(at) if asks else []
        locking, fencing, ready, inboxes, found = reads.send_reads(
            tx, d, at, ids, fence, limit, clock, inboxes_of=sorted(read), due=due
        )
        if asks:
            self.claims.found(found)
        if clock is not None:
            self.now = clock.now()
            self.read_at = time.time_ns() // 1_000_000
            self.claims.start(self.now)
        for answer in locking:
            self._add([rows.locked(r) for r in answer()], work)
        fenced = reads.fenced(fencing)
        # The fence went out with the lock: a call of an instance set aside as unreadable
        # (``_unreadable``) is cancelled as its other calls are, not closed by its result.
        cancel_calls(self.tx, [k for k, _ in fenced if keyed.get(k) not in work], self.now)
        accepted: list[tuple[str, TaskResult]] = []
        handed: list[str] = []  # async calls handed off: they wait for the client
        for r in results:
            iid = keyed.get(r.key)
            node = fenced.get((r.key, r.epoch))
            if iid is not None and node is not None and iid in work:
                if r.event.__class__ is rt.TaskCompleted and asynchronous(work[iid].table, node):
                    handed.append(r.key)
                    continue
                event = checked(work[iid].table, node, r.event)
                accepted.append((iid, TaskResult(r.key, r.epoch, event, r.instance_id)))
            else:
                log.warning("stale result refused", extra={"task": r.key, "epoch": r.epoch})
        for part in chunks(handed):
            self.tx.write(
                f"UPDATE wf_task SET status = '{TaskStatus.WAITING}', updated_at = ? "
                f"WHERE key IN ({placeholders(len(part))})",
                (self.now, *part),
            )
        committed = len(accepted) + len(handed)
        stale = len(results) - committed
        unread = [iid for iid in self._take_ready(ready, limit, work) if iid not in read]
        if unread:
            inboxes += reads.send_inbox(self.tx, self._at(), unread)
        # 4. Gather each instance's events in time order, step it, write what it did.
        self._gather(work, accepted, inboxes)
        return self._conclude(work, committed, stale)

    def run_carried(self, c: carried_step.Carry, clock_sql: str) -> Advanced:
        """Step one result (or a start) without first reads, behind a guard
        (``wflang.store.carried``: it raises ``Moved``, here or at the commit, if the
        general path must run); ``clock_sql``: the database's clock, which ``now`` must be
        just before ("": none)."""
        guard = carried_step.send_guard(self.tx, self.d, c, self.now, clock_sql)
        if guard:
            self.tx = self.guarded = carried_step.Guarded(self.tx, guard)
        self.carried = True  # it looks for no other work (nor due calls) but ``probed``
        self.clock_sql = clock_sql
        self.claims.start(self.now)
        row, r = c.row, c.result
        w = Work(row.id, row, self.catalog.table_for(self.tx, row.hash), c.instance)
        self.rows[row.id] = row
        work = {row.id: w}
        if c.delivery is not None:  # an inbox row, as announced (``carried.carry``)
            self.delivered = True
            delivery: list[Row] = [c.delivery]
            self._gather(work, [], (lambda: delivery,))
            return self._conclude(work, 0, 0)
        if r is None:  # the start of an instance this process created
            self._gather(work, [], ())
            return self._conclude(work, 0, 0)
        event = checked(w.table, c.node, r.event)
        self._gather(work, [(row.id, TaskResult(r.key, r.epoch, event, row.id))], ())
        return self._conclude(work, 1, 0)

    def _conclude(self, work: dict[str, Work], committed: int, stale: int) -> Advanced:
        """Step the instances with their events, write what they did, and lease due calls."""
        self._step_all(sorted(work.values(), key=lambda w: w.id))
        # 5. Claim due tasks for the worker's free slots left (found with the reads); a
        # carried step leaves them to the advance that follows it (``more``).
        claimed = tuple(self.claims.eager)
        if self.claims.left > 0 and not self.carried:
            claimed = tuple(sorted(claimed + self.claims.due(), key=lambda t: t.key))
        if claimed:
            faults.hit("claim.before-commit")
        if self.transitions:
            faults.hit("transition.before-commit")
        if self.scheduled:
            inbox.hint(self.tx)
        return Advanced(
            transitions=self.transitions,
            instances=len(work),
            results=committed,
            stale=stale,
            claimed=claimed,
            finished=tuple(self.finished),
            at=self.now,
            statuses=tuple(self.statuses),
            more=self.more
            or self.scheduled > 0
            or self.claims.interrupted
            or self.claims.crowded
            or (self.carried and self.probed is None),
        )

    # -- locking and gathering ----------------------------------------------------

    def _result_instances(self, results: Sequence[TaskResult]) -> dict[str, str]:
        keyed = {r.key: r.instance_id for r in results if r.instance_id is not None}
        keys = [r.key for r in results if r.instance_id is None]
        for part in chunks(keys):
            for key, iid in self.tx.query(
                f"SELECT key, instance_id FROM wf_task WHERE key IN ({placeholders(len(part))})",
                tuple(part),
            ):
                keyed[rows.text(key)] = rows.text(iid)
        return keyed

    def _take_ready(self, sent: Sequence[Pending], limit: int, work: dict[str, Work]) -> list[str]:
        """Up to ``limit`` of the ready instances locked (``reads.send_ready``) that this
        transaction did not hold already, added to ``work``: their ids."""
        fresh: list[str] = []
        self.more |= limit <= 0  # it did not look
        for answer in sent:
            # an instance due for two reasons comes twice
            found = list({r.id: r for r in map(rows.locked, answer()) if r.id not in work}.values())
            self.more |= len(found) >= limit  # others may be ready beyond the limit
            taken = found[: max(0, limit - len(fresh))]
            self._add(taken, work)
            fresh += [r.id for r in taken if r.id in work]  # not those set aside
        return fresh

    def _add(self, locked: Sequence[rows.Locked], work: dict[str, Work]) -> None:
        for row in locked:
            instance = None
            table = self.catalog.table_for(self.tx, row.hash)
            if row.state is not None:
                # The instance this process committed last, if nobody stepped it since:
                # decoding the stored document again is the costliest part of a lock.
                try:
                    instance = self.cache.get(row.id, row.seq) or codec.load_instance(row.state)
                except Exception as err:  # never stepped: set aside, and the others go on
                    self._unreadable(row, table, err)
                    continue
            work[row.id] = Work(row.id, row, table, instance)
            self.rows[row.id] = row

    def _at(self) -> reads.At:
        """The time in a statement: SQL and its parameters (the database's clock while
        ``now`` is not read yet, see ``__init__``)."""
        return (self.now_sql, ()) if self.now_sql else ("?", (self.now,))

    def _gather(
        self,
        work: dict[str, Work],
        accepted: list[tuple[str, TaskResult]],
        inboxes: Sequence[Pending],
    ) -> None:
        """Inbox rows and due timers by time, then the results committed here."""
        timed: dict[str, list[tuple[int, int, rt.Event, str | None, str | None]]] = {
            iid: [] for iid in work
        }
        for answer in inboxes:
            for found in answer():
                row = rows.inbox_row(found)
                if row.instance_id in timed:  # not an instance set aside as unreadable
                    timed[row.instance_id].append(
                        (row.available_at, row.id, row.event, row.actor, row.reason)
                    )
        for iid, w in work.items():
            if w.instance is not None:
                for t in w.instance.timers:
                    if t.due <= self.now:
                        timed[iid].append((t.due, -1, rt.TimerFired(t.id), None, None))
            for _at, row_id, event, actor, reason in sorted(timed[iid], key=lambda x: (x[0], x[1])):
                if isinstance(event, rt.TimerFired) and row_id < 0:
                    w.events.append((event, timer_delivery(event.timer), None, None, None))
                else:
                    w.events.append((event, inbox_row_delivery(row_id), actor, reason, row_id))
        for iid, r in accepted:
            work[iid].events.append((r.event, task_delivery(r.key), None, None, None))

    # -- stepping and writing -------------------------------------------------------

    def _step_all(self, ordered: Sequence[Work]) -> None:
        """Step the instances and write what they did, all together. If anything goes
        wrong but the database itself, the transaction is run again, carefully: each
        instance a transition at a time (``_step_alone``), so that one that cannot be
        stepped or stored is dead-lettered with the reason and every other one moves."""
        if self.careful:
            for w in ordered:
                self._step_alone(w)
            return
        try:
            for w in ordered:
                self._step(w)
            self._flush()
        except Exception as err:
            if self.unavailable(err):
                raise
            raise Poisoned from err

    def _step(self, w: Work) -> None:
        """Step an instance through its events and write what it did (its own rows at
        ``_flush``, for all instances together)."""
        done: list[Done] = []
        inst = w.instance
        if inst is None:
            input = codec.loads(w.row.input_text)
            result = st.start(w.table, w.id, input, self.now, w.row.seed, self.limits)
            inst = result.instance
            by, why = w.row.created_by, w.row.created_reason
            done.append((None, "start", by, why, None, input, result))
        for event, key, actor, reason, row_id in w.events:
            result = st.step(w.table, inst, event, self.now, self.limits)
            inst = result.instance
            done.append((event, key, actor, reason, row_id, None, result))
        self._write(w, done)

    def _write(self, w: Work, done: Sequence[Done]) -> None:
        history: list[tuple[Param, ...]] = []
        consumed: list[tuple[Param, ...]] = []
        commands: list[rt.Command] = []
        inst = w.instance
        statuses: list[StatusEvent] = []
        for event, key, actor, reason, row_id, input, result in done:
            statuses += lifecycle(w.table, inst, result.instance, event, self.now)
            inst = result.instance
            history.append(
                self._history_row(w.id, inst.seq, event, input, result, key, actor, reason)
            )
            commands.extend(result.commands)
            if row_id is not None:
                consumed.append((inst.seq, row_id))
        assert inst is not None, "an instance is written after its start"
        self.decoded[w.id] = inst
        if self.catalog.waits_for_messages(w.row.hash, w.table):
            self._resubscribe(w, inst)
        wake = min((t.due for t in inst.timers), default=None)
        # The instance's own rows are written for all instances together (_flush).
        # what it waits on, for `wf list --waiting-on` (none once it has finished)
        waits = None if inst.status.finished else " ".join(waiting_on(inst.tokens)) or None
        state = codec.dump_instance(inst)
        # Only the columns that changed are set: an index on a column left out of the
        # statement is not touched, and on SQLite each index page it would rewrite is one
        # more page the commit writes (a step in a chain changes none of these but the time).
        row = w.row
        old = self.columns.get(w.id) or (row.status, row.wake_at, row.waiting_on, row.updated_at)
        new = (inst.status.value, wake, waits, self.now)
        self.columns[w.id] = new
        changed = tuple(map(ne, new, old))
        self.updates.append((changed, (state, inst.seq, *compress(new, changed), w.id)))
        before = 0 if w.instance is None else w.instance.seq
        compaction.after_steps(self.tx, self.history_policy, w.id, before, inst, state, self.now)
        self.history.extend(history)
        self.statuses += statuses
        if self.status_rows is StatusRows.ALL:
            self.outbox += map(outbox_row, statuses)
        elif self.status_rows is StatusRows.INSTANCES:
            self.outbox += [outbox_row(e) for e in statuses if e.subject == INSTANCE]
        self.consumed.extend(consumed)
        self.fired.extend((w.id, e.timer) for e, *_ in done if isinstance(e, rt.TimerFired))
        effects = StoreEffects(
            self.tx, self.claims, now=self.now, instance_id=w.id, table=w.table, seq=inst.seq,
            parent_id=w.row.parent_id, dialect=self.d, catalog=self.catalog,
        )  # fmt: skip
        interpret(effects, w.id, w.row.parent_key, commands)
        self.scheduled += effects.scheduled
        self.more |= effects.due_now
        self.transitions += len(history)
        if ended(inst.status) and (w.instance is None or not ended(w.instance.status)):
            self.finished.append(w.id)

    def _resubscribe(self, w: Work, inst: rt.Instance) -> None:
        """Keep the instance's message subscriptions in line with its tokens."""
        before, after = awaited_messages(w.instance), awaited_messages(inst)
        if before != after:
            tx, now = self.tx, self.now
            self.scheduled += messages.resubscribe(
                tx, self.d,
                lambda t, iid, ev, dedupe: inbox.written(inbox.put(t, iid, ev, dedupe, at=now)),
                lambda digest, name, data: self.catalog.message_taken(tx, digest, name, data),
                now=now, instance_id=w.id, table_hash=w.row.hash, before=before, after=after,
            )  # fmt: skip

    def _history_row(
        self,
        iid: str,
        seq: int,
        event: rt.Event | None,
        input: dict[str, Value] | None,
        result: st.Step,
        key: str,
        actor: str | None = None,
        reason: str | None = None,
    ) -> tuple[Param, ...]:
        return (
            iid,
            seq,
            self.now,
            None if event is None else codec.dump_event(event),
            None if input is None else codec.dumps(input),
            codec.dumps(result.decisions),  # a tuple of strings: a JSON array
            codec.dumps(codec.unstructure_commands(result.commands)),
            codec.dumps(codec.unstructure_changes(result.changes)) if result.changes else None,
            key,
            actor,
            reason,
            self.worker,
        )

    def _flush(self) -> None:
        """Write what the steps produced for their own instances, a statement per table,
        and forget it (written). One instance's row and history (a sequential step), and
        the inbox rows it took and its outbox rows, go as parts of the statement that
        inserts its next call where the database can (``backend.fused``)."""
        one = len(self.updates) == 1 and 0 < len(self.history) <= FUSED_HISTORY
        fuse = self.d.fuses_writes and one
        # and the inbox and outbox rows (a carried step's too: its guard, in the statement,
        # reads them as they were before it, and fails the whole statement if it fails)
        parts = fusable(self.consumed, self.outbox) if fuse else []
        if not fuse:
            by_columns: dict[tuple[bool, ...], list[tuple[Param, ...]]] = {}
            for changed, params in self.updates:
                by_columns.setdefault(changed, []).append(params)
            for changed, params_list in by_columns.items():
                self.tx.executemany(update_instance(changed), params_list)
            self.tx.executemany(f"{HISTORY_INSERT}{HISTORY_ROW}", self.history)
        self.tx.executemany(CONSUME, self.consumed)
        self.tx.executemany(
            "DELETE FROM wf_timer WHERE instance_id = ? AND timer_id = ?", self.fired
        )
        if self.outbox:
            self.tx.executemany(OUTBOX_INSERT, self.outbox)
        # A carried step's guard not sent yet (nothing went before it): the first write
        # carries it, its instance's update reading it (``carried.GUARDED``).
        guard = self.guarded.take() if self.guarded is not None else []
        carried: list[tuple[str, Sequence[Param]]] = []
        if fuse:
            values = ", ".join([HISTORY_ROW] * len(self.history))
            ((changed, params),) = self.updates
            # Each update reads the guard too: none may lock its row before the guard has
            # locked the instance's (every path locks an instance before its inbox rows).
            tail = carried_step.GUARDED if guard else ""
            carried += [
                (update_instance(changed) + tail, params),
                (f"{HISTORY_INSERT}{values}", [x for row in self.history for x in row]),
                *[(sql + tail if sql == CONSUME else sql, ps) for sql, ps in parts],
            ]
        elif guard:  # nothing was written: the guard alone
            self.tx.write(*carried_step.alone(guard))
            guard = []
        # Whether anything is due (``Store.advance`` reads the answer after the commit):
        # for the slot a carried step frees, as the statement's answer, no round trip
        # more; and after a delivery, which woke an idle worker: other work then, or the
        # worker waits for the call it leased. At the database's clock (the step's own
        # time may be a little behind it).
        at: reads.At = (self.clock_sql, ()) if self.clock_sql else ("?", (self.now,))
        if self.carried and self.claims.left > 0 and not self.claims.eager:
            probe, params = self.claims.due_probe(at, next(iter(self.rows)))
            self.probed = self.tx.send(*fused(carried, probe, params, guard))
        else:
            self.claims.flush(carried, guard)
            if self.delivered:
                self.probed = self.tx.send(*self.claims.due_probe(at, next(iter(self.rows))))
        self.updates, self.history, self.consumed, self.fired = [], [], [], []
        self.outbox = []
