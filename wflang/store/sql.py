"""The durable store: the same logic on SQLite and PostgreSQL.

Two kinds of work move an instance, and they are guarded differently:

* **Transitions** run the pure step function. They take microseconds, so a
  worker does them *inside* one short write transaction that locks the
  instance rows (``FOR UPDATE [SKIP LOCKED]`` on PostgreSQL, the single writer
  lock on SQLite), steps them, and writes everything a step produces: the new
  state, one history row per event, consumed inbox rows, timers, tasks, child
  instances, parent notifications and outbox rows. Either all of it commits or
  none does; a worker killed before the commit leaves no trace.
* **Handler calls** take as long as they take, so they never run inside a
  transaction. A worker claims a task with a lease (``lease_epoch`` + 1,
  expiry from the database clock; expired leases are reclaimed by the same
  claim query), renews it by heartbeat, and commits the result only while its
  epoch is still the task's: a worker whose lease was lost cannot commit
  (``stale``). The result's commit is fused with the transition it causes and
  with the claim of the next tasks (``advance``), so a chain of steps costs one
  transaction per step; a worker with many results commits them together
  (group commit), each instance still atomic and each result still fenced.

Rows are locked in one order (instances by id, then tasks), so two workers can
only wait for each other, never deadlock; a deadlock or busy error from the
database is retried. Times come from the database clock unless a clock is
injected (tests, where time is virtual).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from attrs import evolve

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.history import DEFAULT as DEFAULT_HISTORY
from wflang.runtime.history import HistoryPolicy
from wflang.runtime.ids import instance_seed
from wflang.runtime.ir import Value
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.table import Table
from wflang.store import (
    browse,
    carried,
    catalog,
    inbox,
    messages,
    ops,
    queries,
    rows,
)
from wflang.store.advance import Advance
from wflang.store.backend import Backend, Pending, Tx, redact_url
from wflang.store.careful import Poisoned
from wflang.store.catalog import Catalog
from wflang.store.claims import Claims
from wflang.store.histories import Histories
from wflang.store.instance_cache import InstanceCache
from wflang.store.records import (
    Advanced,
    Creation,
    Deployed,
    InstanceInfo,
    StoreError,
    TaskInfo,
    TaskResult,
    VersionInfo,
)
from wflang.store.rows import UNREADABLE
from wflang.store.schema import MIGRATIONS, schema_problem
from wflang.store.status import PENDING, StatusRows
from wflang.store.upkeep import Upkeep

Clock = Callable[[], int]
__all__ = ["UNREADABLE", "Clock", "Store"]  # UNREADABLE: see wflang.store.rows
T = TypeVar("T")


def created_row(
    deployed: Deployed, text: str, instance_id: str, actor: str | None, reason: str | None, at: int
) -> rows.Locked:
    """The row of an instance as ``ops.create`` writes it at ``at``, its input ``text``."""
    return rows.Locked(
        instance_id, deployed.hash, -1, None, text,
        instance_seed(instance_id), None, None, actor, reason, PENDING, at, None, at,
    )  # fmt: skip


class Store(Histories, Upkeep):
    """A durable store on a backend; thread-safe (each thread has its connection).

    A thin facade: each request is one transaction that calls the module that
    knows it (``catalog``, ``queries``, ``ops``, ``messages``, ``retention``,
    ``advance``)."""

    def __init__(self, backend: Backend, clock: Clock | None = None) -> None:
        self.backend = backend
        self.dialect = backend.dialect
        self.clock = clock
        self.catalog = Catalog()
        self.cache = InstanceCache()  # instances as this process last committed them
        #: whether a sequential step may skip its first reads (``wflang.store.carried``)
        self.carries = True
        self.carrying = carried.Carrying()

    @property
    def url(self) -> str:
        return redact_url(self.backend.url)  # shown to people: never the password

    def close(self) -> None:
        self.backend.close()

    # ------------------------------------------------------------------ plumbing

    def now(self, tx: Tx | None = None) -> int:
        """The store's clock: the injected one, else the database's."""
        if self.clock is not None:
            return self.clock()
        if self.dialect.local_clock:  # SQLite reads this machine's clock too: no query
            return time.time_ns() // 1_000_000
        if tx is not None:
            return rows.scalar(tx.query(f"SELECT {self.dialect.now}"))
        with self.backend.read() as rtx:
            return rows.scalar(rtx.query(f"SELECT {self.dialect.now}"))

    def _write(self, fn: Callable[[Tx], T], *, pipelined: bool = True) -> T:
        """Run ``fn`` in a write transaction, again if the database asks for a retry;
        ``pipelined`` (``Backend.transaction``): what it writes waits for no answer, and
        an error of it is raised at the commit or at the next statement that waits."""
        for attempt in range(50):
            try:
                with self.backend.transaction(pipelined=pipelined) as tx:
                    return fn(tx)
            except Exception as err:
                if not self.backend.retryable(err) or attempt == 49:
                    raise
                time.sleep(min(0.001 * 2**attempt, 0.1))  # contention backoff, not a test
        raise AssertionError("unreachable")

    def _read(self, fn: Callable[[Tx], T]) -> T:
        with self.backend.read() as tx:
            return fn(tx)

    # ---------------------------------------------------------------- migrations

    def schema_version(self) -> int:
        return self._read(queries.schema_version)

    def migrate(self) -> list[int]:
        """Apply the missing migrations in order; safe to run twice or at once."""
        applied: list[int] = []
        for m in MIGRATIONS:
            with self.backend.migration_lock() as tx:
                if ops.migrate(tx, self.dialect, m, self.now(tx)):
                    applied.append(m.version)
        return applied

    def check_schema(self) -> None:
        problem = schema_problem(self.schema_version(), self.url)
        if problem is not None:
            raise StoreError(problem)

    # ------------------------------------------------------------------ versions

    def deploy(self, table: Table, source_file: str | None = None) -> bool:
        """Register a compiled version; False when exactly this version is already there."""
        return self.deploy_all([(table, source_file)])[0]

    def deploy_all(
        self,
        tables: Sequence[tuple[Table, str | None]],
        texts: Sequence[str | None] = (),
    ) -> list[bool]:
        """Register compiled versions together, all or none (one transaction); for each,
        False when exactly that version was already there. ``texts``: the source each
        was compiled from, kept to draw it (``source``)."""
        given = list(texts) + [None] * (len(tables) - len(texts))
        prepared = [(t, src, *self.catalog.prepare(t)) for t, src in tables]
        result = self._write(
            lambda tx: [
                catalog.register(tx, *p, self.now(tx), text)
                for p, text in zip(prepared, given, strict=True)
            ]
        )
        for table, _, _, digest in prepared:
            self.catalog.keep(digest, table)
        return result

    def source(self, digest: str) -> tuple[str | None, str | None]:
        """The file a deployed version was compiled from, and its text as deployed."""
        return self._read(lambda tx: catalog.source(tx, digest))

    def deployed(self, name: str, version: int | None = None) -> Deployed:
        return self._read(lambda tx: self.catalog.deployed(tx, name, version))

    def table_for(self, digest: str) -> Table:
        cached = self.catalog.cached(digest)
        if cached is not None:
            return cached
        return self._read(lambda tx: self.catalog.table_for(tx, digest))

    def tables(self) -> list[Table]:
        """Every deployed table (all workflows, all versions)."""
        return [self.table_for(d) for d in self._read(catalog.hashes)]

    def workflows(self) -> list[str]:
        """The name of every deployed workflow (no count of instances: cheap)."""
        return self._read(catalog.names)

    def versions(self, name: str | None = None) -> list[VersionInfo]:
        """Every deployed version with its running and finished instance counts."""
        return self._read(lambda tx: catalog.versions(tx, name))

    # ----------------------------------------------------------------- instances

    def create(
        self,
        deployed: Deployed,
        input: Mapping[str, Value],
        instance_id: str,
        *,
        actor: str | None = None,
        reason: str | None = None,
    ) -> bool:
        """Create an instance for a worker to start; False if the id exists with this input.

        Starting is idempotent by id: a client that retries after a lost answer
        gets the same instance, not a second one.
        """

        text = codec.dumps(dict(input))  # as stored, and as the cache keeps it

        def run(tx: Tx) -> Pending:
            # the database's clock in the insert (in its 3 columns), not read on its own
            local = self.clock is not None or self.dialect.local_clock
            inserted = ops.create(
                tx, self.dialect, workflow=deployed.name, version=deployed.version,
                table_hash=deployed.hash, input_text=text, instance_id=instance_id,
                now=self.now() if local else self.dialect.tx_now, actor=actor, reason=reason,
            )  # fmt: skip
            if not self.dialect.notify and inbox.written(inserted):  # else it announced
                inbox.hint(tx)
            return inserted

        written = self._write(run)()
        if written:  # as written, for a worker here to start without reading it back
            at = rows.integer(written[0][-1])
            self.cache.created(created_row(deployed, text, instance_id, actor, reason, at))
            return True
        # Taken (rare: a client's retry): read after, as nothing was written.
        self._read(lambda tx: ops.existing(tx, instance_id, deployed.name, input))
        return False

    def instance(self, instance_id: str) -> InstanceInfo:
        return self._read(lambda tx: queries.instance(tx, instance_id))

    def instances(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        limit: int = 100,
        waiting_on: str | None = None,
        still_for: int | None = None,
    ) -> list[InstanceInfo]:
        """Instances, oldest first; ``waiting_on`` a label (``waiting.wait_label``);
        ``still_for`` (ms): the active ones that have not moved for that long by the
        store's clock (stuck), the longest still first."""

        def read(tx: Tx) -> list[InstanceInfo]:
            moved_before = None if still_for is None else self.now(tx) - still_for
            return queries.instances(
                tx, self.dialect, status=status, workflow=workflow, limit=limit,
                waiting_on=waiting_on, moved_before=moved_before,
            )  # fmt: skip

        return self._read(read)

    def browse(self, query: browse.InstanceQuery) -> browse.InstancePage:
        """A page of instances (see ``wflang.store.browse``): filtered, in the query's
        order, after the key of the page before."""
        return self._read(lambda tx: browse.instance_page(tx, self.dialect, query))

    def deliver(
        self,
        instance_id: str,
        event: rt.Event | ops.Admit,
        *,
        dedupe_key: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
        unless_pending: Callable[[rt.Event, str | None], None] | None = None,
        admits_unfinished: bool = False,
    ) -> bool:
        """Put an event in an instance's inbox; False if its dedupe key was already there.

        ``event`` may be an ``ops.Admit``: a function of the instance's status and its
        version's table that returns the event or raises to refuse it (a client's check
        of a signal's payload). It and ``unless_pending``, which sees each event still
        waiting in the inbox and raises to refuse the delivery, run in the delivering
        transaction with the instance row locked: two requests at once cannot both pass
        them, and a refusal writes nothing. ``admits_unfinished``: the Admit refuses only
        finished statuses, else judges by the table (``ops.deliver_at_once``).
        """
        local = self.clock is not None or self.dialect.local_clock
        at_once = self.dialect.fuses_writes and admits_unfinished and unless_pending is None
        if at_once and callable(event):
            delivered = ops.deliver_at_once(
                self._write, self.dialect, instance_id, event, self.catalog.read(),
                dedupe_key=dedupe_key, now=self.now() if local else self.dialect.now,
                actor=actor, reason=reason,
            )  # fmt: skip
            if delivered is not None:
                return delivered

        def run(tx: Tx) -> Pending:
            # The database's clock is read with the lock, not by a statement of its own.
            now = self.now() if local else self.dialect.now
            written = ops.deliver(
                tx, self.dialect, instance_id, event, dedupe_key=dedupe_key, now=now,
                actor=actor, reason=reason, unless_pending=unless_pending,
                table_for=lambda digest: self.catalog.table_for(tx, digest),
            )  # fmt: skip
            if not self.dialect.notify:  # else the insert announced it (``ops.deliver``)
                # Before knowing whether the row was written (known at the commit): a
                # duplicate wakes the workers for nothing, a hint as every wake-up is.
                inbox.hint(tx, instance_id)
            return written

        return bool(self._write(run)())

    def publish(
        self,
        message: str,
        correlation: str,
        payload: Mapping[str, Value],
        *,
        key: str | None = None,
        ttl_ms: int = 0,
        actor: str | None = None,
        reason: str | None = None,
    ) -> messages.Published:
        """Give a message to every instance waiting for it with this correlation; with
        ``ttl_ms``, also to those that start waiting for it before it expires (see
        ``wflang.store.messages``). A second publication with the same ``key`` is
        ignored."""

        def run(tx: Tx) -> messages.Published:
            now = self.now(tx)
            published = messages.publish(
                tx,
                self.dialect,
                lambda t, iid, event, dedupe: inbox.written(
                    inbox.put(t, iid, event, dedupe, at=now, actor=actor, reason=reason)
                ),
                lambda digest, name, data: self.catalog.message_taken(tx, digest, name, data),
                now=now,
                message=message,
                correlation=correlation,
                payload=payload,
                key=key,
                ttl_ms=ttl_ms,
                actor=actor,
            )
            if published.delivered:
                inbox.hint(tx)
            return published

        return self._write(run)

    # --------------------------------------------------------------------- tasks

    def tasks(
        self,
        *,
        kind: str | None = None,
        status: str | None = None,
        instance_id: str | None = None,
        limit: int = 100,
    ) -> list[TaskInfo]:
        return self._read(
            lambda tx: queries.tasks(
                tx, kind=kind, status=status, instance_id=instance_id, limit=limit
            )
        )

    def task(self, key: str) -> TaskInfo:
        return self._read(lambda tx: queries.task(tx, key))

    def close_human_task(
        self,
        key: str,
        event: rt.TaskCompleted | rt.TaskFailed,
        *,
        actor: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Finish an open human task: the task closes and its event is delivered, together."""

        def run(tx: Tx) -> None:
            ops.close_human_task(tx, key, event, now=self.now(tx), actor=actor, reason=reason)
            inbox.hint(tx)

        self._write(run)

    def heartbeat(self, worker: str, leases: Sequence[tuple[str, int]], lease_ms: int) -> list[str]:
        """Extend the leases still held; the keys of those that were lost."""
        if not leases:
            return []
        return self._write(lambda tx: ops.heartbeat(tx, leases, lease_ms, self.now(tx)))

    # ------------------------------------------------------------------- advance

    def advance(
        self,
        worker: str,
        *,
        results: Sequence[TaskResult] = (),
        instances: int = 16,
        claim: int = 0,
        services: Iterable[str] | None = None,
        at_most_once: Iterable[str] = (),
        lease_ms: int = 30_000,
        limits: Limits = DEFAULT_LIMITS,
        status_rows: StatusRows = StatusRows.INSTANCES,
        history: HistoryPolicy | None = DEFAULT_HISTORY,
        hinted: Sequence[str] = (),
        delivered: Sequence[inbox.Announced] = (),
        create: Creation | None = None,
    ) -> Advanced:
        """One transaction: commit handler results (fenced), step every ready instance
        (up to ``instances`` besides those the results wake; under ``limits``), and claim
        up to ``claim`` due tasks of ``services`` (all when None) under a new lease
        (see ``wflang.store.advance``). ``status_rows``: which of the lifecycle events
        (``Advanced.statuses``, all of them) are ``instance.status``/``task.status``
        outbox rows too. ``history``: how much history each instance keeps
        (``wflang.store.compaction``; None: all of it). ``hinted``: instances that were
        announced to have work (``Tx.announce``): their inboxes are read with the first
        reads, in case this transaction locks them; ``delivered``: inbox rows announced
        with their content (``inbox.announced``), a lone one of which may be stepped
        without reading it first (``wflang.store.carried``). ``create``: an instance to
        create first (with no ``results``), in the transaction that starts it where its
        start can be carried, else by ``create`` before this transaction (one commit more).
        """
        if create is not None and results:
            raise ValueError("an advance that creates an instance commits no results")
        once = frozenset(at_most_once)
        wanted = None if services is None else sorted(set(services))
        done: list[Advance] = []

        def run(
            careful: bool, c: carried.Carry | None = None, at: int = 0
        ) -> Callable[[Tx], Advanced]:
            def body(tx: Tx) -> Advanced:
                # The database's clock comes with the first reads where it can (``Advance``);
                # a carried step has its time already, checked against it by its guard.
                now_sql = self.dialect.tx_now if self.clock is None else ""
                now = at if c is not None else 0 if now_sql else self.now(tx)
                claims = Claims(tx, self.dialect, worker=worker, now=now, lease_ms=lease_ms,
                                slots=claim, services=wanted, once=once)  # fmt: skip
                adv = Advance(
                    tx, self.dialect, now=now, worker=worker, catalog=self.catalog,
                    cache=self.cache, unavailable=self.backend.unavailable, claims=claims,
                    limits=limits, careful=careful, status_rows=status_rows,
                    history=history, now_sql="" if c is not None else now_sql,
                )  # fmt: skip
                done[:] = [adv]
                if c is not None:
                    return adv.run_carried(c, now_sql)
                return adv.run(results, instances, hinted)

            return body

        # (a worker that is stopping starts nothing and takes no delivery)
        starts = instances > 0
        advanced = self._carried(results, hinted, delivered, run, starts=starts, create=create)
        if advanced is None and create is not None:
            d = create
            self.create(d.deployed, d.input, d.instance_id, actor=d.actor, reason=d.reason)
            advanced = self._carried(results, hinted, delivered, run, starts=starts)
        if advanced is None:
            try:
                advanced = self._write(run(careful=False))
            except Exception as err:
                # An instance cannot be stepped or stored: each on its own now, each write
                # waited for (a pipelined write's error shows only at a later statement).
                if not isinstance(err, Poisoned) and self.backend.unavailable(err):
                    raise
                advanced = self._write(run(careful=True), pipelined=False)
            read_at = done[0].read_at
            self.carrying.general(advanced.at, None if read_at is None else advanced.at - read_at)
        adv = done[0]
        self.cache.remember(adv.decoded, carried.written(adv.rows, adv.columns, adv.decoded))
        claimed = adv.claims.settle(advanced.claimed)
        if adv.probed is not None and rows.scalar(adv.probed()):  # a carried step's
            advanced = evolve(advanced, more=True)
        if len(claimed) == len(advanced.claimed):  # as always: no copy
            return advanced
        return evolve(advanced, claimed=claimed)

    def _carried(
        self,
        results: Sequence[TaskResult],
        hinted: Sequence[str],
        delivered: Sequence[inbox.Announced],
        run: Callable[[bool, carried.Carry | None, int], Callable[[Tx], Advanced]],
        *,
        starts: bool,
        create: Creation | None = None,
    ) -> Advanced | None:
        """Commit ``results`` (or, if ``starts``, a start) as a carried step, if it can be
        and nothing moved (``wflang.store.carried``); None: the general path must run.
        With ``create``, the start of that instance, inserted first in the transaction
        (None, nothing written: it cannot be carried now, or its id is taken)."""
        may = self.carries and (starts or bool(results))
        if create is None:
            c = carried.carry(self.cache, self.catalog, results, hinted, delivered) if may else None
        else:
            text = codec.dumps(dict(create.input))
            d = create.deployed
            row = created_row(d, text, create.instance_id, create.actor, create.reason, 0)
            c = carried.Carry(None, row, None, "") if may and self.catalog.cached(d.hash) else None
        if c is None:
            return None
        own = self.clock is not None or self.dialect.local_clock
        if self.carrying.time_for(c, self.now() if own else None) is None:
            return None

        def attempt(tx: Tx) -> Advanced:  # its time taken again if the write is retried
            at = self.carrying.time_for(c, self.now() if own else None)
            if at is None:
                raise carried.Moved("no longer to be carried")
            if create is None:
                return run(False, c, at)(tx)
            inserted = ops.create(
                tx, self.dialect, workflow=d.name, version=d.version, table_hash=d.hash,
                input_text=text, instance_id=create.instance_id, now=at, actor=create.actor,
                reason=create.reason, announce=False,
            )  # fmt: skip
            if not inserted():
                raise carried.Moved(f"instance {create.instance_id} exists")
            row = created_row(d, text, create.instance_id, create.actor, create.reason, at)
            return run(False, evolve(c, row=row), at)(tx)  # the row as just inserted

        try:
            advanced = self._write(attempt)
        except Exception as err:
            if carried.moved(err) or not self.backend.unavailable(err):
                # Moved, or it cannot be stepped: the general path decides (and reads the
                # instance again if it steps it).
                self.cache.forget([c.row.id])
                return None
            raise
        self.carrying.carried()
        return advanced
