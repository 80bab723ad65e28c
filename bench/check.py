"""Checker benchmark: the time of ``check`` against the time of ``parse``, same run, same file.

Run from the repository root::

    .venv/bin/python bench/check.py [--sizes 100,1000,10000] [--repeat 5] [--json]

For each shape and size it generates a deterministic (seeded) workflow of exactly
that many nodes (nodes in branches and map bodies included), in three shapes:

* ``chain``: a long sequence of tasks of every kind (service tasks with ``args``,
  ``output``, ``retry``, ``timeout``, ``on`` and ``compensate``; script, user and
  manual tasks), waits and sleeps, with a forward-only choice every few nodes whose
  arms skip ahead, escalate, reject or stop at an ``end`` of their own;
* ``wide``: a sequence of wide choices, over an enum (every member, no ``else``),
  over int values and over decimal ranges, each arm going to a task of its own;
* ``nested``: a sequence of parallels whose branches hold parallels, a few levels
  deep, and maps (some with parallels in their body); every branch and map body
  ends with its own ``end``.

Every file uses every declaration it makes and must check clean: the script
asserts that ``parse`` and ``check`` both report zero diagnostics before timing.

Each file is parsed once and checked once untimed (the warm-up, and the clean
check); then ``parse(text)`` is timed ``--repeat`` times and
``check([parse_result])`` (loading the program, building the model, every rule,
the suppressions) is timed ``--repeat`` times on that one parse result. Times are
medians of ``time.perf_counter``, each run after a ``gc.collect()``. The report
gives check/parse and the growth exponent ``log(t2/t1) / log(n2/n1)`` between
consecutive sizes, next to the exponent ``n log n`` would give.

``--profile SHAPE:NODES`` prints a cProfile of one check instead (top 25 by
cumulative and by own time); ``--emit SHAPE:NODES`` prints a generated workflow.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import benchlib  # the folder of this script is on sys.path when it runs

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wflang.compiler.check import check  # noqa: E402
from wflang.dsl import spec as sp  # noqa: E402
from wflang.dsl.parser import ParseResult, parse  # noqa: E402

SEED = 20261129
DEFAULT_SIZES = (100, 1000, 10_000)
SHAPES = ("chain", "wide", "nested")
#: Targets: at the largest size check costs at most half of parse, and check time
#: grows no faster than n log n (the exponent n log n gives, plus some slack for noise).
RATIO_TARGET = 0.5
RATIO_TARGET_NODES = 10_000
GROWTH_SLACK = 0.05

# ------------------------------------------------------------------ generator

HEADER = """\
workflow bench_{shape} version 1

type Item {{ sku: string, qty: int, price: decimal, tags: list[string] }}
type Address {{ street: string, city: string, zip: string, country: string }}
type Customer {{
    id: string,
    name: string,
    email: string?,
    address: Address,
    tier: int = 1,
}}
enum Priority {{ low, normal, high, urgent }}
enum Region {{ {regions} }}

input {{
    order_id: string,
    customer: Customer,
    items: list[Item],
    amount: decimal,
    count: int,
    express: bool = false,
    priority: Priority = Priority.normal,
    region: Region,
    limits: map[string, decimal],
    deadline: timestamp,
    cool_down: duration = 30s,
}}
context {{
    booking: string,
    reservation: string?,
    charge: string = "",
    score: int = 0,
    attempts: int = 0,
    tax: decimal = 0.0,
    ledger: string = "",
    notified: bool = false,
    approved: bool = false,
    resolution: string = "",
    cancel_reason: string = "",
    settled: decimal = 0.0,
    depot: string = "",
    notes: list[string] = [],
}}
output {{ status: string, charged: decimal? }}

signal approval {{ approved: bool, reviewer: string }}
signal cancel_request {{ reason: string }}
message payment_settled {{ order_id: string, amount: decimal }}
message parcel_scanned {{ order_id: string, depot: string }}
error OutOfStock, PaymentDeclined, Transient
error Fatal, Timeout, FraudSuspected

service inventory.reserve(items: list[Item]) -> {{ reservation_id: string }} raises OutOfStock
service inventory.release(reservation_id: string)
service payments.charge(order_id: string, amount: decimal, express: bool) -> {{
    charge_id: string,
    value: decimal,
}} raises PaymentDeclined, Transient
service payments.refund(charge_id: string) -> {{ value: decimal }} raises Transient
service shipping.book(address: Address, items: list[Item]) -> {{ value: string }} raises Fatal
service shipping.cancel(booking: string)
service crm.notify(customer: Customer, text: string) -> {{ value: bool }}
service fraud.score(order_id: string, amount: decimal) -> {{ value: int }} raises FraudSuspected
service ledger.post(order_id: string, amount: decimal) -> {{ value: string }} raises Transient
service tax.compute(items: list[Item], country: string) -> {{ value: decimal }} raises Timeout

start book
"""

REGIONS = tuple(f"r{i}" for i in range(16))

#: Top-level nodes that use every declaration once, so that each shape checks clean
#: whatever its body uses. ``book`` writes ``context.booking`` (no default), which
#: later nodes read: the read-before-write analysis has something to prove.
PROLOGUE = """\
task book: service shipping.book {
    args { address: input.customer.address, items: input.items }
    output { booking: result.value }
    retry { attempts: 3, backoff: 1s..10s, factor: 2 }
    timeout 10m -> escalate
    on Fatal -> rejected
    compensate cancel_booking
    next reserve
}
task reserve: service inventory.reserve {
    args { items: input.items }
    output { reservation: result.reservation_id }
    on OutOfStock -> rejected
    compensate release_stock
    next charge
}
task charge: service payments.charge {
    args { order_id: input.order_id, amount: input.amount, express: input.express }
    output { charge: result.charge_id }
    retry { attempts: 4, backoff: 500ms..30s, factor: 2, non_retryable: [PaymentDeclined] }
    on PaymentDeclined -> rejected
    on any -> escalate
    compensate refund_payment
    next score
}
task score: service fraud.score {
    args { order_id: input.order_id, amount: input.amount }
    output { score: result.value }
    on FraudSuspected -> rejected
    next tax
}
task tax: service tax.compute {
    args { items: input.items, country: input.customer.address.country }
    output { tax: result.value }
    on Timeout -> recover
    next post
}
task post: service ledger.post {
    args { order_id: input.order_id, amount: input.amount + context.tax }
    output { ledger: result.value }
    retry { attempts: 5, backoff: 1s..1m, non_retryable: [Transient] }
    on Transient -> recover
    next notify
}
task notify: service crm.notify {
    args { customer: input.customer, text: "booked " + context.booking }
    output { notified: result.value, notes: ["notified"] }
    next await_approval
}
wait await_approval: signal approval {
    output { approved: signal.approved }
    timeout 48h -> escalate
    next await_cancel
}
wait await_cancel: signal cancel_request {
    output { cancel_reason: signal.reason }
    timeout 1h -> route_priority
    next route_priority
}
choice route_priority {
    when input.priority == Priority.low -> await_settled
    when input.priority == Priority.normal -> await_settled
    when input.priority == Priority.high -> expedite
    when input.priority == Priority.urgent -> expedite
}
task expedite: script {
    output { attempts: context.attempts + 1 }
    next await_settled
}
wait await_settled: message payment_settled correlate input.order_id {
    output { settled: message.amount }
    timeout P3D -> escalate
    next await_scan
}
wait await_scan: message parcel_scanned correlate input.order_id {
    output { depot: message.depot }
    timeout 2d non-interrupting -> escalate
    next await_deadline
}
wait await_deadline: until input.deadline + 2h {
    next n1
}
"""

FOOTER = """\
task escalate: manual "ops-oncall" {
    form { resolution: string, retry_payment: bool = false }
    output { resolution: result.resolution }
    timeout 3d -> rejected
    next done
}
task recover: script {
    output { attempts: context.attempts + 1 }
    next done
}
end done: completed {
    output { status: "done", charged: input.amount + context.tax }
}
end rejected: failed {
    error PaymentDeclined
}
task release_stock: service inventory.release {
    args { reservation_id: coalesce(context.reservation, "") }
}
task refund_payment: service payments.refund {
    args { charge_id: context.charge }
    retry { attempts: 10, backoff: 5s..10m, factor: 2, jitter: 0.1 }
}
task cancel_booking: service shipping.cancel {
    args { booking: context.booking }
}
"""


def _count_nodes(text: str) -> int:
    """Nodes in a fixed block of source (one node per line starting with a keyword)."""
    starts = ("task ", "choice ", "wait ", "sleep ", "parallel ", "map ", "call ", "end ")
    return sum(1 for line in text.splitlines() if line.strip().startswith(starts))


PROLOGUE_NODES = _count_nodes(PROLOGUE)
FOOTER_NODES = _count_nodes(FOOTER)

#: service -> (args, output, compensation handler), ``{item}`` for a map item.
SERVICE_CALLS: dict[str, tuple[str, str, str | None]] = {
    "inventory.reserve": (
        "items: input.items",
        "reservation: result.reservation_id",
        "release_stock",
    ),
    "payments.charge": (
        "order_id: input.order_id, amount: input.amount + context.tax, express: input.express",
        "charge: result.charge_id",
        "refund_payment",
    ),
    "shipping.book": (
        "address: input.customer.address, items: input.items",
        "booking: result.value",
        "cancel_booking",
    ),
    "crm.notify": (
        'customer: input.customer, text: "order " + input.order_id + " at " + context.booking',
        "notified: result.value",
        None,
    ),
    "fraud.score": (
        "order_id: input.order_id, amount: input.amount * 2",
        "score: result.value",
        None,
    ),
    "ledger.post": (
        "order_id: input.order_id, amount: context.tax + context.settled",
        "ledger: result.value",
        None,
    ),
    "tax.compute": (
        "items: input.items, country: upper(input.customer.address.country)",
        "tax: result.value",
        None,
    ),
}
ITEM_CALLS: dict[str, str] = {
    "inventory.reserve": "items: [{item}]",
    "ledger.post": "order_id: {item}.sku, amount: {item}.price * {item}.qty",
    "tax.compute": "items: [{item}], country: input.customer.address.country",
    "fraud.score": "order_id: {item}.sku, amount: {item}.price",
}
RAISES: dict[str, tuple[str, ...]] = {
    "inventory.reserve": ("OutOfStock",),
    "payments.charge": ("PaymentDeclined", "Transient"),
    "shipping.book": ("Fatal",),
    "crm.notify": (),
    "fraud.score": ("FraudSuspected",),
    "ledger.post": ("Transient",),
    "tax.compute": ("Timeout",),
}
ASSIGNEES = ('"warehouse"', '"finance"', '"support"', '"ops-oncall"')
#: Interrupting timeouts: longer than any retry budget generated (at most 31 s).
LONG = ("5m", "10m", "1h", "2h", "1h30m", "PT45M", "P1D", "48h")
SHORT = ("30s", "90s", "500ms", "15m", "PT15M", "1d")
BACKOFFS = ("1s..5s", "500ms..2s", "1s", "2s..4s")


#: ``fail`` of a top-level node: its errors and timeouts go to the shared handlers.
TOP = "<top>"


def _to(fail: str | None, top_target: str) -> str | None:
    """Where an error or timeout of a node goes: ``top_target`` at top level."""
    return top_target if fail is TOP else fail


class _Gen:
    """Emits nodes into ``lines`` and counts them in ``nodes``."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.lines: list[str] = []
        self.nodes = 0

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    # -- expressions -----------------------------------------------------------

    def guards(self, k: int) -> list[str]:
        """``k`` boolean guards of different kinds (so no two are the same text)."""
        r = self.rng
        kinds: list[Callable[[], str]] = [
            lambda: f"input.amount > {r.randrange(100, 5000)}",
            lambda: f"context.score >= {r.randrange(10, 90)} and not input.express",
            lambda: 'input.customer.address.country in ["DE", "FR", "NL"]',
            lambda: f'lower(input.customer.name) != "{r.choice(("test", "demo", "bot"))}"',
            lambda: (
                f"len(input.items) > {r.randrange(2, 20)} or input.count * "
                f"{r.randrange(2, 9)} % {r.randrange(2, 7)} == 1"
            ),
            lambda: 'input.customer.email != null and ends_with(input.customer.email, ".test")',
            lambda: f"input.priority == Priority.{r.choice(('low', 'high', 'urgent'))}",
            lambda: (
                f"context.tax + input.amount * {r.randrange(2, 9)} > "
                f"{r.randrange(100, 9999)}.{r.randrange(10, 99)}"
            ),
            lambda: f"input.items[{r.randrange(4)}].qty >= {r.randrange(1, 9)}",
            lambda: f"max(input.count, {r.randrange(1, 50)}) < {r.randrange(50, 99)}",
            lambda: "context.approved and context.notified",
            lambda: f'contains(input.items[0].tags, "{r.choice(("fragile", "cold", "gift"))}")',
            lambda: (
                f'input.limits["{(key := r.choice(("eu", "us")))}"] != null and '
                f'input.limits["{key}"] > {r.randrange(10, 900)}'
            ),
            lambda: 'coalesce(context.reservation, "") != "" and context.booking != ""',
            lambda: f"input.cool_down > {r.choice(SHORT)}",
            lambda: f"-input.count % {r.randrange(2, 9)} == 0 or context.attempts > 3",
            lambda: (
                f"(input.amount + context.settled) * {r.randrange(2, 5)} >= "
                f"{r.randrange(1000, 9000)} or input.customer.tier > 2"
            ),
        ]
        return [kind() for kind in r.sample(kinds, k)]

    # -- nodes -----------------------------------------------------------------

    def task(
        self,
        name: str,
        nxt: str,
        indent: str = "",
        fail: str | None = TOP,
        item: str | None = None,
        must_fail: bool = False,
    ) -> None:
        """A task of a random kind. ``fail``: where its errors and timeouts go (``TOP``:
        the shared top-level handlers; None: nowhere, in a branch or map body that has
        no failure end). ``must_fail``: surely name ``fail`` (so that it is reached)."""
        r = self.rng
        failed = False
        self.nodes += 1
        i = indent + "    "
        kind = r.randrange(20)
        if kind < 14:
            service = r.choice(tuple(SERVICE_CALLS))
            args, output, undo = SERVICE_CALLS[service]
            if item is not None and service in ITEM_CALLS:
                args = ITEM_CALLS[service].format(item=item)
            self.emit(f"{indent}task {name}: service {service} {{", f"{i}args {{ {args} }}")
            if r.random() < 0.7:
                self.emit(f"{i}output {{ {output} }}")
            raises = RAISES[service]
            if r.random() < 0.5:
                block = [
                    f"attempts: {r.randrange(2, 6)}",
                    f"backoff: {r.choice(BACKOFFS)}",
                    f"factor: {r.choice(('2', '1.5'))}",
                ]
                if r.random() < 0.5:
                    block.append(f"jitter: 0.{r.randrange(1, 5)}")
                if raises and r.random() < 0.5:
                    block.append(f"non_retryable: [{raises[0]}]")
                self.emit(f"{i}retry {{ {', '.join(block)} }}")
            failed = self._timeout(i, fail)
            target = _to(fail, r.choice(("recover", "escalate", "rejected")))
            if target and raises and r.random() < 0.6:
                self.emit(f"{i}on {', '.join(raises)} -> {target}")
                failed = True
            target = _to(fail, "escalate")
            if target and (r.random() < 0.2 or (must_fail and not failed)):
                self.emit(f"{i}on any -> {target}")
            if undo is not None and r.random() < 0.3:
                self.emit(f"{i}compensate {undo}")
        elif kind < 17:
            self.emit(
                f"{indent}task {name}: script {{",
                f"{i}output {{ attempts: context.attempts + 1, "
                f"score: context.score + {r.randrange(1, 9)} }}",
            )
            if must_fail and fail not in (None, TOP):
                self.emit(f"{i}on any -> {fail}")
        else:
            who = "user" if kind < 19 else "manual"
            self.emit(
                f"{indent}task {name}: {who} {r.choice(ASSIGNEES)} {{",
                f"{i}args {{ order_id: input.order_id, amount: input.amount }}",
                f"{i}form {{ approved: bool, comment: string? = null }}",
                f"{i}output {{ approved: result.approved }}",
            )
            self._timeout(i, fail, always=True)
        self.emit(f"{i}next {nxt}", f"{indent}}}")

    def _timeout(self, i: str, fail: str | None, always: bool = False) -> bool:
        """Maybe (``always``: surely) a timeout towards ``fail``; whether one was written."""
        r = self.rng
        target = _to(fail, "escalate")
        if target is None or (not always and r.random() < 0.5):
            return False
        if fail is TOP and r.random() < 0.3:
            self.emit(f"{i}timeout {r.choice(SHORT)} non-interrupting -> escalate")
        else:
            self.emit(f"{i}timeout {r.choice(LONG)} -> {target}")
        return True

    def wait(self, name: str, nxt: str, indent: str = "", fail: str | None = TOP) -> None:
        r = self.rng
        self.nodes += 1
        i = indent + "    "
        kind = r.randrange(4)
        if kind == 0:
            self.emit(
                f"{indent}wait {name}: signal approval {{",
                f"{i}output {{ approved: signal.approved }}",
            )
        elif kind == 1:
            self.emit(f"{indent}wait {name}: signal cancel_request {{")
        elif kind == 2:
            message = r.choice(("payment_settled", "parcel_scanned"))
            self.emit(f"{indent}wait {name}: message {message} correlate input.order_id {{")
            if message == "parcel_scanned":
                self.emit(f"{i}output {{ depot: message.depot }}")
        else:
            self.emit(f"{indent}wait {name}: until input.deadline + {r.choice(LONG)} {{")
        if kind != 3:
            self._timeout(i, fail, always=True)
        self.emit(f"{i}next {nxt}", f"{indent}}}")

    def sleep(self, name: str, nxt: str, indent: str = "") -> None:
        self.nodes += 1
        r = self.rng
        duration = r.choice((*SHORT, "input.cool_down", "input.cool_down * 2"))
        if r.random() < 0.5:
            self.emit(f"{indent}sleep {name} {duration} next {nxt}")
        else:
            self.emit(
                f"{indent}sleep {name} {duration} {{", f"{indent}    next {nxt}", f"{indent}}}"
            )

    def end(self, name: str, indent: str = "", outcome: str = "completed") -> None:
        self.nodes += 1
        if outcome == "completed":
            self.emit(f"{indent}end {name}: completed")
        else:
            self.emit(
                f"{indent}end {name}: {outcome} {{", f"{indent}    error Fatal", f"{indent}}}"
            )

    # -- shape: chain -----------------------------------------------------------

    def forward_choice(self, name: str, nxt: str, skip: str) -> None:
        """A choice whose arms go forward only: on, skip one, escalate, reject, or stop."""
        r = self.rng
        self.nodes += 1
        stop = f"{name}_stop" if r.random() < 0.5 else None
        targets = [nxt, skip, "escalate", "rejected", *([stop] if stop else [])]
        self.emit(f"choice {name} {{")
        arms = r.randrange(1, 4)
        for k, guard in enumerate(self.guards(arms)):
            target = stop if stop and k == 0 else r.choice(targets)
            self.emit(f"    when {guard} -> {target}")
        self.emit(f"    else -> {nxt}", "}")
        if stop:
            self.nodes += 1
            outcome = r.choice(("failed", "cancelled", "compensated"))
            self.emit(f"end {stop}: {outcome} {{", f'    output {{ status: "{name}" }}')
            if outcome == "failed":
                self.emit("    error FraudSuspected")
            self.emit("}")

    # -- shape: wide ------------------------------------------------------------

    def wide_choice(self, name: str, nxt: str, budget: int) -> None:
        """A choice with many arms, each going to a task of its own (``budget`` nodes at most)."""
        r = self.rng
        kind = r.randrange(3)
        if kind == 0 and budget >= len(REGIONS) + 1:
            subject = "input.region"
            arms = [(f"{subject} == Region.{m}", m) for m in REGIONS]
            default = False  # every member is covered: exhaustive without else
        elif kind == 1 or budget < 4:
            width = min(r.randrange(8, 41), budget - 2)
            base = r.randrange(0, 5)
            arms = [(f"input.count == {base + j}", f"c{base + j}") for j in range(width)]
            default = True
        else:
            width = min(r.randrange(8, 41), budget - 2)
            step = r.randrange(50, 500)
            arms = [(f"input.amount < {step * (j + 1)}", f"lt{j}") for j in range(width)]
            default = True
        self.nodes += 1
        self.emit(f"choice {name} {{")
        for guard, tag in arms:
            self.emit(f"    when {guard} -> {name}_{tag}")
        if default:
            self.emit(f"    else -> {name}_other")
        self.emit("}")
        for _, tag in arms:
            self.task(f"{name}_{tag}", nxt)
        if default:
            self.task(f"{name}_other", nxt)

    # -- shape: nested ----------------------------------------------------------

    def parallel(
        self, name: str, nxt: str, depth: int, indent: str = "", fail: str | None = TOP
    ) -> None:
        """A parallel whose branches hold tasks, maps and (``depth`` > 1) more parallels."""
        r = self.rng
        self.nodes += 1
        i = indent + "    "
        width = r.randrange(2, 4)
        self.emit(f"{indent}parallel {name} {{")
        for b in range(width):
            self.branch(f"{name}_b{b}", depth, i)
        join = r.choice(
            ("all", "all", "any", f"1 of {width}", str(width - 1), f"{width} of {width}")
        )
        target = _to(fail, "escalate")
        if target and r.random() < 0.6:
            self.emit(f"{i}timeout {r.choice(LONG)} -> {target}")
        target = _to(fail, "recover")
        if target and r.random() < 0.4:
            self.emit(f"{i}on any -> {target}")
        self.emit(f"{i}join {join} -> {nxt}", f"{indent}}}")

    def branch(self, name: str, depth: int, indent: str) -> None:
        r = self.rng
        i = indent + "    "
        fail = f"{name}_fail" if r.random() < 0.4 else None
        steps: list[str] = ["task"] * r.randrange(1, 4)
        if depth > 1 and r.random() < 0.7:
            steps.insert(r.randrange(len(steps) + 1), "parallel")
        if r.random() < 0.35:
            steps.insert(r.randrange(len(steps) + 1), "map")
        if r.random() < 0.25:
            steps.insert(r.randrange(len(steps) + 1), "wait")
        if fail is not None:
            steps[0] = "task"  # the first task names the failure end, so it is reached
        names = [f"{name}_{k}" for k in range(len(steps))] + [f"{name}_ok"]
        self.emit(f"{indent}branch {name} {{")
        for k, step in enumerate(steps):
            here, nxt = names[k], names[k + 1]
            if step == "task":
                where = fail if k == 0 else r.choice((fail, None))
                self.task(here, nxt, i, where, must_fail=k == 0)
            elif step == "parallel":
                self.parallel(here, nxt, depth - 1, i, fail)
            elif step == "map":
                self.map(here, nxt, depth - 1, i, fail)
            else:
                self.wait(here, nxt, i, fail)
        self.end(f"{name}_ok", i)
        if fail is not None:
            self.end(fail, i, "failed")
        self.emit(f"{indent}}}")

    def map(
        self, name: str, nxt: str, depth: int, indent: str = "", fail: str | None = TOP
    ) -> None:
        r = self.rng
        self.nodes += 1
        i = indent + "    "
        self.emit(f"{indent}map {name} over input.items as item {{")
        if r.random() < 0.5:
            self.emit(f"{i}concurrency {r.randrange(2, 32)}")
        else:
            self.emit(f"{i}sequential")
        if r.random() < 0.6:
            self.emit(f"{i}tolerate {r.randrange(1, 20)}%")
        body = [f"{name}_t"]
        if depth > 1 and r.random() < 0.4:
            body.append(f"{name}_p")
        body.append(f"{name}_e")
        self.task(body[0], body[1], i, None, item="item")
        if len(body) == 3:
            self.parallel(body[1], body[2], 1, i, None)
        self.end(body[-1], i)
        if r.random() < 0.5:
            self.emit(f'{i}output {{ notes: ["mapped {name}"] }}')
        target = _to(fail, "escalate")
        if target and r.random() < 0.5:
            self.emit(f"{i}timeout {r.choice(LONG)} -> {target}")
        target = _to(fail, "recover")
        if target and (fail is not TOP or r.random() < 0.5):
            self.emit(f"{i}on any -> {target}")
        self.emit(f"{i}next {nxt}", f"{indent}}}")


def _check_size(nodes: int) -> None:
    if nodes < PROLOGUE_NODES + FOOTER_NODES + 8:
        raise ValueError(f"a workflow needs at least {PROLOGUE_NODES + FOOTER_NODES + 8} nodes")


def generate(shape: str, nodes: int, seed: int = SEED) -> str:
    """A workflow of exactly ``nodes`` nodes of one shape (deterministic for a seed)."""
    _check_size(nodes)
    gen = _Gen(seed + nodes + SHAPES.index(shape))
    gen.lines.extend(HEADER.format(shape=shape, regions=", ".join(REGIONS)).splitlines())
    gen.lines.extend(["", *PROLOGUE.splitlines(), ""])
    budget = nodes - PROLOGUE_NODES - FOOTER_NODES
    # The body is a top-level sequence n1, n2, ...; each unit starts at n<i> and goes
    # on to n<i+1>. Two one-node units always close it, so a choice may skip ahead.
    # A unit too big for what is left is taken back and drawn again (the random
    # state goes on, so the next draw differs); after a few misses one-node units
    # (sleeps and tasks) fill the rest.
    i = 1
    body = _BODIES[shape]
    misses = 0
    while budget - gen.nodes > 2 and misses < 50:
        mark = len(gen.lines), gen.nodes
        body(gen, i, budget - gen.nodes - 2)
        if gen.nodes > budget - 2:
            del gen.lines[mark[0] :]
            gen.nodes = mark[1]
            misses += 1
            continue
        gen.lines.append("")
        i += 1
    while gen.nodes < budget:
        nxt = f"n{i + 1}" if gen.nodes < budget - 1 else "done"
        if i % 2:
            gen.sleep(f"n{i}", nxt)
        else:
            gen.task(f"n{i}", nxt)
        gen.lines.append("")
        i += 1
    gen.lines.extend(FOOTER.splitlines())
    return "\n".join(gen.lines) + "\n"


def _chain(gen: _Gen, i: int, left: int) -> None:
    r = gen.rng
    name, nxt = f"n{i}", f"n{i + 1}"
    kind = r.choices(("task", "choice", "wait", "sleep"), (70, 16, 8, 6))[0]
    if kind == "choice" and left >= 2:
        gen.forward_choice(name, nxt, f"n{i + 2}")
    elif kind == "wait":
        gen.wait(name, nxt)
    elif kind == "sleep":
        gen.sleep(name, nxt)
    else:
        gen.task(name, nxt)


def _wide(gen: _Gen, i: int, left: int) -> None:
    if left < 4:
        gen.task(f"n{i}", f"n{i + 1}")
    else:
        gen.wide_choice(f"n{i}", f"n{i + 1}", left)


def _nested(gen: _Gen, i: int, left: int) -> None:
    r = gen.rng
    name, nxt = f"n{i}", f"n{i + 1}"
    kind = r.choices(("parallel", "map", "task"), (70, 10, 20))[0]
    if kind == "parallel":
        gen.parallel(name, nxt, r.choice((2, 3, 3, 4)) if left > 150 else r.choice((2, 3)))
    elif kind == "map":
        gen.map(name, nxt, 2)
    else:
        gen.task(name, nxt)


_BODIES: dict[str, Callable[[_Gen, int, int], None]] = {
    "chain": _chain,
    "wide": _wide,
    "nested": _nested,
}


def count_nodes(spec: sp.WorkflowSpec) -> int:
    def walk(nodes: tuple[sp.Node, ...]) -> Iterator[sp.Node]:
        for node in nodes:
            yield node
            if isinstance(node, sp.ParallelNode):
                for b in node.branches:
                    yield from walk(b.nodes)
            elif isinstance(node, sp.MapNode):
                yield from walk(node.nodes)

    return sum(1 for _ in walk(spec.nodes))


def checked(shape: str, nodes: int) -> tuple[str, ParseResult]:
    """Generate a workflow, parse it and check it: both must report nothing."""
    text = generate(shape, nodes)
    file = f"bench_{shape}_{nodes}.wf"
    parsed = parse(text, file)
    if parsed.diagnostics or parsed.spec is None:
        shown = "\n".join(str(d) for d in parsed.diagnostics[:10])
        raise SystemExit(
            f"{shape}/{nodes}: the generated workflow does not parse cleanly:\n{shown}"
        )
    found = count_nodes(parsed.spec)
    if found != nodes:
        raise SystemExit(f"{shape}/{nodes}: generated {found} nodes, not {nodes}")
    result = check([parsed])
    if result.diagnostics:
        shown = "\n".join(
            f"{d.span.line}:{d.span.column} {d.code} {d.name}: {d.message}"
            for d in result.diagnostics[:20]
        )
        raise SystemExit(
            f"{shape}/{nodes}: the generated workflow does not check cleanly "
            f"({len(result.diagnostics)} diagnostics):\n{shown}"
        )
    return text, parsed


# ------------------------------------------------------------------ measuring


def timed(run: Callable[[], Any], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t0)
        del result
    return times


def exponent(t1: float, t2: float, n1: int, n2: int) -> float:
    return math.log(t2 / t1) / math.log(n2 / n1)


def nlogn_exponent(n1: int, n2: int) -> float:
    """The growth exponent between n1 and n2 of a cost proportional to n log n."""
    return math.log((n2 * math.log(n2)) / (n1 * math.log(n1))) / math.log(n2 / n1)


#: What parse and check run: changes elsewhere (the runtime) do not affect the figures.
SOURCES = ("wflang/dsl", "wflang/grammar", "wflang/compiler")


def run_bench(
    shapes: list[str], sizes: list[int], repeat: int, log: Callable[[str], None]
) -> dict[str, Any]:
    parse(generate("chain", 100), "warmup.wf")  # builds the cached parser
    rows: list[dict[str, Any]] = []
    for shape in shapes:
        previous: dict[str, Any] | None = None
        for nodes in sizes:
            text, parsed = checked(shape, nodes)
            lines = text.count("\n")
            log(f"{shape} {nodes}: {lines} lines, {len(text):,} chars, 0 diagnostics; timing ...")
            file = parsed.file
            parse_times = timed(lambda: parse(text, file), repeat)  # noqa: B023
            check_times = timed(lambda: check([parsed]), repeat)  # noqa: B023
            row: dict[str, Any] = {
                "shape": shape,
                "nodes": nodes,
                "lines": lines,
                "chars": len(text),
                "parse": {"median_s": statistics.median(parse_times), "times_s": parse_times},
                "check": {"median_s": statistics.median(check_times), "times_s": check_times},
            }
            row["ratio"] = row["check"]["median_s"] / row["parse"]["median_s"]
            if previous is not None:
                n1, n2 = previous["nodes"], nodes
                row["growth"] = {
                    "from_nodes": n1,
                    "parse": exponent(
                        previous["parse"]["median_s"], row["parse"]["median_s"], n1, n2
                    ),
                    "check": exponent(
                        previous["check"]["median_s"], row["check"]["median_s"], n1, n2
                    ),
                    "nlogn": nlogn_exponent(n1, n2),
                }
            rows.append(row)
            previous = row
    return {
        "machine": {
            **benchlib.machine("lark"),
            "wflang": benchlib.source_state(SOURCES, "parser/checker"),
        },
        "repeat": repeat,
        "rows": rows,
        "targets": _targets(rows),
    }


def _targets(rows: list[dict[str, Any]]) -> dict[str, Any]:
    big = [r for r in rows if r["nodes"] >= RATIO_TARGET_NODES]
    ratio: bool | None = all(r["ratio"] <= RATIO_TARGET for r in big) if big else None
    grown = [r for r in rows if "growth" in r and r["nodes"] >= RATIO_TARGET_NODES]
    growth: bool | None = None
    if grown:
        growth = all(r["growth"]["check"] <= r["growth"]["nlogn"] + GROWTH_SLACK for r in grown)
    return {"check_parse_le_half": ratio, "check_growth_le_nlogn": growth}


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    out = [
        f"wflang checker benchmark  {m['date']}",
        f"machine: {m['platform']} ({m['processor']}), {m['cpu_count']} CPUs",
        f"python:  {m['python']}, lark {m['lark']}; median of {report['repeat']} runs",
        f"wflang:  {m['wflang']}",
        "",
        f"{'shape':<7} {'nodes':>6} {'lines':>7} {'parse ms':>9} {'check ms':>9} "
        f"{'check/parse':>11} {'parse exp':>9} {'check exp':>9} {'nlogn exp':>9}",
        "-" * 85,
    ]
    for row in report["rows"]:
        g = row.get("growth")
        exps = f"{g['parse']:>9.2f} {g['check']:>9.2f} {g['nlogn']:>9.2f}" if g else f"{'':>9} " * 3
        out.append(
            f"{row['shape']:<7} {row['nodes']:>6} {row['lines']:>7} "
            f"{row['parse']['median_s'] * 1000:>9.1f} {row['check']['median_s'] * 1000:>9.1f} "
            f"{row['ratio']:>11.2f} {exps}".rstrip()
        )
    t = report["targets"]

    def verdict(ok: bool | None) -> str:
        return "not measured" if ok is None else "met" if ok else "NOT met"

    out += [
        "",
        "exp = log(t2/t1) / log(n2/n1) from the size above; nlogn exp = what n log n gives.",
        f"target check/parse <= {RATIO_TARGET} at {RATIO_TARGET_NODES} nodes: "
        + verdict(t["check_parse_le_half"]),
        f"target check growth <= n log n (+{GROWTH_SLACK}) up to {RATIO_TARGET_NODES} nodes: "
        + verdict(t["check_growth_le_nlogn"]),
    ]
    return "\n".join(out)


def profile(shape: str, nodes: int, top: int = 25) -> str:
    """cProfile of one check (after an untimed one), top ``top`` by cumulative and own time."""
    _, parsed = checked(shape, nodes)
    profiler = cProfile.Profile()
    gc.collect()
    profiler.enable()
    check([parsed])
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs()
    for key in ("cumulative", "tottime"):
        out.write(f"\n=== {shape} {nodes} nodes: top {top} by {key} ===\n")
        stats.sort_stats(key).print_stats(top)
    return out.getvalue()


def _shape_size(value: str) -> tuple[str, int]:
    shape, _, size = value.partition(":")
    if shape not in SHAPES or not size.isdigit() or int(size) < 100:
        raise argparse.ArgumentTypeError(
            f"expected SHAPE:NODES, SHAPE one of {', '.join(SHAPES)} and NODES >= 100"
        )
    return shape, int(size)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes",
        default=",".join(map(str, DEFAULT_SIZES)),
        help="comma-separated node counts (default: %(default)s)",
    )
    ap.add_argument(
        "--shapes", default=",".join(SHAPES), help="comma-separated shapes (default: %(default)s)"
    )
    ap.add_argument("--repeat", type=int, default=5, help="timed runs of parse and of check")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--emit", type=_shape_size, metavar="SHAPE:NODES", help="print a workflow")
    ap.add_argument("--profile", type=_shape_size, metavar="SHAPE:NODES", help="profile one check")
    args = ap.parse_args(argv)
    if args.emit:
        sys.stdout.write(generate(*args.emit))
        return 0
    if args.profile:
        print(profile(*args.profile))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    if args.repeat < 1 or not sizes or min(sizes) < 100 or not set(shapes) <= set(SHAPES):
        ap.error(f"--repeat must be >= 1, every size >= 100, shapes among {', '.join(SHAPES)}")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    report = run_bench(shapes, sizes, args.repeat, log)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
