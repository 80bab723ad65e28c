"""Helpers of the durable-execution reliability tests: fixtures' building blocks,
worker processes and the checks every test makes on a store's histories."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime import instance as rt
from wflang.runtime.keys import Delivery, parse_delivery
from wflang.runtime.table import Table
from wflang.store import Clock, Store, open_store
from wflang.store.records import HistoryRow
from wflang.store.sqlite import SqliteBackend

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "durable"
WORKER_PROC = Path(__file__).with_name("worker_proc.py")
PG_DSN = os.environ.get("WFLANG_TEST_PG_DSN", "")

# The lease of a worker process that is meant to keep its calls: long enough for a busy
# machine (a CPU hog on every core) to renew it in time, so that a call that runs twice
# was run again because a worker died, never because a live one lost its lease.
LIVE_LEASE_MS = 30_000

# What the crash and load tests found, printed at the end of the run (conftest).
SUMMARY: list[str] = []
# Per store: crash points injected, instances, ends reached as expected, effects re-run.
CRASH_TOTALS: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)


def count_crash(
    backend: str, instances: int, ends_reached: int, rerun: int, kills: int = 1
) -> None:
    """Add one crash test's figures to its store's totals (printed by conftest)."""
    totals = CRASH_TOTALS[backend]
    totals["crash points injected (SIGKILLs)"] += kills
    totals["instances"] += instances
    totals["expected ends reached"] += ends_reached
    totals["effects run again (kill between effect and commit)"] += rerun


def fixture_table(name: str) -> Table:
    """The compiled table of ``tests/data/durable/NAME.wf``."""
    compiled = compile_workflow(parse_file(DATA / f"{name}.wf"))
    assert compiled.table is not None, f"{name}.wf does not compile"
    return compiled.table


def with_options(dsn: str, *options: str) -> str:
    """``dsn`` with server ``options`` (``-cNAME=VALUE``) added to its query string."""
    parts = urlsplit(dsn)
    query = dict(parse_qsl(parts.query))
    query["options"] = " ".join(filter(None, [query.get("options", ""), *options]))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def with_search_path(dsn: str, schema: str) -> str:
    """``dsn`` on its own schema: ``options=-csearch_path=SCHEMA`` in its query string."""
    return with_options(dsn, f"-csearch_path={schema}")


class VirtualClock:
    """Epoch milliseconds that move only when a test says so."""

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self.ms = start

    def __call__(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms


def start_worker(
    url: str,
    effects: Path,
    workload: str,
    *,
    fault: str | None = None,
    concurrency: int = 1,
    lease_ms: int = LIVE_LEASE_MS,
    at_most_once: tuple[str, ...] = (),
    mode: str = "idle",
    deadline_s: float = 60.0,
    extra_env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """Start ``worker_proc.py`` as a process, with a crash point when ``fault`` is given."""
    env = {k: v for k, v in os.environ.items() if k != "WFLANG_FAULT"}
    if fault:
        env["WFLANG_FAULT"] = fault
    env.update(extra_env or {})
    cmd = [
        sys.executable,
        str(WORKER_PROC),
        "--store",
        url,
        "--effects",
        str(effects),
        "--workload",
        workload,
        "--lease-ms",
        str(lease_ms),
        "--concurrency",
        str(concurrency),
        "--mode",
        mode,
        "--deadline-s",
        str(deadline_s),
    ]
    for service in at_most_once:
        cmd += ["--at-most-once", service]
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def expire_leases(store: Store, pid: int) -> int:
    """Let the leases of the dead worker process ``pid`` run out now; how many.

    What the database clock does a lease after the kill, without waiting for it: the
    live workers can then hold leases a busy machine keeps (``LIVE_LEASE_MS``). The
    worker must be dead (its exit code seen), or it could still commit.
    """
    with store.backend.transaction() as tx:
        return tx.execute(
            "UPDATE wf_task SET lease_expires_at = 0 WHERE lease_owner = ? AND status = 'running'",
            (f"proc-{pid}",),
        )


def finish(proc: subprocess.Popen[str], timeout: float = 90.0) -> tuple[int, str]:
    """Wait for a worker process; its exit code and its output (stdout, then stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(
            f"worker {proc.pid} still running after {timeout}s:\n{out}\n{err}"
        ) from None
    return proc.returncode, out + err


def crash_then_finish(store: Store, url: str, effects: Path, workload: str, fault: str) -> None:
    """A worker process killed at ``fault`` (which it must reach), its leases let run
    out, then a fresh worker that must finish the workload."""
    crashed = start_worker(url, effects, workload, fault=fault)
    rc, out = finish(crashed)
    assert rc == -9, f"{fault} was never reached (exit {rc}):\n{out}"
    expire_leases(store, crashed.pid)
    rc, out = finish(start_worker(url, effects, workload))
    assert rc == 0, f"the restarted worker did not finish (exit {rc}):\n{out}"


def bulk_store(url: str, clock: Clock | None = None) -> Store:
    """A store for setting up many instances fast, without waiting for a flush to disk at
    each commit (SQLite ``synchronous=OFF``, PostgreSQL ``synchronous_commit=off``); what
    is under test runs on a normal store of the same database."""
    if url.startswith("sqlite:///"):
        return Store(SqliteBackend(url.removeprefix("sqlite:///"), synchronous="OFF"), clock)
    return open_store(with_options(url, "-csynchronous_commit=off"), clock=clock)


def history_gaps(store: Store, instance_id: str, rows: list[HistoryRow] | None = None) -> list[str]:
    """What is wrong with an instance's history sequence (empty: 1..n, as the instance says)."""
    seqs = [row.entry.seq for row in (store.history(instance_id) if rows is None else rows)]
    problems = []
    if seqs != list(range(1, len(seqs) + 1)):
        problems.append(f"{instance_id}: history seqs {seqs} are not 1..{len(seqs)}")
    info = store.instance(instance_id)
    if info.instance is not None and info.instance.seq != len(seqs):
        problems.append(
            f"{instance_id}: instance at seq {info.instance.seq}, history has {len(seqs)}"
        )
    return problems


def signals_taken(store: Store, instance_id: str) -> collections.Counter[str]:
    """How many times the instance's history records it took each signal, by name (a
    crash test's exactly-once: each signal sent once is taken once, however the worker
    died)."""
    return collections.Counter(
        row.entry.event.name
        for row in store.history(instance_id)
        if isinstance(row.entry.event, rt.SignalReceived)
    )


def committed_by(store: Store, instance_ids: Iterable[str]) -> dict[str, str | None]:
    """The worker that committed each task result the instances' histories record, by
    the task's key."""
    committed = {}
    for iid in instance_ids:
        for row in store.history(iid):
            delivery = parse_delivery(row.idempotency_key)
            if delivery is not None and delivery[0] is Delivery.TASK:
                committed[delivery[1]] = row.worker
    return committed
