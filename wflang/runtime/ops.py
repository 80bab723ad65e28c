"""What the IR's operators and builtins do (``OPS``): arithmetic on the language's
numbers (``wflang.runtime.numbers``), comparisons, text and list builtins.

Each is a function on runtime values that checks its operands at run time (an
``ExpressionError`` names what was wrong), since a table may come from anywhere.
Arithmetic is chosen by static type: the compiler lowers ``+ - * %``, unary ``-``,
``abs`` and ``sum`` whose type is ``decimal`` to the ``*_decimal`` operators.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from decimal import Decimal, DecimalException

from wflang.runtime.numbers import (
    EXACT,
    INT_MAX,
    ROUNDED,
    ExpressionError,
    canonical,
    failure,
    int64,
)
from wflang.runtime.values import Value

_ONE = Decimal(1)


def _num(x: Value, op: str) -> int | Decimal:
    if isinstance(x, bool) or not isinstance(x, int | Decimal):
        raise ExpressionError(f"'{op}' needs a number, got {show(x)}")
    return x


def show(x: Value) -> str:
    """A value in a message, as the language writes it (``true``, not ``True``)."""
    text = repr(x) if isinstance(x, str) else _json(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _exact(op: str, fn: Callable[[int | Decimal, int | Decimal], Decimal],
           x: int | Decimal, y: int | Decimal) -> int | Decimal:  # fmt: skip
    """A decimal operation in the language's context, in the one form of its result."""
    try:
        return canonical(fn(x, y))
    except DecimalException as err:
        raise failure(op, err, x, y) from None


# The generic operators: ``int`` arithmetic on two ints, decimal arithmetic when an
# operand is held as a ``Decimal``. The compiler lowers arithmetic whose static type is
# ``decimal`` to the ``*_decimal`` operators below instead, so that a whole decimal
# held as an int never computes as a 64-bit int; the generic ones serve ints, strings,
# durations and timestamps (and tables compiled before the typed operators).


def _add(a: Value, b: Value) -> Value:
    if type(a) is str and type(b) is str:
        return a + b
    x, y = _num(a, "+"), _num(b, "+")
    if type(x) is int and type(y) is int:
        return int64(x + y, "+", x, y)
    return _exact("+", EXACT.add, x, y)


def _sub(a: Value, b: Value) -> Value:
    x, y = _num(a, "-"), _num(b, "-")
    if type(x) is int and type(y) is int:
        return int64(x - y, "-", x, y)
    return _exact("-", EXACT.subtract, x, y)


def _mul(a: Value, b: Value) -> Value:
    x, y = _num(a, "*"), _num(b, "*")
    if type(x) is int and type(y) is int:
        return int64(x * y, "*", x, y)
    return _exact("*", EXACT.multiply, x, y)


def _div(a: Value, b: Value) -> Value:
    """``/`` of numbers: always a decimal, rounded to 34 digits."""
    x, y = _num(a, "/"), _num(b, "/")
    if y == 0:
        raise ExpressionError("division by zero")
    return _exact("/", ROUNDED.divide, x, y)


def _div_int(a: Value, b: Value) -> Value:
    x, y = _num(a, "/"), _num(b, "/")
    if type(x) is not int or type(y) is not int:
        raise ExpressionError(f"'/' of a duration needs an int, got {show(b)}")
    if y == 0:
        raise ExpressionError("division by zero")
    return int64(x // y, "/", x, y)


def _mod(a: Value, b: Value) -> Value:
    """The remainder with the sign of the divisor (as Python's ints)."""
    x, y = _num(a, "%"), _num(b, "%")
    if y == 0:
        raise ExpressionError("modulo by zero")
    if type(x) is int and type(y) is int:
        return x % y
    return _remainder(x, y)


def _remainder(x: int | Decimal, y: int | Decimal) -> int | Decimal:
    """``x % y`` in decimal, with the sign of the divisor like an int's ``%``."""
    try:
        r = EXACT.remainder(x, y)
        if r != 0 and (r < 0) != (y < 0):
            r = EXACT.add(r, y)
        return canonical(r)
    except DecimalException as err:
        raise failure("%", err, x, y) from None


def _decimal(
    op: str, fn: Callable[[int | Decimal, int | Decimal], Decimal]
) -> Callable[[Value, Value], Value]:
    """``op`` where its static type is ``decimal``: exact, whatever form its operands
    are held in (``10000000000 * 10000000000`` is ``100000000000000000000``)."""

    def apply(a: Value, b: Value) -> Value:
        return _exact(op, fn, _num(a, op), _num(b, op))

    return apply


def _mod_decimal(a: Value, b: Value) -> Value:
    x, y = _num(a, "%"), _num(b, "%")
    if y == 0:
        raise ExpressionError("modulo by zero")
    return _remainder(x, y)


def _neg_decimal(a: Value) -> Value:
    return canonical(Decimal(_num(a, "-")).copy_negate())


def _abs_decimal(a: Value) -> Value:
    return canonical(Decimal(_num(a, "abs")).copy_abs())


def _sum_decimal(*xs: Value) -> Value:
    total: int | Decimal = 0
    for x in _numbers("sum", xs):
        total = _exact("+", EXACT.add, total, x)
    return total


def _compare(op: str) -> Callable[[Value, Value], Value]:
    def compare(a: Value, b: Value) -> Value:
        if a is None or b is None:
            raise ExpressionError(f"'{op}' cannot compare null")
        if type(a) is bool or type(b) is bool:  # Python orders them as 0 and 1
            raise ExpressionError(f"'{op}' cannot compare {show(a)} and {show(b)}")
        try:
            if op == "<":
                return a < b  # type: ignore[operator]
            if op == "<=":
                return a <= b  # type: ignore[operator]
            if op == ">":
                return a > b  # type: ignore[operator]
            return a >= b  # type: ignore[operator]
        except TypeError as err:
            raise ExpressionError(f"'{op}' cannot compare {show(a)} and {show(b)}") from err

    return compare


def _contains(container: Value, item: Value) -> Value:
    if isinstance(container, str):
        if not isinstance(item, str):
            raise ExpressionError("'in' on a string needs a string")
        return item in container
    if isinstance(container, list):
        return any(equal(item, x) for x in container)
    if isinstance(container, dict):
        return item in container
    raise ExpressionError(f"'in' needs a list, a map or a string, got {show(container)}")


def _concat(a: Value, b: Value) -> Value:
    """``xs + ys`` of two lists: the items of both, in order."""
    if type(a) is list and type(b) is list:
        return a + b
    raise ExpressionError(f"'+' of lists needs two lists, got {show(a)} and {show(b)}")


def _len(x: Value) -> Value:
    if isinstance(x, str | list | dict):
        return len(x)
    raise ExpressionError(f"len() needs a string, a list or a map, got {show(x)}")


def _text(name: str, fn: Callable[[str], str]) -> Callable[[Value], Value]:
    def apply(x: Value) -> Value:
        if not isinstance(x, str):
            raise ExpressionError(f"{name}() needs a string, got {show(x)}")
        return fn(x)

    return apply


def _coalesce(*xs: Value) -> Value:
    for x in xs:
        if x is not None:
            return x
    return None


def _numbers(name: str, xs: Sequence[Value]) -> list[int | Decimal]:
    flat = xs[0] if len(xs) == 1 and isinstance(xs[0], list) else list(xs)
    if not flat and name in ("min", "max"):
        raise ExpressionError(f"{name}() of an empty list")
    return [_num(x, name) for x in flat]


def _neg(x: int | Decimal) -> int | Decimal:
    """``-x``, exactly (a decimal's ``-`` would round it to the context's precision)."""
    return canonical(x.copy_negate()) if isinstance(x, Decimal) else int64(-x, "-", x)


def _abs(x: int | Decimal) -> int | Decimal:
    return x.copy_abs() if isinstance(x, Decimal) else int64(abs(x), "abs", x)


def _sum(*xs: Value) -> Value:
    items = xs[0] if len(xs) == 1 and type(xs[0]) is list else xs
    ints = [x for x in items if type(x) is int]
    # All ints, none so large that a partial sum could leave 64 bits: add them at once.
    if ints and len(ints) == len(items) and len(ints) * max(map(abs, ints)) <= INT_MAX:
        return sum(ints)
    total: Value = 0
    for x in _numbers("sum", xs):
        total = _add(total, x)
    return total


def _round(x: Value, places: Value = 0) -> Value:
    """``x`` to ``places`` decimal places, half to even (``round(2.5)`` is 2)."""
    value, digits = _num(x, "round"), _num(places, "round")
    if type(digits) is not int:
        raise ExpressionError(f"round() needs whole places, got {show(places)}")
    try:
        quantum = _ONE.scaleb(-digits, ROUNDED)
        return canonical(ROUNDED.quantize(value, quantum))
    except DecimalException as err:
        raise failure("round", err, value, digits) from None


def equal(a: Value, b: Value) -> bool:
    """``==``: numbers by value (``1 == 1.0``), anything else by type and value, all the
    way down (``true`` is not ``1``, though Python says ``True == 1``)."""
    ta, tb = type(a), type(b)
    if ta is list and tb is list:
        return len(a) == len(b) and all(map(equal, a, b))  # type: ignore[arg-type]
    if ta is dict and tb is dict:
        return a.keys() == b.keys() and all(equal(v, b[k]) for k, v in a.items())  # type: ignore[union-attr,index]
    if ta is bool or tb is bool:
        return a is b
    return a == b


def _string(x: Value) -> Value:
    """``string(x)``: a string as it is, anything else as JSON (``true``, ``null``,
    ``[1,"a"]``), never as Python writes it (``True``, ``['a']``)."""
    if isinstance(x, str):
        return x
    return _json(x)


#: The exponents (``Decimal.adjusted``) a decimal is written out in full for: ``0.0000001``,
#: not Python's ``1E-7``; beyond them (up to 6,144), scientific notation keeps it short.
_PLAIN_EXPONENTS = range(-30, 41)


def _decimal_text(x: Decimal) -> str:
    """A decimal as a person writes it, its digits kept (``4.50``, ``0.0000001``, ``100``
    for ``1E+2``); a very large or small one as ``1E+100``."""
    return format(x, "f") if x.adjusted() in _PLAIN_EXPONENTS else str(x)


def _json(x: Value) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, Decimal):
        return _decimal_text(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str):
        return json.dumps(x, ensure_ascii=False)
    if isinstance(x, list):
        return "[" + ",".join(map(_json, x)) + "]"
    return "{" + ",".join(f"{_json(k)}:{_json(v)}" for k, v in x.items()) + "}"


#: Every operator and builtin the IR can apply: (name -> function on values).
OPS: dict[str, Callable[..., Value]] = {
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "div_int": _div_int,
    "mod": _mod,
    "add_decimal": _decimal("+", EXACT.add),
    "sub_decimal": _decimal("-", EXACT.subtract),
    "mul_decimal": _decimal("*", EXACT.multiply),
    "mod_decimal": _mod_decimal,
    "neg_decimal": _neg_decimal,
    "abs_decimal": _abs_decimal,
    "sum_decimal": _sum_decimal,
    "neg": lambda a: _neg(_num(a, "-")),
    "pos": lambda a: _num(a, "+"),  # exact: Python's unary plus rounds a decimal
    "eq": equal,
    "ne": lambda a, b: not equal(a, b),
    "lt": _compare("<"),
    "le": _compare("<="),
    "gt": _compare(">"),
    "ge": _compare(">="),
    "in": lambda a, b: _contains(b, a),
    "not_in": lambda a, b: not _contains(b, a),
    "not": lambda a: not a,
    "len": _len,
    "lower": _text("lower", str.lower),
    "upper": _text("upper", str.upper),
    "trim": _text("trim", str.strip),
    "starts_with": lambda a, b: _text("starts_with", lambda s: s)(a).startswith(b),  # type: ignore[union-attr]
    "ends_with": lambda a, b: _text("ends_with", lambda s: s)(a).endswith(b),  # type: ignore[union-attr]
    "contains": _contains,
    "coalesce": _coalesce,
    "min": lambda *xs: min(_numbers("min", xs)),
    "max": lambda *xs: max(_numbers("max", xs)),
    "sum": _sum,
    "abs": lambda a: _abs(_num(a, "abs")),
    "round": _round,
    "keys": lambda m: sorted(m) if isinstance(m, dict) else _fail("keys() needs a map"),
    "string": _string,
    "concat": _concat,
}


def _fail(message: str) -> Value:
    raise ExpressionError(message)
