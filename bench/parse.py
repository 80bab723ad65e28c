"""Parser benchmark: parse-to-typed-spec against a bare Lark parse of the same grammar.

Run from the repository root::

    .venv/bin/python bench/parse.py [--sizes 1000,10000,50000] [--repeat 5] [--json]

For each size it generates a deterministic (seeded) workflow of exactly that many
lines, checks that it parses with zero diagnostics, then measures

* ``spec``: ``wflang.dsl.parser.parse(text)``, the tree-less parse that builds the
  typed spec (the builder runs inside the LALR parse; GC is off during the parse);
* ``bare``: ``make_parser(None).parse(text)``, a plain Lark LALR parse building a
  parse tree with ``propagate_positions=True`` (GC left as Python has it).

Both parsers are built and warmed up before timing (grammar construction is not
measured, and each text gets one untimed run first). Times are the median wall
time (``time.perf_counter``) of ``--repeat`` runs. Peak memory is measured in a
fresh subprocess per (path, size): the main figure is the tracemalloc peak of one
parse; the ``ru_maxrss`` growth over the baseline (after imports, parser
construction and text generation) is reported beside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchlib  # the folder of this script is on sys.path when it runs

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wflang.dsl.parser import make_parser, parse  # noqa: E402

SEED = 20261129
DEFAULT_SIZES = (1000, 10_000, 50_000)
#: Targets: parse-to-spec at least as fast as the bare parse; 50k lines under 200 MB.
SPEED_TARGET = 1.0
MEMORY_TARGET_MB = 200.0
MEMORY_TARGET_LINES = 50_000
PATHS = ("spec", "bare")

# ------------------------------------------------------------------ generator

SERVICES = (
    "inventory.reserve",
    "inventory.release",
    "payments.charge",
    "payments.refund",
    "shipping.book",
    "shipping.cancel",
    "crm.notify",
    "fraud.score",
    "ledger.post",
    "tax.compute",
)
ERRORS = ("OutOfStock", "PaymentDeclined", "Transient", "Fatal", "Timeout", "FraudSuspected")
SIGNALS = ("approval", "cancel_request", "address_change")
MESSAGES = ("payment_settled", "parcel_scanned")
SUBFLOWS = ("kyc.check", "billing.invoice", "shipping.track")
ASSIGNEES = ('"warehouse"', '"finance"', '"support"', '"ops-oncall"')
DURATIONS = ("30s", "5m", "1h30m", "500ms", "2h", "PT15M", "P1DT2H", "48h", "1d", "10m")
TEXTS = ('"hello"', '"your order shipped"', '"line\\nbreak \\u{1F4E6}"', '"ok"')
TIMESTAMPS = ("2026-01-31T09:00:00Z", "2026-12-24T18:30:00+01:00", "2027-03-01T00:00Z")

HEADER = """\
workflow big version 1
import "shared.wf" as shared

type Item {
    sku: string,
    qty: int,
    price: decimal,
    tags: list[string],
}
type Address { street: string, city: string, zip: string, country: string }
type Customer {
    id: string,
    name: string,
    email: string?,
    address: Address,
    tier: int = 1,
}
enum Priority { low, normal, high, urgent }

input {
    order_id: string,
    customer: Customer,
    items: list[Item],
    amount: decimal,
    count: int,
    express: bool = false,
    priority: Priority = "normal",
    limits: map[string, decimal],
}
context {
    reservation: string?,
    charge: string?,
    score: int = 0,
    attempts: int = 0,
    notes: list[string] = [],
}
output { status: string, charged: decimal? }

signal approval { approved: bool, reviewer: string }
signal cancel_request { reason: string }
signal address_change { address: Address }
message payment_settled { order_id: string, amount: decimal }
message parcel_scanned { order_id: string, depot: string }
error OutOfStock, PaymentDeclined, Transient
error Fatal, Timeout, FraudSuspected

service inventory.reserve(items: list[Item]) -> { reservation_id: string } raises OutOfStock
service inventory.release(reservation_id: string)
service payments.charge(order_id: string, amount: decimal, express: bool) -> {
    charge_id: string,
    value: decimal,
} raises PaymentDeclined, Transient
service payments.refund(charge_id: string) -> { value: decimal } raises Transient
service shipping.book(address: Address, items: list[Item]) -> { value: string } raises Fatal
service shipping.cancel(booking: string)
service crm.notify(customer: Customer, text: string) -> { value: bool }
service fraud.score(order_id: string, amount: decimal) -> { value: int } raises FraudSuspected
service ledger.post(order_id: string, amount: decimal) -> { value: string } raises Transient
service tax.compute(items: list[Item], country: string) -> { value: decimal }

start n1
"""

FOOTER = """\
task escalate: manual "ops-oncall" {
    form { resolution: string, retry_payment: bool = false }
    output { status: "escalated" }
    next done
}
task recover: script {
    args { reason: "recovering", attempts: context.attempts + 1 }
    next done
}
task undo: service inventory.release {
    args { reservation_id: coalesce(context.reservation, "") }
    next rejected
}
end done: completed { output { status: "done", charged: input.amount } }
end rejected: failed { error PaymentDeclined }
"""


class _Gen:
    """Emits node after node; node ``n<i>`` always continues to ``n<i+1>``."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.lines: list[str] = []

    # -- expressions -----------------------------------------------------------

    def operand(self) -> str:
        r = self.rng
        return r.choice(
            (
                "input.amount",
                "input.count",
                "context.score",
                "context.attempts",
                f"input.items[{r.randrange(4)}].qty",
                f"input.items[{r.randrange(4)}].price",
                "len(input.items)",
                f"max(input.count, {r.randrange(1, 50)})",
                str(r.randrange(0, 10_000)),
                f"{r.randrange(0, 999)}.{r.randrange(10, 99)}",
            )
        )

    def arith(self) -> str:
        r = self.rng
        kind = r.randrange(4)
        if kind == 0:
            return self.operand()
        if kind == 1:
            return f"{self.operand()} {r.choice('+-')} {self.operand()}"
        if kind == 2:
            return f"({self.operand()} + {self.operand()}) * {r.randrange(2, 9)}"
        return f"{self.operand()} * {r.randrange(2, 9)} % {r.randrange(2, 7)} - {self.operand()}"

    def comparison(self) -> str:
        r = self.rng
        kind = r.randrange(6)
        if kind == 0:
            return 'input.customer.address.country in ["DE", "FR", "NL"]'
        if kind == 1:
            return "not input.express"
        if kind == 2:
            return f'lower(input.customer.name) != "{r.choice(("test", "demo", "bot"))}"'
        op = r.choice(("==", "!=", "<", "<=", ">", ">="))
        return f"{self.arith()} {op} {self.arith()}"

    def guard(self) -> str:
        r = self.rng
        terms = [self.comparison() for _ in range(r.randrange(1, 4))]
        out = terms[0]
        for t in terms[1:]:
            out = f"{out} {r.choice(('and', 'or'))} {t}"
        return out

    def entries(self, n: int) -> list[str]:
        r = self.rng
        values: dict[str, Callable[[], str]] = {
            "id": lambda: "input.order_id",
            "order_id": lambda: r.choice(("input.order_id", "upper(input.order_id)")),
            "items": lambda: "input.items",
            "customer": lambda: "input.customer",
            "address": lambda: r.choice(("input.customer.address", "coalesce(null, null)")),
            "amount": self.arith,
            "express": lambda: r.choice(("input.express", "true", "false", "not input.express")),
            "text": lambda: r.choice(TEXTS),
            "delay": lambda: r.choice(DURATIONS),
            "tags": lambda: f'["{r.choice(ERRORS)}", "p{r.randrange(9)}"]',
            "reservation": lambda: r.choice(("context.reservation", "null")),
        }
        return [f"{k}: {values[k]()}" for k in r.sample(sorted(values), n)]

    def mapping(self, keyword: str, indent: str, entries: list[str]) -> None:
        """``args { ... }`` on one line, or one entry a line when it is long."""
        one = f"{indent}{keyword:<7} {{ {', '.join(entries)} }}"
        if len(one) <= 96:
            self.emit(one)
        else:
            inner = indent + "    "
            self.emit(f"{indent}{keyword} {{", *(f"{inner}{e}," for e in entries), f"{indent}}}")

    # -- nodes -------------------------------------------------------------------

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def task(self, name: str, nxt: str, indent: str = "") -> None:
        r = self.rng
        kind = r.randrange(10)
        i = indent + "    "
        if kind < 7:
            head = f"task {name}: service {r.choice(SERVICES)} {{"
        elif kind == 7:
            head = f"task {name}: script {{"
        elif kind == 8:
            head = f"task {name}: user {r.choice(ASSIGNEES)} {{"
        else:
            head = f"task {name}: manual {{"
        self.emit(indent + head)
        self.mapping("args", i, self.entries(r.randrange(1, 6)))
        if kind >= 8:
            self.emit(f"{i}form    {{ approved: bool, comment: string? = null }}")
        if r.random() < 0.7:
            self.emit(f"{i}output  {{ out_{name}: result.value, seen: true }}")
        if r.random() < 0.5:
            errs = ", ".join(r.sample(ERRORS[2:], 2))
            self.emit(
                f"{i}retry {{",
                f"{i}    attempts: {r.randrange(2, 9)},",
                f"{i}    backoff: {r.choice(('1s..5m', '500ms..30s', '2s'))},",
                f"{i}    factor: {r.choice(('2', '1.5'))}, jitter: 0.{r.randrange(1, 5)},",
                f"{i}    non_retryable: [{errs}],",
                f"{i}}}",
            )
        if r.random() < 0.5:
            mode = " non-interrupting" if r.random() < 0.3 else ""
            self.emit(f"{i}timeout {r.choice(DURATIONS)}{mode} -> escalate")
        if r.random() < 0.5:
            self.emit(f"{i}on {', '.join(r.sample(ERRORS, 2))} -> recover")
        if r.random() < 0.2:
            self.emit(f"{i}on any -> escalate")
        if kind < 7 and r.random() < 0.3:
            self.emit(f"{i}compensate undo")
        self.emit(f"{i}next {nxt}", indent + "}")

    def choice(self, name: str, nxt: str) -> None:
        self.emit(f"choice {name} {{")
        for _ in range(self.rng.randrange(1, 4)):
            target = self.rng.choice((nxt, nxt, "escalate", "rejected"))
            self.emit(f"    when {self.guard()} -> {target}")
        self.emit(f"    else -> {nxt}", "}")

    def wait(self, name: str, nxt: str) -> None:
        r = self.rng
        kind = r.randrange(3)
        if kind == 0:
            sig = r.choice(SIGNALS)
            self.emit(f"wait {name}: signal {sig} {{", f"    output  {{ got_{name}: signal }}")
        elif kind == 1:
            msg = r.choice(MESSAGES)
            self.emit(f"wait {name}: message {msg} correlate input.order_id {{")
        else:
            self.emit(f"wait {name}: until {r.choice(TIMESTAMPS)} {{")
        if kind != 2:
            self.emit(f"    timeout {r.choice(DURATIONS)} non-interrupting -> escalate")
        self.emit(f"    next {nxt}", "}")

    def sleep(self, name: str, nxt: str) -> None:
        if self.rng.random() < 0.5:
            self.emit(f"sleep {name} {self.rng.choice(DURATIONS)} next {nxt}")
        else:
            self.emit(f"sleep {name} {self.rng.choice(DURATIONS)} {{", f"    next {nxt}", "}")

    def parallel(self, name: str, nxt: str) -> None:
        r = self.rng
        n = r.randrange(2, 4)
        self.emit(f"parallel {name} {{")
        for b in range(n):
            self.emit(f"    branch {name}_b{b} {{")
            steps = r.randrange(1, 3)
            for s in range(steps):
                self.task(f"{name}_b{b}_{s}", f"{name}_b{b}_{s + 1}", indent="        ")
            self.emit(f"        end {name}_b{b}_{steps}: completed", "    }")
        join = r.choice(("all", "any", f"1 of {n}", str(n)))
        self.emit(f"    timeout {r.choice(DURATIONS)} -> escalate")
        self.emit(f"    join {join} -> {nxt}", "}")

    def map(self, name: str, nxt: str) -> None:
        r = self.rng
        self.emit(f"map {name} over input.items as item {{")
        if r.random() < 0.5:
            self.emit(f"    concurrency {r.randrange(2, 32)}")
        else:
            self.emit("    sequential")
        self.emit(f"    tolerate {r.randrange(1, 20)}%")
        self.emit(f"    task {name}_t: service {r.choice(SERVICES)} {{")
        self.emit("        args { sku: item.sku, qty: item.qty + 1, price: item.price * 2 }")
        self.emit(f"        next {name}_e", "    }")
        self.emit(f"    end {name}_e: completed {{ output {{ sku: item.sku }} }}")
        self.emit("    on Fatal -> escalate", f"    next {nxt}", "}")

    def call(self, name: str, nxt: str) -> None:
        r = self.rng
        version = f" version {r.randrange(1, 5)}" if r.random() < 0.7 else ""
        self.emit(f"call {name}: workflow {r.choice(SUBFLOWS)}{version} {{")
        self.mapping("args", "    ", self.entries(r.randrange(1, 4)))
        self.emit(f"    output  {{ sub_{name}: result }}")
        if r.random() < 0.5:
            self.emit("    retry   { attempts: 3, backoff: 2s }")
        self.emit(f"    next {nxt}", "}")

    def end(self, name: str, nxt: str) -> None:
        # An end node in the middle of the chain, reached from a choice: the
        # choice branches to it or goes on.
        self.emit(
            f"choice {name} {{",
            f"    when context.score >= {self.rng.randrange(50, 100)} -> {name}_stop",
            f"    else -> {nxt}",
            "}",
            f"end {name}_stop: {self.rng.choice(('failed', 'cancelled', 'compensated'))} {{",
            f'    output  {{ status: "{name}" }}',
            "    error   FraudSuspected",
            "}",
        )


#: (kind, weight): how often each node kind appears in the chain.
KINDS = (
    ("task", 40),
    ("choice", 15),
    ("wait", 8),
    ("sleep", 6),
    ("parallel", 8),
    ("map", 8),
    ("call", 8),
    ("end", 7),
)


def generate(target_lines: int, seed: int = SEED) -> str:
    """A valid workflow of about ``target_lines`` lines (deterministic for a seed)."""
    gen = _Gen(seed + target_lines)
    gen.lines.extend(HEADER.splitlines())
    footer = FOOTER.splitlines()
    kinds = [k for k, _ in KINDS]
    weights = [w for _, w in KINDS]
    emitters: dict[str, Callable[[str, str], None]] = {
        "task": gen.task,
        "choice": gen.choice,
        "wait": gen.wait,
        "sleep": gen.sleep,
        "parallel": gen.parallel,
        "map": gen.map,
        "call": gen.call,
        "end": gen.end,
    }
    i = 1
    # Random nodes while there is room for the largest one, then one-line sleeps
    # so that the file has exactly ``target_lines`` lines (when that is possible).
    while len(gen.lines) + len(footer) + 60 < target_lines:
        kind = gen.rng.choices(kinds, weights)[0] if i > 1 else "task"
        gen.lines.append("")
        emitters[kind](f"n{i}", f"n{i + 1}")
        i += 1
    gen.lines.append("")
    while len(gen.lines) + len(footer) + 2 < target_lines:
        gen.lines.append(f"sleep n{i} {gen.rng.choice(DURATIONS)} next n{i + 1}")
        i += 1
    gen.lines.append(f"sleep n{i} {gen.rng.choice(DURATIONS)} next done")
    gen.lines.append("")
    gen.lines.extend(footer)
    return "\n".join(gen.lines) + "\n"


def count_lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def check_valid(text: str) -> None:
    result = parse(text, "big.wf")
    if result.diagnostics or result.spec is None:
        shown = "\n".join(str(d) for d in result.diagnostics[:10])
        raise SystemExit(f"generated workflow does not parse cleanly:\n{shown}")


# ------------------------------------------------------------------ measuring


def _runner(path: str) -> Callable[[str], Any]:
    """The function under test for ``path``, its parser already built and warm."""
    if path == "spec":
        parse(generate(60), "warmup.wf")  # builds the cached parser

        def run(text: str) -> Any:
            return parse(text, "big.wf")

        return run
    bare = make_parser(None)
    bare.parse(generate(60))
    return bare.parse


def time_path(run: Callable[[str], Any], text: str, repeat: int) -> list[float]:
    """Wall times of ``repeat`` runs, after one untimed warm-up run on the same text."""
    run(text)
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = run(text)
        times.append(time.perf_counter() - t0)
        del result
    return times


def child_memory(path: str, size: int) -> dict[str, float]:
    """In this (fresh) process: memory of one parse of the ``size`` workflow."""
    text = generate(size)
    run = _runner(path)
    gc.collect()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run(text)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    del result
    gc.collect()
    tracemalloc.start()
    result = run(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, else KiB
    return {
        "tracemalloc_peak_mb": peak / 2**20,
        "maxrss_delta_mb": grown * scale / 2**20,
        "maxrss_base_mb": base * scale / 2**20,
    }


def measure_memory(path: str, size: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child-memory", f"{path}:{size}"],
        check=True,
        capture_output=True,
        text=True,
    )
    data: dict[str, float] = json.loads(out.stdout)
    return data


def run_bench(
    sizes: list[int], repeat: int, memory: bool, log: Callable[[str], None]
) -> dict[str, Any]:
    # Memory first, while this process is still small: a child started by exec
    # inherits its parent's ru_maxrss, which would hide the child's own growth.
    mem: dict[tuple[str, int], dict[str, float]] = {}
    if memory:
        for size in sizes:
            log(f"size {size}: memory, one fresh subprocess per path ...")
            for p in PATHS:
                mem[p, size] = measure_memory(p, size)
    runners = {p: _runner(p) for p in PATHS}
    rows = []
    for size in sizes:
        text = generate(size)
        lines = count_lines(text)
        check_valid(text)
        log(f"size {size}: {lines} lines, {len(text):,} chars, 0 diagnostics; timing ...")
        row: dict[str, Any] = {"target": size, "lines": lines, "chars": len(text)}
        for p in PATHS:
            times = time_path(runners[p], text, repeat)
            med = statistics.median(times)
            row[p] = {
                "median_s": med,
                "min_s": min(times),
                "times_s": times,
                "lines_per_s": lines / med,
                **mem.get((p, size), {}),
            }
        row["ratio"] = row["spec"]["lines_per_s"] / row["bare"]["lines_per_s"]
        rows.append(row)
    return {
        "machine": benchlib.machine("lark"),
        "repeat": repeat,
        "rows": rows,
        "targets": _targets(rows),
    }


def _targets(rows: list[dict[str, Any]]) -> dict[str, Any]:
    speed = all(r["ratio"] >= SPEED_TARGET for r in rows)
    big = [r for r in rows if r["target"] >= MEMORY_TARGET_LINES]
    mem: bool | None = None
    if big and "tracemalloc_peak_mb" in big[-1]["spec"]:
        mem = all(r["spec"]["tracemalloc_peak_mb"] < MEMORY_TARGET_MB for r in big)
    return {"speed_ratio_ge_1": speed, f"spec_{MEMORY_TARGET_LINES}_under_200mb": mem}


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    out = [
        f"wflang parser benchmark  {m['date']}",
        f"machine: {m['platform']} ({m['processor']}), {m['cpu_count']} CPUs",
        f"python:  {m['python']}, lark {m['lark']}; median of {report['repeat']} runs",
        "",
        f"{'lines':>7} {'path':<5} {'median ms':>10} {'min ms':>9} {'lines/s':>9} "
        f"{'ratio':>6} {'peak MB':>8} {'rss+ MB':>8}",
        "-" * 69,
    ]
    for row in report["rows"]:
        for p in PATHS:
            r = row[p]
            ratio = f"{row['ratio']:.2f}" if p == "spec" else ""
            peak = f"{r['tracemalloc_peak_mb']:.1f}" if "tracemalloc_peak_mb" in r else "-"
            rss = f"{r['maxrss_delta_mb']:.1f}" if "maxrss_delta_mb" in r else "-"
            out.append(
                f"{row['lines']:>7} {p:<5} {r['median_s'] * 1000:>10.1f} {r['min_s'] * 1000:>9.1f} "
                f"{r['lines_per_s']:>9,.0f} {ratio:>6} {peak:>8} {rss:>8}"
            )
    t = report["targets"]
    mem = t[f"spec_{MEMORY_TARGET_LINES}_under_200mb"]
    out += [
        "",
        "spec = parse(text) to the typed spec; bare = make_parser(None).parse(text), a tree.",
        "ratio = spec lines/s / bare lines/s; peak MB = tracemalloc peak of one parse in a",
        "fresh process; rss+ MB = ru_maxrss growth over the baseline in that process.",
        f"target ratio >= {SPEED_TARGET}: {'met' if t['speed_ratio_ge_1'] else 'NOT met'}",
        f"target {MEMORY_TARGET_LINES}-line spec peak < {MEMORY_TARGET_MB:.0f} MB: "
        + ("not measured" if mem is None else "met" if mem else "NOT met"),
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes",
        default=",".join(map(str, DEFAULT_SIZES)),
        help="comma-separated target line counts (default: %(default)s)",
    )
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per path and size")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    ap.add_argument("--emit", type=int, metavar="LINES", help="print the generated workflow")
    ap.add_argument("--child-memory", metavar="PATH:SIZE", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_memory:
        path, size = args.child_memory.split(":")
        print(json.dumps(child_memory(path, int(size))))
        return 0
    if args.emit:
        sys.stdout.write(generate(args.emit))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.repeat < 1 or not sizes or min(sizes) < 100:
        ap.error("--repeat must be >= 1 and every size >= 100")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    report = run_bench(sizes, args.repeat, not args.no_memory, log)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
