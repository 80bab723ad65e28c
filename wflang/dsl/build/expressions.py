"""The grammar rules of expressions and literals."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from lark import Token, v_args

from wflang.dsl import diagnostics as diag
from wflang.dsl import expr as ex
from wflang.dsl.build.base import BuilderBase
from wflang.dsl.build.literals import (
    DECIMAL_DIGITS,
    DECIMAL_EMIN,
    shown,
)


class ExpressionRules(BuilderBase):
    """The grammar rules of expressions and literals."""

    @v_args(inline=True)
    def binary(self, left: ex.Expr, op: Token, right: ex.Expr) -> ex.Binary:
        return self._nest(
            ex.Binary(str(op), left, right, span=left.span.to(right.span)), left, right
        )

    @v_args(inline=True)
    def not_in(self, left: ex.Expr, _not: Token, _in: Token, right: ex.Expr) -> ex.Binary:
        return self._nest(
            ex.Binary("not in", left, right, span=left.span.to(right.span)), left, right
        )

    @v_args(inline=True)
    def unary(self, op: Token, operand: ex.Expr) -> ex.Unary:
        node = ex.Unary(str(op), operand, span=self._tspan(op).to(operand.span))
        return self._nest(node, operand)

    @v_args(inline=True)
    def member(self, target: ex.Expr, name: Token) -> ex.Member | ex.Project:
        span = target.span.to(self._tspan(name))
        if isinstance(target, ex.Project):  # ``lines[*].item.price``: one projection
            projected = ex.Project(target.target, (*target.fields, str(name)), span=span)
            return self._nest(projected, target.target)
        return self._nest(ex.Member(target, str(name), span=span), target)

    @v_args(inline=True)
    def project(self, target: ex.Expr, spread: Token) -> ex.Project:
        node = ex.Project(target, (), span=target.span.to(self._tspan(spread)))
        return self._nest(node, target)

    @v_args(inline=True)
    def lambda_arg(self, param: Token, _arrow: Token, body: ex.Expr) -> ex.Lambda:
        node = ex.Lambda(str(param), body, span=self._tspan(param).to(body.span))
        return self._nest(node, body)

    @v_args(inline=True)
    def index(self, target: ex.Expr, idx: ex.Expr, close: Token) -> ex.Index:
        node = ex.Index(target, idx, span=target.span.to(self._tspan(close)))
        return self._nest(node, target, idx)

    def call(self, children: list[Any]) -> ex.Call:
        name, _open, *args, close = children
        fn = str(name)
        span = self._tspan(name).to(self._tspan(close))
        if fn not in ex.BUILTINS:
            import difflib  # only for this error: not on every parse's path

            close_matches = difflib.get_close_matches(fn, ex.BUILTINS, n=1)
            if fn in ("today", "random", "uuid", "time"):
                hint = "workflows are deterministic: pass the value in (now() is the step's time)"
            elif close_matches:
                hint = f"did you mean '{close_matches[0]}'?"
            else:
                hint = "the builtins are: " + ", ".join(sorted(ex.BUILTINS))
            self._report(diag.UNKNOWN_FUNCTION, f"unknown function '{fn}'", self._tspan(name), hint)
        items = tuple(a for a in args if a is not None)
        return self._nest(ex.Call(fn, items, span=span), *items)

    def list_lit(self, children: list[Any]) -> ex.ListLit:
        open_, *items, close = children
        values = tuple(i for i in items if i is not None)
        node = ex.ListLit(values, span=self._tspan(open_).to(self._tspan(close)))
        return self._nest(node, *values)

    @v_args(inline=True)
    def ref(self, name: Token) -> ex.Ref:
        return ex.Ref(str(name), span=self._tspan(name))

    @v_args(inline=True)
    def int_lit(self, tok: Token) -> ex.IntLit:
        return ex.IntLit(self._int(tok), span=self._tspan(tok))

    @v_args(inline=True)
    def decimal_lit(self, tok: Token) -> ex.DecimalLit:
        text = str(tok)
        value = Decimal(text)  # the token's regex admits only digits and one point
        digits = len(value.as_tuple().digits)
        if digits > DECIMAL_DIGITS or value.adjusted() < DECIMAL_EMIN:
            self._report(
                diag.INVALID_LITERAL,
                f"decimal {shown(text)} is out of range ({digits:,} significant digits)",
                self._tspan(tok),
                hint=f"decimals are exact with at most {DECIMAL_DIGITS} significant digits "
                f"and no smaller than 1e{DECIMAL_EMIN}",
            )
            value = Decimal(0)
        return ex.DecimalLit(value, span=self._tspan(tok))

    @v_args(inline=True)
    def string_lit(self, tok: Token) -> ex.StringLit:
        return self._string(tok)

    @v_args(inline=True)
    def duration_lit(self, tok: Token) -> ex.DurationLit:
        return self._duration(tok)

    @v_args(inline=True)
    def timestamp_lit(self, tok: Token) -> ex.TimestampLit:
        text = str(tok)
        from datetime import datetime  # only for a timestamp literal: not on every parse's path

        try:
            datetime.fromisoformat(text)
        except ValueError as err:
            self._report(diag.INVALID_LITERAL, f"invalid timestamp {text}: {err}", self._tspan(tok))
        return ex.TimestampLit(text, span=self._tspan(tok))

    @v_args(inline=True)
    def true_lit(self, tok: Token) -> ex.BoolLit:
        return ex.BoolLit(True, span=self._tspan(tok))

    @v_args(inline=True)
    def false_lit(self, tok: Token) -> ex.BoolLit:
        return ex.BoolLit(False, span=self._tspan(tok))

    @v_args(inline=True)
    def null_lit(self, tok: Token) -> ex.NullLit:
        return ex.NullLit(span=self._tspan(tok))
