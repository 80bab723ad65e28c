"""The list forms of expressions on SQLite and PostgreSQL (issue 14, item 1): a workflow
using projection, ``any``, ``all``, ``filter``, ``map``, ``+`` of lists and ``sum`` gives
on a store what it gives on the engine and the test kit, value for value and type for
type (through the codec and the rows); over the budget of items, the evaluation is a
workflow error there too, and nothing is half-written."""

from __future__ import annotations

from decimal import Decimal

from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value
from wflang.runtime.limits import Limits
from wflang.store import Store
from wflang.testing import WorkflowEnv

from ..literals import same
from ..test_lists import BUDGET, LINES, LISTS, MORE, expected, line
from .kit import Durable, VirtualClock, compile_text, replays_exactly

CASES: dict[str, dict[str, Value]] = {
    "full": {"lines": LINES, "more": MORE, "tags": ["c"]},
    "empty": {"lines": []},
    "exact": {"lines": [line("a", 1, "0.1", rush=True), line("b", 2, "0.2")], "tags": ["x"]},
}


def test_the_list_forms_give_the_same_on_a_store_the_engine_and_the_test_kit(
    store: Store, clock: VirtualClock
) -> None:
    table = compile_text(LISTS)
    durable = Durable(store, clock, {}, table)
    engine = Engine([table], {})
    kit = WorkflowEnv([table])
    for iid, data in CASES.items():
        durable.start("lists", data, iid)
        assert durable.status(iid) == "completed", durable.instance(iid).error
        stored = durable.instance(iid)
        on_engine = engine.instance(engine.start("lists", data))
        on_kit = kit.instance(kit.start("lists", data))
        lines, more, tags = data["lines"], data.get("more", []), data.get("tags", [])
        assert isinstance(lines, list) and isinstance(more, list) and isinstance(tags, list)
        want = expected(lines, more, [str(t) for t in tags])
        for got in (stored, on_engine, on_kit):
            assert same(got.output, want), (iid, got.output)
            assert same(dict(got.context), dict(stored.context)), iid
        replays_exactly(store, iid)
    exact = durable.instance("exact").output
    assert exact is not None and same(exact["total"], Decimal("0.3"))


def test_over_the_budget_of_items_is_a_workflow_error_on_a_store(
    store: Store, clock: VirtualClock
) -> None:
    durable = Durable(store, clock, {}, compile_text(BUDGET))
    limits = Limits(list_elements=10)
    durable.worker.limits = limits
    durable.start("budget", {"xs": list(range(10))}, "fits")
    durable.start("budget", {"xs": list(range(11))}, "over")
    assert durable.status("fits") == "completed"
    assert durable.instance("fits").output == {"n": 9, "total": 45}
    assert durable.status("over") == "dead_lettered"
    over = durable.instance("over")
    assert over.error == (
        "workflow error: the expression touches more than 10 list items (Limits.list_elements)"
    )
    assert over.output is None and dict(over.context) == {}
    replays_exactly(store, "over", limits)
    replays_exactly(store, "fits", limits)
