"""What lifecycle events and change records cost a durable step (issue 15).

Run from the repository root::

    .venv/bin/python bench/lifecycle.py [--rounds 7] [--instances 200] [--chain 20] [--no-pg]

The work is bench/durable.py's ``sqlite-group`` case (a generated chain of ``--chain``
service tasks, ``--instances`` instances created up front, one group-committing
``Worker.run_until_idle()``, handlers inline and instant), and the same on a fresh
PostgreSQL schema in this process. Each store runs it in four variants:

* ``full``: status changes of the instances and of the tasks written as outbox rows
  (``Worker(lifecycle_outbox=StatusRows.ALL)``) and the change records;
* ``instances``: the default, only the instances' status changes as outbox rows
  (``StatusRows.INSTANCES``), and the change records;
* ``no-status-rows``: the lifecycle events still found and handed to the hooks, but no
  ``instance.status``/``task.status`` outbox rows (``StatusRows.NONE``);
* ``no-changes``: every status row written, change records not (the store's history
  row written with no ``changes``: a measuring patch, not a setting);
* ``bare``: neither.

The variants take turns round by round, their order rotated each round, so that they
share the machine's conditions (it is shared: other processes' load shows in wall
time). Each sample gives the wall time and this process's CPU time per step (the
PostgreSQL server's CPU is not in it). The figures are the medians over the rounds of
each round's ratio to the same round's ``full`` run: ``cost share`` = 1 - variant/full,
the share of a ``full`` step the left-out records cost.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import benchlib  # the folder of this script is on sys.path when it runs
import durable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wflang.durable.worker import Worker  # noqa: E402
from wflang.runtime.table import Table  # noqa: E402
from wflang.store import Store, advance, open_store  # noqa: E402
from wflang.store.status import StatusRows  # noqa: E402

VARIANTS = ("full", "instances", "no-status-rows", "no-changes", "bare")
#: What each variant writes: its status rows, and whether it records the changes.
SETTINGS = {
    "full": (StatusRows.ALL, True),
    "instances": (StatusRows.INSTANCES, True),
    "no-status-rows": (StatusRows.NONE, True),
    "no-changes": (StatusRows.ALL, False),
    "bare": (StatusRows.NONE, False),
}


@contextlib.contextmanager
def without_changes() -> Iterator[None]:
    """The store's history rows written with no change records (the patch undone after)."""
    real = advance.Advance._history_row

    # Advance._history_row without ``result.changes``: Step.changes is never asked, so
    # never found (it is found when first asked), and the column is NULL.
    def bare(
        self: advance.Advance,
        iid: str,
        seq: int,
        event: Any,
        input: Any,
        result: Any,
        key: str,
        actor: Any = None,
        reason: Any = None,
    ) -> tuple[Any, ...]:
        from wflang.runtime import codec

        return (
            iid, seq, self.now, None if event is None else codec.dump_event(event),
            None if input is None else codec.dumps(input), codec.dumps(result.decisions),
            codec.dumps(codec.unstructure_commands(result.commands)), None, key, actor,
            reason, self.worker,
        )  # fmt: skip

    advance.Advance._history_row = bare  # type: ignore[method-assign]
    try:
        yield
    finally:
        advance.Advance._history_row = real  # type: ignore[method-assign]


def group_run(
    store: Store, instances: int, chain: int, status_rows: StatusRows
) -> dict[str, float]:
    deployed = store.deployed("chain")
    for i in range(instances):
        store.create(deployed, {}, f"i{i:05d}")
    worker = Worker(
        store,
        {durable.SERVICE: durable.Handler()},
        concurrency=instances,
        batch=instances,
        group_commit=True,
        lifecycle_outbox=status_rows,
    )
    c0, t0 = time.process_time(), time.perf_counter()
    steps = worker.run_until_idle()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = durable.check_store(store, instances, chain)
    if steps != rows:
        raise SystemExit(f"the worker counted {steps} steps, the store has {rows}")
    with store.backend.read() as tx:
        outbox = int(str(tx.query("SELECT count(*) FROM wf_outbox")[0][0]))
    return {"steps": steps, "wall_us": wall / steps * 1e6, "cpu_us": cpu / steps * 1e6,
            "outbox_rows": outbox}  # fmt: skip


@contextlib.contextmanager
def sqlite(folder: Path, table: Table) -> Iterator[Store]:
    with durable.sqlite_store(folder, table) as store:
        yield store


@contextlib.contextmanager
def postgres(dsn: str, table: Table) -> Iterator[Store]:
    with durable.pg_schema(dsn) as schema:
        store = open_store(durable.pg_url(dsn, schema), pool=2)
        try:
            store.migrate()
            store.deploy(table)
            yield store
        finally:
            store.close()


def sample(opener: Callable[[], Any], variant: str, instances: int, chain: int) -> dict[str, float]:
    status_rows, changes = SETTINGS[variant]
    with opener() as store, contextlib.nullcontext() if changes else without_changes():
        return group_run(store, instances, chain, status_rows)


def measure(
    opener: Callable[[], Any], rounds: int, instances: int, chain: int, log: Callable[[str], None]
) -> dict[str, Any]:
    sample(opener, "full", instances, chain)  # warm-up, untimed
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    for r in range(rounds):
        order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
        for v in order:
            runs[v].append(sample(opener, v, instances, chain))
        log(
            f"  round {r + 1}: "
            + ", ".join(
                f"{v} {runs[v][-1]['wall_us']:.0f}/{runs[v][-1]['cpu_us']:.0f} us" for v in VARIANTS
            )
        )
    out: dict[str, Any] = {}
    for v in VARIANTS:
        wall = [s["wall_us"] for s in runs[v]]
        cpu = [s["cpu_us"] for s in runs[v]]
        out[v] = {
            "wall_us": statistics.median(wall),
            "cpu_us": statistics.median(cpu),
            "outbox_rows_per_step": runs[v][0]["outbox_rows"] / runs[v][0]["steps"],
            "wall_ratio": statistics.median(
                a["wall_us"] / b["wall_us"] for a, b in zip(runs[v], runs["full"], strict=True)),
            "cpu_ratio": statistics.median(
                a["cpu_us"] / b["cpu_us"] for a, b in zip(runs[v], runs["full"], strict=True)),
        }  # fmt: skip
    return out


def render(report: dict[str, Any]) -> str:
    lines = [
        f"machine: {report['machine']['platform']}, {report['machine']['cpu_count']} CPUs, "
        f"{report['machine']['python']}; code {report['code']}; {report['rounds']} rounds, "
        f"{report['instances']} instances x {report['chain'] + 1} steps",
        "",
        "| store | variant | wall us/step | CPU us/step | outbox rows/step "
        "| wall ratio | CPU ratio | cost share (wall / CPU) |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for store, cases in report["stores"].items():
        for v, f in cases.items():
            share = "" if v == "full" else (
                f"{1 - f['wall_ratio']:.0%} / {1 - f['cpu_ratio']:.0%}")  # fmt: skip
            lines.append(
                f"| {store} | {v} | {f['wall_us']:.0f} | {f['cpu_us']:.0f} "
                f"| {f['outbox_rows_per_step']:.2f} | {f['wall_ratio']:.2f} "
                f"| {f['cpu_ratio']:.2f} | {share} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds per store (7)")
    ap.add_argument("--instances", type=int, default=200, help="instances per run (200)")
    ap.add_argument("--chain", type=int, default=20, help="tasks in the chain (20)")
    ap.add_argument("--no-pg", action="store_true", help="skip PostgreSQL")
    ap.add_argument("--dsn", default=durable.DEFAULT_DSN, help="PostgreSQL server")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    folder = durable.temp_root()
    table = durable.compile_chain(args.chain, folder)
    openers: dict[str, Callable[[], Any]] = {"sqlite": lambda: sqlite(folder, table)}
    if not args.no_pg:
        why = durable.pg_available(args.dsn)
        if why is not None:
            raise SystemExit(f"PostgreSQL unavailable ({why}); --no-pg to skip it")
        openers["postgres"] = lambda: postgres(args.dsn, table)
    report: dict[str, Any] = {
        "machine": benchlib.machine("psycopg"),
        "code": benchlib.source_state(durable.MEASURED, "wflang"),
        "rounds": args.rounds,
        "instances": args.instances,
        "chain": args.chain,
        "stores": {},
    }
    for name, opener in openers.items():
        log(f"{name}:")
        report["stores"][name] = measure(opener, args.rounds, args.instances, args.chain, log)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
