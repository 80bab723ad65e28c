"""The builder's per-parse state and what every grammar rule's method uses."""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from attrs import define, frozen
from lark import Token, Transformer

from wflang.dsl import diagnostics as diag
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.build.literals import MAX_INT, bounded_int, parse_duration, shown, unescape
from wflang.dsl.span import Span


@define
class BuildContext:
    """What one parse collects besides the spec: its file, findings and nesting depths."""

    file: str
    diagnostics: list[diag.Diagnostic]
    comments: list[sp.Comment]
    depth: dict[int, int]
    too_deep: bool = False


@frozen
class Clause:
    """A clause before it is placed into the node that holds it."""

    kind: str
    value: object
    span: Span


@frozen
class Fields:
    fields: tuple[sp.Field, ...]
    span: Span


@frozen
class Block:
    clauses: tuple[Clause, ...]
    span: Span


T = TypeVar("T")

#: Blocks and expressions may nest this deep; deeper input gets WF005, not a crash.
MAX_DEPTH = 64


class BuilderBase(Transformer[Token, Any]):
    """What the rule families (declarations, nodes, expressions) share: the
    thread-local ``BuildContext`` of the current parse, spans, reports, bounded
    literals and nesting depth.
    """

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self._local = threading.local()

    # -- per-parse state ---------------------------------------------------

    @property
    def ctx(self) -> BuildContext:
        ctx: BuildContext = self._local.ctx
        return ctx

    def begin(self, ctx: BuildContext) -> None:
        self._local.ctx = ctx

    def end(self) -> None:
        self._local.ctx = None

    def _tspan(self, tok: Token) -> Span:
        return Span(
            self._local.ctx.file,
            tok.line or 0,
            tok.column or 0,
            tok.end_line or 0,
            tok.end_column or 0,
        )

    def _ident(self, tok: Token) -> sp.Ident:
        return sp.Ident(str(tok), span=self._tspan(tok))

    def _report(self, code: diag.Code, message: str, span: Span, hint: str | None = None) -> None:
        self.ctx.diagnostics.append(diag.Diagnostic.of(code, message, span, hint=hint))

    def _int(self, tok: Token) -> int:
        """An integer literal's value; past MAX_INT it is reported (WF002) and taken as 0."""
        value = bounded_int(str(tok))
        if value <= MAX_INT:
            return value
        self._report(
            diag.INVALID_LITERAL,
            f"integer {shown(str(tok))} is out of range",
            self._tspan(tok),
            hint=f"integers are 64-bit: the largest is {MAX_INT}",
        )
        return 0

    def _nest(self, obj: T, *children: object) -> T:
        """Record how deep ``obj`` nests; past MAX_DEPTH report WF005 once."""
        depth = self.ctx.depth
        d = 1 + max((depth.get(id(c), 0) for c in children), default=0)
        depth[id(obj)] = d
        if d > MAX_DEPTH and not self.ctx.too_deep:
            self.ctx.too_deep = True
            span = getattr(obj, "span", None)
            self._report(
                diag.INVALID_SOURCE,
                f"this is nested more than {MAX_DEPTH} levels deep",
                span if isinstance(span, Span) else Span(self.ctx.file, 1, 1, 1, 1),
                hint="split the expression or the flow into smaller parts",
            )
        return obj

    def _string(self, tok: Token) -> ex.StringLit:
        value = unescape(str(tok)[1:-1])
        if value is None:
            self._report(
                diag.INVALID_LITERAL,
                f"invalid escape in string {tok}",
                self._tspan(tok),
                hint='the escapes are \\" \\\\ \\n \\t \\r \\0 and \\u{hex}',
            )
            value = ""
        return ex.StringLit(value, span=self._tspan(tok))

    def _duration(self, tok: Token) -> ex.DurationLit:
        text = str(tok)
        millis = parse_duration(text)
        if millis is None:
            self._report(
                diag.INVALID_LITERAL,
                f"duration {text} uses years or months, which have no fixed length",
                self._tspan(tok),
                hint="write it in weeks or days, e.g. P30D",
            )
            millis = 0
        elif millis > MAX_INT:
            self._report(
                diag.INVALID_LITERAL,
                f"duration {shown(text)} is out of range",
                self._tspan(tok),
                hint=f"durations are 64-bit milliseconds: the longest is {MAX_INT}ms",
            )
            millis = 0
        return ex.DurationLit(text, millis, span=self._tspan(tok))
