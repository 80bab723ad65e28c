"""Expressions in canonical form (the formatter's, and every stage that prints one:
labels, findings, diagrams): parenthesised only where precedence needs it."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import assert_never

from wflang.dsl import expr as ex

# ----------------------------------------------------------------- expressions


def format_expr(e: ex.Expr) -> str:
    """An expression in canonical form, parenthesised only where precedence needs it."""
    match e:
        case ex.Binary():
            return _binary(e)
        case ex.Unary():
            return _unary(e)
        case ex.IntLit() | ex.BoolLit() | ex.NullLit():
            return _literal(e)
        case ex.DecimalLit():
            return _decimal(e)
        case ex.StringLit():
            return _string(e)
        case ex.DurationLit() | ex.TimestampLit():
            return _as_written(e)
        case ex.Ref():
            return _ref(e)
        case ex.Member():
            return _member(e)
        case ex.Index():
            return _index(e)
        case ex.Project():
            return _project(e)
        case ex.Lambda():
            return f"{e.param} => {format_expr(e.body)}"
        case ex.Call():
            return _call_expr(e)
        case ex.ListLit():
            return _list(e)
        case _:
            assert_never(e)


def _wrap(e: ex.Expr, needs: bool) -> str:
    s = format_expr(e)
    return f"({s})" if needs else s


def _binary(e: ex.Binary) -> str:
    p = ex.BINARY_PRECEDENCE[e.op]
    lp, rp = ex.precedence(e.left), ex.precedence(e.right)
    comparison = p == ex.BINARY_PRECEDENCE["=="]
    left = _wrap(e.left, lp < p or (comparison and lp == p))
    right = _wrap(e.right, rp <= p)
    return f"{left} {e.op} {right}"


def _unary(e: ex.Unary) -> str:
    if e.op == "not":
        return "not " + _wrap(e.operand, ex.precedence(e.operand) < ex.UNARY_PRECEDENCE["not"])
    inner = _wrap(e.operand, ex.precedence(e.operand) < ex.UNARY_PRECEDENCE["-"])
    return f"{e.op}{inner}"


def _postfix_target(e: ex.Expr) -> str:
    return _wrap(e, ex.precedence(e) < ex.ATOM_PRECEDENCE)


def format_decimal(value: Decimal) -> str:
    """A decimal as the grammar reads it: digits, a dot, digits."""
    s = format(value, "f")
    return s if "." in s else s + ".0"


_STRING_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def format_string(value: str) -> str:
    out = []
    for ch in value:
        if ch in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[ch])
        elif not ch.isprintable():
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _literal(e: ex.IntLit | ex.BoolLit | ex.NullLit) -> str:
    if isinstance(e, ex.NullLit):
        return "null"
    if isinstance(e, ex.BoolLit):
        return "true" if e.value else "false"
    return str(e.value)


def _decimal(e: ex.DecimalLit) -> str:
    return format_decimal(e.value)


def _string(e: ex.StringLit) -> str:
    return format_string(e.value)


def _as_written(e: ex.DurationLit | ex.TimestampLit) -> str:
    return e.text


def _ref(e: ex.Ref) -> str:
    return e.name


def _member(e: ex.Member) -> str:
    return f"{_postfix_target(e.target)}.{e.name}"


def _index(e: ex.Index) -> str:
    return f"{_postfix_target(e.target)}[{format_expr(e.index)}]"


def _project(e: ex.Project) -> str:
    return f"{_postfix_target(e.target)}[*]" + "".join(f".{f}" for f in e.fields)


def _call_expr(e: ex.Call) -> str:
    return f"{e.function}({_joined(e.args)})"


def _list(e: ex.ListLit) -> str:
    return f"[{_joined(e.items)}]"


def _joined(items: Sequence[ex.Expr]) -> str:
    return ", ".join(format_expr(i) for i in items)
