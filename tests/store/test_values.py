"""Values keep their types and exact values through a durable store (issue 12 items 1
and 3): what the in-memory side checks in tests/test_values.py, on SQLite and
PostgreSQL."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.runtime.engine import TaskCall
from wflang.runtime.ir import Value
from wflang.store import Store

from ..literals import Literal, expected, literals, same, workflow
from .kit import Durable, VirtualClock, compile_text

_names = itertools.count()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(literals, min_size=1, max_size=6))
def test_random_literals_survive_a_store(
    store: Store, clock: VirtualClock, lits: list[Literal]
) -> None:
    name = f"lits{next(_names)}"
    table = compile_text(workflow(lits, name))
    got: dict[str, Value] = {}

    def take(task: TaskCall, **args: Value) -> None:
        got.update(args)

    durable = Durable(store, clock, {"lits.take": take}, table)
    iid = durable.start(name, {}, f"{name}-1")
    args, output = expected(lits)
    assert durable.status(iid) == "completed", durable.instance(iid).error
    assert same(got, args), (got, args)
    assert same(durable.instance(iid).output, output), (durable.instance(iid).output, output)
