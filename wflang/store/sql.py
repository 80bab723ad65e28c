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

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from attrs import define, evolve, field

from wflang import faults
from wflang.dsl.spec import MAX_VERSION
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime import step as st
from wflang.runtime.correlation import awaited_messages
from wflang.runtime.engine import HistoryEntry
from wflang.runtime.ids import child_id
from wflang.runtime.ir import Value
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.table import Table, WaitEntry, dumps, loads, same_behaviour, table_hash
from wflang.runtime.validate import check_handler_result, validate_signal
from wflang.store import messages, retention
from wflang.store.backend import Backend, Param, Tx, chunks, placeholders, redact_url
from wflang.store.records import (
    Advanced,
    ClaimedTask,
    Deployed,
    HistoryRow,
    IllegalAction,
    InstanceInfo,
    OutboxEvent,
    Stats,
    StoreError,
    TaskInfo,
    TaskResult,
    UnknownInstance,
    UnknownTask,
    UnknownWorkflow,
    VersionConflict,
    VersionInfo,
)
from wflang.store.schema import LATEST, MIGRATIONS

log = logging.getLogger("wflang.store")

Clock = Callable[[], int]
_INT64_MAX = 2**63 - 1
PENDING = "pending"  # an instance whose start transition has not run yet
_CACHE_SIZE = 10_000  # decoded instances kept per store (per process)
_FINISHED = tuple(s.value for s in rt.Status if s.finished)
_OPEN_TASK = ("ready", "running", "open")


def _ended(status: rt.Status) -> bool:
    """Whether an instance has ended: finished, and not dead-lettered (ops may retry it)."""
    return status.finished and status is not rt.Status.DEAD_LETTERED


def _seed(instance_id: str) -> int:
    """A stable seed per instance (jitter), the same on every worker."""
    import zlib

    return zlib.crc32(instance_id.encode("utf-8"))


#: An event to step an instance with: (event, idempotency key, actor, reason, inbox row id).
_Event = tuple[rt.Event, str, str | None, str | None, int | None]
#: A transition taken: (event or None for the start, idempotency key, actor, reason,
#: inbox row id, start input, the step).
_Done = tuple[
    rt.Event | None, str, str | None, str | None, int | None, dict[str, Value] | None, st.Step
]


def _reason(err: BaseException) -> str:
    """An error in words for a dead letter: bounded, and storable whatever it says."""
    text = f"{type(err).__name__}: {err}"
    if len(text) > 500:
        text = text[:500] + "…"
    return text.encode("utf-8", "replace").decode("utf-8")


class _Poisoned(Exception):
    """Stepping or storing some instance of a batch failed: run it again, carefully."""


@define
class _Work:
    """One locked instance and the events to step it with, in order."""

    id: str
    table: Table
    hash: str
    instance: rt.Instance | None
    input_text: str  # decoded only by the start transition
    seed: int
    parent_id: str | None
    parent_key: str | None
    created_by: str | None = None  # the start row's actor and reason
    created_reason: str | None = None
    events: list[_Event] = field(factory=list)


class Store:
    """A durable store on a backend; thread-safe (each thread has its connection)."""

    def __init__(self, backend: Backend, clock: Clock | None = None) -> None:
        self.backend = backend
        self.dialect = backend.dialect
        self.clock = clock
        self._tables: dict[str, Table] = {}
        # instance id -> the instance as this process last committed it (see _add)
        self._decoded: dict[str, rt.Instance] = {}
        self._message_waits: dict[str, bool] = {}  # table hash -> has a message wait

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
            return int(str(tx.query(f"SELECT {self.dialect.now}")[0][0]))
        with self.backend.read() as rtx:
            return int(str(rtx.query(f"SELECT {self.dialect.now}")[0][0]))

    def _hint(self, tx: Tx) -> None:
        """Wake idle workers when this transaction commits (PostgreSQL NOTIFY; a hint
        only: workers poll anyway)."""
        if self.dialect.notify:
            tx.execute(self.dialect.notify)

    def _write(self, fn: Callable[[Tx], Any]) -> Any:
        """Run ``fn`` in a write transaction, again if the database asks for a retry."""
        for attempt in range(50):
            try:
                with self.backend.transaction() as tx:
                    return fn(tx)
            except Exception as err:
                if not self.backend.retryable(err) or attempt == 49:
                    raise
                time.sleep(min(0.001 * 2**attempt, 0.1))  # contention backoff, not a test
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------- migrations

    def schema_version(self) -> int:
        with self.backend.read() as tx:
            try:
                rows = tx.query("SELECT max(version) FROM wf_schema")
            except Exception:
                return 0
        return int(str(rows[0][0])) if rows and rows[0][0] is not None else 0

    def migrate(self) -> list[int]:
        """Apply the missing migrations in order; safe to run twice or at once."""
        applied: list[int] = []
        for m in MIGRATIONS:
            with self.backend.migration_lock() as tx:
                tx.execute(
                    "CREATE TABLE IF NOT EXISTS wf_schema (version integer PRIMARY KEY, "
                    "name text NOT NULL, applied_at bigint NOT NULL)"
                )
                done = tx.query("SELECT 1 FROM wf_schema WHERE version = ?", (m.version,))
                if done:
                    continue
                for statement in m.statements:
                    tx.execute(
                        statement.format(
                            json=self.dialect.json,
                            autoid=self.dialect.autoid,
                            without_rowid=self.dialect.without_rowid,
                        )
                    )
                tx.execute(
                    "INSERT INTO wf_schema (version, name, applied_at) VALUES (?, ?, ?)",
                    (m.version, m.name, self.now(tx)),
                )
                applied.append(m.version)
        return applied

    def check_schema(self) -> None:
        found = self.schema_version()
        if found < LATEST:
            raise StoreError(
                f"the store at {self.url} has schema version {found}, this wflang needs "
                f"{LATEST}: run `wf store migrate --store {self.url}`"
            )
        if found > LATEST:
            raise StoreError(
                f"the store at {self.url} has schema version {found}, newer than this "
                f"wflang knows ({LATEST}): upgrade wflang"
            )

    # ------------------------------------------------------------------ versions

    def deploy(self, table: Table, source_file: str | None = None) -> bool:
        """Register a compiled version; False when exactly this version is already there."""
        return self.deploy_all([(table, source_file)])[0]

    def deploy_all(self, tables: Sequence[tuple[Table, str | None]]) -> list[bool]:
        """Register compiled versions together, all or none (one transaction); for each,
        False when exactly that version was already there."""
        for t, _ in tables:  # the language's bound, so that every store holds the same
            if not 1 <= t.version <= MAX_VERSION:
                raise StoreError(
                    f"{t.workflow} version {t.version} is out of range: "
                    f"a version is 1 to {MAX_VERSION}"
                )
        prepared = [(t, src, dumps(t), table_hash(t)) for t, src in tables]

        def run(tx: Tx) -> list[bool]:
            return [self._register(tx, *p) for p in prepared]

        result: list[bool] = self._write(run)
        for table, _, _, digest in prepared:
            self._tables[digest] = table
        return result

    def _register(
        self, tx: Tx, table: Table, source_file: str | None, text: str, digest: str
    ) -> bool:
        rows = tx.query(
            "SELECT hash, table_json FROM wf_workflow WHERE name = ? AND version = ?",
            (table.workflow, table.version),
        )
        if rows:
            if rows[0][0] == digest or same_behaviour(loads(str(rows[0][1])), table):
                return False  # the same, or only its comments or layout changed
            raise VersionConflict(
                f"{table.workflow} version {table.version} is already deployed with "
                f"different content (hash {str(rows[0][0])[:12]}, this one "
                f"{digest[:12]}): give the changed workflow a new version number"
            )
        other = tx.query("SELECT name, version FROM wf_workflow WHERE hash = ?", (digest,))
        if other:
            raise VersionConflict(
                f"this table is already deployed as {other[0][0]} version {other[0][1]}"
            )
        tx.execute(
            "INSERT INTO wf_workflow (name, version, hash, table_json, source_file, "
            "deployed_at) VALUES (?, ?, ?, ?, ?, ?)",
            (table.workflow, table.version, digest, text, source_file, self.now(tx)),
        )
        return True

    def deployed(self, name: str, version: int | None = None) -> Deployed:
        with self.backend.read() as tx:
            if version is None:
                rows = tx.query(
                    "SELECT name, version, hash, table_json, deployed_at FROM wf_workflow "
                    "WHERE name = ? ORDER BY version DESC LIMIT 1",
                    (name,),
                )
            else:
                rows = tx.query(
                    "SELECT name, version, hash, table_json, deployed_at FROM wf_workflow "
                    "WHERE name = ? AND version = ?",
                    (name, version),
                )
            if not rows:
                known = [str(r[0]) for r in tx.query("SELECT DISTINCT name FROM wf_workflow")]
                if version is not None and name in known:
                    raise UnknownWorkflow(f"workflow '{name}' has no deployed version {version}")
                raise UnknownWorkflow(
                    f"no deployed workflow '{name}'"
                    + (f" (deployed: {', '.join(sorted(known))})" if known else "")
                    + "; deploy it with `wf deploy FILE`"
                )
        n, v, h, text, at = rows[0]
        table = self._tables.get(str(h)) or loads(str(text))
        self._tables[str(h)] = table
        return Deployed(str(n), int(str(v)), str(h), table, int(str(at)))

    def table_for(self, digest: str, tx: Tx | None = None) -> Table:
        table = self._tables.get(digest)
        if table is None:
            sql = "SELECT table_json FROM wf_workflow WHERE hash = ?"
            if tx is not None:
                rows = tx.query(sql, (digest,))
            else:
                with self.backend.read() as rtx:
                    rows = rtx.query(sql, (digest,))
            if not rows:
                raise UnknownWorkflow(f"no deployed table with hash {digest}")
            table = loads(str(rows[0][0]))
            self._tables[digest] = table
        return table

    def tables(self) -> list[Table]:
        """Every deployed table (all workflows, all versions)."""
        with self.backend.read() as tx:
            digests = [str(h) for (h,) in tx.query("SELECT hash FROM wf_workflow ORDER BY hash")]
        return [self.table_for(d) for d in digests]

    def _message_fits(
        self, digest: str, message: str, payload: Mapping[str, Value], tx: Tx | None = None
    ) -> bool:
        """Whether the payload fits the message as this version declares it."""
        return not validate_signal(self.table_for(digest, tx), "message", message, payload)

    def _waits_for_messages(self, digest: str, table: Table) -> bool:
        """Whether this table has a message wait (only then are subscriptions kept)."""
        found = self._message_waits.get(digest)
        if found is None:
            found = self._message_waits[digest] = any(
                isinstance(s.entry, WaitEntry) and s.entry.trigger == "message"
                for s in table.states
            )
        return found

    def versions(self, name: str | None = None) -> list[VersionInfo]:
        """Every deployed version with its running and finished instance counts."""
        with self.backend.read() as tx:
            rows = tx.query(
                "SELECT w.name, w.version, w.hash, w.deployed_at, "
                f"SUM(CASE WHEN i.status IN ({placeholders(len(_FINISHED))}) THEN 0 "
                "WHEN i.id IS NULL THEN 0 ELSE 1 END), "
                f"SUM(CASE WHEN i.status IN ({placeholders(len(_FINISHED))}) THEN 1 ELSE 0 END) "
                "FROM wf_workflow w LEFT JOIN wf_instance i ON i.table_hash = w.hash "
                + ("WHERE w.name = ? " if name else "")
                + "GROUP BY w.name, w.version, w.hash, w.deployed_at "
                "ORDER BY w.name, w.version",
                (*_FINISHED, *_FINISHED, *((name,) if name else ())),
            )
        if name and not rows:
            raise UnknownWorkflow(f"no deployed workflow '{name}'")
        latest: dict[str, int] = {}
        for r in rows:
            latest[str(r[0])] = max(latest.get(str(r[0]), 0), int(str(r[1])))
        return [
            VersionInfo(
                str(r[0]),
                int(str(r[1])),
                str(r[2]),
                int(str(r[3])),
                int(str(r[4] or 0)),
                int(str(r[5] or 0)),
                latest[str(r[0])] == int(str(r[1])),
            )
            for r in rows
        ]

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
        text = codec.dumps(dict(input))

        def run(tx: Tx) -> bool:
            rows = tx.query("SELECT workflow, input FROM wf_instance WHERE id = ?", (instance_id,))
            if rows:
                # The same start repeated (a retry after a lost answer) is the same
                # instance, whichever version it was pinned to when it was created.
                if rows[0][0] == deployed.name and codec.loads(str(rows[0][1])) == dict(input):
                    return False
                raise IllegalAction(
                    f"instance '{instance_id}' already exists with another workflow or input"
                )
            now = self.now(tx)
            tx.execute(
                "INSERT INTO wf_instance (id, workflow, version, table_hash, status, input, "
                "seed, wake_at, created_at, updated_at, created_by, created_reason) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    instance_id,
                    deployed.name,
                    deployed.version,
                    deployed.hash,
                    PENDING,
                    text,
                    _seed(instance_id),
                    now,
                    now,
                    now,
                    actor,
                    reason,
                ),
            )
            self._hint(tx)
            return True

        created: bool = self._write(run)
        return created

    def instance(self, instance_id: str) -> InstanceInfo:
        with self.backend.read() as tx:
            rows = tx.query(_INSTANCE_SELECT + " WHERE id = ?", (instance_id,))
        if not rows:
            raise UnknownInstance(instance_id)
        return _instance_info(rows[0])

    def instances(
        self,
        *,
        status: str | None = None,
        workflow: str | None = None,
        limit: int = 100,
    ) -> list[InstanceInfo]:
        where, params = [], []
        if status:
            where.append("status = ?")
            params.append(status)
        if workflow:
            where.append("workflow = ?")
            params.append(workflow)
        sql = _INSTANCE_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY created_at, id LIMIT ?"
        with self.backend.read() as tx:
            rows = tx.query(sql, (*params, limit))
        return [_instance_info(r) for r in rows]

    def history(self, instance_id: str) -> list[HistoryRow]:
        with self.backend.read() as tx:
            rows = tx.query(
                "SELECT seq, at, event, input, decisions, commands, idempotency_key, actor, "
                "reason, worker FROM wf_history WHERE instance_id = ? ORDER BY seq",
                (instance_id,),
            )
            if not rows and not tx.query("SELECT 1 FROM wf_instance WHERE id = ?", (instance_id,)):
                raise UnknownInstance(instance_id)
        return [
            HistoryRow(
                HistoryEntry(
                    int(str(r[0])),
                    int(str(r[1])),
                    None if r[2] is None else codec.load_event(str(r[2])),
                    None if r[3] is None else codec.loads(str(r[3])),
                    tuple(codec.loads(str(r[4]))),
                    codec.structure_commands(codec.loads(str(r[5]))),
                ),
                str(r[6]),
                None if r[7] is None else str(r[7]),
                None if r[8] is None else str(r[8]),
                None if r[9] is None else str(r[9]),
            )
            for r in rows
        ]

    def deliver(
        self,
        instance_id: str,
        event: rt.Event,
        *,
        dedupe_key: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
        unless_pending: Callable[[rt.Event, str | None], None] | None = None,
    ) -> bool:
        """Put an event in an instance's inbox; False if its dedupe key was already there.

        ``unless_pending`` sees each event still waiting in the inbox, in the same
        transaction with the instance row locked, and raises to refuse the delivery:
        two requests at once cannot both pass it.
        """

        def run(tx: Tx) -> bool:
            if not tx.query(
                f"SELECT 1 FROM wf_instance WHERE id = ?{self.dialect.lock}", (instance_id,)
            ):
                raise UnknownInstance(instance_id)
            if unless_pending is not None:
                for text, by in tx.query(
                    "SELECT event, actor FROM wf_inbox WHERE instance_id = ? "
                    "AND consumed_seq IS NULL ORDER BY id",
                    (instance_id,),
                ):
                    unless_pending(codec.load_event(str(text)), None if by is None else str(by))
            delivered = self._inbox(tx, instance_id, event, dedupe_key, actor, reason)
            if delivered:
                self._hint(tx)
            return delivered

        delivered: bool = self._write(run)
        return delivered

    def _inbox(
        self,
        tx: Tx,
        instance_id: str,
        event: rt.Event,
        dedupe_key: str | None,
        actor: str | None = None,
        reason: str | None = None,
        at: int | None = None,
    ) -> bool:
        return (
            tx.execute(
                "INSERT INTO wf_inbox (instance_id, event, dedupe_key, actor, reason, "
                "available_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (instance_id, dedupe_key) DO NOTHING",
                (
                    instance_id,
                    codec.dump_event(event),
                    dedupe_key,
                    actor,
                    reason,
                    self.now(tx) if at is None else at,
                ),
            )
            > 0
        )

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
            published = messages.publish(
                tx,
                self.dialect,
                lambda t, iid, event, dedupe: self._inbox(t, iid, event, dedupe, actor, reason),
                lambda digest, name, data: self._message_fits(digest, name, data, tx),
                now=self.now(tx),
                message=message,
                correlation=correlation,
                payload=payload,
                key=key,
                ttl_ms=ttl_ms,
                actor=actor,
            )
            if published.delivered:
                self._hint(tx)
            return published

        published: messages.Published = self._write(run)
        return published

    # --------------------------------------------------------------------- tasks

    def tasks(
        self,
        *,
        kind: str | None = None,
        status: str | None = None,
        instance_id: str | None = None,
        limit: int = 100,
    ) -> list[TaskInfo]:
        where, params = [], []
        for column, value in (("kind", kind), ("status", status), ("instance_id", instance_id)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        sql = _TASK_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        with self.backend.read() as tx:
            rows = tx.query(sql + " ORDER BY created_at, key LIMIT ?", (*params, limit))
        return [_task_info(r) for r in rows]

    def task(self, key: str) -> TaskInfo:
        with self.backend.read() as tx:
            rows = tx.query(_TASK_SELECT + " WHERE key = ?", (key,))
        if not rows:
            raise UnknownTask(f"no task '{key}'")
        return _task_info(rows[0])

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
            rows = tx.query("SELECT instance_id, status, kind FROM wf_task WHERE key = ?", (key,))
            if not rows:
                raise UnknownTask(f"no task '{key}'")
            iid, status, kind = (str(x) for x in rows[0])
            if kind != "human" or status != "open":
                raise IllegalAction(f"task '{key}' is a {kind} task that is {status}, not open")
            tx.execute(
                "UPDATE wf_task SET status = 'done', updated_at = ? WHERE key = ?",
                (self.now(tx), key),
            )
            self._inbox(tx, iid, event, f"task:{key}", actor, reason)
            self._hint(tx)

        self._write(run)

    def heartbeat(self, worker: str, leases: Sequence[tuple[str, int]], lease_ms: int) -> list[str]:
        """Extend the leases still held; the keys of those that were lost."""
        if not leases:
            return []

        def run(tx: Tx) -> list[str]:
            now = self.now(tx)
            lost = []
            for key, epoch in leases:
                # An expired lease is lost even if nobody took the call over yet: it
                # cannot be revived, so a worker that was paused past it never commits.
                n = tx.execute(
                    "UPDATE wf_task SET lease_expires_at = ? WHERE key = ? AND lease_epoch = ? "
                    "AND status = 'running' AND lease_expires_at >= ?",
                    (now + lease_ms, key, epoch, now),
                )
                if n == 0:
                    lost.append(key)
            return lost

        lost: list[str] = self._write(run)
        return lost

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
    ) -> Advanced:
        """One transaction: commit handler results (fenced), step every ready instance
        (up to ``instances`` besides those the results wake; under ``limits``), and claim
        up to ``claim`` due tasks of ``services`` (all when None) under a new lease.
        """
        once = frozenset(at_most_once)
        wanted = None if services is None else sorted(set(services))

        done: list[_Advance] = []

        def run(careful: bool) -> Callable[[Tx], Advanced]:
            def body(tx: Tx) -> Advanced:
                adv = _Advance(self, tx, worker, lease_ms, limits, careful)
                done[:] = [adv]
                return adv.run(results, instances, claim, wanted, once)

            return body

        advanced: Advanced
        try:
            advanced = self._write(run(careful=False))
        except _Poisoned:  # an instance cannot be stepped or stored: each on its own now
            advanced = self._write(run(careful=True))
        self._remember(done[0].decoded)  # committed: safe to reuse
        return advanced

    def _remember(self, decoded: Mapping[str, rt.Instance]) -> None:
        cache = self._decoded
        for iid, inst in decoded.items():
            cache.pop(iid, None)
            if not inst.status.finished:
                cache[iid] = inst
        while len(cache) > _CACHE_SIZE:
            del cache[next(iter(cache))]  # the least recently stepped

    # -------------------------------------------------------------------- outbox

    def outbox(self, *, limit: int = 100, after: int = 0) -> list[OutboxEvent]:
        """Events not published yet, oldest first (ids above ``after``): what a
        consumer reads, handles, then acknowledges with ``mark_published``."""
        after = max(-1, min(after, _INT64_MAX))  # ids are 64-bit
        with self.backend.read() as tx:
            rows = tx.query(
                "SELECT id, instance_id, seq, kind, payload, created_at FROM wf_outbox "
                "WHERE published_at IS NULL AND id > ? ORDER BY id LIMIT ?",
                (after, max(0, min(limit, _INT64_MAX))),
            )
        return [
            OutboxEvent(
                id=int(str(r[0])),
                instance_id=str(r[1]),
                seq=int(str(r[2])),
                kind=str(r[3]),
                payload=codec.loads(str(r[4])),
                created_at=int(str(r[5])),
            )
            for r in rows
        ]

    def mark_published(self, ids: Sequence[int]) -> int:
        """Acknowledge outbox events; how many were still unpublished (a second
        acknowledgement of the same event changes nothing)."""

        def run(tx: Tx) -> int:
            done = 0
            now = self.now(tx)
            for i in range(0, len(ids), 500):
                part = [int(x) for x in ids[i : i + 500] if 0 < int(x) <= _INT64_MAX]
                if not part:
                    continue
                done += tx.execute(
                    f"UPDATE wf_outbox SET published_at = ? WHERE id IN "
                    f"({placeholders(len(part))}) AND published_at IS NULL",
                    (now, *part),
                )
            return done

        n: int = self._write(run)
        return n

    # ----------------------------------------------------------------- retention

    def purge(
        self,
        *,
        ended_before: int,
        statuses: Sequence[str] = retention.ENDED,
        workflow: str | None = None,
        limit: int = 500,
        dry_run: bool = False,
    ) -> retention.Purged:
        """Delete up to ``limit`` instances that ended before ``ended_before`` (epoch ms)
        with their history, tasks, inbox rows and timers, in one transaction (see
        ``wflang.store.retention``); ``dry_run`` counts and changes nothing."""

        def run(tx: Tx) -> retention.Purged:
            return retention.purge_batch(
                tx,
                self.dialect,
                ended_before=ended_before,
                statuses=statuses,
                workflow=workflow,
                limit=limit,
                dry_run=dry_run,
            )

        purged: retention.Purged = self._write(run)
        for iid in purged.instances:
            self._decoded.pop(iid, None)
        return purged

    # --------------------------------------------------------------------- stats

    def stats(self) -> Stats:
        with self.backend.read() as tx:
            now = self.now(tx)
            counts = {
                str(s): int(str(n))
                for s, n in tx.query("SELECT status, count(*) FROM wf_instance GROUP BY status")
            }
            tasks = {
                (str(k), str(s)): (int(str(n)), r)
                for k, s, n, r in tx.query(
                    "SELECT kind, status, count(*), min(run_at) FROM wf_task "
                    "WHERE status IN ('ready', 'running', 'open') GROUP BY kind, status"
                )
            }
            due = tx.query("SELECT count(*) FROM wf_timer WHERE due_at <= ?", (now,))
            pending = tx.query(
                "SELECT count(*) FROM wf_inbox WHERE consumed_seq IS NULL AND available_at <= ?",
                (now,),
            )
        ready, oldest = tasks.get(("service", "ready"), (0, None))
        return Stats(
            now=now,
            ready_tasks=ready,
            running_tasks=tasks.get(("service", "running"), (0, None))[0],
            open_human_tasks=tasks.get(("human", "open"), (0, None))[0],
            oldest_ready_ms=max(0, now - int(str(oldest))) if oldest is not None else 0,
            due_timers=int(str(due[0][0])),
            pending_events=int(str(pending[0][0])),
            instances=counts,
        )


_INSTANCE_SELECT = (
    "SELECT id, workflow, version, table_hash, status, input, state, parent_id, wake_at, "
    "created_at, updated_at FROM wf_instance"
)
_TASK_SELECT = (
    "SELECT key, instance_id, node, kind, service, args, attempt, form, assignee, status, "
    "claims, lease_owner, lease_epoch, created_at FROM wf_task"
)


def _int_or_none(x: object) -> int | None:
    return None if x is None else int(str(x))


#: The error of an instance whose stored state cannot be decoded.
UNREADABLE = "the stored state cannot be read"


def _instance_info(r: Sequence[object]) -> InstanceInfo:
    instance, unreadable = None, None
    if r[6] is not None:
        try:
            instance = codec.load_instance(str(r[6]))
        except Exception as err:  # shown, not raised: one bad row never hides the others
            unreadable = f"{UNREADABLE}: {_reason(err)}"
    return InstanceInfo(
        id=str(r[0]),
        workflow=str(r[1]),
        version=int(str(r[2])),
        table_hash=str(r[3]),
        status=str(r[4]),
        input=codec.loads(str(r[5])),
        instance=instance,
        unreadable=unreadable,
        parent_id=None if r[7] is None else str(r[7]),
        wake_at=_int_or_none(r[8]),
        created_at=int(str(r[9])),
        updated_at=int(str(r[10])),
    )


def _task_info(r: Sequence[object]) -> TaskInfo:
    return TaskInfo(
        key=str(r[0]),
        instance_id=str(r[1]),
        node=str(r[2]),
        kind=str(r[3]),
        service=None if r[4] is None else str(r[4]),
        args=codec.loads(str(r[5])),
        attempt=int(str(r[6])),
        form=tuple(codec.loads(str(r[7]))) if r[7] is not None else (),
        assignee=None if r[8] is None else str(r[8]),
        status=str(r[9]),
        claims=int(str(r[10])),
        lease_owner=None if r[11] is None else str(r[11]),
        lease_epoch=int(str(r[12])),
        created_at=int(str(r[13])),
    )


def _checked(result: TaskResult, table: Table, node: str) -> TaskResult:
    """A handler's result as the step will see it: one that does not fit the service's
    declared result type fails the attempt (permanently: the handler has a bug), so a
    wrong value never reaches the context to break an expression further on."""
    event = result.event
    if not isinstance(event, rt.TaskCompleted):
        return result
    try:
        output, problems = check_handler_result(table, node, event.result)
    except Exception as err:  # a value beyond checking is no value of the declared type
        output, problems = {}, [f"the result cannot be checked: {_reason(err)}"]
    if not problems:
        done = rt.TaskCompleted(event.key, output)  # in the runtime's form (exact decimals)
        return TaskResult(result.key, result.epoch, done, result.instance_id)
    failed = rt.TaskFailed(event.key, "InvalidResult", False, "; ".join(problems))
    return TaskResult(result.key, result.epoch, failed, result.instance_id)


class _Advance:
    """The body of one ``advance`` transaction (see ``Store``'s docstring)."""

    def __init__(
        self,
        store: Store,
        tx: Tx,
        worker: str,
        lease_ms: int,
        limits: Limits = DEFAULT_LIMITS,
        careful: bool = False,
    ) -> None:
        self.store, self.tx, self.worker, self.lease_ms = store, tx, worker, lease_ms
        self.limits = limits
        self.careful = careful  # step each instance on its own (see _step_all)
        self.d = store.dialect
        self.now = store.now(tx)
        self.transitions = 0
        self.scheduled = 0  # tasks and inbox rows this transaction made for others
        self.decoded: dict[str, rt.Instance] = {}  # for the store's cache, once committed
        self.claim_left = 0  # slots the worker has free for calls
        self.services: frozenset[str] | None = None  # the services it has handlers for
        self.once: frozenset[str] = frozenset()
        self.eager: list[ClaimedTask] = []  # calls scheduled here and claimed at once
        self.eager_rows: dict[str, tuple[Param, ...]] = {}  # their rows, inserted at _flush
        self.updates: list[tuple[Param, ...]] = []
        self.history: list[tuple[Param, ...]] = []
        self.consumed: list[tuple[Param, ...]] = []
        self.fired: list[tuple[Param, ...]] = []
        self.finished: list[str] = []

    def run(
        self,
        results: Sequence[TaskResult],
        limit: int,
        claim: int,
        services: list[str] | None,
        once: frozenset[str],
    ) -> Advanced:
        self.claim_left = claim
        self.services = None if services is None else frozenset(services)
        self.once = once
        work: dict[str, _Work] = {}
        # 1. Lock the instances the results belong to (waiting: their steps are short).
        keyed = self._result_instances(results)
        self._lock(sorted(set(keyed.values())), work)
        # 2. Fence each result: it commits only under the epoch it ran with, unexpired.
        fenced = self._fence([(r, keyed.get(r.key)) for r in results], work)
        accepted: list[tuple[str, TaskResult]] = []
        for r in results:
            iid = keyed.get(r.key)
            node = fenced.get((r.key, r.epoch))
            if iid is not None and node is not None:
                accepted.append((iid, _checked(r, work[iid].table, node)))
            else:
                log.warning("stale result refused", extra={"task": r.key, "epoch": r.epoch})
        committed, stale = len(accepted), len(results) - len(accepted)
        # 3. Lock other ready instances, skipping those another worker holds.
        if limit > 0:
            self._lock_ready(limit, work)
        # 4. Gather each instance's events in time order, step it, write what it did.
        self._gather(work, accepted)
        self._step_all(sorted(work.values(), key=lambda w: w.id))
        # 5. Claim due tasks for the worker's free slots left.
        claimed = tuple(self.eager)
        if self.claim_left > 0:
            claimed = tuple(sorted(claimed + self._claim(self.claim_left, services, once),
                                   key=lambda t: t.key))  # fmt: skip
        if claimed:
            faults.hit("claim.before-commit")
        if self.transitions:
            faults.hit("transition.before-commit")
        if self.scheduled:
            self.store._hint(self.tx)
        return Advanced(
            transitions=self.transitions,
            instances=len(work),
            results=committed,
            stale=stale,
            claimed=claimed,
            finished=tuple(self.finished),
            at=self.now,
        )

    # -- locking and gathering ----------------------------------------------------

    def _fence(
        self, results: Sequence[tuple[TaskResult, str | None]], work: Mapping[str, _Work]
    ) -> dict[tuple[str, int], str]:
        """Close the calls whose results still hold their lease, in one statement per
        chunk; the (key, epoch) pairs that did, with their node. Any other is stale."""
        rows = [(r.key, r.epoch, iid) for r, iid in results if iid is not None and iid in work]
        done: dict[tuple[str, int], str] = {}
        for i in range(0, len(rows), 300):
            part = rows[i : i + 300]
            values = ", ".join("(?, ?, ?)" for _ in part)
            for key, epoch, node in self.tx.query(
                "UPDATE wf_task SET status = 'done', lease_owner = NULL, "
                "lease_expires_at = NULL, updated_at = ? "
                f"WHERE (key, lease_epoch, instance_id) IN (VALUES {values}) "
                "AND status = 'running' AND lease_expires_at >= ? "
                "RETURNING key, lease_epoch, node",
                (self.now, *(x for row in part for x in row), self.now),
            ):
                done[str(key), int(str(epoch))] = str(node)
        return done

    def _result_instances(self, results: Sequence[TaskResult]) -> dict[str, str]:
        keyed = {r.key: r.instance_id for r in results if r.instance_id is not None}
        keys = [r.key for r in results if r.instance_id is None]
        for part in chunks(keys):
            for key, iid in self.tx.query(
                f"SELECT key, instance_id FROM wf_task WHERE key IN ({placeholders(len(part))})",
                tuple(part),
            ):
                keyed[str(key)] = str(iid)
        return keyed

    _COLUMNS = (
        "id, table_hash, seq, state, input, seed, parent_id, parent_key, created_by, created_reason"
    )

    def _lock_ready(self, limit: int, work: dict[str, _Work]) -> None:
        """Lock up to ``limit`` more instances with something due, skipping locked ones.

        Each query locks as it selects (``SKIP LOCKED``), so workers running it at
        the same time share the queue out instead of all picking its head and then
        skipping it. Rows this transaction already holds come back too: they are
        asked for on top of the limit and left out.
        """
        held = len(work)
        inbox = (
            "id IN (SELECT instance_id FROM wf_inbox WHERE consumed_seq IS NULL "
            "AND available_at <= ?)"
        )
        queries: list[tuple[str, tuple[int, ...]]]
        if self.d.single_writer:  # nothing to skip: one statement finds both kinds
            queries = [(f"WHERE wake_at <= ? OR {inbox} LIMIT ?", (self.now, self.now))]
        else:
            queries = [
                ("WHERE wake_at <= ? ORDER BY wake_at LIMIT ?", (self.now,)),
                (f"WHERE {inbox} LIMIT ?", (self.now,)),
            ]
        for where, params in queries:
            room = limit - (len(work) - held)
            if room <= 0:
                return
            rows = self.tx.query(
                f"SELECT {self._COLUMNS} FROM wf_instance {where}{self.d.skip_locked}",
                (*params, room + held),
            )
            fresh = [r for r in rows if str(r[0]) not in work]
            self._add(fresh[:room], work)

    def _lock(self, ids: list[str], work: dict[str, _Work]) -> None:
        """Lock these instances, waiting for them, in id order (no deadlocks)."""
        for part in chunks(ids):
            self._add(
                self.tx.query(
                    f"SELECT {self._COLUMNS} FROM wf_instance "
                    f"WHERE id IN ({placeholders(len(part))}) ORDER BY id{self.d.lock}",
                    tuple(part),
                ),
                work,
            )

    def _add(self, rows: Sequence[Sequence[object]], work: dict[str, _Work]) -> None:
        cache = self.store._decoded
        for iid, digest, seq, state, inp, seed, pid, pkey, by, why in rows:
            instance = None
            table = self.store.table_for(str(digest), self.tx)
            if state is not None:
                # The instance this process committed last, if nobody stepped it since:
                # decoding the stored document again is the costliest part of a lock.
                hit = cache.get(str(iid))
                try:
                    instance = (
                        hit
                        if hit is not None and hit.seq == seq
                        else codec.load_instance(str(state))
                    )
                except Exception as err:  # never stepped: set aside, and the others go on
                    self._unreadable(str(iid), table, int(str(seq)), err)
                    continue
            work[str(iid)] = _Work(
                id=str(iid),
                table=table,
                hash=str(digest),
                instance=instance,
                input_text=str(inp),
                seed=int(str(seed)),
                parent_id=None if pid is None else str(pid),
                parent_key=None if pkey is None else str(pkey),
                created_by=None if by is None else str(by),
                created_reason=None if why is None else str(why),
            )

    def _unreadable(self, iid: str, table: Table, seq: int, err: Exception) -> None:
        """Dead-letter an instance whose stored state cannot be decoded (a corrupt or
        foreign document): its row says so, its calls and timers stop, an outbox event
        tells; the state is kept as it is, for a person to repair (or purge)."""
        reason = f"{UNREADABLE}: {_reason(err)}"
        if not self.tx.execute(
            "UPDATE wf_instance SET status = ?, wake_at = NULL, updated_at = ? "
            "WHERE id = ? AND status <> ?",
            (rt.Status.DEAD_LETTERED.value, self.now, iid, rt.Status.DEAD_LETTERED.value),
        ):
            return  # set aside already (its inbox rows wait for the repair)
        log.error("instance dead-lettered: " + reason, extra={"instance": iid}, exc_info=err)
        _stop_work(self, iid)
        payload = {
            "workflow": table.workflow,
            "version": table.version,
            "status": rt.Status.DEAD_LETTERED.value,
            "output": None,
            "error": reason,
        }
        self.tx.execute(
            "INSERT INTO wf_outbox (instance_id, seq, kind, payload, created_at) "
            "VALUES (?, ?, 'instance.dead_lettered', ?, ?)",
            (iid, seq, codec.dumps(payload), self.now),
        )

    def _gather(self, work: dict[str, _Work], accepted: list[tuple[str, TaskResult]]) -> None:
        """Inbox rows and due timers by time, then the results committed here."""
        timed: dict[str, list[tuple[int, int, rt.Event, str | None, str | None]]] = {
            iid: [] for iid in work
        }
        ids = sorted(work)
        for part in chunks(ids):
            for row_id, iid, event, actor, reason, at in self.tx.query(
                "SELECT id, instance_id, event, actor, reason, available_at FROM wf_inbox "
                f"WHERE instance_id IN ({placeholders(len(part))}) AND consumed_seq IS NULL "
                "AND available_at <= ? ORDER BY id",
                (*part, self.now),
            ):
                timed[str(iid)].append(
                    (
                        int(str(at)),
                        int(str(row_id)),
                        codec.load_event(str(event)),
                        None if actor is None else str(actor),
                        None if reason is None else str(reason),
                    )
                )
        for iid, w in work.items():
            if w.instance is not None:
                for t in w.instance.timers:
                    if t.due <= self.now:
                        timed[iid].append((t.due, -1, rt.TimerFired(t.id), None, None))
            for _at, row_id, event, actor, reason in sorted(timed[iid], key=lambda x: (x[0], x[1])):
                if isinstance(event, rt.TimerFired) and row_id < 0:
                    w.events.append((event, f"timer:{event.timer}", None, None, None))
                else:
                    w.events.append((event, f"inbox:{row_id}", actor, reason, row_id))
        for iid, r in accepted:
            work[iid].events.append((r.event, f"task:{r.key}", None, None, None))

    # -- stepping and writing -------------------------------------------------------

    def _step_all(self, ordered: Sequence[_Work]) -> None:
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
            if self.store.backend.unavailable(err):
                raise
            raise _Poisoned from err

    def _step_alone(self, w: _Work) -> None:
        """Step one instance a transition at a time, each written at once in a savepoint
        of its own; the first that fails dead-letters the instance instead (its event
        taken, as any event is). The events after it stay in the inbox: the
        dead-lettered instance takes them next time as it takes any event (ignored,
        unless an operator's)."""
        steps: list[_Event | None] = [None] if w.instance is None else []  # None: the start
        inst = w.instance
        for item in [*steps, *w.events]:
            one = evolve(w, instance=inst, events=[] if item is None else [item])
            try:
                with self._isolated():
                    self._step(one)
                    self._flush()
            except Exception as err:
                if self.store.backend.unavailable(err):
                    raise
                self._dead_letter(one, item, err)
                return
            inst = self.decoded[w.id]

    def _dead_letter(self, w: _Work, item: _Event | None, err: Exception) -> None:
        """Write ``item`` (None: the start) as the transition that dead-letters ``w``."""
        reason = _reason(err)
        log.error(
            "instance dead-lettered: stepping it failed",
            extra={"instance": w.id, "reason": reason},
            exc_info=err,
        )
        inst = w.instance
        input: dict[str, Value] | None = None
        if inst is None:  # the start failed: an instance with its input (if readable)
            try:
                input = dict(codec.loads(w.input_text))
            except Exception:
                input = {}
            inst = rt.Instance(
                w.id, w.table.workflow, w.table.version, rt.Status.RUNNING, input, {},
                seed=w.seed,
            )  # fmt: skip
        result = st.dead_letter(w.table, inst, self.now, reason)
        start: _Event | tuple[None, str, str | None, str | None, None] = (
            None, "start", w.created_by, w.created_reason, None
        )  # fmt: skip
        event, key, actor, why, row_id = item or start
        try:
            with self._isolated():
                self._write(w, [(event, key, actor, why, row_id, input, result)])
                self._flush()
        except Exception as again:
            if self.store.backend.unavailable(again):
                raise
            # Nothing of it could be written: it stays as it was, and the others go on.
            log.error(
                "instance could not be dead-lettered",
                extra={"instance": w.id, "reason": _reason(again)},
                exc_info=again,
            )

    @contextlib.contextmanager
    def _isolated(self) -> Iterator[None]:
        """A savepoint: if the block raises, what it wrote is undone, and so is what it
        added to this transaction's pending rows and counts."""
        mark = (
            len(self.updates), len(self.history), len(self.consumed), len(self.fired),
            len(self.finished), list(self.eager), dict(self.eager_rows), dict(self.decoded),
            self.claim_left, self.scheduled, self.transitions,
        )  # fmt: skip
        self.tx.execute("SAVEPOINT wf_step")
        try:
            yield
        except BaseException:
            self.tx.execute("ROLLBACK TO SAVEPOINT wf_step")
            self.tx.execute("RELEASE SAVEPOINT wf_step")
            n_up, n_hist, n_cons, n_fired, n_fin = mark[:5]
            del self.updates[n_up:], self.history[n_hist:], self.consumed[n_cons:]
            del self.fired[n_fired:], self.finished[n_fin:]
            self.eager, self.eager_rows, self.decoded = mark[5], mark[6], mark[7]
            self.claim_left, self.scheduled, self.transitions = mark[8], mark[9], mark[10]
            raise
        self.tx.execute("RELEASE SAVEPOINT wf_step")

    def _step(self, w: _Work) -> None:
        """Step an instance through its events and write what it did (its own rows at
        ``_flush``, for all instances together)."""
        done: list[_Done] = []
        inst = w.instance
        if inst is None:
            input = codec.loads(w.input_text)
            result = st.start(w.table, w.id, input, self.now, w.seed, self.limits)
            inst = result.instance
            done.append((None, "start", w.created_by, w.created_reason, None, input, result))
        for event, key, actor, reason, row_id in w.events:
            result = st.step(w.table, inst, event, self.now, self.limits)
            inst = result.instance
            done.append((event, key, actor, reason, row_id, None, result))
        self._write(w, done)

    def _write(self, w: _Work, done: Sequence[_Done]) -> None:
        history: list[tuple[Param, ...]] = []
        consumed: list[tuple[Param, ...]] = []
        commands: list[rt.Command] = []
        inst = w.instance
        for event, key, actor, reason, row_id, input, result in done:
            inst = result.instance
            history.append(
                self._history_row(w.id, inst.seq, event, input, result, key, actor, reason)
            )
            commands.extend(result.commands)
            if row_id is not None:
                consumed.append((inst.seq, row_id))
        assert inst is not None, "an instance is written after its start"
        self.decoded[w.id] = inst
        if self.store._waits_for_messages(w.hash, w.table):
            self._resubscribe(w, inst)
        wake = min((t.due for t in inst.timers), default=None)
        # The instance's own rows are written for all instances together (_flush).
        self.updates.append(
            (codec.dump_instance(inst), inst.status.value, inst.seq, wake, self.now, w.id)
        )
        self.history.extend(history)
        self.consumed.extend(consumed)
        self.fired.extend((w.id, e.timer) for e, *_ in done if isinstance(e, rt.TimerFired))
        for c in commands:
            APPLY[type(c)](self, w, inst, c)
        self.transitions += len(history)
        if _ended(inst.status) and (w.instance is None or not _ended(w.instance.status)):
            self.finished.append(w.id)

    def _resubscribe(self, w: _Work, inst: rt.Instance) -> None:
        """Keep the instance's message subscriptions in line with its tokens."""
        before = awaited_messages(w.instance)
        after = awaited_messages(inst)
        if before != after:
            handed = messages.resubscribe(
                self.tx,
                self.d,
                lambda t, iid, event, dedupe: self.store._inbox(t, iid, event, dedupe, at=self.now),
                lambda digest, name, data: self.store._message_fits(digest, name, data, self.tx),
                now=self.now,
                instance_id=w.id,
                table_hash=w.hash,
                before=before,
                after=after,
            )
            self.scheduled += handed

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
            key,
            actor,
            reason,
            self.worker,
        )

    # -- claiming -------------------------------------------------------------------

    def _claim(
        self, n: int, services: list[str] | None, once: frozenset[str]
    ) -> tuple[ClaimedTask, ...]:
        only = "" if services is None else f" AND service IN ({placeholders(len(services))})"
        params: tuple[Param, ...] = tuple(services or ())
        if services == []:
            return ()
        if self.d.single_writer:  # due and expired calls in one statement
            candidates = self.tx.query(
                "SELECT key FROM wf_task WHERE kind = 'service' AND ((status = 'ready' "
                "AND run_at <= ?) OR (status = 'running' AND lease_expires_at < ?))"
                f"{only} LIMIT ?",
                (self.now, self.now, *params, n),
            )
        else:
            candidates = self.tx.query(
                "SELECT key FROM wf_task WHERE kind = 'service' AND status = 'ready' "
                f"AND run_at <= ?{only} ORDER BY run_at, key LIMIT ?{self.d.skip_locked}",
                (self.now, *params, n),
            )
        if len(candidates) < n and not self.d.single_writer:
            candidates += self.tx.query(
                "SELECT key FROM wf_task WHERE kind = 'service' AND status = 'running' "
                f"AND lease_expires_at < ?{only} ORDER BY lease_expires_at, key "
                f"LIMIT ?{self.d.skip_locked}",
                (self.now, *params, n - len(candidates)),
            )
        keys = [str(k) for (k,) in candidates]
        if not keys:
            return ()
        until = self.now + self.lease_ms
        rows = self.tx.query(
            "UPDATE wf_task SET status = 'running', lease_owner = ?, "
            "lease_epoch = lease_epoch + 1, lease_expires_at = ?, claims = claims + 1, "
            f"updated_at = ? WHERE key IN ({placeholders(len(keys))}) "
            "RETURNING key, instance_id, node, service, args, attempt, lease_epoch, claims, "
            "at_most_once",
            (self.worker, until, self.now, *keys),
        )
        claimed: list[ClaimedTask] = []
        for key, iid, node, service, args, attempt, epoch, claims, was_once in rows:
            # A call that was started as at-most-once is never started again, whatever
            # this worker was told: the flag recorded on the task decides.
            if int(str(was_once)) and int(str(claims)) > 1:
                self._interrupt(str(key), str(iid), str(node))
                continue
            if str(service) in once and not int(str(was_once)):
                self.tx.execute("UPDATE wf_task SET at_most_once = 1 WHERE key = ?", (str(key),))
            claimed.append(
                ClaimedTask(
                    key=str(key),
                    instance_id=str(iid),
                    node=str(node),
                    service=str(service),
                    args=codec.loads(str(args)),
                    attempt=int(str(attempt)),
                    epoch=int(str(epoch)),
                    expires_at=until,
                )
            )
        claimed.sort(key=lambda c: c.key)
        return tuple(claimed)

    def claim_new(self, w: _Work, c: rt.ScheduleTask) -> None:
        """Insert a call already leased to this worker (epoch 1): no claim round trip."""
        until = self.now + self.lease_ms
        once = 1 if c.service in self.once else 0
        self.eager_rows[c.key] = (
            c.key, w.id, c.node, c.service, codec.dumps(c.args), c.attempt, self.now, once,
            self.worker, until, self.now, self.now,
        )  # fmt: skip
        self.claim_left -= 1
        self.eager.append(
            ClaimedTask(c.key, w.id, c.node, c.service, dict(c.args), c.attempt, 1, until)
        )

    def _flush(self) -> None:
        """Write what the steps produced for their own instances, a statement per table,
        and forget it (written)."""
        if self.updates:
            self.tx.executemany(
                "UPDATE wf_instance SET state = ?, status = ?, seq = ?, wake_at = ?, "
                "updated_at = ? WHERE id = ?",
                self.updates,
            )
        self.tx.executemany(
            "INSERT INTO wf_history (instance_id, seq, at, event, input, decisions, commands, "
            "idempotency_key, actor, reason, worker) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.history,
        )
        self.tx.executemany(
            "UPDATE wf_inbox SET consumed_seq = ? WHERE id = ? AND consumed_seq IS NULL",
            self.consumed,
        )
        self.tx.executemany(
            "DELETE FROM wf_timer WHERE instance_id = ? AND timer_id = ?", self.fired
        )
        rows = [self.eager_rows[t.key] for t in self.eager if t.key in self.eager_rows]
        inserted: set[str] = set()
        for i in range(0, len(rows), 200):
            part = rows[i : i + 200]
            values = ", ".join("(?, ?, ?, 'service', ?, ?, ?, 'running', ?, ?, 1, ?, 1, ?, ?, ?)"
                               for _ in part)  # fmt: skip
            inserted.update(
                str(k)
                for (k,) in self.tx.query(
                    "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, "
                    "status, run_at, at_most_once, claims, lease_owner, lease_epoch, "
                    f"lease_expires_at, created_at, updated_at) VALUES {values} "
                    "ON CONFLICT (key) DO NOTHING RETURNING key",
                    tuple(x for row in part for x in row),
                )
            )
        # A key already there (never, as keys are unique per visit) is not ours to run.
        self.eager = [t for t in self.eager if t.key in inserted or t.key not in self.eager_rows]
        self.updates, self.history, self.consumed, self.fired = [], [], [], []
        self.eager_rows = {}

    def unclaim(self, which: Callable[[ClaimedTask], bool]) -> None:
        """Forget calls claimed in this transaction that a later step cancelled."""
        kept = [t for t in self.eager if not which(t)]
        self.claim_left += len(self.eager) - len(kept)
        self.eager = kept

    def _interrupt(self, key: str, iid: str, node: str) -> None:
        """An at-most-once call whose worker vanished after starting it: never run again."""
        self.tx.execute(
            "UPDATE wf_task SET status = 'interrupted', lease_owner = NULL, "
            "lease_expires_at = NULL WHERE key = ?",
            (key,),
        )
        event = rt.TaskFailed(
            key,
            "Interrupted",
            False,
            f"{node} is at-most-once and its worker stopped after starting it; "
            "it was not run again",
        )
        self.store._inbox(self.tx, iid, event, f"task:{key}", at=self.now)


# ------------------------------------------------------------- applying commands


def _schedule(a: _Advance, w: _Work, inst: rt.Instance, c: rt.ScheduleTask) -> None:
    if a.claim_left > 0 and (a.services is None or c.service in a.services):
        a.claim_new(w, c)  # this worker has a free slot: the task starts out claimed
        return
    a.scheduled += 1
    a.tx.execute(
        "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, status, "
        "run_at, created_at, updated_at) VALUES (?, ?, ?, 'service', ?, ?, ?, 'ready', ?, ?, ?) "
        "ON CONFLICT (key) DO NOTHING",
        (c.key, w.id, c.node, c.service, codec.dumps(c.args), c.attempt, a.now, a.now, a.now),
    )


def _human(a: _Advance, w: _Work, inst: rt.Instance, c: rt.CreateHumanTask) -> None:
    a.tx.execute(
        "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, form, "
        "assignee, status, run_at, created_at, updated_at) "
        "VALUES (?, ?, ?, 'human', ?, ?, 1, ?, ?, 'open', ?, ?, ?) ON CONFLICT (key) DO NOTHING",
        (
            c.key,
            w.id,
            c.node,
            c.kind,
            codec.dumps(c.args),
            codec.dumps(list(c.form)),
            c.assignee,
            a.now,
            a.now,
            a.now,
        ),
    )


def _cancel_task(a: _Advance, w: _Work, inst: rt.Instance, c: rt.CancelTask) -> None:
    a.unclaim(lambda t: t.key == c.key)
    a.tx.execute(
        "UPDATE wf_task SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, "
        "updated_at = ? WHERE key = ? AND status IN ('ready', 'running', 'open')",
        (a.now, c.key),
    )


def _start_timer(a: _Advance, w: _Work, inst: rt.Instance, c: rt.StartTimer) -> None:
    a.tx.execute(
        "INSERT INTO wf_timer (instance_id, timer_id, due_at) VALUES (?, ?, ?) "
        "ON CONFLICT (instance_id, timer_id) DO NOTHING",
        (w.id, c.id, c.due),
    )


def _cancel_timer(a: _Advance, w: _Work, inst: rt.Instance, c: rt.CancelTimer) -> None:
    a.tx.execute("DELETE FROM wf_timer WHERE instance_id = ? AND timer_id = ?", (w.id, c.id))


def _start_child(a: _Advance, w: _Work, inst: rt.Instance, c: rt.StartChild) -> None:
    if c.version is None:
        rows = a.tx.query(
            "SELECT version, hash FROM wf_workflow WHERE name = ? ORDER BY version DESC LIMIT 1",
            (c.workflow,),
        )
    else:
        rows = a.tx.query(
            "SELECT version, hash FROM wf_workflow WHERE name = ? AND version = ?",
            (c.workflow, c.version),
        )
    child = child_id(w.id, c.key)
    if not rows:  # not deployed: the call fails, as a handler error would
        event = rt.ChildFailed(c.key, f"workflow '{c.workflow}' is not deployed")
        a.store._inbox(a.tx, w.id, event, f"child:{c.key}", at=a.now)
        return
    version, digest = rows[0]
    a.tx.execute(
        "INSERT INTO wf_instance (id, workflow, version, table_hash, status, input, seed, "
        "parent_id, parent_key, wake_at, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (
            child,
            c.workflow,
            int(str(version)),
            str(digest),
            PENDING,
            codec.dumps(c.input),
            _seed(child),
            w.id,
            c.key,
            a.now,
            a.now,
            a.now,
        ),
    )


def _cancel_child(a: _Advance, w: _Work, inst: rt.Instance, c: rt.CancelChild) -> None:
    event = rt.CancelRequested(True, "parent cancelled it")
    # A child started before ids were bounded has the parent's id and the key for its id.
    for (child,) in a.tx.query(
        "SELECT id FROM wf_instance WHERE id IN (?, ?) AND parent_id = ?",
        (child_id(w.id, c.key), f"{w.id}/{c.key}", w.id),
    ):
        a.store._inbox(a.tx, str(child), event, "cancel:parent", at=a.now)


def _stop_work(a: _Advance, iid: str) -> None:
    """Cancel an instance's calls and human tasks and forget its timers' rows."""
    a.unclaim(lambda t: t.instance_id == iid)
    a.tx.execute(
        "UPDATE wf_task SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL, "
        "updated_at = ? WHERE instance_id = ? AND status IN ('ready', 'running', 'open')",
        (a.now, iid),
    )
    a.tx.execute("DELETE FROM wf_timer WHERE instance_id = ?", (iid,))


def _finish(a: _Advance, w: _Work, inst: rt.Instance, c: rt.Finish) -> None:
    _stop_work(a, w.id)
    table = w.table
    payload = {
        "workflow": table.workflow,
        "version": table.version,
        "status": c.status.value,
        "output": c.output,
        "error": c.error,
    }
    # An instance finishes once; a dead letter, which ops may retry, is an event of its own.
    dead = c.status is rt.Status.DEAD_LETTERED
    a.tx.execute(
        "INSERT INTO wf_outbox (instance_id, seq, kind, payload, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (
            w.id,
            inst.seq,
            "instance.dead_lettered" if dead else "instance.finished",
            codec.dumps(payload),
            a.now,
        ),
    )
    if w.parent_id is not None and w.parent_key is not None and not dead:  # (the parent waits)
        event: rt.Event
        if c.status is rt.Status.COMPLETED:
            event = rt.ChildCompleted(w.parent_key, dict(c.output or {}))
        else:
            event = rt.ChildFailed(w.parent_key, c.error or c.status.value)
        a.store._inbox(a.tx, w.parent_id, event, f"child:{w.parent_key}", at=a.now)


APPLY: dict[type, Callable[[_Advance, _Work, rt.Instance, Any], None]] = {
    rt.ScheduleTask: _schedule,
    rt.CreateHumanTask: _human,
    rt.CancelTask: _cancel_task,
    rt.StartTimer: _start_timer,
    rt.CancelTimer: _cancel_timer,
    rt.StartChild: _start_child,
    rt.CancelChild: _cancel_child,
    rt.Finish: _finish,
}
"""What each command the step function emits writes, in the same transaction."""
