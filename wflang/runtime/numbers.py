"""Numbers as the language has them: 64-bit ints and exact decimals of 34 digits.

An ``int`` is a whole number of 64 bits (two's complement); an operation whose result
does not fit fails. A ``decimal`` is an exact decimal number of at most 34 significant
digits with an exponent from -6143 to 6144 (IEEE 754 decimal128's range): ``+``, ``-``,
``*``, ``%`` and ``round`` give the exact result or fail (never a silently rounded
one); ``/`` rounds to 34 digits, half to even. A failure is an ``ExpressionError``
naming the limit, which the step turns into a workflow error.

One value, one form: a decimal that is a whole number (``round(2.5)``, ``100 / 0.5``, a
JSON ``7`` given for a decimal) is held as a Python ``int`` when it fits 64 bits, else
as a ``Decimal`` written out without an exponent when it has at most 34 digits (``1E+3``
is ``1000``), any other as it is (never ``-0``). JSON keeps exactly this distinction (a
number with a point or an exponent, or a whole number beyond 64 bits, reads back as a
``Decimal``; any other whole number as an ``int``), so a value is the same in memory, in
a durable store and after a replay.

How a value is held never decides what an expression means: the compiler lowers
arithmetic whose static type is ``decimal`` to the decimal operations
(``wflang.runtime.ir``'s ``add_decimal`` …), which compute in ``EXACT`` whatever their
operands' form; only ``int`` arithmetic is 64-bit.
"""

from __future__ import annotations

from decimal import (
    Context,
    Decimal,
    DecimalException,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
)

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
DECIMAL_DIGITS = 34
DECIMAL_EMAX, DECIMAL_EMIN = 6144, -6143

_FAIL = [InvalidOperation, DivisionByZero, Overflow]
#: For ``+ - * %`` and ``round``: exact, or an error (an underflow is inexact too).
EXACT = Context(prec=DECIMAL_DIGITS, Emax=DECIMAL_EMAX, Emin=DECIMAL_EMIN, traps=[*_FAIL, Inexact])
#: For ``/``: rounded to 34 digits, half to even (a quotient too small to hold is 0).
ROUNDED = Context(prec=DECIMAL_DIGITS, Emax=DECIMAL_EMAX, Emin=DECIMAL_EMIN, traps=_FAIL)
_ONE = Decimal(1)


class ExpressionError(Exception):
    """An expression failed at run time; the message says which and why (a number
    outside the language's limits names the limit). ``wflang.runtime.ir`` exports it."""


def int64(n: int, op: str, *operands: int) -> int:
    """``n``, the result of ``op`` on ``operands``, if it fits 64 bits, else an
    ExpressionError that says which operation overflowed."""
    if INT_MIN <= n <= INT_MAX:
        return n
    raise int_overflow(op, *operands)


def int_overflow(op: str, *operands: int) -> ExpressionError:
    """``int overflow: 9223372036854775807 * 2 is outside the 64-bit range``: ``op`` an
    infix operator with two operands, else a function (``abs(-9223372036854775808)``)."""
    return ExpressionError(
        f"int overflow: {_operation(op, operands)} is outside the 64-bit range"
        f" ({INT_MIN} to {INT_MAX})"
    )


def canonical(d: Decimal) -> int | Decimal:
    """A decimal result in its one form: a whole number that fits 64 bits as an ``int``
    (so ``-0`` is ``0``); a whole number with a positive exponent as its digits when
    there are at most 34 of them (``2E+2`` is ``200``), else without trailing zeros
    (``1E+40``); a zero without a sign (``-0.0`` is ``0.0``); anything else as it is."""
    if not d.same_quantum(_ONE):
        if d.as_tuple().exponent <= 0:  # type: ignore[operator]  # finite here
            return d.copy_abs() if d.is_zero() else d
        # A positive exponent: whole, written with digits when they fit the precision.
        d = d.quantize(_ONE, context=EXACT) if d.adjusted() < DECIMAL_DIGITS else d.normalize(EXACT)
        if not d.same_quantum(_ONE):
            return d
    if INT_MIN <= d <= INT_MAX:
        return int(d)
    return d


def fits(d: Decimal) -> str | None:
    """Why a decimal from outside is not one the language holds, or None."""
    if not d.is_finite():
        return f"must be a finite decimal, not {d}"
    digits = len(d.as_tuple().digits)
    if digits > DECIMAL_DIGITS:
        return f"has {digits} significant digits; a decimal has at most {DECIMAL_DIGITS}"
    if not d.is_zero() and not DECIMAL_EMIN <= d.adjusted() <= DECIMAL_EMAX:
        return f"is out of range for decimal (exponent {DECIMAL_EMIN} to {DECIMAL_EMAX})"
    return None


def failure(op: str, err: DecimalException, *operands: int | Decimal) -> ExpressionError:
    """A decimal context's trap as the limit it hit, naming the operation."""
    what = _operation(op, operands)
    if isinstance(err, Overflow):
        return ExpressionError(
            f"decimal overflow: {what} is outside the decimal range"
            f" (the exponent would exceed {DECIMAL_EMAX})"
        )
    if isinstance(err, DivisionByZero):
        return ExpressionError("division by zero")
    if isinstance(err, Inexact):
        return ExpressionError(
            f"decimal: the exact result of {what} needs more than {DECIMAL_DIGITS} digits"
            f" or an exponent below {DECIMAL_EMIN}"
        )
    # InvalidOperation: a quantize or remainder beyond the precision
    return ExpressionError(f"decimal: the result of {what} needs more than {DECIMAL_DIGITS} digits")


def _operation(op: str, operands: tuple[int | Decimal, ...]) -> str:
    """An operation as the language writes it: ``a * b``, ``-(a)``, ``round(a, 2)``."""
    shown = [_number(x) for x in operands]
    if op in _INFIX and len(shown) == 2:
        return f"{shown[0]} {op} {shown[1]}"
    if op == "-" and len(shown) == 1:
        return f"-({shown[0]})"
    return f"{op}({', '.join(shown)})"


_INFIX = frozenset({"+", "-", "*", "/", "%"})


def _number(x: int | Decimal) -> str:
    """A number in a message: in full, or its first and last digits when it is long."""
    text = str(x)
    return text if len(text) <= 45 else f"{text[:20]}…{text[-20:]}"
