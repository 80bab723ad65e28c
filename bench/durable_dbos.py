"""The DBOS Transact cases of bench/durable.py (``--peers dbos``, issue 18).

The same work as wflang's chain: a DBOS workflow of ``chain`` DBOS steps, each step a
trivial call returning 1 that the workflow adds to its ``n``; every workflow must
return ``chain``. DBOS records a workflow's start (its ``workflow_status`` row) and
one ``operation_outputs`` row per step: ``chain + 1`` records per workflow, as
wflang's ``chain + 1`` history rows (the start, one per task result). Both sides
count steps that way, so steps/s of the two compare the same work, and the script
checks those rows in DBOS's system database after every sample.

Cases (each in a fresh ``spawn`` process, so that DBOS's global state starts clean):

* ``dbos-sqlite-1tx``: one workflow at a time on DBOS's default store, a SQLite system
  database (``sqlite:///<name>.sqlite``, in the same folder as wflang's SQLite store).
  Timed: each workflow call, as wflang's ``sqlite-1tx`` times each run_until_idle.
* ``dbos-pg-1tx``: the same on PostgreSQL, DBOS's system database in a database of its
  own (``wflang_bench_dbos_<pid>`` on the server of ``--dsn``, dropped and created afresh
  for every sample); against wflang's ``pg-1tx``.
* ``dbos-pg-W`` (W = 1, 2, 4 processes): ``--instances`` workflows enqueued on a DBOS
  queue in one transaction (``DBOSClient.enqueue_in_transaction``) once W launched
  DBOS processes are listening; figure: from that commit to the last workflow's
  completion (its ``updated_at``). The queue polls every ``--dbos-poll-ms`` (5, as
  wflang's workers' ``poll_ms`` in ``pg-W``; DBOS's default is 1 s) with no
  per-worker concurrency limit and DBOS's default executor (a thread per workflow).

Durability: DBOS sets no ``synchronous`` or ``journal_mode`` pragma on SQLite, so it
runs SQLite's defaults, a rollback journal with ``synchronous=FULL``; wflang runs WAL
with ``synchronous=FULL``: both fsync every commit. On PostgreSQL neither changes
``synchronous_commit``: both run the server's setting (printed in the report's header).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from dbos import DBOS, DBOSClient

QUEUE = "wfbench"
APP = "wfbench"
#: DBOS's own database on the server, one per benchmark process (runs may overlap).
DATABASE = f"wflang_bench_dbos_{os.getpid()}"
WORKFLOW = "chain_workflow"


@DBOS.step()
def op_step(n: int) -> int:
    """The trivial service of wflang's chain: ``{value: 1}``."""
    return 1


@DBOS.workflow()
def chain_workflow(chain: int) -> int:
    n = 0
    for _ in range(chain):
        n += op_step(n)
    return n


# ------------------------------------------------------------------ stores


def sqlite_url(folder: Path) -> str:
    return f"sqlite:///{folder / f'{APP}-{time.time_ns()}.sqlite'}"


def pg_database_url(dsn: str) -> str:
    """The server of ``dsn`` with DBOS's own database (not wflang's)."""
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, f"/{DATABASE}", "", ""))


@contextlib.contextmanager
def fresh_pg_database(dsn: str) -> Iterator[str]:
    """DBOS's database dropped and created empty; its URL."""
    import psycopg

    url = pg_database_url(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    try:
        yield url
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


def _engine_url(url: str) -> str:
    # SQLAlchemy's default PostgreSQL driver is psycopg2; the project installs psycopg 3.
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def _tables(url: str) -> tuple[str, str]:
    prefix = "" if url.startswith("sqlite") else "dbos."
    return f"{prefix}workflow_status", f"{prefix}operation_outputs"


def recorded(url: str, workflows: int, chain: int) -> tuple[int, float]:
    """Check DBOS's records (every workflow a SUCCESS, ``chain`` step outputs each);
    the records (``chain + 1`` per workflow) and the last completion (epoch seconds)."""
    import sqlalchemy as sa

    status, outputs = _tables(url)
    engine = sa.create_engine(_engine_url(url))
    try:
        with engine.connect() as conn:
            done, last = conn.execute(
                sa.text(f"SELECT count(*), max(updated_at) FROM {status} WHERE status = 'SUCCESS'")
            ).one()
            total = conn.execute(sa.text(f"SELECT count(*) FROM {status}")).scalar_one()
            per = conn.execute(
                sa.text(
                    f"SELECT min(c), max(c), count(*) FROM (SELECT count(*) AS c FROM {outputs} "
                    "GROUP BY workflow_uuid) AS t"
                )
            ).one()
    finally:
        engine.dispose()
    if (done, total) != (workflows, workflows) or tuple(per) != (chain, chain, workflows):
        raise SystemExit(
            f"DBOS check failed: {done} of {total} workflows succeeded (want {workflows}), "
            f"step outputs per workflow (min, max, workflows) {tuple(per)}"
        )
    return workflows * (chain + 1), int(last) / 1000


def _launch(url: str, poll_s: float | None = None) -> None:
    config: Any = {"name": APP, "system_database_url": url, "log_level": "WARNING"}
    DBOS(config=config)
    DBOS.launch()
    if poll_s is not None:  # queues live in the system database: registered once launched
        DBOS.register_queue(QUEUE, polling_interval_sec=poll_s)


# ------------------------------------------------------------------ one at a time


def _one_at_a_time_child(url: str, workflows: int, chain: int, out: Any) -> None:
    _launch(url)
    elapsed = cpu = 0.0
    for _ in range(workflows):
        c0, t0 = time.process_time(), time.perf_counter()
        n = chain_workflow(chain)
        elapsed += time.perf_counter() - t0
        cpu += time.process_time() - c0
        if n != chain:
            raise SystemExit(f"DBOS chain returned {n}, not {chain}")
    DBOS.destroy()
    out.put({"seconds": elapsed, "cpu_s": cpu})


def one_at_a_time(url: str, workflows: int, chain: int) -> dict[str, Any]:
    """``workflows`` chain workflows one after the other in one DBOS process."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_one_at_a_time_child, args=(url, workflows, chain, out))
    proc.start()
    result = out.get(timeout=600)
    proc.join(60)
    steps, _ = recorded(url, workflows, chain)
    return {
        "steps": steps,
        "seconds": result["seconds"],
        "rate": steps / result["seconds"],
        "worker_cpu_s": result["cpu_s"],
        "worker_cpu_share": result["cpu_s"] / result["seconds"],
    }


# ------------------------------------------------------------------ a queue


def _queue_child(url: str, poll_s: float, ready: Any, release: Any, out: Any) -> None:
    _launch(url, poll_s)
    cpu0 = time.process_time()
    ready.set()
    release.wait(600)
    out.put({"cpu_s": time.process_time() - cpu0})
    DBOS.destroy()


def queued(
    url: str, workers: int, workflows: int, chain: int, poll_ms: float, usage: Any
) -> dict[str, Any]:
    """``workflows`` enqueued at once on ``workers`` listening DBOS processes."""
    import sqlalchemy as sa

    ctx = mp.get_context("spawn")
    release, out = ctx.Event(), ctx.Queue()
    procs = []
    # One after the other: the first launch migrates the system database.
    for _ in range(workers):
        ready = ctx.Event()
        proc = ctx.Process(
            target=_queue_child, args=(url, poll_ms / 1000, ready, release, out), daemon=True
        )
        proc.start()
        procs.append(proc)
        if not ready.wait(120):
            raise SystemExit("a DBOS worker process did not start")
    client = DBOSClient(system_database_url=url)
    engine = sa.create_engine(_engine_url(url))
    status, _ = _tables(url)
    try:
        with usage:
            with engine.begin() as conn:
                for i in range(workflows):
                    client.enqueue_in_transaction(
                        conn,
                        {
                            "queue_name": QUEUE,
                            "workflow_name": WORKFLOW,
                            "workflow_id": f"w{i:05d}",
                        },
                        chain,
                    )
            t0 = time.time()
            done = 0
            while done < workflows:
                time.sleep(0.01)
                with engine.connect() as conn:
                    done = conn.execute(
                        sa.text(f"SELECT count(*) FROM {status} WHERE status = 'SUCCESS'")
                    ).scalar_one()
                if time.time() - t0 > 600:
                    raise SystemExit(f"DBOS: {done} of {workflows} workflows done after 600 s")
        release.set()
        reports = [out.get(timeout=120) for _ in procs]
        for proc in procs:
            proc.join(60)
    finally:
        release.set()
        client.destroy()
        engine.dispose()
    steps, last = recorded(url, workflows, chain)
    elapsed = last - t0
    cpu = sum(r["cpu_s"] for r in reports)
    return {
        "steps": steps,
        "seconds": elapsed,
        "rate": steps / elapsed,
        "worker_cpu_s": cpu,
        "worker_cpu_share": cpu / elapsed,
        "postgres_cpu_s": usage.pg_cpu_s,
        "postgres_cpu_share": usage.pg_cpu_s / elapsed,
        "machine_busy": usage.machine_busy,
    }
