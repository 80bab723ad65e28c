"""Arithmetic means what its static type says (issue 12, "no silent wrong results"): a
``decimal`` expression computes as a decimal however its operands are held (a whole
decimal is held as an int), an ``int`` one as a 64-bit int; whole decimals print without
an exponent; overflow messages say what overflowed. On the engine, the test kit and
``wf run``; the stores' side is in tests/store/test_values.py."""

from __future__ import annotations

from decimal import (
    ROUND_HALF_EVEN,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
)
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Apply, Const, Dec, ExpressionError, MakeList, Value, evaluate
from wflang.runtime.table import Table
from wflang.testing import WorkflowEnv

from .literals import same


def compiled(source: str) -> Table:
    result = compile_workflow(parse(source, "typed.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


CUBE = """\
workflow cube version 1
input { a: decimal, n: int = 2 }
output { cube: decimal, neg: decimal, size: decimal, total: decimal, mixed: decimal,
         rest: decimal, text: string }
start done
end done: completed {
    output {
        cube: input.a * input.a * input.a,
        neg: -input.a - input.a,
        size: abs(input.a) + abs(input.a),
        total: sum([input.a, input.a, input.n]),
        mixed: input.a * input.n * input.a,
        rest: (input.a * input.a) % 7,
        text: string(input.a * input.a)
    }
}
"""

#: What CUBE gives for a = 10000000000 (1E+10), written either way.
CUBED = {
    "cube": 10**30,
    "neg": -(2 * 10**10),
    "size": 2 * 10**10,
    "total": 2 * 10**10 + 2,
    "mixed": 2 * 10**20,
    "rest": 10**20 % 7,
}


@pytest.mark.parametrize("written", ["10000000000", "10000000000.0"])
def test_a_whole_decimal_computes_as_a_decimal_on_the_test_kit(written: str) -> None:
    """Was: a JSON ``10000000000`` for a decimal input was held as an int and cubed as
    one, dead-lettering with "int overflow" while ``10000000000.0`` completed."""
    env = WorkflowEnv([compiled(CUBE)])
    iid = env.start("cube", codec.loads('{"a": ' + written + "}"))
    inst = env.instance(iid)
    assert inst.status is rt.Status.COMPLETED, inst.error
    assert inst.output is not None
    for name, want in CUBED.items():
        got = inst.output[name]
        assert isinstance(got, int | Decimal) and not isinstance(got, bool)
        assert got == want, (name, got)
    text = inst.output["text"]
    assert text == ("100000000000000000000" if "." not in written else "100000000000000000000.00")


def test_a_whole_decimal_computes_as_a_decimal_on_the_engine() -> None:
    engine = Engine([compiled(CUBE), compiled(NEGATE)], {})
    inst = engine.instance(engine.start("cube", {"a": 10**10}))
    assert inst.status is rt.Status.COMPLETED, inst.error
    assert inst.output is not None
    assert {k: inst.output[k] for k in CUBED} == CUBED
    inst = engine.instance(engine.start("negate", {"a": -(2**63)}))
    assert inst.status is rt.Status.COMPLETED, inst.error
    # -(-2^63) is no 64-bit int, but it is a decimal
    assert same(inst.output, {"neg": Decimal(2**63), "size": Decimal(2**63)})


NEGATE = """\
workflow negate version 1
input { a: decimal }
output { neg: decimal, size: decimal }
start done
end done: completed { output { neg: -input.a, size: abs(input.a) } }
"""


def test_wf_run_computes_a_whole_decimal_as_a_decimal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cube.wf"
    path.write_text(CUBE)
    assert main(["run", str(path), "--input", '{"a": 10000000000}']) == 0
    out = capsys.readouterr().out
    assert '"cube": 1000000000000000000000000000000,' in out


# -- whole decimals are written without an exponent ----------------------------------

WHOLE = """\
workflow whole version 1
input { n: int, d: decimal }
output { q: decimal, text: string, half: decimal, hundreds: decimal, back: decimal }
start done
end done: completed {
    output {
        q: input.n / -1,
        text: string(input.n / -1),
        half: 100 / 0.5,
        hundreds: round(input.d, -2),
        back: input.d / 1
    }
}
"""


def test_whole_decimals_have_no_exponent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: ``-2^63 / -1`` printed ``9223372036854775808E0``, ``100 / 0.5`` was ``2E+2``
    and ``round(1234, -2)`` ``1.2E+3``; a whole decimal is its digits."""
    env = WorkflowEnv([compiled(WHOLE)])
    iid = env.start("whole", {"n": -(2**63), "d": Decimal("1E+3") + 234})
    output = env.instance(iid).output
    assert output is not None
    assert same(output["q"], Decimal("9223372036854775808"))
    assert output["text"] == "9223372036854775808"
    assert same(output["half"], 200)
    assert same(output["hundreds"], 1200)
    assert same(output["back"], 1234)
    assert codec.dumps(output["q"]) == "9223372036854775808"
    assert same(codec.loads(codec.dumps(output)), output)  # and reads back as a decimal
    assert same(codec.loads("9223372036854775808E0"), Decimal(2**63))  # older documents

    path = tmp_path / "whole.wf"
    path.write_text(WHOLE)
    assert main(["run", str(path), "--input", '{"n": -9223372036854775808, "d": 1E+3}']) == 0
    out = capsys.readouterr().out
    assert '"q": 9223372036854775808,' in out and "E0" not in out and "E+" not in out


def test_a_decimal_beyond_34_digits_keeps_its_shortest_exponent() -> None:
    node = Apply("mul_decimal", (Dec("1E+33"), Dec("1E+33")))
    assert same(evaluate(node, {}), Decimal("1E+66"))


# -- overflow messages say what overflowed and the limit ------------------------------


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (
            Apply("mul", (Const(2**63 - 1), Const(2))),
            "int overflow: 9223372036854775807 * 2 is outside the 64-bit range"
            " (-9223372036854775808 to 9223372036854775807)",
        ),
        (
            Apply("add", (Const(2**62), Const(2**62))),
            "int overflow: 4611686018427387904 + 4611686018427387904 is outside the 64-bit range",
        ),
        (Apply("neg", (Const(-(2**63)),)), "int overflow: -(-9223372036854775808) is outside"),
        (Apply("abs", (Const(-(2**63)),)), "int overflow: abs(-9223372036854775808) is outside"),
        (
            Apply("mul_decimal", (Dec("1E+6000"), Dec("1E+6000"))),
            "decimal overflow: 1E+6000 * 1E+6000 is outside the decimal range"
            " (the exponent would exceed 6144)",
        ),
        (
            Apply("add_decimal", (Dec("1E+40"), Dec("0.5"))),
            "decimal: the exact result of 1E+40 + 0.5 needs more than 34 digits",
        ),
    ],
)
def test_overflow_messages_name_the_operation_and_the_limit(node: Apply, message: str) -> None:
    """Was: "int overflow: the result does not fit 64 bits (19 digits)"."""
    with pytest.raises(ExpressionError) as caught:
        evaluate(node, {})
    assert message in str(caught.value)


def test_an_overflow_message_reaches_the_instance() -> None:
    source = """\
workflow twice version 1
input { n: int }
output { m: int }
start done
end done: completed { output { m: input.n * 2 } }
"""
    env = WorkflowEnv([compiled(source)])
    inst = env.instance(env.start("twice", {"n": 2**63 - 1}))
    assert inst.status is rt.Status.DEAD_LETTERED
    assert inst.error == (
        "workflow error: int overflow: 9223372036854775807 * 2 is outside the 64-bit range"
        " (-9223372036854775808 to 9223372036854775807)"
    )


# -- a bool is never a number ------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "want"),
    [
        (Apply("eq", (Const(True), Const(1))), False),
        (Apply("ne", (Const(False), Const(0))), True),
        (Apply("eq", (Const(1), Dec("1.0"))), True),  # numbers by value
        (Apply("in", (Const(True), MakeList((Const(1), Const(2))))), False),
        (Apply("in", (Const(1), MakeList((Const(True),)))), False),
    ],
)
def test_true_is_not_one_at_run_time(node: Apply, want: bool) -> None:
    """The checker refuses ``true == 1``; the runtime agrees with it (Python does not)."""
    assert evaluate(node, {}) is want


def test_ordering_a_bool_is_an_error_at_run_time() -> None:
    with pytest.raises(Exception, match="'<' cannot compare true and 2"):
        evaluate(Apply("lt", (Const(True), Const(2))), {})


# -- the property: the result is the exact reference's, whatever the operands' form ------

_EXACT = Context(
    prec=34,
    Emax=6144,
    Emin=-6143,
    rounding=ROUND_HALF_EVEN,
    traps=[InvalidOperation, DivisionByZero, Overflow, Inexact],
)
_ROUNDED = Context(
    prec=34, Emax=6144, Emin=-6143, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation, Overflow]
)


def _int_typed(op: str, left: str, right: str) -> bool:
    """Whether the checker types the expression ``int`` (``/`` is always a decimal)."""
    if op == "neg":
        return left == "int"
    return left == right == "int" and op not in ("/", "<")


@cache
def _arith(op: str, left: str, right: str) -> Table:
    result = "int" if _int_typed(op, left, right) else "decimal"
    result = "bool" if op == "<" else result
    expr = {
        "neg": "-input.x",
        "abs": "abs(input.x) - abs(input.y)",
        "sum": "sum([input.x, input.y])",
    }.get(op, f"input.x {op} input.y")
    return compiled(
        f"workflow arith version 1\ninput {{ x: {left}, y: {right} }}\n"
        f"output {{ r: {result} }}\nstart done\n"
        f"end done: completed {{ output {{ r: {expr} }} }}\n"
    )


def _reference(
    op: str, x: Decimal, y: Decimal, ints: bool, kinds: tuple[tuple[str, Decimal], ...] = ()
) -> Decimal | bool | str:
    """The exact result, or the kind of error the runtime must give."""
    if ints:
        if op == "%" and y == 0:
            return "zero"
        a, b = int(x), int(y)
        steps = {
            "+": [a + b],
            "-": [a - b],
            "*": [a * b],
            "%": [a % b if b else 0],
            "neg": [-a],
            "abs": [abs(a), abs(b), abs(a) - abs(b)],
            "sum": [a + b],
        }[op]
        if not all(-(2**63) <= n < 2**63 for n in steps):
            return "int overflow"
        return Decimal(steps[-1])
    if op == "<":
        return x < y
    if op == "abs" and any(k == "int" and abs(v) > 2**63 - 1 for k, v in kinds):
        return "int overflow"  # ``abs`` of an int operand is an int
    try:
        if op == "/":
            return "zero" if y == 0 else _ROUNDED.divide(x, y)
        if op == "%":
            if y == 0:
                return "zero"
            r = _EXACT.remainder(x, y)
            return _EXACT.add(r, y) if r != 0 and (r < 0) != (y < 0) else r
        if op == "neg":
            return x.copy_negate()
        if op == "abs":
            return _EXACT.subtract(x.copy_abs(), y.copy_abs())
        return {"+": _EXACT.add, "-": _EXACT.subtract, "*": _EXACT.multiply, "sum": _EXACT.add}[op](
            x, y
        )
    except Overflow:
        return "decimal overflow"
    except (Inexact, InvalidOperation):
        return "decimal: "


_ERRORS = {
    "int overflow": "int overflow: ",
    "decimal overflow": "decimal overflow: ",
    "decimal: ": "decimal: ",
    "zero": "by zero",
}

_wholes = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, -1, 10**10, -(10**10), 2**62, 2**63 - 1, -(2**63), 10**18]),
)
_fractions = st.builds(
    lambda n, places: Decimal(n).scaleb(-places), st.integers(-(10**20), 10**20), st.integers(0, 12)
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(["+", "-", "*", "/", "%", "<", "neg", "abs", "sum"]),
    left=st.sampled_from(["int", "decimal"]),
    right=st.sampled_from(["int", "decimal"]),
    data=st.data(),
)
def test_arithmetic_is_the_exact_reference_whatever_the_form(
    op: str, left: str, right: str, data: st.DataObject
) -> None:
    """For int and decimal operands of any operator, the runtime's result is the exact
    result of a 34-digit decimal context (or the 64-bit int one for int expressions), or
    the error it gives, whether a whole decimal came as a JSON int or as ``n.0``."""

    def operand(kind: str) -> Decimal:
        if kind == "int":
            return Decimal(data.draw(_wholes))
        return Decimal(data.draw(st.one_of(_wholes, _fractions)))

    x, y = operand(left), operand(right)
    ints = _int_typed(op, left, right)
    want = _reference(op, x, y, ints, ((left, x), (right, y)))
    table = _arith(op, left, right)

    def written(value: Decimal, kind: str, as_float: bool) -> str:
        text = str(value)
        whole = value == value.to_integral_value() and "E" not in text and "." not in text
        return text + ".0" if kind == "decimal" and whole and as_float else text

    for as_float in (False, True):
        text = f'{{"x": {written(x, left, as_float)}, "y": {written(y, right, as_float)}}}'
        env = WorkflowEnv([table])
        inst = env.instance(env.start("arith", codec.loads(text)))
        if isinstance(want, str) and want in _ERRORS:
            assert inst.status is rt.Status.DEAD_LETTERED, (text, inst.output)
            assert inst.error is not None and _ERRORS[want] in inst.error, (text, inst.error)
            continue
        assert inst.status is rt.Status.COMPLETED, (text, inst.error)
        assert inst.output is not None
        got: Value = inst.output["r"]
        if isinstance(want, bool):
            assert got is want, text
            continue
        assert isinstance(got, int | Decimal) and not isinstance(got, bool), got
        if ints:
            assert type(got) is int, (text, got)
        assert Decimal(got) == want, (text, got, want)
        if "E+" in str(got):  # a whole decimal is its digits (``2E+2`` is ``200``) ...
            assert Decimal(got).adjusted() >= 34, got  # ... when they fit 34 of them


TWIN_LAMBDAS = """\
workflow twin version 1
type A { v: int }
type B { v: decimal }
input { a: list[A], b: list[B] }
output { ints: list[int], decs: list[decimal] }
start done
end done: completed {
    output {
        FIRST,
        SECOND,
    }
}
"""
TWIN_MAPS = """\
workflow twin version 1
type A { v: int }
type B { v: decimal }
input { a: list[A], b: list[B] }
context { ints: list[int] = [], decs: list[decimal] = [] }
output { ints: list[int], decs: list[decimal] }
start FIRST
MAPS
end done: completed { output { ints: context.ints, decs: context.decs } }
"""
TWIN_MAP = """\
map NAME over input.LIST as x {
    end NAME_squared: completed { output { s: x.v * x.v } }
    output { NAME: result[*].s }
    next NEXT
}
"""
_TWIN_INPUT: dict[str, Value] = {
    "a": [{"v": 3}],
    "b": [{"v": Decimal("10000000000")}, {"v": Decimal("1.5")}],
}


@pytest.mark.parametrize("ints_first", [True, False])
def test_equal_lambda_bodies_over_int_and_decimal_items_compute_each_as_its_type(
    ints_first: bool,
) -> None:
    """Two equal lambda bodies (equal expressions, written in two places) are typed where
    each is written: ``x.v * x.v`` over decimals multiplies decimals (no 64-bit overflow
    however the ints' body was typed, before or after it)."""
    ints, decs = "ints: map(input.a, x => x.v * x.v)", "decs: map(input.b, x => x.v * x.v)"
    first, second = (ints, decs) if ints_first else (decs, ints)
    env = WorkflowEnv([compiled(TWIN_LAMBDAS.replace("FIRST", first).replace("SECOND", second))])
    iid = env.start("twin", _TWIN_INPUT)
    assert env.status(iid) == "completed", env.instance(iid).error
    out = env.instance(iid).output
    assert out is not None
    assert same(out["decs"], [Decimal("100000000000000000000"), Decimal("2.25")])
    assert same(out["ints"], [9])


@pytest.mark.parametrize("ints_first", [True, False])
def test_equal_map_bodies_over_int_and_decimal_items_compute_each_as_its_type(
    ints_first: bool,
) -> None:
    """The same for two maps whose bodies write the same expression over their alias."""
    names = [("ints", "a"), ("decs", "b")] if ints_first else [("decs", "b"), ("ints", "a")]
    maps = [
        TWIN_MAP.replace("NAME", name).replace("LIST", items).replace("NEXT", after)
        for (name, items), after in zip(names, [names[1][0], "done"], strict=True)
    ]
    source = TWIN_MAPS.replace("FIRST", names[0][0]).replace("MAPS", "".join(maps))
    env = WorkflowEnv([compiled(source)])
    iid = env.start("twin", _TWIN_INPUT)
    assert env.status(iid) == "completed", env.instance(iid).error
    out = env.instance(iid).output
    assert out is not None
    assert same(out["decs"], [Decimal("100000000000000000000"), Decimal("2.25")])
    assert same(out["ints"], [9])
