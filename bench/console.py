"""The console's instances page on PostgreSQL with 100,000 instances (issue 19).

Run from the repository root (PostgreSQL reachable at ``--dsn``, default
``$WFLANG_TEST_PG_DSN``)::

    .venv/bin/python bench/console.py [--instances 100000] [--requests 40] [--json]
    .venv/bin/python bench/console.py --schema wf_bench_console --keep   # seed once
    .venv/bin/python bench/console.py --schema wf_bench_console --reuse  # then measure

**Seeding** goes through the store's own code, never hand-written rows. In a fresh
schema, three example workflows are deployed from their files (invoice_approval,
pricing, order_saga) and ``--templates`` instances are started by a client and run by a
worker with scripted handlers, their starts spread by a virtual clock, so that each is
where the real runtime took it: invoices waiting for their approval signal, orders
completed, pricings completed, compensated (risk refused) or dead-lettered (the risk
engine down). Running 100,000 that way takes most of an hour on this machine, so the
rest are clones: every row of a template (the instance, its history, timers, tasks and
outbox) copied with PostgreSQL's COPY, the template's id replaced by the clone's
wherever it appears (keys, timer ids, the state's own id), the seed the store derives
from the new id, and every time column moved so that the starts cover 30 days (the
times inside the state document stay as they were). The seed is read back through the
store's API: ``Store.browse`` counts each status, and a sample of clones is read with
``Store.instance`` and ``Store.history`` and compared with its template.

**Measuring**: ``wf console --store URL`` runs as its own process; each case is a GET
of the instances page over HTTP (one kept-alive connection, the page read whole),
the cases taking turns in every round; each is timed ``--requests`` times after a
warm-up. Cases: the first page (newest first), a filtered page (one workflow and one
status), a deep page (the key of the page at the middle of the instances, as the
page's "next" link carries it), and a search by input field. The target is the list
page's median at most 300 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from attrs import evolve  # noqa: E402

from bench.benchlib import machine, source_state  # noqa: E402
from wflang.compiler.compile import compile_workflow  # noqa: E402
from wflang.dsl.parser import parse_file  # noqa: E402
from wflang.durable.client import Client  # noqa: E402
from wflang.durable.worker import Worker  # noqa: E402
from wflang.runtime.engine import TaskError  # noqa: E402
from wflang.runtime.ir import Value  # noqa: E402
from wflang.store import Store, open_store  # noqa: E402
from wflang.store.browse import InstanceQuery, cursor  # noqa: E402

T0 = 1_772_442_000_000  # 2026-03-02T09:00:00Z
DAY = 86_400_000
SPAN = 30 * DAY
WORKFLOWS = ("invoice_approval", "pricing", "order_saga")
TARGET_MS = 300.0


class Clock:
    """Epoch milliseconds that move only when the seeding says so."""

    def __init__(self) -> None:
        self.ms = T0

    def __call__(self) -> int:
        return self.ms


def with_search_path(dsn: str, schema: str) -> str:
    parts = urlsplit(dsn)
    query = dict(parse_qsl(parts.query))
    query["options"] = f"-csearch_path={schema}"
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def admin(dsn: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql)


# ---------------------------------------------------------------- the handlers


def _ok(result: Mapping[str, Value] | None = None) -> Any:
    return lambda **_: None if result is None else dict(result)


def _risk(buyer_id: str, **_: Value) -> Mapping[str, Value]:
    n = int(buyer_id.rsplit("-", 1)[1])
    if n % 10 == 0:  # one pricing in ten meets the risk engine down: dead-lettered
        raise TaskError("RiskEngineDown", "the risk engine is down")
    return {"score": 95 if n % 10 == 1 else 10}  # one in ten refused: compensated


HANDLERS: dict[str, Any] = {
    "tax.add": lambda amount, **_: {"total": amount * Decimal("1.20")},
    "pricing.quote": _ok({"supplier": "acme", "price": Decimal("2.10")}),
    "stock.hold": _ok({"hold_id": "h-1", "expires_at": T0 + DAY}),
    "stock.release": _ok(),
    "risk.score": _risk,
    "inventory.reserve": _ok({"reservation_id": "r-1"}),
    "inventory.release": _ok(),
    "payments.charge": _ok({"charge_id": "ch-1", "settled": True}),
    "payments.refund": _ok({"refund_id": "rf-1"}),
    "shipping.create": _ok({"shipment_id": "s-1"}),
    "shipping.cancel": _ok(),
    "notify.send": _ok({"message_id": "m-1"}),
}

CUSTOMER = {"name": "Ada Lovelace", "email": "ada@example.com", "tier": "gold"}
ADDRESS = {"name": "Ada", "line1": "1 Main St", "city": "Oslo", "postcode": "0150", "country": "NO"}


def start_input(workflow: str, n: int) -> dict[str, Value]:
    """The input of the ``n``-th instance of ``workflow``."""
    if workflow == "invoice_approval":
        return {"invoice_id": f"i-{n}", "amount": Decimal(n % 997) + Decimal("0.50")}
    customer = {**CUSTOMER, "id": f"c-{n}"}
    if workflow == "pricing":
        return {"sku": f"sku-{n % 50}", "qty": 1 + n % 5, "buyer": customer,
                "credit_limit": Decimal("100.00")}  # fmt: skip
    items = [{"sku": f"sku-{n % 50}", "qty": 1, "unit_price": Decimal("5.00")}]
    return {"order_id": f"o-{n}", "customer": customer, "items": items,
            "subtotal": Decimal("5.00"), "ship_to": ADDRESS}  # fmt: skip


# ---------------------------------------------------------------- seeding

#: The tables of an instance's rows (the column naming the instance), copied for a clone;
#: the database numbers wf_outbox's rows itself.
INSTANCE_ROWS = {"wf_instance": "id", "wf_history": "instance_id", "wf_timer": "instance_id",
                 "wf_task": "instance_id", "wf_outbox": "instance_id"}  # fmt: skip
NUMBERED = {"wf_outbox": "id"}


def template_id(n: int) -> str:
    """The id of the ``n``-th instance run by the runtime: fixed width, so that no id
    is part of another."""
    return f"{WORKFLOWS[n % 7 % 3][:3]}-{n:06d}"


def clone_id(template: str, k: int) -> str:
    return f"{template}-c{k:03d}"


def run_templates(store: Store, clock: Clock, count: int, window: int) -> list[str]:
    """``count`` instances started and run by a worker, their starts spread over ``window``
    ms: the templates of the clones."""
    client = Client(store, actor="bench")
    for name in ("invoice_approval", "pricing", "order_saga"):
        path = ROOT / "examples" / f"{name}.wf"
        table = compile_workflow(parse_file(str(path))).table
        assert table is not None, name
        client.deploy(table, str(path))
    worker = Worker(store, HANDLERS, worker_id="bench-seed", allow_unused_handlers=True)
    ids = [template_id(n) for n in range(count)]
    for first in range(0, count, 100):
        for n in range(first, min(first + 100, count)):
            clock.ms = T0 + n * window // count
            workflow = WORKFLOWS[n % 7 % 3]  # invoices 3/7, pricings 2/7, orders 2/7
            client.start(workflow, start_input(workflow, n), instance_id=ids[n])
        worker.run_until_idle()
        print(f"  {min(first + 100, count):>6,} instances run", file=sys.stderr, flush=True)
    return ids


def clone(url: str, templates: list[str], total: int, window: int) -> None:
    """The templates' rows copied until there are ``total`` instances: clone ``k`` of a
    template is its every row with the template's id replaced by the clone's wherever it
    appears (keys, timer ids, the state's own id), its seed the one the store derives
    from that id, and its times moved ``k`` windows later (the times inside the state
    document are left as they were)."""
    import psycopg

    from wflang.runtime.ids import instance_seed

    with psycopg.connect(url) as conn:
        rows: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
        for table, key in INSTANCE_ROWS.items():
            cur = conn.execute(f"SELECT * FROM {table} WHERE {key} = ANY(%s)", (templates,))
            names = [c.name for c in cur.description or ()]
            rows[table] = (names, cur.fetchall())
        made = len(templates)
        k = 0
        while made < total:
            k += 1
            batch = templates[: total - made]
            chosen = set(batch)
            for table, key in INSTANCE_ROWS.items():
                names, found = rows[table]
                keep = [i for i, n in enumerate(names) if n != NUMBERED.get(table)]
                at = names.index(key)
                cols = ", ".join(names[i] for i in keep)
                with conn.cursor().copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                    for row in found:
                        if row[at] in chosen:
                            copy.write_row(moved(names, row, keep, row[at], k, window,
                                                 instance_seed))  # fmt: skip
            made += len(batch)
            conn.commit()
            print(f"  {made:>7,} instances", file=sys.stderr, flush=True)


def moved(names: list[str], row: tuple[Any, ...], keep: list[int], template: str, k: int,
          window: int, seed_of: Any) -> list[Any]:  # fmt: skip
    new = clone_id(template, k)
    out: list[Any] = []
    for i in keep:
        name, value = names[i], row[i]
        if isinstance(value, str):
            value = value.replace(template, new)
        elif name == "seed":
            value = seed_of(new)
        elif isinstance(value, int) and (name == "at" or name.endswith("_at")):
            value += k * window
        out.append(value)
    return out


def seed(store: Store, clock: Clock, url: str, count: int, templates: int) -> dict[str, int]:
    copies = -(-count // templates)
    window = SPAN // copies
    ids = run_templates(store, clock, min(templates, count), window)
    clone(url, ids, count, window)
    return verify(store, count, ids)


def statuses(store: Store) -> dict[str, int]:
    """How many instances of each status, counted through ``Store.browse``'s pages."""
    counts: dict[str, int] = {}
    after = None
    while True:
        page = store.browse(InstanceQuery(after=after, limit=5000))
        for info in page.instances:
            counts[info.status] = counts.get(info.status, 0) + 1
        if page.next is None:
            return counts
        after = page.next


def verify(store: Store, count: int, templates: list[str]) -> dict[str, int]:
    """The seed read back through the store's API: every instance there, none left
    pending, and a sample of clones like their templates (status, the instance's own
    id in its state, history, open tasks)."""
    counts = statuses(store)
    assert sum(counts.values()) == count, counts
    assert "pending" not in counts and "running" not in counts, counts
    copies = count // len(templates)
    for n in random.Random(7).sample(range(len(templates)), min(len(templates), 100)):
        template = store.instance(templates[n])
        k = 1 + n % max(1, copies - 1)
        copy = store.instance(clone_id(templates[n], k))
        assert copy.instance is not None and copy.instance.id == copy.id, copy
        assert (copy.status, copy.workflow, copy.input) == (
            template.status, template.workflow, template.input)  # fmt: skip
        assert len(store.history(copy.id)) == len(store.history(template.id)), copy.id
    return counts


# ---------------------------------------------------------------- measuring


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def console(url: str, port: int) -> subprocess.Popen[bytes]:
    wf = str(Path(sys.executable).with_name("wf"))
    proc = subprocess.Popen(
        [wf, "console", "--store", url, "--port", str(port)],
        env={k: v for k, v in os.environ.items() if k != "WFLANG_CONSOLE_TOKEN"},
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a benchmark, not a test: wait for it to listen
        try:
            get(http.client.HTTPConnection("127.0.0.1", port, timeout=30), "/instances")
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("wf console exited") from None
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("wf console did not answer within 60 s")


def get(conn: http.client.HTTPConnection, path: str) -> bytes:
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise SystemExit(f"GET {path}: {answer.status}\n{body[:500]!r}")
    return body


def cases(store: Store, count: int) -> dict[str, tuple[dict[str, str], InstanceQuery]]:
    """The pages measured, by name: their query strings, and the store's query each
    makes (as ``wflang.console.instances`` builds it: newest first, a page of 50)."""
    after = None  # walk to the page at the middle, as 'next' links would
    for _ in range(count // 2 // 5000):
        page = store.browse(InstanceQuery(newest_first=True, after=after, limit=5000))
        after = page.next
    page = store.browse(InstanceQuery(newest_first=True, after=after, limit=1))
    middle = cursor(page.instances[0].created_at, page.instances[0].id)
    first = InstanceQuery(newest_first=True, limit=50)
    return {
        "first page": ({}, first),
        "filtered (workflow, status)": (
            {"workflow": "invoice_approval", "status": "waiting"},
            evolve(first, workflow="invoice_approval", status="waiting"),
        ),
        "deep page (keyset, middle)": ({"after": middle}, evolve(first, after=middle)),
        "input field search": (
            {"field": "sku", "value": "sku-7"},
            evolve(first, input_field="sku", input_value="sku-7"),
        ),
    }


def store_reads(
    store: Store, queries: dict[str, InstanceQuery], requests: int
) -> dict[str, list[float]]:
    """The store's reads of each page alone, in this process: its page of instances, and
    the names of the deployed workflows, which every page lists in its workflow filter
    (``Store.workflows``); and, for comparison, ``Store.versions`` (every version with
    its instance counts), which the page read for them until it was found to cost
    most of the page's time here."""
    reads = {name: (lambda q=q: store.browse(q)) for name, q in queries.items()}
    reads["Store.workflows() (every page)"] = store.workflows
    reads["Store.versions() (not any more)"] = store.versions
    times: dict[str, list[float]] = {name: [] for name in reads}
    for read in reads.values():
        read()  # warm-up
    for _ in range(requests):
        for name, read in reads.items():
            begin = time.perf_counter()
            read()
            times[name].append((time.perf_counter() - begin) * 1000)
    return times


def measure(port: int, paths: dict[str, str], requests: int) -> dict[str, list[float]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for path in paths.values():  # warm-up
        get(conn, path)
    times: dict[str, list[float]] = {name: [] for name in paths}
    names = list(paths)
    for r in range(requests):
        for name in names[r % len(names) :] + names[: r % len(names)]:  # cases take turns
            begin = time.perf_counter()
            get(conn, paths[name])
            times[name].append((time.perf_counter() - begin) * 1000)
    return times


def summary(xs: list[float]) -> dict[str, Any]:
    return {"median_ms": statistics.median(xs), "p90_ms": statistics.quantiles(xs, n=10)[-1],
            "min_ms": min(xs), "max_ms": max(xs)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("WFLANG_TEST_PG_DSN", ""))
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--templates", type=int, default=2_100,
                        help="instances run by the runtime, the rest cloned from them")  # fmt: skip
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--schema", help="the schema to seed (default: a fresh one)")
    parser.add_argument("--reuse", action="store_true", help="measure the seeded --schema")
    parser.add_argument("--keep", action="store_true", help="keep the schema afterwards")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.dsn:
        raise SystemExit("give --dsn or set WFLANG_TEST_PG_DSN (a PostgreSQL URL)")
    schema = args.schema or f"wf_bench_console_{uuid.uuid4().hex[:8]}"
    url = with_search_path(args.dsn, schema)
    clock = Clock()
    if not args.reuse:
        admin(args.dsn, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        admin(args.dsn, f"CREATE SCHEMA {schema}")
    store = open_store(url, clock=clock)
    proc = None
    try:
        if args.reuse:
            store.migrate()  # a seed kept from before a new migration gets it
            counts = statuses(store)
            seeded_s = None
        else:
            store.migrate()
            begin = time.perf_counter()
            counts = seed(store, clock, url, args.instances, args.templates)
            seeded_s = time.perf_counter() - begin
        admin(url, "ANALYZE")
        found = cases(store, args.instances)
        paths = {
            name: "/instances" + ("?" + urlencode(p) if p else "") for name, (p, _) in found.items()
        }
        reads = store_reads(store, {name: q for name, (_, q) in found.items()}, args.requests)
        proc = console(url, free_port())
        port = int(proc.args[-1])  # type: ignore[index]
        times = measure(port, paths, args.requests)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
        store.close()
        if not args.keep and not args.reuse:
            admin(args.dsn, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    report(args, counts, seeded_s, paths, times, reads)


def report(
    args: argparse.Namespace,
    counts: dict[str, int],
    seeded_s: float | None,
    paths: dict[str, str],
    times: dict[str, list[float]],
    reads: dict[str, list[float]],
) -> None:
    rows = {name: summary(xs) | {"path": paths[name]} for name, xs in times.items()}
    doc = {
        "machine": machine("psycopg", "starlette", "uvicorn", "jinja2"),
        "code": source_state(("wflang/console", "wflang/store"), "wflang/console or store"),
        "load": os.getloadavg(),
        "instances": args.instances,
        "statuses": counts,
        "seeded_s": seeded_s,
        "requests": args.requests,
        "cases": rows,
        "store_reads": {name: summary(xs) for name, xs in reads.items()},
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(f"# console list page: {args.instances:,} instances on PostgreSQL")
    print(f"machine: {doc['machine']}; code {doc['code']}; load {doc['load']}")
    print(f"statuses: {counts}" + (f"; seeded in {seeded_s:.0f} s" if seeded_s else ""))
    print(
        f"{args.requests} requests per case, cases taking turns; target median ≤ {TARGET_MS:.0f} ms"
    )
    print()
    print("| case | median ms | p90 ms | min ms | max ms | target |")
    print("|---|---:|---:|---:|---:|---|")
    for name, r in rows.items():
        met = "met" if r["median_ms"] <= TARGET_MS else "NOT met"
        print(f"| {name} | {r['median_ms']:.1f} | {r['p90_ms']:.1f} | {r['min_ms']:.1f} "
              f"| {r['max_ms']:.1f} | {met} |")  # fmt: skip
    print()
    print("The store's reads of each page alone (in the benchmark's process, no HTTP):")
    print()
    print("| read | median ms | p90 ms | min ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    for name, r in doc["store_reads"].items():
        print(f"| {name} | {r['median_ms']:.1f} | {r['p90_ms']:.1f} | {r['min_ms']:.1f} "
              f"| {r['max_ms']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
