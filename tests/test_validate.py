"""Values from outside are checked against the declared types before anything runs:
numbers the runtime computes with must arrive as numbers, with their units said."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime.fit import fit
from wflang.runtime.ir import Value
from wflang.runtime.table import Table
from wflang.runtime.times import FORMS
from wflang.runtime.validate import check_handler_result, exact, fit_input

SOURCE = """\
workflow typed version 1
input { amount: decimal, sla: duration, at: timestamp, n: int, tags: list[string] = [] }
start done
end done: completed
"""

GOOD: dict[str, Value] = {
    "amount": Decimal("12.5"),
    "sla": 300_000,
    "at": 1_767_225_600_000,
    "n": 3,
}


@pytest.fixture(scope="module")
def table() -> Table:
    compiled = compile_workflow(parse(SOURCE, "typed.wf"))
    assert compiled.table is not None
    return compiled.table


def test_a_fitting_input_has_no_problems(table: Table) -> None:
    assert fit_input(table, GOOD)[1] == []
    assert fit_input(table, {**GOOD, "amount": 12})[1] == []  # an int is a decimal too


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("amount", "12.5", "'amount' must be decimal, not str"),
        ("amount", Decimal("NaN"), "'amount' must be a finite decimal, not NaN"),
        ("at", 10**20, "'at' is out of range for timestamp (64 bits)"),
        ("sla", -(2**63) - 1, "'sla' is out of range for duration (64 bits)"),
        ("sla", "5 minutes", f"'sla' must be duration ({FORMS['duration']}), not '5 minutes'"),
        (
            "at",
            "2026-01-01T00:00:00",
            f"'at' must be timestamp ({FORMS['timestamp']}), not '2026-01-01T00:00:00'",
        ),
        ("at", "banana", f"'at' must be timestamp ({FORMS['timestamp']}), not 'banana'"),
        ("at", "x" * 50, f"'at' must be timestamp ({FORMS['timestamp']}), not '{'x' * 40}…'"),
        ("n", Decimal("1.5"), "'n' must be int, not decimal"),
        ("n", None, "'n' is null but its type int is not optional"),
        ("tags", ["a", 1], "'tags[1]' must be string, not int"),
    ],
)
def test_a_value_the_runtime_cannot_use_is_refused(
    table: Table, field: str, value: object, problem: str
) -> None:
    # Deliberately outside Value (or of the wrong kind): what fit_input is for.
    assert fit_input(table, {**GOOD, field: value})[1] == [problem]  # type: ignore[dict-item]


def test_a_value_larger_than_the_limit_is_refused(table: Table) -> None:
    big: dict[str, Value] = {**GOOD, "tags": ["x" * 1000] * 300}  # about 300 KB as JSON
    (problem,) = fit_input(table, big)[1]
    assert problem.startswith("the input is 30") and "the limit is 262,144" in problem
    assert fit_input(table, {**GOOD, "tags": ["x" * 1000] * 200})[1] == []


RESULTS = """\
workflow results version 1
service s.a() -> { n: int, name: string, maybe: int?, when: timestamp }
service s.b() -> { n: int, ok: bool, price: decimal }
start a
task a: service s.a { next b }
task b: service s.b { next done }
end done: completed
"""

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.decimals(allow_nan=True, allow_infinity=False, places=2),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["a", "b"]),
    st.dictionaries(
        st.sampled_from(["n", "name", "maybe", "when", "ok", "price", "extra"]), scalars
    ),
)
def test_the_quick_result_check_agrees_with_the_full_one(
    state: str, result: dict[str, Value]
) -> None:
    compiled = compile_workflow(parse(RESULTS, "results.wf"))
    assert compiled.table is not None
    table = compiled.table
    _, not_json = exact(result)
    assume(not not_json)  # refused before either check
    quick = check_handler_result(table, state, result)[1]
    fields = next(s.fields for s in table.types.results if s.name == state)
    full = fit(table, fields, result, f"result of {state}", extra=True)[1]
    assert quick == full
