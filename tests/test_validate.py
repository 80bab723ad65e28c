"""Values from outside are checked against the declared types before anything runs:
numbers the runtime computes with must arrive as numbers, with their units said."""

from __future__ import annotations

from decimal import Decimal

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime.table import Table
from wflang.runtime.validate import validate_input

SOURCE = """\
workflow typed version 1
input { amount: decimal, sla: duration, at: timestamp, n: int, tags: list[string] = [] }
start done
end done: completed
"""

GOOD = {"amount": Decimal("12.5"), "sla": 300_000, "at": 1_767_225_600_000, "n": 3}


@pytest.fixture(scope="module")
def table() -> Table:
    compiled = compile_workflow(parse(SOURCE, "typed.wf"))
    assert compiled.table is not None
    return compiled.table


def test_a_fitting_input_has_no_problems(table: Table) -> None:
    assert validate_input(table, GOOD) == []
    assert validate_input(table, {**GOOD, "amount": 12}) == []  # an int is a decimal too


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("amount", "12.5", "'amount' must be decimal, not str"),
        ("amount", Decimal("NaN"), "'amount' must be decimal, not decimal"),
        ("sla", "5m", "'sla' must be duration (integer milliseconds), not str"),
        ("at", "2026-01-01T00:00:00Z", "'at' must be timestamp (epoch milliseconds), not str"),
        ("at", "banana", "'at' must be timestamp (epoch milliseconds), not str"),
        ("n", Decimal("1.5"), "'n' must be int, not decimal"),
        ("n", None, "'n' is null but its type int is not optional"),
        ("tags", ["a", 1], "'tags[1]' must be string, not int"),
    ],
)
def test_a_value_the_runtime_cannot_use_is_refused(
    table: Table, field: str, value: object, problem: str
) -> None:
    assert validate_input(table, {**GOOD, field: value}) == [problem]  # type: ignore[dict-item]


def test_a_value_larger_than_the_limit_is_refused(table: Table) -> None:
    big = {**GOOD, "tags": ["x" * 1000] * 300}  # about 300 KB as JSON
    (problem,) = validate_input(table, big)
    assert problem.startswith("the input is 30") and "the limit is 262,144" in problem
    assert validate_input(table, {**GOOD, "tags": ["x" * 1000] * 200}) == []
