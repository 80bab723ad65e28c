"""Values keep their types and exact values: compile, table, step, codec and the
in-memory engine, the test kit and ``wf run`` (issue 12 items 1 and 3, issue 20 items
2 and 3). The durable stores' side is tests/store/test_values.py."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import codec
from wflang.runtime import table as tb
from wflang.runtime.engine import TaskCall
from wflang.runtime.table import Table
from wflang.testing import WorkflowEnv, succeed

from .literals import Literal, expected, literals, same, workflow


def compiled(source: str) -> Table:
    result = compile_workflow(parse(source, "values.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


FLAGS = """\
workflow flags version 1
input { on: bool = false }
context { n: int = 0, flag: bool = false, one: int = 1, yes: bool = true }
output { flag: bool, n: int, one: int, yes: bool, text: string }
service feature.set(enabled: bool, count: int) -> { }
start set
task set: service feature.set {
    args { enabled: false, count: 0 }
    next done
}
end done: completed {
    output { flag: context.flag, n: context.n, one: context.one, yes: context.yes,
             text: string(input.on) }
}
"""


def test_false_and_zero_are_distinct_constants() -> None:
    table = compiled(FLAGS)
    consts = [e for e in table.expressions if isinstance(e, tb.ir.Const)]
    assert tb.ir.Const(False) in consts and tb.ir.Const(0) in consts
    assert tb.ir.Const(True) in consts and tb.ir.Const(1) in consts
    assert tb.ir.Const(False) != tb.ir.Const(0)
    assert len({tb.ir.Const(False), tb.ir.Const(0), tb.ir.Const(True), tb.ir.Const(1)}) == 4
    # and the table's JSON keeps them apart
    assert tb.loads(tb.dumps(table)) == table


def test_bool_fields_stay_bool_in_context_arguments_and_text() -> None:
    env = WorkflowEnv([compiled(FLAGS)], {"feature.set": succeed()})
    iid = env.start("flags", {})
    assert env.status(iid) == "completed"
    output = env.instance(iid).output
    assert same(output, {"flag": False, "n": 0, "one": 1, "yes": True, "text": "false"})
    (_, args, _) = env.calls[0]
    assert same(args, {"enabled": False, "count": 0})


def test_wf_run_prints_bools_and_exact_decimals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "flags.wf"
    path.write_text(
        "workflow flags version 1\n"
        "input { on: bool = false }\n"
        "context { n: int = 0, flag: bool = false, amount: decimal = 420.10 }\n"
        "output { flag: bool, n: int, amount: decimal, text: string }\n"
        "start done\n"
        "end done: completed {\n"
        "    output { flag: context.flag, n: context.n, amount: context.amount,\n"
        "             text: string(input.on) }\n"
        "}\n"
    )
    assert main(["run", str(path), "--input", "{}"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("output: "))
    assert '"flag": false' in line and '"amount": 420.10' in line, line
    assert same(
        codec.loads(line.removeprefix("output: ")),
        {"amount": Decimal("420.10"), "flag": False, "n": 0, "text": "false"},
    )


PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_literals(lits: list[Literal]) -> tuple[dict[str, object], object]:
    """The literals' workflow in the test kit: what the handler got, what it output."""
    table = compiled(workflow(lits))
    got: dict[str, object] = {}

    def take(task: TaskCall, **args: object) -> None:
        got.update(args)

    env = WorkflowEnv([table], {"lits.take": take})
    iid = env.start("lits", {})
    assert env.status(iid) == "completed", env.instance(iid).error
    return got, env.instance(iid).output


@PROPS
@given(st.lists(literals, min_size=1, max_size=6))
def test_random_literals_survive_compile_run_and_output(lits: list[Literal]) -> None:
    args, output = expected(lits)
    got_args, got_output = run_literals(lits)
    assert same(got_args, args), (got_args, args)
    assert same(got_output, output), (got_output, output)
    # and the codec (what a store writes) gives them back the same
    assert same(codec.loads(codec.dumps(got_output)), output)


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("9999-12-31T23:59:59.999Z", 253_402_300_799_999),
        ("1969-12-31T23:59:59.999Z", -1),
        ("6380-12-19T07:31:10.339Z", 139_196_647_870_339),  # a float's product: ...338
        ("2026-01-31T09:00:00.123+01:00", 1_769_846_400_123),
        ("1000-01-01T00:00:00.001Z", -30_610_224_000_000 + 1),
    ],
)
def test_timestamp_literals_are_exact_to_the_millisecond(text: str, millis: int) -> None:
    lit = Literal("timestamp", text, millis)
    _, output = run_literals([lit])
    assert same(output["c0"], millis)  # type: ignore[index]


def test_decimal_literals_keep_their_digits() -> None:
    lits = [Literal("decimal", "-123456789012345678901234567890.123", None)]
    _, output = run_literals(lits)
    assert same(output["c0"], Decimal("-123456789012345678901234567890.123"))  # type: ignore[index]
