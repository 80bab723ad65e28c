"""Numbers as the language has them: 64-bit ints and exact decimals of 34 digits.

An ``int`` is a whole number of 64 bits (two's complement); an operation whose result
does not fit fails. A ``decimal`` is an exact decimal number of at most 34 significant
digits with an exponent from -6143 to 6144 (IEEE 754 decimal128's range): ``+``, ``-``,
``*``, ``%`` and ``round`` give the exact result or fail (never a silently rounded
one); ``/`` rounds to 34 digits, half to even. A failure is an ``ExpressionError``
naming the limit, which the step turns into a workflow error.

One value, one form: a decimal that is a whole number written without fractional
digits (``round(2.5)``, a JSON ``7`` given for a decimal) is held as a Python ``int``
when it fits 64 bits, any other as a ``Decimal`` (never ``-0``). JSON keeps exactly
this distinction (a number with a point or an exponent reads back as a ``Decimal``, one
without as an ``int``; the codec writes a whole ``Decimal`` as ``…E0``), so a value is
the same in memory, in a durable store and after a replay. (A whole decimal held as an
int computes as one: ``x * y`` of two such beyond 64 bits fails; ``x * 1.0`` does not.)
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


def int64(n: int) -> int:
    """``n`` if it fits 64 bits, else a ExpressionError."""
    if INT_MIN <= n <= INT_MAX:
        return n
    raise ExpressionError(f"int overflow: the result does not fit 64 bits ({_digits(n)} digits)")


def canonical(d: Decimal) -> int | Decimal:
    """A decimal result in its one form: a whole number without fractional digits that
    fits 64 bits as an ``int`` (so ``-0`` is ``0``), a zero without a sign (``-0.0`` is
    ``0.0``), anything else as it is."""
    if d.same_quantum(_ONE) and INT_MIN <= d <= INT_MAX:
        return int(d)
    return d.copy_abs() if d.is_zero() else d


def whole(d: Decimal) -> bool:
    """Whether a decimal is held as one (a whole number without fractional digits, beyond
    64 bits): JSON must write it with an exponent (``…E0``) to read it back as one."""
    return d.same_quantum(_ONE)


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


def failure(op: str, err: DecimalException) -> ExpressionError:
    """A decimal context's trap as the limit it hit."""
    if isinstance(err, Overflow):
        return ExpressionError(
            f"'{op}': decimal overflow (the exponent would exceed {DECIMAL_EMAX})"
        )
    if isinstance(err, DivisionByZero):
        return ExpressionError("division by zero")
    if isinstance(err, Inexact):
        return ExpressionError(
            f"'{op}': the exact result needs more than {DECIMAL_DIGITS} digits"
            f" or an exponent below {DECIMAL_EMIN}"
        )
    # InvalidOperation: a quantize or remainder beyond the precision
    return ExpressionError(f"'{op}': the result needs more than {DECIMAL_DIGITS} digits")


def _digits(n: int) -> int:
    return len(str(abs(n))) if n.bit_length() < 10_000 else n.bit_length() * 3 // 10
