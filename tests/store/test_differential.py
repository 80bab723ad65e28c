"""The in-memory engine and the durable stores agree (issue 12, "how we will know it is
done"): for a random workflow, the same input, the same handler outcomes and the same
signals and moves of the clock, the engine, SQLite and PostgreSQL give identical
histories (event, decisions and commands of every step, and when it happened), the same
instance (status, context, output, error) and the same handler calls.

The workflows are those of tests/test_step_properties.py (every kind of node, retries,
timeouts, error routes, parallels) with values of every type flowing through a service's
arguments, its result and the context; each handler call's outcome is drawn per node and
attempt (a result, a transient failure, a declared error), so both sides see the same.
These workflows emit service calls, timers and the end; the other kinds of command (human
tasks, child workflows and their cancellation, compensations) are compared the same way
in ``test_command_kinds.py``, which fails until every kind is emitted.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import codec
from wflang.runtime.engine import Engine, TaskCall, TaskError
from wflang.runtime.ids import instance_seed
from wflang.runtime.ir import Value
from wflang.store import Store, open_store

from ..literals import same
from ..test_step_properties import HEADER, LENIENT, workflows
from .kit import Durable, VirtualClock

#: The property tests' workflows, with a decimal and a bool carried through every task.
VALUES_HEADER = HEADER.replace(
    "context { n: int = 0, ns: list[int] = [] }",
    "input { rate: decimal = 1.5, flag: bool = false }\n"
    "context { n: int = 0, ns: list[int] = [], total: decimal = 0.0, flag: bool = false, "
    'note: string = "" }',
).replace(
    "service s.work(i: int) -> { v: int } raises Bad",
    "service s.work(i: int, rate: decimal, flag: bool) -> { v: int, amount: decimal, ok: bool }"
    " raises Bad",
)


def with_values(source: str) -> str:
    """Every service task also passes the input's values and keeps what it gets back.

    A map runs its items one at a time: the engine calls a handler as it schedules the
    task, the store's worker later, so a task still in flight when its map fails (and
    cancels it) is answered, and its answer ignored, on the engine only."""
    return (
        source.replace(HEADER, VALUES_HEADER)
        .replace("    concurrency 2\n", "    sequential\n")
        .replace(
            "    args { i: ",
            "    args { rate: input.rate * 2, flag: not context.flag, i: ",
        )
        .replace(
            "    output { n: result.v }",
            "    output { n: result.v, total: context.total + result.amount, flag: result.ok,"
            " note: context.note + string(result.amount) }",
        )
    )


#: One call's outcome: ("ok", v, amount, ok), ("transient",), ("bad",).
outcomes = st.one_of(
    st.tuples(
        st.just("ok"),
        st.integers(-5, 9),
        st.one_of(
            st.decimals(-100, 100, places=2).map(str),  # as a handler computes it
            st.floats(-100, 100, allow_nan=False).map(lambda f: round(f, 2)),  # JSON floats
            st.integers(-3, 3),
        ),
        st.booleans(),
    ),
    st.tuples(st.just("transient")),
    st.tuples(st.just("bad")),
)
scripts = st.fixed_dictionaries(
    {
        node: st.lists(outcomes, min_size=1, max_size=4)
        for node in [f"n{i}" for i in range(6)] + [f"{p}{i}t" for p in "am" for i in range(6)]
    }
)
actions = st.lists(
    st.one_of(
        st.tuples(st.just("advance"), st.sampled_from([1_000, 60_000, 300_000, 3_600_000])),
        st.tuples(st.just("signal"), st.integers(0, 9), st.booleans()),  # with a key or not
    ),
    max_size=12,
)


class Handler:
    """``s.work``: the drawn outcome for (node, attempt) (the last repeats; none: ok 1),
    and a record of every call of one instance, to compare."""

    def __init__(self, script: dict[str, list[tuple[Any, ...]]], iid: str) -> None:
        self.script, self.iid = script, iid
        self.calls: list[tuple[str, int, str, dict[str, Value]]] = []

    def __call__(self, task: TaskCall, **args: Value) -> dict[str, Value]:
        if task.instance == self.iid:  # a store also moves the earlier examples' instances
            self.calls.append((task.node, task.attempt, task.idempotency_key, dict(args)))
        plan = self.script.get(task.node, [("ok", 1, "1.00", True)])
        outcome = plan[min(task.attempt, len(plan)) - 1]
        if outcome[0] == "transient":
            raise TaskError("Unavailable", "try again", transient=True)
        if outcome[0] == "bad":
            raise TaskError("Bad", "declared failure")
        _, v, amount, ok = outcome
        return {"v": v, "amount": Decimal(amount) if isinstance(amount, str) else amount, "ok": ok}


_names = itertools.count()


@contextlib.contextmanager
def fresh_store(url: str, tmp_path: Path, name: str, clock: VirtualClock) -> Iterator[Store]:
    """A store for one example on its own clock: a new SQLite file, or the test's
    PostgreSQL schema (its instances are the example's alone: names are not reused)."""
    if url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / name}.db"
    store = open_store(url, clock=clock, pool=2)
    try:
        store.migrate()
        yield store
    finally:
        store.close()


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(workflows(), scripts, actions)
def test_engine_and_store_give_identical_histories(
    url: str,
    tmp_path: Path,
    source: str,
    script: dict[str, list[tuple[Any, ...]]],
    steps: list[tuple[Any, ...]],
) -> None:
    name = f"prop{next(_names)}"
    text = with_values(source).replace("workflow prop version 1", f"workflow {name} version 1")
    compiled = compile_workflow(parse(text, "prop.wf"), LENIENT)
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    table, iid, clock = compiled.table, f"{name}-1", VirtualClock()
    mine, theirs = Handler(script, iid), Handler(script, iid)
    engine = Engine([table], {"s.work": mine}, now=clock.ms, seed=instance_seed(iid))
    with fresh_store(url, tmp_path, name, clock) as store:
        durable = Durable(store, clock, {"s.work": theirs}, table)
        engine.start(name, {}, instance_id=iid)
        durable.start(name, {}, iid)
        for n, action in enumerate(steps):
            if action[0] == "advance":
                engine.advance(action[1])
                durable.advance(action[1])
            elif not engine.instance(iid).status.finished:
                # Keys are not repeated: a store's inbox refuses a repeated key before any
                # step (``Client.signal`` answers False), the engine lets the step ignore it
                # (a decision in its history); both ignore it, but the histories differ.
                key = f"k{n}" if action[2] else ""
                engine.signal(iid, "go", {"v": action[1]}, key=key)
                durable.signal(iid, "go", {"v": action[1]}, key=key or None)
            assert engine.now == clock.ms
        got_history = [codec.unstructure_entry(row.entry) for row in store.history(iid)]
        got_instance = codec.unstructure_instance(durable.instance(iid))
    compared = (
        ("history", [codec.unstructure_entry(e) for e in engine.history(iid)], got_history),
        ("instance", codec.unstructure_instance(engine.instance(iid)), got_instance),
        ("calls", mine.calls, theirs.calls),
    )
    for label, want, got in compared:
        if not same(want, got):
            raise AssertionError(difference(label, want, got))


def difference(label: str, want: object, got: object) -> str:
    """Where the engine's result and a store's first differ, for an assertion message."""
    if isinstance(want, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(want, got, strict=False)):
            if not same(a, b):
                return f"{label}[{i}] differs:\n engine: {a!r}\n store:  {b!r}"
        return f"{label}: engine has {len(want)} entries, the store {len(got)}"
    return f"{label} differs:\n engine: {want!r}\n store:  {got!r}"
