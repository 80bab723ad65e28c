"""Values keep their types and exact values: compile, table, step, codec and the
in-memory engine, the test kit and ``wf run`` (issue 12 items 1 and 3, issue 20 items
2 and 3). The durable stores' side is tests/store/test_values.py."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import codec, ir
from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.engine import TaskCall
from wflang.runtime.ir import Value
from wflang.runtime.limits import Limits
from wflang.runtime.replay import replay
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
    consts = [e for e in table.expressions if isinstance(e, ir.Const)]
    assert ir.Const(False) in consts and ir.Const(0) in consts
    assert ir.Const(True) in consts and ir.Const(1) in consts
    assert ir.Const(False) != ir.Const(0)
    assert len({ir.Const(False), ir.Const(0), ir.Const(True), ir.Const(1)}) == 4
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


def run_literals(lits: list[Literal]) -> tuple[dict[str, Value], dict[str, Value]]:
    """The literals' workflow in the test kit: what the handler got, what it output."""
    table = compiled(workflow(lits))
    got: dict[str, Value] = {}

    def take(task: TaskCall, **args: Value) -> None:
        got.update(args)

    env = WorkflowEnv([table], {"lits.take": take})
    iid = env.start("lits", {})
    inst = env.instance(iid)
    assert inst.status is rt.Status.COMPLETED and inst.output is not None, inst.error
    return got, inst.output


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
    assert same(output["c0"], millis)


def test_decimal_literals_keep_their_digits() -> None:
    lits = [Literal("decimal", "-123456789012345678901234567890.123", None)]
    _, output = run_literals(lits)
    assert same(output["c0"], Decimal("-123456789012345678901234567890.123"))


# -- issue 12 item 3: numbers at the boundary -------------------------------------------

INVOICE = """\
workflow invoice version 1
context { total: decimal = 0.0, note: string = "" }
output { total: decimal, note: string }
error Unbillable
service billing.total() -> { total: decimal, note: string? }
start bill
task bill: service billing.total {
    output { total: result.total + 0.01 }
    on any -> refused
    next done
}
end done: completed { output { total: context.total, note: context.note } }
end refused: failed
"""


@pytest.mark.parametrize("total", [420.10, 420.1, Decimal("420.10"), 420])
def test_a_json_float_for_a_decimal_field_is_an_exact_decimal(total: object) -> None:
    # A float is outside Value: untyped handlers return one anyway, and it becomes a decimal.
    result = succeed({"total": total})  # type: ignore[dict-item]
    env = WorkflowEnv([compiled(INVOICE)], {"billing.total": result})
    iid = env.start("invoice", {})
    output = env.instance(iid).output
    assert env.status(iid) == "completed" and output is not None, env.instance(iid).error
    want = Decimal(str(total)) + Decimal("0.01")
    assert same(output["total"], want)
    completed = env.history(iid)[1].event
    assert isinstance(completed, rt.TaskCompleted)
    assert type(completed.result["total"]) is not float  # the history holds what the step saw
    assert env.replay(iid).ok


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ({"total": float("nan")}, "'total' must be a finite decimal, not NaN"),
        ({"total": Decimal("1E+7000")}, "'total' is out of range for decimal"),
        ({"total": Decimal("1." + "0" * 40)}, "'total' has 41 significant digits"),
        ({"total": 1.5, "extra": {1, 2}}, "'extra' is a set, not a JSON value"),
        ({"total": 1.5, "at": datetime(2026, 1, 1)}, "'at' is a datetime, not a JSON value"),
        ({"total": 10**30}, "'total' is a whole number beyond 64 bits"),
    ],
)
def test_a_result_the_step_cannot_use_is_refused_where_the_routes_see_it(
    result: dict[str, object], problem: str
) -> None:
    # Deliberately not a Mapping[str, Value]: the engine must refuse it.
    env = WorkflowEnv([compiled(INVOICE)], {"billing.total": succeed(result)})  # type: ignore[arg-type]
    iid = env.start("invoice", {})
    assert env.status(iid) == "failed"  # by the workflow's own `on any`, not dead-lettered
    failed = env.history(iid)[1].event
    assert isinstance(failed, rt.TaskFailed) and failed.error == "InvalidResult"
    assert problem in failed.message, failed.message


def test_values_given_to_the_engine_are_in_the_runtime_form() -> None:
    source = INVOICE.replace(
        "service billing.total()", "signal go { total: decimal }\nservice billing.total()"
    )
    # Floats are outside Value: untyped callers pass them anyway, and they become decimals.
    total = succeed({"total": 1.25})  # type: ignore[dict-item]
    env = WorkflowEnv([compiled(source)], {"billing.total": total})
    iid = env.start("invoice", {})
    env.engine.signal(iid, "go", {"total": 2.5})  # type: ignore[dict-item]
    signal = env.history(iid)[-1].event
    assert isinstance(signal, rt.SignalReceived)
    assert same(signal.payload, {"total": Decimal("2.5")})
    with pytest.raises(ValueError, match="'total' is a bytes, not a JSON value"):
        env.engine.signal(iid, "go", {"total": b"1"})  # type: ignore[dict-item]  # refused


# -- issue 20 items 2 and 3: arithmetic failures and bounded values ----------------------

CALC = """\
workflow calc version 1
input { a: decimal = 1.0, b: decimal = 1.0, amount: decimal = 1.0, n: int = 1 }
context { product: decimal?, rounded: decimal?, big: int? }
output { product: decimal?, rounded: decimal?, big: int? }
start compute
task compute: script {
    output { product: input.a * input.b, rounded: round(input.amount, 2), big: input.n * 4 }
    next done
}
end done: completed { output { product: context.product, rounded: context.rounded,
                               big: context.big } }
"""


@pytest.mark.parametrize(
    ("input", "message"),
    [
        (
            {"a": Decimal("1E+6000"), "b": Decimal("1E+6000")},
            "decimal overflow: 1E+6000 * 1E+6000 is outside the decimal range"
            " (the exponent would exceed 6144)",
        ),
        (
            {"a": Decimal("1.1"), "b": Decimal("1." + "1" * 33)},
            "decimal: the exact result of 1.1 * 1.111",
        ),
        (
            {"amount": Decimal("1" * 33 + ".5")},
            f"decimal: the result of round({'1' * 33}.5, 2) needs more than 34 digits",
        ),
        (
            {"n": 2**62},
            "int overflow: 4611686018427387904 * 4 is outside the 64-bit range"
            " (-9223372036854775808 to 9223372036854775807)",
        ),
    ],
)
def test_arithmetic_failures_are_workflow_errors(input: dict[str, Value], message: str) -> None:
    env = WorkflowEnv([compiled(CALC)])
    iid = env.start("calc", input)
    inst = env.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert inst.error is not None and inst.error.startswith("workflow error: ")
    assert message in inst.error, inst.error


def test_exact_arithmetic_within_the_limits() -> None:
    env = WorkflowEnv([compiled(CALC)])
    amount = Decimal("1234567890123456789012345678.125")  # 28 digits before the point
    iid = env.start("calc", {"a": Decimal("1E+30"), "b": Decimal("3.5"), "amount": amount})
    assert same(
        env.instance(iid).output,
        {
            # 1E+30 is taken as its 31 digits: a whole decimal is written out
            "product": Decimal("3500000000000000000000000000000.0"),
            "rounded": Decimal("1234567890123456789012345678.12"),  # half to even
            "big": 4,
        },
    )


def test_wf_run_turns_arithmetic_failures_into_workflow_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "calc.wf"
    path.write_text(CALC)
    assert main(["run", str(path), "--input", '{"a": 1e6000, "b": 1e6000}']) == 1
    out = capsys.readouterr().out
    assert "status: dead_lettered" in out
    assert "error: workflow error: decimal overflow: 1E+6000 * 1E+6000" in out
    # out of the decimal range from the start: refused before anything runs
    assert main(["run", str(path), "--input", '{"a": 1e999999}']) == 1
    err = capsys.readouterr().err
    assert "'a' is out of range for decimal (exponent -6143 to 6144)" in err


GROW = """\
workflow grow version 1
input { n: int = 3, s: string = "ab", turns: int = 8 }
context { n: int = 0, s: string = "", i: int = 0 }
output { n: int, size: int }
start init
task init: script {
    output { n: input.n, s: input.s }
    next turn
}
task turn: script {
    output { n: context.n * context.n, s: context.s + context.s, i: context.i + 1 }
    next again
}
choice again {
    when context.i < input.turns -> turn
    else -> done
}
end done: completed { output { n: context.n, size: len(context.s) } }
"""


def test_an_int_squared_in_a_loop_overflows_at_64_bits() -> None:
    env = WorkflowEnv([compiled(GROW)])
    iid = env.start("grow", {})
    inst = env.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert "int overflow" in (inst.error or "")
    assert inst.context["n"] == 3**32  # the last value that fit


def test_a_string_doubled_in_a_loop_stops_at_the_limit() -> None:
    env = WorkflowEnv([compiled(GROW)], limits=Limits(string_chars=1_000))
    iid = env.start("grow", {"n": 1, "turns": 100})
    inst = env.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert "a string of 1,024 characters is over the limit of 1,000 (Limits.string_chars)" in (
        inst.error or ""
    )
    s = inst.context["s"]
    assert isinstance(s, str) and len(s) == 512
    assert env.replay(iid).ok


def test_a_context_stops_at_its_limit() -> None:
    env = WorkflowEnv([compiled(GROW)], limits=Limits(context_chars=5_000))
    iid = env.start("grow", {"n": 1, "turns": 100, "s": "x" * 1_001})
    inst = env.instance(iid)
    assert inst.status is rt.Status.DEAD_LETTERED
    assert "the context is 8,0" in (inst.error or "")
    assert "the limit is 5,000" in (inst.error or "")


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"Limits\.string_chars must be at least 1"):
        Limits(string_chars=0)


def test_a_zero_decimal_is_never_negative() -> None:
    """One form per value: a zero that an operation or a value from outside makes
    negative (``-0.5 * 0``, ``round(-0.001, 2)``, a JSON ``-0.0``) is the zero without a
    sign, so ``string()`` of it does not say ``-0.0`` (was: the sign stayed)."""
    env = WorkflowEnv([compiled(CALC)])
    iid = env.start("calc", {"a": Decimal("-0.5"), "b": 0, "amount": Decimal("-0.001")})
    output = env.instance(iid).output
    assert output is not None
    assert same(output, {"product": Decimal("0.0"), "rounded": Decimal("0.00"), "big": 4})
    assert not any(v.is_signed() for v in output.values() if isinstance(v, Decimal))
    iid = env.start("calc", {"a": Decimal("-0.0"), "b": 2, "amount": Decimal("-0.00")})
    output = env.instance(iid).output
    assert output is not None
    assert not any(v.is_signed() for v in output.values() if isinstance(v, Decimal))


REMAINDER = """\
workflow remainder version 1
input { a: decimal, b: decimal, n: int, k: int }
output { r: decimal, mixed: decimal, i: int }
start done
end done: completed { output { r: input.a % input.b, mixed: input.a % input.k, i: input.n % input.k } }
"""


def test_remainder_of_decimals_checks_and_has_the_divisors_sign() -> None:
    """docs/language.md: ``%`` gives the remainder with the sign of the divisor, ``7.5 % -2``
    is ``-0.5``; the checker refused ``%`` on decimals (was: '%' does not apply to
    decimal and decimal), though the runtime computes it."""
    env = WorkflowEnv([compiled(REMAINDER)])
    iid = env.start("remainder", {"a": Decimal("7.5"), "b": -2, "n": -7, "k": 3})
    assert same(env.instance(iid).output, {"r": Decimal("-0.5"), "mixed": Decimal("1.5"), "i": 2})


# -- replay compares values type-strictly (issue 12) --------------------------------------


def test_a_replay_tells_false_from_zero() -> None:
    """A replay's check that it reproduced an instance compares types as well as values
    (was: ``==``, for which ``{"flag": 0}`` is ``{"flag": False}`` and 1 is 1.0)."""
    env = WorkflowEnv([compiled(FLAGS)], {"feature.set": succeed()})
    iid = env.start("flags", {})
    inst = env.instance(iid)
    replayed = env.replay(iid)
    assert replayed.reproduces(inst)
    assert inst.output is not None
    for changed in ({"flag": 0}, {"yes": 1}, {"n": Decimal("0.0")}, {"one": True}):
        other = attrs.evolve(inst, output={**inst.output, **changed})
        assert other == inst  # to Python they are the same
        assert not replayed.reproduces(other), changed
    # a recorded command whose argument was ``0`` where the step gives ``false`` diverges
    history = env.history(iid)
    first = history[0]
    (call,) = [c for c in first.commands if isinstance(c, rt.ScheduleTask)]
    forged = attrs.evolve(call, args={**call.args, "enabled": 0})
    commands = tuple(forged if c is call else c for c in first.commands)
    assert commands == first.commands
    diverged = replay(env.engine.records[iid].table, iid, [attrs.evolve(first, commands=commands)])
    assert not diverged.ok and diverged.divergence is not None


STRINGS = """\
workflow strings version 1
input { xs: list[decimal] }
output { texts: list[string], whole: string }
start done
end done: completed { output { texts: map(input.xs, x => string(x)), whole: string(input.xs) } }
"""


def test_string_of_a_decimal_is_written_out_not_in_pythons_exponent_form() -> None:
    """``string(0.0000001)`` is ``0.0000001`` (was ``1E-7``, as Python's ``str`` gives
    it); trailing zeros stay; only a very large or small decimal is scientific."""
    env = WorkflowEnv([compiled(STRINGS)])
    values = ["0.0000001", "4.50", "1E+2", "-0.000000000000000000000000000012", "1E+100", "1E-50"]
    iid = env.start("strings", {"xs": [Decimal(v) for v in values]})
    output = env.instance(iid).output
    assert output is not None
    assert output["texts"] == [
        "0.0000001",
        "4.50",
        "100",
        "-0.000000000000000000000000000012",
        "1E+100",
        "1E-50",
    ]
    assert output["whole"] == "[0.0000001,4.50,100,-0.000000000000000000000000000012,1E+100,1E-50]"
