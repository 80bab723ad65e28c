"""Leasing service calls to a worker, inside an ``advance`` transaction.

A worker claims due calls for its free slots: a claim raises the task's
``lease_epoch`` (which fences its result) and sets the lease's expiry; an
expired lease is claimed again by the same query. A call that a step of this
very transaction schedules goes to the worker at once if it has a free slot
(``claim_new``): its row is inserted already leased, with no claim round trip.
An at-most-once call claimed a second time was started and its worker vanished:
it is never run again (``interrupt``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.keys import task_delivery
from wflang.runtime.outcome import interrupted
from wflang.store import inbox, rows
from wflang.store.backend import Dialect, Named, Param, Pending, Row, Tx, fused, placeholders
from wflang.store.reads import At
from wflang.store.records import ClaimedTask
from wflang.store.status import TaskKind, TaskStatus

_READY = f"kind = '{TaskKind.SERVICE}' AND status = '{TaskStatus.READY}'"
#: A call leased at once (``claim_new``): its row's values.
_LEASED_ROW = (
    f"(?, ?, ?, '{TaskKind.SERVICE}', ?, ?, ?, '{TaskStatus.RUNNING}', ?, ?, 1, ?, 1, ?, ?, ?)"
)
#: A call that is due at ``{now}``: ready, or whose lease expired.
_DUE = (
    f"kind = '{TaskKind.SERVICE}' AND ((status = '{TaskStatus.READY}' AND run_at <= {{now}}) "
    f"OR (status = '{TaskStatus.RUNNING}' AND lease_expires_at < {{now}}))"
)
_DUE_ONE_WRITER = f"SELECT key FROM wf_task WHERE {_DUE}"
_LEASE = (
    f"UPDATE wf_task SET status = '{TaskStatus.RUNNING}', lease_owner = ?, "
    "lease_epoch = lease_epoch + 1, lease_expires_at = ?, claims = claims + 1, updated_at = ? "
)
_INTERRUPT = (
    f"UPDATE wf_task SET status = '{TaskStatus.INTERRUPTED}', lease_owner = NULL, "
    "lease_expires_at = NULL WHERE key = ?"
)
_EXPIRED = f"kind = '{TaskKind.SERVICE}' AND status = '{TaskStatus.RUNNING}'"
#: Calls leased at once (``claim_new``): the statement before its rows (``_LEASED_ROW``)...
_INSERT_LEASED = (
    "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, status, run_at, "
    "at_most_once, claims, lease_owner, lease_epoch, lease_expires_at, created_at, updated_at) "
    "VALUES "
)
#: ... and after them: a key that is there already is not inserted again.
_IF_NEW = " ON CONFLICT (key) DO NOTHING"


class Claims:
    """The calls one ``advance`` leases to its worker, and the slots it has left."""

    def __init__(
        self,
        tx: Tx,
        dialect: Dialect,
        *,
        worker: str,
        now: int,
        lease_ms: int,
        slots: int,
        services: Sequence[str] | None,
        once: frozenset[str],
    ) -> None:
        self.tx, self.d, self.worker, self.lease_ms = tx, dialect, worker, lease_ms
        self.start(now)
        self.left = slots  # slots the worker has free for calls
        self.services = None if services is None else sorted(set(services))
        self.wanted = None if services is None else frozenset(services)
        self.once = once
        self.eager: list[ClaimedTask] = []  # calls scheduled here and claimed at once
        self.eager_rows: dict[str, tuple[Param, ...]] = {}  # their rows, inserted at flush
        self.inserting: list[Pending] = []  # the keys those inserts wrote (``settle``)
        self.sent: set[str] = set()  # the keys they tried
        self.candidates: list[Pending] | None = None  # the due calls asked for (``send_due``)
        self.interrupted = False  # an inbox row due now (``interrupt``)
        self.asked = 0  # how many due calls each of ``due_queries`` asked for
        self.crowded = False  # as many came: more may be due than were looked at

    def start(self, now: int) -> None:
        """The time of the transaction (known once its first answers are in)."""
        self.now, self.until = now, now + self.lease_ms

    def takes(self, service: str) -> bool:
        """Whether a call scheduled now goes to this worker at once."""
        return self.left > 0 and (self.wanted is None or service in self.wanted)

    def claim_new(self, instance_id: str, c: rt.ScheduleTask) -> None:
        """A call already leased to this worker (epoch 1), inserted at ``flush``."""
        once = 1 if c.service in self.once else 0
        self.eager_rows[c.key] = (
            c.key, instance_id, c.node, c.service, codec.dumps(c.args), c.attempt, self.now,
            once, self.worker, self.until, self.now, self.now,
        )  # fmt: skip
        self.left -= 1
        self.eager.append(
            ClaimedTask(c.key, instance_id, c.node, c.service, dict(c.args), c.attempt, 1,
                        self.until)
        )  # fmt: skip

    def unclaim(self, which: Callable[[ClaimedTask], bool]) -> None:
        """Forget calls claimed in this transaction that a later step cancelled."""
        kept = [t for t in self.eager if not which(t)]
        self.left += len(self.eager) - len(kept)
        self.eager = kept

    def flush(
        self, carried: Sequence[tuple[str, Sequence[Param]]] = (), head: Sequence[Named] = ()
    ) -> None:
        """Insert the calls claimed at once, a statement per 200, not waiting for the
        answers (``settle`` reads them once the transaction has committed); the first
        statement carries the writes ``carried`` (``backend.fused``: other tables'),
        and the queries ``head`` before them, which are sent alone if there is no call
        to insert."""
        rows_ = [self.eager_rows[t.key] for t in self.eager if t.key in self.eager_rows]
        if len(rows_) == 1 and self.d.single_writer and not carried and not head:
            # One call (a sequential step's), in process: whether it was inserted is the
            # count of rows the statement inserted. RETURNING would cost SQLite a
            # temporary table for the rows it returns, built at each execution.
            (row,) = rows_
            inserted = self.tx.execute(f"{_INSERT_LEASED}{_LEASED_ROW}{_IF_NEW}", row)
            found: list[Row] = [(row[0],)] if inserted else []
            self.inserting.append(lambda: found)
            self.sent.add(rows.text(row[0]))
            rows_ = []
        for i in range(0, len(rows_), 200):
            part = rows_[i : i + 200]
            values = ", ".join([_LEASED_ROW] * len(part))
            sql, params = fused(
                carried if i == 0 else (),
                f"{_INSERT_LEASED}{values}{_IF_NEW} RETURNING key",
                tuple(x for row in part for x in row),
                head if i == 0 else (),
            )
            self.inserting.append(self.tx.send(sql, params))
            self.sent.update(rows.text(row[0]) for row in part)
        if carried and not rows_:
            self.tx.write(*fused(carried[:-1], *carried[-1], head))
        self.eager_rows = {}

    def settle(self, claimed: Sequence[ClaimedTask]) -> tuple[ClaimedTask, ...]:
        """The calls of ``claimed`` that are this worker's to run: a call inserted at once
        whose key was already there (never, as keys are unique per visit) is not."""
        inserted = {rows.text(k) for answer in self.inserting for (k,) in answer()}
        return tuple(t for t in claimed if t.key in inserted or t.key not in self.sent)

    def mark(self) -> tuple[list[ClaimedTask], dict[str, tuple[Param, ...]], int]:
        """What to go back to if a savepoint is rolled back (``restore``)."""
        return list(self.eager), dict(self.eager_rows), self.left

    def restore(self, mark: tuple[list[ClaimedTask], dict[str, tuple[Param, ...]], int]) -> None:
        self.eager, self.eager_rows, self.left = mark

    def send_due(self, at: At) -> None:
        """Ask for the calls due now (ready, or whose lease expired) for every free slot,
        with the transaction's first reads (or, if not asked then, by ``due``): on
        PostgreSQL they come back in their round trip, locked (``SKIP LOCKED``) until the
        commit. ``due`` leases those that the
        slots left after this transaction's steps can take, and only those that are still
        due then (a step of this transaction may have cancelled one)."""
        self.candidates = [self.tx.send(sql, args) for sql, args in self.due_queries(at)]

    def due_queries(self, at: At) -> list[tuple[str, tuple[Param, ...]]]:
        """``send_due``'s queries (each of one column, the key), for ``send_due`` to send
        or for another statement to carry as its parts (``reads.send_reads``, which
        hands their answers to ``found``)."""
        n, services = self.left, self.services
        if n <= 0 or services == []:
            return []
        self.asked = n
        now, now_params = at
        only = "" if services is None else f" AND service IN ({placeholders(len(services))})"
        params: tuple[Param, ...] = tuple(services or ())
        if self.d.single_writer:  # due and expired calls in one statement
            return [
                (
                    f"{_DUE_ONE_WRITER.format(now=now)}{only} LIMIT ?",
                    (*now_params, *now_params, *params, n),
                )
            ]
        return [
            (
                f"SELECT key FROM wf_task WHERE {_READY} AND run_at <= {now}{only} "
                f"ORDER BY run_at, key LIMIT ?{self.d.skip_locked}",
                (*now_params, *params, n),
            ),
            (
                f"SELECT key FROM wf_task WHERE {_EXPIRED} AND lease_expires_at < {now}{only} "
                f"ORDER BY lease_expires_at, key LIMIT ?{self.d.skip_locked}",
                (*now_params, *params, n),
            ),
        ]

    def due_probe(self, at: At, instance_id: str) -> tuple[str, tuple[Param, ...]]:
        """One query, 1 if anything is due at ``at`` for a worker (another instance's timer
        or wake-up, an inbox row, a call of its services ready or whose lease expired:
        what an ``advance`` locks or claims), else 0; ``instance_id``: the instance the
        transaction steps (its row, as it was, may say it is due: its start; and its inbox
        rows, as they were, one that it takes: a carried step's guard has checked that
        no other is due). Rows others hold count too: it may say 1 for nothing, never 0
        for something."""
        now, p = at
        only = (
            "" if self.services is None else f" AND service IN ({placeholders(len(self.services))})"
        )
        calls = (
            ""
            if self.services == []
            else f" OR EXISTS (SELECT 1 FROM wf_task WHERE {_DUE.format(now=now)}{only})"
        )
        sql = (
            f"SELECT CASE WHEN EXISTS (SELECT 1 FROM wf_instance WHERE wake_at <= {now} "
            "AND id <> ?) OR EXISTS (SELECT 1 FROM wf_inbox WHERE consumed_seq IS NULL "
            f"AND available_at <= {now} AND instance_id <> ?){calls} THEN 1 ELSE 0 END"
        )
        due_calls = (*p, *p, *(self.services or ())) if calls else ()
        return sql, (*p, instance_id, *p, instance_id, *due_calls)

    def found(self, candidates: list[Pending]) -> None:
        """The answers of ``due_queries`` sent by another statement."""
        self.candidates = candidates

    def due(self) -> tuple[ClaimedTask, ...]:
        """Lease up to ``left`` of the due calls ``send_due`` found that are still due, by
        key."""
        if self.left <= 0:
            return ()
        if self.candidates is None:  # not asked with the first reads: now, then
            self.send_due(("?", (self.now,)))
        found = [[rows.text(k) for (k,) in answer()] for answer in self.candidates or ()]
        # A query that came back full may have left due calls out (``Advanced.more``),
        # which a slot freed by a call this transaction cancels would not take.
        self.crowded = any(len(part) >= self.asked for part in found)
        keys = [k for part in found for k in part][: self.left]
        if not keys:
            return ()
        leased = self.tx.query(
            f"{_LEASE}WHERE key IN ({placeholders(len(keys))}) AND {_DUE.format(now='?')} "
            f"RETURNING {rows.LEASED_COLUMNS}",
            (self.worker, self.until, self.now, *keys, self.now, self.now),
        )
        claimed: list[ClaimedTask] = []
        for call in map(rows.leased, leased):
            # A call that was started as at-most-once is never started again, whatever
            # this worker was told: the flag recorded on the task decides.
            if call.at_most_once and call.claims > 1:
                self.interrupt(call.key, call.instance_id, call.node)
                continue
            if call.service in self.once and not call.at_most_once:
                self.tx.write("UPDATE wf_task SET at_most_once = 1 WHERE key = ?", (call.key,))
            claimed.append(
                ClaimedTask(call.key, call.instance_id, call.node, call.service,
                            codec.loads(call.args_json), call.attempt, call.epoch, self.until)
            )  # fmt: skip
        claimed.sort(key=lambda c: c.key)
        return tuple(claimed)

    def interrupt(self, key: str, instance_id: str, node: str) -> None:
        """An at-most-once call whose worker vanished after starting it: never run again."""
        self.interrupted = True
        self.tx.write(_INTERRUPT, (key,))
        inbox.post(self.tx, instance_id, interrupted(key, node), task_delivery(key), at=self.now)
