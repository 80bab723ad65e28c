"""The list forms of expressions (issue 14, item 1): projection ``xs[*].a``, ``any``,
``all``, ``filter`` and ``map`` with a lambda, ``+`` of two lists, and the aggregates
over them; parsed, printed, typed, lowered, kept in a table, and evaluated without
``eval`` within a budget of items (``Limits.list_elements``). On the engine and the
test kit here; on SQLite and PostgreSQL in tests/store/test_lists.py."""

from __future__ import annotations

from decimal import Decimal
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.compiler.check import check
from wflang.compiler.compile import compile_workflow
from wflang.dsl import expr as ex
from wflang.dsl.formatter import format_expr, format_spec
from wflang.dsl.parser import parse
from wflang.dsl.spec import WorkflowSpec
from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Const, Each, ExpressionError, Load, Project, Value, compile_ir
from wflang.runtime.limits import Limits
from wflang.runtime.numbers import canonical
from wflang.testing import WorkflowEnv

from .literals import same

LISTS = """\
workflow lists version 1

type Line { sku: string, qty: int, price: decimal, rush: bool, note: string? }

input { lines: list[Line], more: list[Line] = [], tags: list[string] = [] }

context { big: list[Line] = [] }

output {
    total: decimal,
    qty: int,
    skus: list[string],
    rush: list[bool],
    big: list[string],
    any_big: bool,
    all_priced: bool,
    notes: list[string],
    tagged: bool,
    doubled: list[decimal],
    count: int,
}

start compute

task compute: script {
    output { big: filter(input.lines + input.more, l => l.qty > 2) }
    next route
}

choice route {
    when any(context.big, b => b.rush) -> done
    else -> done
}

end done: completed {
    output {
        total: sum(input.lines[*].price),
        qty: sum(input.lines[*].qty),
        skus: map(input.lines + input.more, l => l.sku),
        rush: input.lines[*].rush,
        big: context.big[*].sku,
        any_big: any(input.lines, l => l.qty > 2 and l.rush),
        all_priced: all(input.lines, l => l.price > 0),
        notes: filter(input.lines[*].note, n => n != null),
        tagged: contains(input.tags, "x") or any(input.lines, l => l.sku in input.tags),
        doubled: map(input.lines, l => l.price * 2),
        count: len(filter(input.lines, l => l.qty > 2 or l.price < 1.5)),
    }
}
"""


@cache
def table_of(source: str) -> tb.Table:
    result = compile_workflow(parse(source, "lists.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


def line(sku: str, qty: int, price: str, rush: bool = False, note: str | None = None) -> Value:
    return {"sku": sku, "qty": qty, "price": Decimal(price), "rush": rush, "note": note}


def expected(lines: list[Value], more: list[Value], tags: list[str]) -> dict[str, Value]:
    """What LISTS gives, computed in plain Python (decimals in the runtime's one form:
    a whole one is held as an int)."""
    rows = [x for x in lines if isinstance(x, dict)]
    both = [x for x in lines + more if isinstance(x, dict)]
    big = [x for x in both if _int(x["qty"]) > 2]

    def price(x: dict[str, Value]) -> Decimal:
        p = x["price"]
        assert isinstance(p, Decimal | int) and not isinstance(p, bool)
        return Decimal(canonical(Decimal(p)))  # as the input holds it

    return {
        "total": canonical(sum((price(x) for x in rows), Decimal(0))),
        "qty": sum(_int(x["qty"]) for x in rows),
        "skus": [x["sku"] for x in both],
        "rush": [x["rush"] for x in rows],
        "big": [x["sku"] for x in big],
        "any_big": any(_int(x["qty"]) > 2 and x["rush"] is True for x in rows),
        "all_priced": all(price(x) > 0 for x in rows),
        "notes": [x["note"] for x in rows if x["note"] is not None],
        "tagged": "x" in tags or any(x["sku"] in tags for x in rows),
        "doubled": [canonical(price(x) * 2) for x in rows],
        "count": sum(1 for x in rows if _int(x["qty"]) > 2 or price(x) < Decimal("1.5")),
    }


def _int(v: Value) -> int:
    assert isinstance(v, int) and not isinstance(v, bool)
    return v


LINES = [
    line("a", 3, "2.50", rush=True, note="fragile"),
    line("b", 1, "0.10"),
    line("c", 5, "1.20", note="top shelf"),
]
MORE = [line("d", 7, "9.99", rush=True)]


def test_the_list_forms_on_the_test_kit() -> None:
    env = WorkflowEnv([table_of(LISTS)])
    iid = env.start("lists", {"lines": LINES, "more": MORE, "tags": ["c"]})
    inst = env.instance(iid)
    assert inst.status is rt.Status.COMPLETED, inst.error
    want = expected(LINES, MORE, ["c"])
    assert same(inst.output, want)
    assert want["total"] == Decimal("3.80") and want["big"] == ["a", "c", "d"]
    assert inst.output is not None and inst.output["rush"] == [True, False, False]
    assert "enter done" in env.decisions(iid)
    assert env.replay(iid).ok


def test_the_list_forms_on_the_engine() -> None:
    engine = Engine([table_of(LISTS)], {})
    inst = engine.instance(engine.start("lists", {"lines": LINES, "tags": []}))
    assert inst.status is rt.Status.COMPLETED, inst.error
    assert same(inst.output, expected(LINES, [], []))


def test_values_keep_their_types() -> None:
    """Decimals stay exact (0.1 + 0.2 is 0.3), bools stay bools, ints stay ints."""
    lines = [line("a", 1, "0.1", rush=True), line("b", 2, "0.2")]
    engine = Engine([table_of(LISTS)], {})
    output = engine.instance(engine.start("lists", {"lines": lines})).output
    assert output is not None
    assert same(output["total"], Decimal("0.3"))
    assert same(output["doubled"], [Decimal("0.2"), Decimal("0.4")])
    assert same(output["rush"], [True, False]) and same(output["qty"], 3)


LINE_VALUES = st.fixed_dictionaries(
    {
        "sku": st.sampled_from(["a", "b", "c", "x"]),
        "qty": st.integers(-3, 9),
        "price": st.decimals(min_value=-5, max_value=50, places=2, allow_nan=False),
        "rush": st.booleans(),
        "note": st.none() | st.sampled_from(["", "n", "fragile"]),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(LINE_VALUES, max_size=8),
    more=st.lists(LINE_VALUES, max_size=4),
    tags=st.lists(st.sampled_from(["a", "b", "x", "z"]), max_size=3),
)
def test_the_evaluator_agrees_with_plain_python(
    lines: list[Value], more: list[Value], tags: list[str]
) -> None:
    engine = Engine([table_of(LISTS)], {})
    data: dict[str, Value] = {"lines": lines, "more": more, "tags": list(tags)}
    inst = engine.instance(engine.start("lists", data))
    assert inst.status is rt.Status.COMPLETED, inst.error
    assert same(inst.output, expected(lines, more, tags))


# -- the budget of items ---------------------------------------------------------------

BUDGET = """\
workflow budget version 1
input { xs: list[int] }
output { n: int, total: int }
start done
end done: completed { output { n: len(filter(input.xs, x => x > 0)), total: sum(input.xs) } }
"""


def test_an_expression_may_touch_as_many_items_as_the_limit_and_no_more() -> None:
    """Each output reads every item once: ten items are ten touches per expression."""
    env = WorkflowEnv([table_of(BUDGET)], limits=Limits(list_elements=10))
    fits = env.start("budget", {"xs": list(range(10))})
    assert env.status(fits) == "completed"
    assert env.instance(fits).output == {"n": 9, "total": 45}
    over = env.start("budget", {"xs": list(range(11))})
    inst = env.instance(over)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert inst.error == (
        "workflow error: the expression touches more than 10 list items (Limits.list_elements)"
    )
    assert inst.output is None
    assert env.replay(over).ok


def test_the_budget_counts_every_item_each_form_reads() -> None:
    xs: Value = [{"a": {"b": 1}}, {"a": {"b": 2}}, {"a": {"b": 3}}]
    env: dict[str, Value] = {"xs": xs}
    project = Project(Load("xs"), ("a", "b"))
    assert compile_ir(project, Limits(list_elements=3))(env) == [1, 2, 3]
    with pytest.raises(ExpressionError, match=r"more than 2 list items \(Limits\.list_elements\)"):
        compile_ir(project, Limits(list_elements=2))(env)
    summed = Each("map", Load("xs"), "x", Const(1))  # a map of three items, then nothing
    assert compile_ir(summed, Limits(list_elements=3))(env) == [1, 1, 1]
    from wflang.runtime.ir import Apply

    both = Apply("sum", (Project(Load("xs"), ("a", "b")),))  # 3 projected + 3 summed
    assert compile_ir(both, Limits(list_elements=6))(env) == 6
    with pytest.raises(ExpressionError, match="more than 5 list items"):
        compile_ir(both, Limits(list_elements=5))(env)
    # A predicate stops at the first item that decides it: ``any`` touched one item.
    first = Each("any", Load("xs"), "x", Const(True))
    assert compile_ir(first, Limits(list_elements=1))(env) is True


def test_each_evaluation_has_a_budget_of_its_own() -> None:
    compiled = compile_ir(Each("map", Load("xs"), "x", Load("x")), Limits(list_elements=3))
    for _ in range(5):
        assert compiled({"xs": [1, 2, 3]}) == [1, 2, 3]


CONCAT = """\
workflow concat version 1
input { xs: list[int], ys: list[int] }
output { both: list[int] }
start done
end done: completed { output { both: input.xs + input.ys } }
"""


def test_a_list_joined_with_plus_is_bounded_like_every_built_list() -> None:
    env = WorkflowEnv([table_of(CONCAT)], limits=Limits(list_items=5))
    iid = env.start("concat", {"xs": [1, 2], "ys": [3, 4, 5]})
    assert env.instance(iid).output == {"both": [1, 2, 3, 4, 5]}
    iid = env.start("concat", {"xs": [1, 2, 3], "ys": [4, 5, 6]})
    inst = env.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert "a list of 6 items is over the limit of 5 (Limits.list_items)" in (inst.error or "")


NULLS = """\
workflow nulls version 1
type Line { qty: int }
input { lines: list[Line?] }
output { qty: list[int], kept: int }
start done
end done: completed {
    output { qty: filter(input.lines, l => l != null)[*].qty, kept: len(input.lines[*].qty) }
}
"""


def test_a_null_item_follows_the_null_rules() -> None:
    """Projecting a field of items that may be null is a WF302 warning; at run time a
    null item fails as ``.`` on null does; ``filter(xs, x => x != null)`` leaves none."""
    result = check([parse(NULLS, "nulls.wf")])
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("WF302", 7)]
    env = WorkflowEnv([table_of(NULLS)])
    ok = env.start("nulls", {"lines": [{"qty": 1}, {"qty": 2}]})
    assert env.instance(ok).output == {"qty": [1, 2], "kept": 2}
    bad = env.instance(env.start("nulls", {"lines": [{"qty": 1}, None]}))
    assert bad.status is rt.Status.DEAD_LETTERED
    assert bad.error == "workflow error: cannot read '.qty' of null (item 1 of the list)"


# -- the table keeps the new IR --------------------------------------------------------


def test_the_table_round_trips_projection_and_lambdas() -> None:
    table = table_of(LISTS)
    kinds = {type(e).__name__ for e in table.expressions}
    assert {"Project", "Each"} <= kinds
    text = tb.dumps(table)
    assert '"kind": "each"' in text and '"kind": "project"' in text
    assert tb.loads(text) == table
    assert tb.dumps(tb.loads(text)) == text


def test_wf_table_shows_the_list_forms() -> None:
    from wflang.runtime.describe import describe

    shown = describe(table_of(LISTS))
    assert "sum_decimal(input.lines[*].price)" in shown
    assert "filter(concat(input.lines, input.more), l => gt(l.qty, 2))" in shown


# -- parsing and printing --------------------------------------------------------------

CANONICAL = [
    "sum(input.lines[*].amount)",
    "input.orders[*].customer.id",
    "any(input.lines, l => l.qty > 5 and l.rush)",
    "all(context.quotes, q => q.amount <= input.budget)",
    "filter(input.lines, l => not l.rush)[*].sku",
    "map(input.lines, l => l.price * l.qty)",
    "map(filter(input.a + input.b, x => x != null), x => x.sku)",
    "(input.a + input.b)[*].sku",
    "len(input.a + [1, 2])",
    "any(input.orders, o => all(o.lines, l => l.qty > 0))",
    'contains(input.lines[*].sku, "a")',
    "x[*]",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_list_expressions_print_as_written_and_parse_back(text: str) -> None:
    source = f"workflow w version 1\nstart c\nchoice c {{ when {text} -> e else -> e }}\n"
    source += "end e: completed\n"
    result = parse(source, "w.wf")
    assert result.diagnostics == (), result.diagnostics
    assert result.spec is not None
    once = format_spec(result.spec, source)
    assert f"when {text} -> e" in once
    again = parse(once, "w.wf")
    assert again.spec == result.spec
    assert format_spec(again.spec, once) == once


def test_projection_is_one_node_with_its_path() -> None:
    result = parse("workflow w version 1\nstart c\nchoice c { when a[*].b.c -> e }\n", "w.wf")
    assert result.spec is not None
    choice = result.spec.nodes[0]
    guard = choice.arms[0].guard  # type: ignore[union-attr]
    assert guard == ex.Project(ex.Ref("a"), ("b", "c"))
    assert format_expr(guard) == "a[*].b.c"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("when x => x -> e", "unexpected '=>'"),
        ("when len(input.a[ * ].b) > 0 -> e", "unexpected '*'"),
    ],
)
def test_a_lambda_or_a_spread_out_of_place_is_a_syntax_error(source: str, message: str) -> None:
    result = parse(f"workflow w version 1\nstart c\nchoice c {{ {source} }}\n", "w.wf")
    assert result.spec is None
    first = result.diagnostics[0]
    assert first.code == "WF001" and first.message.startswith(message), first.message
    if "=>" in source:
        assert first.hint == "'x => …' can only be an argument of any(), all(), filter() or map()"


# -- typing ----------------------------------------------------------------------------

TYPED = """\
workflow typed version 1
type Line {{ sku: string, qty: int, price: decimal, note: string? }}
input {{ lines: list[Line] }}
output {{ out: {want} }}
start done
end done: completed {{ output {{ out: {expr} }} }}
"""


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("input.lines[*].sku", "list[string]"),
        ("input.lines[*].note", "list[string?]"),
        ("filter(input.lines[*].note, n => n != null)", "list[string]"),
        ("map(input.lines, l => l.qty * 2)", "list[int]"),
        ("map(input.lines, l => l.price)", "list[decimal]"),
        ("sum(input.lines[*].price)", "decimal"),
        ("sum(input.lines[*].qty)", "int"),
        ("any(input.lines, l => l.qty > 1)", "bool"),
        ("input.lines[*].qty + [1.5]", "list[decimal]"),
        ("filter(input.lines, l => l.qty > 1)", "list[Line]"),
    ],
)
def test_the_list_forms_have_the_type_of_what_they_give(expr: str, want: str) -> None:
    """Each fits an output of its type, and does not fit one of another type."""
    good = check([parse(TYPED.format(want=want, expr=expr), "t.wf")])
    assert [d.message for d in good.diagnostics] == []
    wrong = "map[string, bool]"
    bad = check([parse(TYPED.format(want=wrong, expr=expr), "t.wf")])
    assert [d.code for d in bad.diagnostics] == ["WF301"]
    assert f"must be {wrong}, not {want}" in bad.diagnostics[0].message


def test_sum_of_items_that_may_be_null_is_a_warning() -> None:
    text = TYPED.format(want="int", expr="len(input.lines[*].note)")
    assert check([parse(text, "t.wf")]).diagnostics == ()
    nullable = TYPED.replace("price: decimal", "price: decimal?")
    text = nullable.format(want="decimal", expr="sum(input.lines[*].price)")
    found = check([parse(text, "t.wf")]).diagnostics
    assert [(d.code, d.message) for d in found] == [
        ("WF302", "the items of sum()'s list may be null (list[decimal?])")
    ]


def test_a_literal_list_costs_no_budget() -> None:
    """``x in ["a", "b"]`` is bounded by its size: it keeps its plain closure."""
    from wflang.runtime.ir import Apply, MakeList, reads_lists

    assert not reads_lists(Apply("in", (Load("x"), MakeList((Const("a"), Const("b"))))))
    assert reads_lists(Apply("in", (Const("a"), Load("xs"))))
    assert reads_lists(Apply("contains", (Load("xs"), Const("a"))))
    assert not reads_lists(Apply("contains", (MakeList((Const("a"),)), Load("x"))))


# -- diff ------------------------------------------------------------------------------

GUARDED = """\
workflow guarded version 1
type Line { sku: string, qty: int }
input { lines: list[Line] }
start c
choice c {
    when any(input.lines, l => l.qty > 5) -> big
    else -> small
}
end big: completed
end small: completed
"""


def test_diff_sees_an_edited_list_guard_and_not_its_layout() -> None:
    from wflang.compiler.diff import diff_specs

    def spec_of(text: str) -> WorkflowSpec:
        parsed = parse(text, "g.wf")
        assert parsed.spec is not None, parsed.diagnostics
        return parsed.spec

    old = spec_of(GUARDED)
    edited = spec_of(GUARDED.replace("l.qty > 5", "l.qty > 9"))
    relaid = spec_of(GUARDED.replace("l => l.qty > 5", "l=>l.qty>5"))
    renamed = spec_of(GUARDED.replace("l => l.qty", "x => x.qty"))
    changed = [c.diagnostic for c in diff_specs(old, edited).changes]
    assert {d.code for d in changed} >= {"WF644"}
    assert any("any(input.lines, l => l.qty > 5)" in d.message for d in changed)
    assert not diff_specs(old, relaid).changes
    assert diff_specs(old, renamed).changes  # a new name is a new text: an edited guard


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-9, 9), max_size=12))
def test_sum_of_ints_fails_where_a_partial_sum_leaves_64_bits(xs: list[int]) -> None:
    """``sum`` adds small ints at once (bench/lists.py); the result and the overflow are
    those of adding one item at a time."""
    from wflang.runtime.numbers import INT_MAX, INT_MIN
    from wflang.runtime.ops import OPS

    total: int | None = 0
    for x in xs:
        assert total is not None
        total += x
        if not INT_MIN <= total <= INT_MAX:
            total = None
            break
    items: list[Value] = list(xs)
    if total is None:
        with pytest.raises(ExpressionError, match="int overflow"):
            OPS["sum"](items)
    else:
        got = OPS["sum"](items)
        assert type(got) is int and got == total
