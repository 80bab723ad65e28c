"""Durable execution benchmark: steps/s on SQLite and PostgreSQL against the commit floor.

Run from the repository root::

    .venv/bin/python bench/durable.py [--quick] [--json] [--no-pg]

The workflow is a generated linear chain of ``--chain`` service tasks (20 by default)
``t1 -> t2 -> ... -> done``, written to a temporary folder as ``chain.wf`` and compiled
with ``compile_workflow`` (not timed). Every task calls the service ``svc.op`` with
``args { n: context.n }`` and ``output { n: context.n + result.value }``; the handler
returns ``{value: 1}`` (after ``time.sleep(--sleep-ms)`` where a case says so), so each
instance must end ``completed`` with ``n == CHAIN``: the script checks that, and that the
store holds exactly ``CHAIN + 1`` history rows per instance, after every sample.

**A step** is one committed transition: one history row (the start, then one per task
result). steps/s = history rows committed / wall time.

Cases, in two phases (all SQLite rounds, then all PostgreSQL rounds: the server's
background work after a PostgreSQL case would otherwise slow the next SQLite one);
within a phase the cases take turns round by round so that they share the disk's
conditions, which vary a lot on this machine:

* ``floor``: one SQLite WAL transaction, ``BEGIN IMMEDIATE``, an INSERT of one row and
  an UPDATE of one row, ``COMMIT``, ``synchronous=FULL``, on a fresh file in the same
  kind of folder as the store's (a temporary folder on the repository's filesystem);
  as many as fit in ``--floor-time`` seconds. Figure: transactions/s.
* ``sqlite-1tx``: ``Worker(store, ..., group_commit=False, concurrency=1, batch=1)``,
  ``run_until_idle()`` (handlers inline) on one instance at a time, so that every write
  transaction commits exactly one step: the start, then each handler result fused with
  the step it causes and the claim of the next task. Each instance is created and run by
  ``Worker.run_new`` (the embedded way to start a workflow and run it, as the DBOS twin's
  workflow call is; its create commits with its start where that is carried: since
  2026-12-03, before that ``store.create`` then ``run_until_idle``, a commit more), timed
  with its run, as the DBOS twin's timed call records the workflow's start (until
  2026-12-02 the create was not timed: 4-8% faster figures). Target: steps/s >= 50% of
  the floor's transactions/s.
* ``sqlite-group``: ``--instances`` instances (200) created up front, then
  ``Worker(group_commit=True, concurrency=C, batch=B)``, ``run_until_idle()``: one
  transaction commits the results of up to C calls and steps the instances they wake.
  Target: steps/s >= 2x the floor's transactions/s.
* ``sql-1tx``, ``sql-group`` (the ceilings): only the SQL of the same steps through the
  store's schema and connection, every value prepared beforehand (the documents made
  once by the real step function and codec): fence the result, lock the instance, look
  at its inbox, write the instance, its history row and its next call, claimed; one
  step per transaction (as ``sqlite-1tx``) or a step of each of ``--instances`` per
  transaction (as ``sqlite-group``). No step function, encoding, handler or worker: no
  durable step through this schema can be faster. ``sql-min-1tx``, ``sql-min-group``:
  only the floor's two statements with the real rows (the instance's new state, its
  history row), what any durable step must write whatever the schema.
* ``pg-W`` (W = 1, 2, 4 worker processes): ``--instances`` instances on a fresh
  PostgreSQL schema; W processes (``multiprocessing``, spawn) each run the production
  loop ``Worker.run()`` (a handler thread pool of ``--pg-concurrency``, group commit,
  ``--pg-batch`` 32, ``poll_ms`` 5) on the same store until every instance has finished.
  Figure: steps/s from the start signal to the last committed transition. Run without
  handler latency and with ``--sleep-ms`` of simulated I/O in the handler. Target:
  2 workers >= 1.5x one worker. ``pg-floor`` is the PostgreSQL analogue of the SQLite
  floor (one connection, autocommit off), for reading the figures.

Each case is measured ``--repeat`` times (5; 3 with ``--quick``) after one untimed
warm-up round; figures are medians. Ratios are given two ways: median of the case /
median of the floor, and the median of the per-round ratios (each round's case against
the same round's floor), which is steadier when the disk's speed drifts.

Beside the rates, the report gives steps per writing transaction, wall time per
transaction, the CPU used by the worker process(es) and by the PostgreSQL server per
wall second, how busy the machine's CPUs were (other users' load shows there), the
floors' commit latency percentiles and the 1-minute load average at each round's start.

``--peers dbos`` (issue 18) runs instead wflang's cases against the same work on DBOS
Transact (the ``bench`` extra), a chain of 10 steps by default: ``sqlite-1tx`` against
``dbos-sqlite-1tx``, ``pg-1tx`` (``sqlite-1tx`` on PostgreSQL) against ``dbos-pg-1tx``,
and ``pg-W`` (no handler sleep) against ``dbos-pg-W``, ``--instances`` workflows on a DBOS
queue with W processes, each pair taking turns round by round, with the ratios
wflang/DBOS and the issue's targets; the floors stay as information. The DBOS cases,
how they count steps and both sides' durability settings: bench/durable_dbos.py.
It ends with ``pg-signal``, the latency from ``Client.signal`` (what ``wf signal`` runs)
to the start of the handler it leads to, with an idle worker on PostgreSQL, p50 and p99
over ``--signals`` signals (bench/durable_signal.py).

``--profile sqlite-1tx|sqlite-group|pg-group`` prints a cProfile of one run (in
process) instead; ``--emit`` prints the generated workflow; ``--save FILE`` also writes
the JSON report, ``--render FILE`` prints the table of a saved one; ``--cases a,b``
runs only some cases (for exploring: targets whose cases did not run are left out).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import multiprocessing as mp
import os
import pstats
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import benchlib  # the folder of this script is on sys.path when it runs

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wflang.compiler.compile import compile_workflow  # noqa: E402
from wflang.dsl.parser import parse  # noqa: E402
from wflang.durable.worker import Worker  # noqa: E402
from wflang.runtime.table import Table  # noqa: E402
from wflang.store import Store, open_store  # noqa: E402
from wflang.store.records import Advanced  # noqa: E402

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
SERVICE = "svc.op"
#: Targets: SQLite steps/s against the floor's tx/s; PostgreSQL 2 workers against 1.
ONE_TX_TARGET = 0.5
GROUP_TARGET = 2.0
PG_TARGET = 1.5
PG_WORKERS = (1, 2, 4)
#: Against DBOS Transact (issue 18): wflang's steps/s over DBOS's, the same work.
DBOS_SEQUENTIAL_TARGETS = {"sqlite": 5.0, "pg": 3.0}
DBOS_QUEUE_TARGET = 3.0
#: Signal-to-handler latency with an idle worker on PostgreSQL (issue 18), ms.
SIGNAL_P50_TARGET_MS = 5.0
#: The SQL ceilings: case -> (one transaction per instance step or group, full statements).
SQL_CASES = {
    "sql-1tx": (False, True),
    "sql-group": (True, True),
    "sql-min-1tx": (False, False),
    "sql-min-group": (True, False),
}
#: What the durable paths run: the store, the worker and the step function under them.
MEASURED = ("wflang/store", "wflang/durable", "wflang/runtime")

# ------------------------------------------------------------------ the workflow


def chain_source(size: int) -> str:
    parts = [
        "workflow chain version 1\n\ncontext { n: int = 0 }\n\noutput { n: int }\n\n"
        "service svc.op(n: int) -> { value: int }\n\nstart t1\n"
    ]
    for i in range(1, size + 1):
        nxt = f"t{i + 1}" if i < size else "done"
        parts.append(
            f"task t{i}: service svc.op {{\n    args {{ n: context.n }}\n"
            f"    output {{ n: context.n + result.value }}\n    next {nxt}\n}}\n"
        )
    parts.append("end done: completed {\n    output { n: context.n }\n}\n")
    return "\n".join(parts)


def compile_chain(size: int, folder: Path) -> Table:
    path = folder / "chain.wf"
    path.write_text(chain_source(size), encoding="utf-8")
    compiled = compile_workflow(parse(path.read_text(encoding="utf-8"), str(path)))
    if compiled.table is None:
        for d in compiled.check.diagnostics:
            print(d, file=sys.stderr)
        raise SystemExit("the generated chain does not compile")
    return compiled.table


class Handler:
    """The trivial service: ``{value: 1}``, after ``sleep_ms`` of simulated I/O."""

    def __init__(self, sleep_ms: float = 0.0) -> None:
        self.sleep_s = sleep_ms / 1000

    def __call__(self, **kw: Any) -> dict[str, Any]:
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return {"value": 1}


# ------------------------------------------------------------------ plumbing


def temp_root() -> Path:
    """A temporary folder on the repository's filesystem (not a tmpfs)."""
    tmp = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        if tmp.stat().st_dev == ROOT.stat().st_dev:
            return Path(tempfile.mkdtemp(prefix="wflang-durable-", dir=tmp))
    base = ROOT / ".wflang" / "bench"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="durable-", dir=base))


def filesystem(path: Path) -> str:
    """The filesystem type and device of ``path`` (from /proc/mounts), for the header."""
    best, found = "", "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, mnt, kind, *_ = line.split()
            if str(path).startswith(mnt) and len(mnt) >= len(best):
                best, found = mnt, f"{kind} on {dev} (mounted at {mnt})"
    return found


def cpu_times() -> tuple[float, float]:
    """Busy and total jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def postgres_cpu() -> float:
    """CPU seconds used so far by every process named ``postgres`` (the server)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        if name == "postgres" or name.startswith("postgres:"):
            rest = text[text.rindex(")") + 2 :].split()
            total += int(rest[11]) + int(rest[12])  # utime, stime
    return total / tick


class Usage:
    """Machine CPU busy share and PostgreSQL server CPU seconds over a block."""

    def __enter__(self) -> Usage:
        self.busy0, self.total0 = cpu_times()
        self.pg0 = postgres_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        busy, total = cpu_times()
        self.machine_busy = (busy - self.busy0) / max(1, total - self.total0)
        self.pg_cpu_s = postgres_cpu() - self.pg0


def check_store(store: Store, instances: int, chain: int) -> int:
    """Every instance completed with n == chain and chain + 1 history rows; the rows."""
    with store.backend.read() as tx:
        status = tx.query("SELECT status, count(*) FROM wf_instance GROUP BY status")
        rows = int(str(tx.query("SELECT count(*) FROM wf_history")[0][0]))
        per = tx.query(
            "SELECT min(c), max(c) FROM (SELECT count(*) AS c FROM wf_history "
            "GROUP BY instance_id) AS t"
        )
    counts = {str(s): int(str(n)) for s, n in status}
    if counts != {"completed": instances} or rows != instances * (chain + 1):
        raise SystemExit(f"store check failed: {counts}, {rows} history rows")
    if tuple(int(str(x)) for x in per[0]) != (chain + 1, chain + 1):
        raise SystemExit(f"store check failed: history rows per instance {per[0]}")
    last = store.instances(status="completed", limit=1)[0]
    if last.instance is None or last.instance.output != {"n": chain}:
        raise SystemExit(f"store check failed: output {last.instance and last.instance.output}")
    return rows


# ------------------------------------------------------------------ SQLite


def sqlite_floor(folder: Path, seconds: float) -> dict[str, Any]:
    """BEGIN IMMEDIATE; INSERT one row; UPDATE one row; COMMIT, on a fresh WAL file."""
    path = folder / f"floor-{uuid.uuid4().hex[:8]}.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE log (id integer PRIMARY KEY, key text NOT NULL, body text)")
        conn.execute("CREATE TABLE item (id integer PRIMARY KEY, n integer, body text)")
        conn.execute("INSERT INTO item VALUES (1, 0, '')")
        body = "x" * 200
        n = 0
        lat: list[float] = []
        clock = time.perf_counter
        t0 = clock()
        end = t0 + seconds
        while True:
            a = clock()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO log (key, body) VALUES (?, ?)", (f"k{n}", body))
            conn.execute("UPDATE item SET n = n + 1, body = ? WHERE id = 1", (body,))
            conn.execute("COMMIT")
            b = clock()
            lat.append(b - a)
            n += 1
            if b >= end:
                break
        elapsed = clock() - t0
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return {"tx": n, "seconds": elapsed, "rate": n / elapsed, **latency(lat)}


def latency(lat: list[float]) -> dict[str, float]:
    """Percentiles of the transaction latencies, in ms."""
    lat = sorted(lat)
    return {f"p{q}_ms": lat[min(len(lat) - 1, len(lat) * q // 100)] * 1000 for q in (10, 50, 90)}


@contextlib.contextmanager
def sqlite_store(folder: Path, table: Table) -> Iterator[Store]:
    path = folder / f"state-{uuid.uuid4().hex[:8]}.db"
    store = open_store(f"sqlite:///{path}")
    try:
        store.migrate()
        store.deploy(table)
        yield store
    finally:
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


class TxCounter:
    """Counts advance transactions (all, and those that committed a step)."""

    def __init__(self) -> None:
        self.tx = self.writing = 0
        self.last = 0.0

    def __call__(self, adv: Advanced) -> None:
        self.tx += 1
        if adv.transitions:
            self.writing += 1
            self.last = time.perf_counter()


def sqlite_one_tx(folder: Path, table: Table, instances: int, chain: int) -> dict[str, Any]:
    """One instance at a time, one transaction per step; each create timed with its run."""
    with sqlite_store(folder, table) as store:
        return one_at_a_time(store, instances, chain, "sqlite-1tx")


def pg_one_tx(dsn: str, table: Table, instances: int, chain: int) -> dict[str, Any]:
    """``sqlite-1tx`` on a fresh PostgreSQL schema (the sequential case of ``--peers``)."""
    with pg_schema(dsn) as schema:
        store = open_store(pg_url(dsn, schema), pool=2)
        try:
            store.migrate()
            store.deploy(table)
            return one_at_a_time(store, instances, chain, "pg-1tx")
        finally:
            store.close()


def one_at_a_time(store: Store, instances: int, chain: int, name: str) -> dict[str, Any]:
    """Each instance created and run to its end alone (``Worker.run_new``): one
    transaction per step. The create is timed too: DBOS's workflow call, which it is
    compared with, records the workflow's start in its time."""
    deployed = store.deployed("chain")
    counter = TxCounter()
    worker = Worker(
        store,
        {SERVICE: Handler()},
        concurrency=1,
        batch=1,
        group_commit=False,
        on_advance=counter,
    )
    elapsed = cpu = 0.0
    steps = 0
    for i in range(instances):
        c0, t0 = time.process_time(), time.perf_counter()
        steps += worker.run_new(deployed, {}, f"i{i:05d}")  # the create in the start's tx
        elapsed += time.perf_counter() - t0
        cpu += time.process_time() - c0
    rows = check_store(store, instances, chain)
    if steps != rows:
        raise SystemExit(f"{name}: the worker counted {steps} steps, the store has {rows}")
    return figures(steps, elapsed, cpu, counter.tx, counter.writing)


def figures(steps: int, elapsed: float, cpu: float, tx: int, writing: int) -> dict[str, Any]:
    """A SQLite case's sample: rates per wall second and per writing transaction."""
    return {
        "steps": steps,
        "seconds": elapsed,
        "rate": steps / elapsed,
        "transactions": tx,
        "writing_transactions": writing,
        "steps_per_writing_tx": steps / max(1, writing),
        "worker_cpu_s": cpu,
        "worker_cpu_share": cpu / elapsed,
    }


def sqlite_group(
    folder: Path, table: Table, instances: int, chain: int, concurrency: int, batch: int
) -> dict[str, Any]:
    """Every instance created up front, then one group-committing run_until_idle."""
    with sqlite_store(folder, table) as store:
        deployed = store.deployed("chain")
        for i in range(instances):
            store.create(deployed, {}, f"i{i:05d}")
        counter = TxCounter()
        worker = Worker(
            store,
            {SERVICE: Handler()},
            concurrency=concurrency,
            batch=batch,
            group_commit=True,
            on_advance=counter,
        )
        c0, t0 = time.process_time(), time.perf_counter()
        steps = worker.run_until_idle()
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
        rows = check_store(store, instances, chain)
    if steps != rows:
        raise SystemExit(f"sqlite-group: the worker counted {steps} steps, the store has {rows}")
    return figures(steps, elapsed, cpu, counter.tx, counter.writing)


# ------------------------------------------------------------------ SQL ceilings


class StepRows:
    """What the store writes for each step of one instance of the chain, prepared once.

    The documents come from the real step function and codec (one instance run
    through the chain in memory), so their sizes are the durable cases' sizes;
    ``for_instance`` renames them for another instance id.
    """

    def __init__(self, table: Table) -> None:
        from wflang.runtime import codec
        from wflang.runtime import instance as rt
        from wflang.runtime import step as st

        self.steps: list[dict[str, Any]] = []
        result = st.start(table, "i00000", {}, 0, 1)
        event: rt.Event | None = None
        done: str | None = None
        while True:
            inst = result.instance
            calls = [c for c in result.commands if isinstance(c, rt.ScheduleTask)]
            self.steps.append(
                {
                    "state": codec.dump_instance(inst),
                    "status": inst.status.value,
                    "seq": inst.seq,
                    "event": None if event is None else codec.dump_event(event),
                    "input": "{}" if event is None else None,
                    "decisions": codec.dumps(result.decisions),
                    "commands": codec.dumps(codec.unstructure_commands(result.commands)),
                    "key": "start" if done is None else f"task:{done}",
                    "done": done,  # the call whose result this step commits
                    "call": None
                    if not calls
                    else (calls[0].key, calls[0].node, codec.dumps(calls[0].args)),
                }
            )
            if not calls:
                return
            done = calls[0].key
            event = rt.TaskCompleted(done, {"value": 1})
            result = st.step(table, inst, event, 0)

    def for_instance(self, iid: str) -> list[dict[str, Any]]:
        def rename(v: object) -> object:
            if isinstance(v, str):
                return v.replace("i00000", iid)
            if isinstance(v, tuple):
                return tuple(rename(x) for x in v)
            return v

        return [{k: rename(v) for k, v in s.items()} for s in self.steps]


_FENCE = (
    "UPDATE wf_task SET status = 'done', lease_owner = NULL, lease_expires_at = NULL, "
    "updated_at = ? WHERE (key, lease_epoch, instance_id) IN (VALUES {values}) "
    "AND status = 'running' AND lease_expires_at >= ? RETURNING key, lease_epoch"
)
_UPDATE = (
    "UPDATE wf_instance SET state = ?, status = ?, seq = ?, wake_at = ?, updated_at = ? "
    "WHERE id = ?"
)
_HISTORY = (
    "INSERT INTO wf_history (instance_id, seq, at, event, input, decisions, commands, "
    "idempotency_key, actor, reason, worker) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)"
)
_CALL = (
    "INSERT INTO wf_task (key, instance_id, node, kind, service, args, attempt, status, "
    "run_at, at_most_once, claims, lease_owner, lease_epoch, lease_expires_at, created_at, "
    "updated_at) VALUES {values} ON CONFLICT (key) DO NOTHING RETURNING key"
)
_CALL_ROW = "(?, ?, ?, 'service', ?, ?, 1, 'running', ?, 0, 1, ?, 1, ?, ?, ?)"


def sql_steps(tx: Any, batch: list[tuple[str, dict[str, Any]]], now: int, full: bool) -> None:
    """The statements of one advance transaction for these (instance, step) pairs.

    ``full``: what the store runs (fence the results, lock the instances, look at
    their inbox, write them, their history rows and their next calls, claimed);
    otherwise only what any durable step must write, the floor's two statements with
    the real rows: the instance's new state and its history row.
    """
    ids = [iid for iid, _ in batch]
    marks = ", ".join("?" for _ in ids)
    results = [(s["done"], 1, iid) for iid, s in batch if s["done"] is not None]
    if full and results:
        values = ", ".join("(?, ?, ?)" for _ in results)
        tx.query(_FENCE.format(values=values), (now, *(x for r in results for x in r), now))
    if full:
        tx.query(f"SELECT id, table_hash, seq, state FROM wf_instance WHERE id IN ({marks})", ids)
        tx.query(
            "SELECT id, instance_id, event FROM wf_inbox WHERE instance_id IN "
            f"({marks}) AND consumed_seq IS NULL AND available_at <= ? ORDER BY id",
            (*ids, now),
        )
    tx.executemany(
        _UPDATE, [(s["state"], s["status"], s["seq"], None, now, iid) for iid, s in batch]
    )
    tx.executemany(
        _HISTORY,
        [
            (iid, s["seq"], now, s["event"], s["input"], s["decisions"], s["commands"],
             s["key"], "bench-worker")
            for iid, s in batch
        ],
    )  # fmt: skip
    calls = [(iid, s["call"]) for iid, s in batch if s["call"] is not None]
    if full and calls:
        until = now + 30_000
        tx.query(
            _CALL.format(values=", ".join(_CALL_ROW for _ in calls)),
            tuple(
                x
                for iid, (key, node, args) in calls
                for x in (key, iid, node, SERVICE, args, now, "bench-worker", until, now, now)
            ),
        )


def sql_ceiling(
    folder: Path, table: Table, rows: StepRows, instances: int, group: bool, full: bool
) -> dict[str, Any]:
    """Only the SQL of the durable steps, values prepared beforehand: no step function,
    no encoding, no handler, no worker. An upper bound for any durable step written
    through this schema (``full``) or through any schema (the two rows alone)."""
    with sqlite_store(folder, table) as store:
        deployed = store.deployed("chain")
        plans = {}
        for i in range(instances):
            iid = f"i{i:05d}"
            store.create(deployed, {}, iid)
            plans[iid] = rows.for_instance(iid)
        now = int(time.time() * 1000)
        order = list(plans)
        if group:  # step k of every instance in one transaction
            txs = [[(iid, plans[iid][k]) for iid in order] for k in range(len(rows.steps))]
        else:  # one instance after the other, one step per transaction
            txs = [[(iid, step)] for iid in order for step in plans[iid]]
        backend = store.backend
        c0, t0 = time.process_time(), time.perf_counter()
        for batch in txs:
            with backend.transaction() as tx:
                sql_steps(tx, batch, now, full)
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
        steps = sum(len(b) for b in txs)
        rows_written = check_store(store, instances, len(rows.steps) - 1)
    if rows_written != steps:
        raise SystemExit(f"sql ceiling: {steps} steps, the store has {rows_written} rows")
    return figures(steps, elapsed, cpu, len(txs), len(txs))


# ------------------------------------------------------------------ PostgreSQL


def pg_url(dsn: str, schema: str) -> str:
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options={quote(f'-csearch_path={schema}', safe='')}"


@contextlib.contextmanager
def pg_schema(dsn: str) -> Iterator[str]:
    import psycopg

    schema = f"wfbench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def pg_available(dsn: str) -> str | None:
    """None if the server answers, else why not."""
    try:
        import psycopg

        with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as err:  # any failure means: skip PostgreSQL
        return f"{type(err).__name__}: {err}".strip()
    return None


def pg_floor(dsn: str, seconds: float) -> dict[str, Any]:
    """The PostgreSQL analogue of the SQLite floor: one INSERT and one UPDATE per commit."""
    import psycopg

    with pg_schema(dsn) as schema, psycopg.connect(pg_url(dsn, schema)) as conn:
        conn.execute("CREATE TABLE log (id bigserial PRIMARY KEY, key text NOT NULL, body text)")
        conn.execute("CREATE TABLE item (id integer PRIMARY KEY, n integer, body text)")
        conn.execute("INSERT INTO item VALUES (1, 0, '')")
        conn.commit()
        body = "x" * 200
        n = 0
        lat: list[float] = []
        clock = time.perf_counter
        t0 = clock()
        end = t0 + seconds
        while True:
            a = clock()
            conn.execute(
                "INSERT INTO log (key, body) VALUES (%s, %s)", (f"k{n}", body), prepare=True
            )
            conn.execute("UPDATE item SET n = n + 1, body = %s WHERE id = 1", (body,), prepare=True)
            conn.commit()
            b = clock()
            lat.append(b - a)
            n += 1
            if b >= end:
                break
        elapsed = clock() - t0
    return {"tx": n, "seconds": elapsed, "rate": n / elapsed, **latency(lat)}


def _pg_child(
    url: str,
    total: int,
    concurrency: int,
    batch: int,
    sleep_ms: float,
    ready: Any,
    go: Any,
    release: Any,
    finished: Any,
    out: Any,
) -> None:
    """One worker process: the production loop until every instance has finished."""
    store = open_store(url, pool=2)
    counter = TxCounter()
    lock = finished.get_lock()

    def on_advance(adv: Advanced) -> None:
        counter(adv)
        if adv.finished:
            with lock:
                finished.value += len(adv.finished)

    worker = Worker(
        store,
        {SERVICE: Handler(sleep_ms)},
        concurrency=concurrency,
        batch=batch,
        group_commit=True,
        poll_ms=5,
        on_advance=on_advance,
    )
    store.deployed("chain")  # the table, loaded and cached before the start
    thread = threading.Thread(target=worker.run, name="wf-worker-loop")
    ready.set()
    go.wait()
    cpu0 = time.process_time()
    thread.start()
    while finished.value < total:
        time.sleep(0.001)
    worker.stop()
    thread.join()
    out.put(
        {
            "steps": worker.counters.transitions,
            "transactions": counter.tx,
            "writing_transactions": counter.writing,
            "last": counter.last,
            "cpu_s": time.process_time() - cpu0,
            "stale": worker.counters.stale,
        }
    )
    release.wait(120)  # the server's CPU is read before our connections (backends) end
    store.close()


def pg_run(
    dsn: str,
    table: Table,
    workers: int,
    instances: int,
    chain: int,
    concurrency: int,
    batch: int,
    sleep_ms: float,
) -> dict[str, Any]:
    """``workers`` processes on one fresh schema; wall time from the start signal."""
    ctx = mp.get_context("spawn")
    with pg_schema(dsn) as schema:
        url = pg_url(dsn, schema)
        store = open_store(url, pool=2)
        try:
            store.migrate()
            store.deploy(table)
            deployed = store.deployed("chain")
            for i in range(instances):
                store.create(deployed, {}, f"i{i:05d}")
            go, release = ctx.Event(), ctx.Event()
            finished, out = ctx.Value("i", 0), ctx.Queue()
            readies = [ctx.Event() for _ in range(workers)]
            args = (url, instances, concurrency, batch, sleep_ms)
            procs = [
                ctx.Process(
                    target=_pg_child, args=(*args, r, go, release, finished, out), daemon=True
                )
                for r in readies
            ]
            for p in procs:
                p.start()
            for r in readies:
                if not r.wait(120):
                    raise SystemExit("a PostgreSQL worker process did not start")
            with Usage() as usage:
                t0 = time.perf_counter()
                go.set()
                reports = [out.get(timeout=600) for _ in procs]
            release.set()
            for p in procs:
                p.join(60)
            rows = check_store(store, instances, chain)
        finally:
            store.close()
    steps = sum(r["steps"] for r in reports)
    if steps != rows:
        raise SystemExit(f"pg-{workers}: the workers counted {steps} steps, the store has {rows}")
    elapsed = max(r["last"] for r in reports) - t0
    return {
        "steps": steps,
        "seconds": elapsed,
        "rate": steps / elapsed,
        "transactions": sum(r["transactions"] for r in reports),
        "writing_transactions": sum(r["writing_transactions"] for r in reports),
        "steps_per_writing_tx": steps / max(1, sum(r["writing_transactions"] for r in reports)),
        "worker_cpu_s": sum(r["cpu_s"] for r in reports),
        "worker_cpu_share": sum(r["cpu_s"] for r in reports) / elapsed,
        "postgres_cpu_s": usage.pg_cpu_s,
        "postgres_cpu_share": usage.pg_cpu_s / elapsed,
        "machine_busy": usage.machine_busy,
        "stale": sum(r["stale"] for r in reports),
    }


# ------------------------------------------------------------------ the benchmark


class Config:
    def __init__(self, args: argparse.Namespace) -> None:
        quick = args.quick
        self.chain: int = args.chain
        self.repeat: int = args.repeat or (3 if quick else 5)
        self.floor_time: float = args.floor_time or (1.0 if quick else 2.0)
        self.one_tx_instances: int = args.one_tx_instances or (10 if quick else 25)
        self.instances: int = args.instances or (100 if quick else 200)
        self.concurrency: int = args.concurrency
        self.batch: int = args.batch or args.concurrency
        self.pg: bool = not args.no_pg
        self.dsn: str = args.dsn
        self.pg_concurrency: int = args.pg_concurrency
        self.pg_batch: int = args.pg_batch
        self.sleep_ms: float = args.sleep_ms
        self.only: list[str] = [c for c in (args.cases or "").split(",") if c]
        self.peers: list[str] = [args.peers] if args.peers else []
        self.dbos_poll_ms: float = args.dbos_poll_ms
        self.signals: int = args.signals or (50 if quick else 200)

    def as_dict(self) -> dict[str, Any]:
        d = dict(vars(self))
        d["dsn"] = self.dsn.split("?")[0]
        return d


def case_names(cfg: Config) -> list[str]:
    names = ["floor", "sqlite-1tx", "sqlite-group", *SQL_CASES]
    if cfg.peers:  # wflang's cases next to their DBOS twins, taking turns; floors for reading
        names = ["floor", "sqlite-1tx", "dbos-sqlite-1tx"]
        if cfg.pg:
            names += ["pg-floor", "pg-1tx", "dbos-pg-1tx"]
            for w in PG_WORKERS:
                names += [pg_case(w, 0.0), f"dbos-{pg_case(w, 0.0)}"]
            names.append("pg-signal")
    elif cfg.pg:
        names.append("pg-floor")
        for sleep in (0.0, cfg.sleep_ms) if cfg.sleep_ms else (0.0,):
            names += [pg_case(w, sleep) for w in PG_WORKERS]
    if cfg.only:
        names = [n for n in names if n in cfg.only]
    return names


def pg_case(workers: int, sleep_ms: float) -> str:
    return f"pg-{workers}" + (f"-sleep{sleep_ms:g}ms" if sleep_ms else "")


def run_round(
    cfg: Config, table: Table, folder: Path, names: list[str], log: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        if name == "floor":
            r = sqlite_floor(folder, cfg.floor_time)
        elif name == "sqlite-1tx":
            r = sqlite_one_tx(folder, table, cfg.one_tx_instances, cfg.chain)
        elif name == "sqlite-group":
            r = sqlite_group(folder, table, cfg.instances, cfg.chain, cfg.concurrency, cfg.batch)
        elif name in SQL_CASES:
            group, full = SQL_CASES[name]
            count = cfg.instances if group else cfg.one_tx_instances
            r = sql_ceiling(folder, table, StepRows(table), count, group, full)
        elif name == "pg-floor":
            r = pg_floor(cfg.dsn, cfg.floor_time)
        elif name == "pg-1tx":
            r = pg_one_tx(cfg.dsn, table, cfg.one_tx_instances, cfg.chain)
        elif name.startswith("dbos-"):
            r = dbos_case(cfg, folder, name)
        elif name == "pg-signal":
            r = pg_signal(cfg, folder)
        else:
            workers = int(name.split("-")[1])
            sleep = cfg.sleep_ms if "sleep" in name else 0.0
            r = pg_run(
                cfg.dsn,
                table,
                workers,
                cfg.instances,
                cfg.chain,
                cfg.pg_concurrency,
                cfg.pg_batch,
                sleep,
            )
        if name == "pg-signal":
            log(f"  {name:<22} p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms")
        else:
            log(f"  {name:<22} {r['rate']:>9,.0f} /s")
        out[name] = r
    return out


def dbos_case(cfg: Config, folder: Path, name: str) -> dict[str, Any]:
    """One sample of a DBOS case (bench/durable_dbos.py), on a fresh system database."""
    import durable_dbos

    if name == "dbos-sqlite-1tx":
        url = durable_dbos.sqlite_url(folder)
        try:
            return durable_dbos.one_at_a_time(url, cfg.one_tx_instances, cfg.chain)
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{url.removeprefix('sqlite:///')}{suffix}").unlink(missing_ok=True)
    with durable_dbos.fresh_pg_database(cfg.dsn) as url:
        if name == "dbos-pg-1tx":
            return durable_dbos.one_at_a_time(url, cfg.one_tx_instances, cfg.chain)
        workers = int(name.split("-")[2])
        return durable_dbos.queued(
            url, workers, cfg.instances, cfg.chain, cfg.dbos_poll_ms, Usage()
        )


def pg_signal(cfg: Config, folder: Path) -> dict[str, Any]:
    """Signal-to-handler latency with an idle worker (bench/durable_signal.py)."""
    import durable_signal

    table = durable_signal.compile_ping(folder)
    with pg_schema(cfg.dsn) as schema:
        return durable_signal.signal_latency(pg_url(cfg.dsn, schema), table, cfg.signals)


def on_postgres(name: str) -> bool:
    return name.removeprefix("dbos-").startswith("pg")


def run_bench(cfg: Config, log: Callable[[str], None]) -> dict[str, Any]:
    folder = temp_root()
    skipped = None
    if cfg.pg:
        skipped = pg_available(cfg.dsn)
        if skipped:
            log(f"PostgreSQL skipped: {skipped}")
            cfg.pg = False
    try:
        table = compile_chain(cfg.chain, folder)
        names = case_names(cfg)
        # Two phases, SQLite first: PostgreSQL's cases leave the server busy afterwards
        # (autovacuum of thousands of fresh rows) on the CPUs the SQLite cases need, so
        # interleaving the engines round by round would charge one for the other. Within
        # a phase the cases take turns each round, so each ratio pairs like with like.
        phases = [
            [n for n in names if not on_postgres(n)],
            [n for n in names if on_postgres(n)],
        ]
        rounds: list[dict[str, dict[str, Any]]] = [{} for _ in range(cfg.repeat)]
        loads = []
        for phase in (p for p in phases if p):
            log(f"warm-up round of {', '.join(phase)} (not counted)")
            run_round(cfg, table, folder, phase, log)
            for i in range(cfg.repeat):
                log(f"round {i + 1}/{cfg.repeat} (load average {os.getloadavg()[0]:.2f})")
                loads.append(os.getloadavg()[0])
                rounds[i].update(run_round(cfg, table, folder, phase, log))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cases: dict[str, dict[str, Any]] = {}
    for name in names:
        samples = [r[name] for r in rounds]
        rates = [s["rate"] for s in samples]
        cases[name] = {
            "median_rate": statistics.median(rates),
            "min_rate": min(rates),
            "max_rate": max(rates),
            "rates": rates,
            "samples": samples,
        }

    def paired(a: str, b: str) -> float:
        return statistics.median(r[a]["rate"] / r[b]["rate"] for r in rounds)

    ratios: dict[str, float] = {}

    def ratio(a: str, b: str) -> None:
        if a in cases and b in cases:
            ratios[f"{a}/{b}"] = cases[a]["median_rate"] / cases[b]["median_rate"]
            ratios[f"{a}/{b} paired"] = statistics.median(
                r[a]["rate"] / r[b]["rate"] for r in rounds
            )

    ratio("sqlite-1tx", "floor")
    ratio("sqlite-group", "floor")
    for name in SQL_CASES:
        ratio(name, "floor")
    for sleep in (0.0, cfg.sleep_ms) if cfg.sleep_ms else (0.0,):
        for w in PG_WORKERS[1:]:
            ratio(pg_case(w, sleep), pg_case(1, sleep))
    for name in ("sqlite-1tx", "pg-1tx", *(pg_case(w, 0.0) for w in PG_WORKERS)):
        ratio(name, f"dbos-{name}")
    report: dict[str, Any] = {
        "machine": {
            **benchlib.machine("attrs", "cattrs", "psycopg", *cfg.peers),
            "sqlite": sqlite3.sqlite_version,
            "filesystem": filesystem(folder),
            "wflang": benchlib.source_state(MEASURED, "wflang/store, durable or runtime"),
            "loadavg_end": os.getloadavg(),
            "loadavg_1min_at_round_start": loads,
        },
        "config": cfg.as_dict(),
        "postgres_skipped": skipped,
        "cases": cases,
        "ratios": ratios,
    }
    if cfg.pg:
        report["machine"]["postgres"] = pg_version(cfg.dsn)
    report["targets"] = targets(report)
    return report


def pg_version(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT current_setting('server_version'), current_setting('synchronous_commit'), "
            "current_setting('fsync')"
        ).fetchone()
    assert row is not None
    return f"{row[0]} (synchronous_commit={row[1]}, fsync={row[2]})"


def targets(report: dict[str, Any]) -> dict[str, bool]:
    """Each target whose cases ran: met or not."""
    r = report["ratios"]
    sleep = report["config"]["sleep_ms"]
    wanted = {
        "sqlite-1tx/floor": ONE_TX_TARGET,
        "sqlite-group/floor": GROUP_TARGET,
        "pg-2/pg-1": PG_TARGET,
    }
    if sleep:
        wanted[f"{pg_case(2, sleep)}/{pg_case(1, sleep)}"] = PG_TARGET
    wanted["sqlite-1tx/dbos-sqlite-1tx"] = DBOS_SEQUENTIAL_TARGETS["sqlite"]
    wanted["pg-1tx/dbos-pg-1tx"] = DBOS_SEQUENTIAL_TARGETS["pg"]
    for w in PG_WORKERS:
        wanted[f"pg-{w}/dbos-pg-{w}"] = DBOS_QUEUE_TARGET
    met = {f"{key} >= {goal:g}": r[key] >= goal for key, goal in wanted.items() if key in r}
    signal = report["cases"].get("pg-signal")
    if signal:
        p50 = statistics.median(x["p50_ms"] for x in signal["samples"])
        met[f"pg-signal p50 <= {SIGNAL_P50_TARGET_MS:g} ms"] = p50 <= SIGNAL_P50_TARGET_MS
    return met


# ------------------------------------------------------------------ reporting


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def render(report: dict[str, Any]) -> str:
    m, cfg, cases, ratios = report["machine"], report["config"], report["cases"], report["ratios"]
    out = [
        f"wflang durable benchmark  {m['date']}",
        f"machine: {m['platform']} ({m['processor']}), {m['cpu_count']} CPUs; 1-min load "
        "average at each round's start "
        + ", ".join(f"{x:.2f}" for x in m["loadavg_1min_at_round_start"]),
        f"python:  {m['python']}, SQLite {m['sqlite']}, psycopg {m['psycopg']}; "
        f"wflang {m['wflang']}",
        f"files:   {m['filesystem']}",
    ]
    if "postgres" in m:
        out.append(f"postgres: {m['postgres']}")
    out += [
        f"chain of {cfg['chain']} service tasks ({cfg['chain'] + 1} steps per instance); "
        f"median of {cfg['repeat']} rounds after a warm-up round",
        f"sqlite-1tx: {cfg['one_tx_instances']} instances one after the other; "
        f"sqlite-group: {cfg['instances']} instances, concurrency {cfg['concurrency']}, "
        f"batch {cfg['batch']}",
    ]
    if cfg["pg"]:
        out.append(
            f"pg-W: {cfg['instances']} instances, W processes each Worker.run() with "
            f"concurrency {cfg['pg_concurrency']}, batch {cfg['pg_batch']}, group commit"
            + (f"; -sleep: handler sleeps {cfg['sleep_ms']:g} ms" if cfg["sleep_ms"] else "")
        )
    if cfg.get("peers"):
        out.append(
            ", ".join(f"{peer} {m.get(peer, '?')}" for peer in cfg["peers"])
            + ": the same chain, one workflow at a time "
            f"({cfg['one_tx_instances']}) and {cfg['instances']} workflows on a DBOS queue "
            f"polled every {cfg['dbos_poll_ms']:g} ms (bench/durable_dbos.py); pg-1tx: "
            "sqlite-1tx on PostgreSQL; pg-W without handler sleep"
        )
    out += [
        "",
        f"{'case':<22} {'median/s':>9} {'min/s':>9} {'max/s':>9} {'steps/tx':>8} "
        f"{'ms/tx':>6} {'wCPU':>5} {'pgCPU':>5} {'busy':>5}",
        "-" * 87,
    ]
    for name, c in cases.items():
        if name == "pg-signal":  # a latency, reported below
            continue
        s = c["samples"]
        counted = "tx" in s[0] or "writing_transactions" in s[0]  # DBOS's cases count none
        per_tx = statistics.median(x.get("steps_per_writing_tx", 1.0) for x in s)
        ms_tx = statistics.median(
            x["seconds"] / max(1, x.get("writing_transactions", x.get("tx", 1))) * 1000 for x in s
        )
        tx_cells = f"{per_tx:>8.1f} {ms_tx:>6.2f}" if counted else f"{'':>8} {'':>6}"
        extra = [
            f"{statistics.median(x[k] for x in s):.2f}" if k in s[0] else ""
            for k in ("worker_cpu_share", "postgres_cpu_share", "machine_busy")
        ]
        out.append(
            f"{name:<22} {c['median_rate']:>9,.0f} {c['min_rate']:>9,.0f} "
            f"{c['max_rate']:>9,.0f} {tx_cells} "
            f"{extra[0]:>5} {extra[1]:>5} {extra[2]:>5}"
        )
    out += [
        "",
        "floor rates are transactions/s, the others steps/s (history rows committed / wall",
        "time). steps/tx = steps per writing transaction; ms/tx = wall time per writing",
        "transaction; wCPU = CPU s of the worker process(es) / wall s (SQLite: the benchmark",
        "process, SQLite included); pgCPU = postgres server CPU s / wall s; busy = share of",
        "the machine's CPUs busy during the run (any process: other users' load shows here).",
        "",
    ]
    for name in ("floor", "pg-floor"):
        if name in cases:
            s = cases[name]["samples"]
            p = [statistics.median(x[f"p{q}_ms"] for x in s) for q in (10, 50, 90)]
            out.append(
                f"{name} commit latency (median over rounds): p10 {p[0]:.2f} ms, "
                f"p50 {p[1]:.2f} ms, p90 {p[2]:.2f} ms; per round p50 "
                + ", ".join(f"{x['p50_ms']:.2f}" for x in s)
            )
    if "pg-signal" in cases:
        s = cases["pg-signal"]["samples"]
        p50, p99, top = (statistics.median(x[k] for x in s) for k in ("p50_ms", "p99_ms", "max_ms"))
        out.append(
            f"pg-signal: Client.signal to the handler's start, idle worker (poll_ms "
            f"{s[0]['poll_ms']}), {s[0]['signals']} signals a round, median over rounds: "
            f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {top:.2f} ms; per round p50 "
            + ", ".join(f"{x['p50_ms']:.2f}" for x in s)
        )
        if all("phases_p50_ms" in x for x in s):  # bench/durable_signal.py's PHASES
            phases = {k: statistics.median(x["phases_p50_ms"][k] for x in s)
                      for k in s[0]["phases_p50_ms"]}  # fmt: skip
            out.append(
                "pg-signal phases, p50 ms (median over rounds): "
                + ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
            )
    out += [
        "",
        "ratios (median/median; paired = median of the per-round ratios):",
    ]
    for name, value in ratios.items():
        if not name.endswith(" paired"):
            out.append(f"  {name:<40} {value:>6.2f}   paired {ratios[name + ' paired']:.2f}")
    out.append("")
    for key, ok in report["targets"].items():
        out.append(f"target {key}: {_met(ok)}")
    if report["postgres_skipped"]:
        out.append(f"PostgreSQL skipped: {report['postgres_skipped']}")
    return "\n".join(out)


def profile(cfg: Config, what: str) -> str:
    """cProfile of one in-process run: the top 30 by own time and by cumulative time."""
    folder = temp_root()
    prof = cProfile.Profile()
    try:
        table = compile_chain(cfg.chain, folder)
        if what == "pg-group":
            with pg_schema(cfg.dsn) as schema:
                store = open_store(pg_url(cfg.dsn, schema), pool=2)
                store.migrate()
                store.deploy(table)
                deployed = store.deployed("chain")
                for i in range(cfg.instances):
                    store.create(deployed, {}, f"i{i:05d}")
                worker = Worker(
                    store,
                    {SERVICE: Handler()},
                    concurrency=cfg.pg_concurrency,
                    batch=cfg.pg_batch,
                )
                prof.enable()
                worker.run_until_idle()
                prof.disable()
                check_store(store, cfg.instances, cfg.chain)
                store.close()
        else:
            sqlite_one_tx(folder, table, 1, cfg.chain)  # warm-up
            prof.enable()
            if what == "sqlite-1tx":
                sqlite_one_tx(folder, table, cfg.one_tx_instances, cfg.chain)
            else:
                sqlite_group(folder, table, cfg.instances, cfg.chain, cfg.concurrency, cfg.batch)
            prof.disable()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(40)
    return f"profile of {what}\n" + buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds and smaller runs")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument(
        "--chain", type=int, default=0, help="service tasks in the chain (20; 10 with --peers)"
    )
    ap.add_argument("--repeat", type=int, default=0, help="timed rounds (5; 3 with --quick)")
    ap.add_argument("--floor-time", type=float, default=0.0, help="seconds per floor sample")
    ap.add_argument("--one-tx-instances", type=int, default=0, help="instances in sqlite-1tx")
    ap.add_argument("--instances", type=int, default=0, help="instances in flight (200)")
    ap.add_argument("--concurrency", type=int, default=200, help="sqlite-group concurrency")
    ap.add_argument("--batch", type=int, default=0, help="sqlite-group batch (= concurrency)")
    ap.add_argument("--no-pg", action="store_true", help="skip PostgreSQL")
    ap.add_argument(
        "--dsn", default=os.environ.get("WFLANG_BENCH_PG_DSN", DEFAULT_DSN), help="PostgreSQL"
    )
    ap.add_argument("--pg-concurrency", type=int, default=16, help="handler threads per worker")
    ap.add_argument("--pg-batch", type=int, default=32, help="instances stepped per transaction")
    ap.add_argument("--sleep-ms", type=float, default=5.0, help="simulated handler I/O (0: none)")
    ap.add_argument(
        "--profile", choices=("sqlite-1tx", "sqlite-group", "pg-group"), help="cProfile one run"
    )
    ap.add_argument("--save", metavar="FILE", help="also write the JSON report to FILE")
    ap.add_argument("--render", metavar="FILE", help="print the table of a saved JSON report")
    ap.add_argument("--cases", help="only these cases, comma-separated (exploring; no targets)")
    ap.add_argument("--emit", action="store_true", help="print the generated workflow")
    ap.add_argument(
        "--peers",
        choices=("dbos",),
        help="compare with DBOS Transact (the bench extra): its cases and wflang's twins",
    )
    ap.add_argument("--dbos-poll-ms", type=float, default=5.0, help="DBOS queue polling")
    ap.add_argument("--signals", type=int, default=0, help="pg-signal samples (200; 50 quick)")
    args = ap.parse_args(argv)
    if args.emit:
        sys.stdout.write(chain_source(args.chain))
        return 0
    if args.render:
        print(render(json.loads(Path(args.render).read_text(encoding="utf-8"))))
        return 0
    args.chain = args.chain or (10 if args.peers else 20)
    if args.chain < 1 or args.repeat < 0:
        ap.error("--chain must be >= 1 and --repeat >= 0")
    cfg = Config(args)
    if args.profile:
        print(profile(cfg, args.profile))
        return 0

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    report = run_bench(cfg, log)
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
