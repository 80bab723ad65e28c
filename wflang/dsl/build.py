"""Builds the typed spec while Lark parses: one method per grammar rule.

The builder is installed as Lark's tree-less transformer, so specs are made
during the LALR parse and no parse tree is ever built (that is what makes
parse-to-spec as fast as a bare parse). Spans come from the tokens and child
specs each rule receives; problems found here (bad literals, misplaced
clauses, unknown functions) are collected into the current ``BuildContext``.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from attrs import define, frozen
from lark import Token, Transformer, v_args

from wflang.dsl import diagnostics as diag
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.span import Span

#: Blocks and expressions may nest this deep; deeper input gets WF005, not a crash.
MAX_DEPTH = 64
#: Integers (and durations, in milliseconds) are 64-bit at run time; larger literals are WF002.
MAX_INT = 2**63 - 1
_TOO_BIG = MAX_INT + 1
#: Decimals are exact with at most 34 significant digits at run time (IEEE 754 decimal128,
#: ``wflang.runtime.numbers``); a literal with more could never be held, so it is WF002.
DECIMAL_DIGITS = 34
DECIMAL_EMIN = -6143


@define
class BuildContext:
    """What one parse collects besides the spec: its file, findings and nesting depths."""

    file: str
    diagnostics: list[diag.Diagnostic]
    comments: list[sp.Comment]
    depth: dict[int, int]
    too_deep: bool = False


@frozen
class _Clause:
    """A clause before it is placed into the node that holds it."""

    kind: str
    value: object
    span: Span


@frozen
class _Fields:
    fields: tuple[sp.Field, ...]
    span: Span


@frozen
class _Block:
    clauses: tuple[_Clause, ...]
    span: Span


#: Which clauses each node kind accepts (the rest are WF003), and the spec field
#: each one fills. Repeatable clauses collect into tuples.
NODE_CLAUSES: dict[str, frozenset[str]] = {
    "task": frozenset(
        {"args", "output", "form", "retry", "timeout", "on", "compensate", "next", "renamed"}
    ),
    "choice": frozenset({"renamed"}),
    "wait": frozenset({"output", "timeout", "next", "renamed"}),
    "sleep": frozenset({"next", "renamed"}),
    "parallel": frozenset({"timeout", "on", "next", "renamed"}),
    "map": frozenset(
        {"output", "timeout", "on", "next", "concurrency", "sequential", "tolerate", "renamed"}
    ),
    "call": frozenset(
        {"args", "output", "retry", "timeout", "on", "compensate", "next", "renamed"}
    ),
    "end": frozenset({"output", "error", "next", "renamed"}),
}
CLAUSE_FIELDS = {
    "args": "args",
    "output": "output",
    "form": "form",
    "retry": "retry",
    "timeout": "timeouts",
    "on": "handlers",
    "compensate": "compensate",
    "next": "next",
    "error": "error",
    "concurrency": "concurrency",
    "sequential": "sequential",
    "tolerate": "tolerate",
    "renamed": "renamed_from",
}
REPEATABLE = frozenset({"timeout", "on"})

_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_UNITS_MS["w"] = 7 * _DURATION_UNITS_MS["d"]
_SIMPLE_DURATION = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_ISO_DATE_PART = re.compile(r"([0-9]+)([YMWD])")
_ISO_TIME_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)([HMS])")
_ISO_TIME_MS = {"H": 3_600_000, "M": 60_000, "S": 1000}
_ISO_DATE_MS = {"W": 7 * 86_400_000, "D": 86_400_000}
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_ESCAPE = re.compile(r"\\(u\{[0-9A-Fa-f]{1,6}\}|.)")

T = TypeVar("T")


def bounded_int(digits: str) -> int:
    """The value of a run of decimal digits, or any value over MAX_INT when it is larger.

    Python's ``int()`` refuses more than 4,300 digits, and a literal that long is out
    of range anyway, so it is never converted whole.
    """
    digits = digits.lstrip("0")
    return _TOO_BIG if len(digits) > len(str(MAX_INT)) else min(int(digits or "0"), _TOO_BIG)


def parse_duration(text: str) -> int | None:
    """Milliseconds of a duration literal (over MAX_INT when too long), or None when it
    is not a fixed duration."""
    if not text.startswith("P"):
        parts = _SIMPLE_DURATION.finditer(text)
        return min(sum(bounded_int(m[1]) * _DURATION_UNITS_MS[m[2]] for m in parts), _TOO_BIG)
    date, _, time = text[1:].partition("T")
    total = Decimal(0)
    for m in _ISO_DATE_PART.finditer(date):
        if m[2] not in _ISO_DATE_MS:  # years and months have no fixed length
            return None
        total += bounded_int(m[1]) * _ISO_DATE_MS[m[2]]
    for m in _ISO_TIME_PART.finditer(time):
        whole, _, fraction = m[1].partition(".")
        total += Decimal(f"{bounded_int(whole)}.{fraction or 0}") * _ISO_TIME_MS[m[2]]
    return min(int(total), _TOO_BIG)


def unescape(body: str) -> str | None:
    """The value of a string literal's body, or None if it holds an unknown escape."""
    bad = False

    def one(m: re.Match[str]) -> str:
        nonlocal bad
        esc = m.group(1)
        if esc.startswith("u{"):
            code = int(esc[2:-1], 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                bad = True
                return ""
            return chr(code)
        if esc in _ESCAPES:
            return _ESCAPES[esc]
        bad = True
        return ""

    value = _ESCAPE.sub(one, body) if "\\" in body else body
    return None if bad else value


class SpecBuilder(Transformer[Token, Any]):
    """Turns grammar rules into spec values; installed once, used by every parse.

    Per-parse state lives in a thread-local ``BuildContext`` so that one Lark
    parser (whose LALR tables are expensive to build) serves all threads.
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
            f"integer {_shown(str(tok))} is out of range",
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

    # -- file and declarations ---------------------------------------------

    def start(self, children: list[Any]) -> sp.WorkflowSpec:
        header, *items = children
        file = self.ctx.file
        spans = [x.span for x in children if x is not None]
        whole = spans[0].to(spans[-1]) if spans else Span(file, 1, 1, 1, 1)
        return sp.WorkflowSpec(file, header, tuple(items), span=whole)

    @v_args(inline=True)
    def header(self, kw: Token, name: Token, version: Token) -> sp.Header:
        return sp.Header(
            self._ident(name), self._int(version), span=self._tspan(kw).to(self._tspan(version))
        )

    @v_args(inline=True)
    def import_decl(self, kw: Token, path: Token, alias: Token | None) -> sp.ImportDecl:
        end = alias if alias is not None else path
        return sp.ImportDecl(
            self._string(path).value,
            None if alias is None else self._ident(alias),
            span=self._tspan(kw).to(self._tspan(end)),
        )

    @v_args(inline=True)
    def type_decl(self, kw: Token, name: Token, block: _Fields) -> sp.TypeDecl:
        return sp.TypeDecl(self._ident(name), block.fields, span=self._tspan(kw).to(block.span))

    def enum_decl(self, children: list[Any]) -> sp.EnumDecl:
        kw, name, *members, close = children
        return sp.EnumDecl(
            self._ident(name), tuple(members), span=self._tspan(kw).to(self._tspan(close))
        )

    @v_args(inline=True)
    def enum_member(self, name: Token) -> sp.Ident:
        return self._ident(name)

    @v_args(inline=True)
    def input_decl(self, kw: Token, block: _Fields) -> sp.InputDecl:
        return sp.InputDecl(block.fields, span=self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def context_decl(self, kw: Token, block: _Fields) -> sp.ContextDecl:
        return sp.ContextDecl(block.fields, span=self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def output_decl(self, kw: Token, block: _Fields) -> sp.OutputDecl:
        return sp.OutputDecl(block.fields, span=self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def signal_decl(self, kw: Token, name: Token, block: _Fields | None) -> sp.SignalDecl:
        end = block.span if block else self._tspan(name)
        payload = block.fields if block else None
        return sp.SignalDecl(self._ident(name), payload, span=self._tspan(kw).to(end))

    @v_args(inline=True)
    def message_decl(self, kw: Token, name: Token, block: _Fields | None) -> sp.MessageDecl:
        end = block.span if block else self._tspan(name)
        payload = block.fields if block else None
        return sp.MessageDecl(self._ident(name), payload, span=self._tspan(kw).to(end))

    def error_decl(self, children: list[Any]) -> sp.ErrorDecl:
        kw, *names = children
        return sp.ErrorDecl(tuple(names), span=self._tspan(kw).to(names[-1].span))

    @v_args(inline=True)
    def error_name(self, name: Token) -> sp.Ident:
        return self._ident(name)

    def service_decl(self, children: list[Any]) -> sp.ServiceDecl:
        kw, name, *rest = children
        params = tuple(c for c in rest if isinstance(c, sp.Field))
        result: tuple[sp.Field, ...] | None = None
        raises: tuple[sp.Ident, ...] = ()
        end = self._tspan(kw)
        for c in rest:
            if isinstance(c, Token):
                end = self._tspan(c)
            elif isinstance(c, _Fields):
                result, end = c.fields, c.span
            elif isinstance(c, tuple):
                raises, end = c, c[-1].span
        return sp.ServiceDecl(name, params, result, raises, span=self._tspan(kw).to(end))

    def raises(self, children: list[Token]) -> tuple[sp.Ident, ...]:
        return tuple(self._ident(t) for t in children)

    @v_args(inline=True)
    def start_decl(self, kw: Token, target: Token) -> sp.StartDecl:
        return sp.StartDecl(self._ident(target), span=self._tspan(kw).to(self._tspan(target)))

    def field_block(self, children: list[Any]) -> _Fields:
        open_, *fields, close = children
        return _Fields(
            tuple(f for f in fields if f is not None),
            self._tspan(open_).to(self._tspan(close)),
        )

    @v_args(inline=True)
    def field(self, name: Token, type_: ty.TypeSpec, default: ex.Expr | None) -> sp.Field:
        end = default.span if default is not None else type_.span
        return sp.Field(self._ident(name), type_, default, span=self._tspan(name).to(end))

    def dotted_name(self, children: list[Token]) -> sp.Ident:
        first, last = self._tspan(children[0]), self._tspan(children[-1])
        return sp.Ident(".".join(children), span=first.to(last))

    # -- types ---------------------------------------------------------------

    @v_args(inline=True)
    def named_type(self, name: Token) -> ty.NamedType:
        return ty.NamedType(str(name), span=self._tspan(name))

    def generic_type(self, children: list[Any]) -> ty.GenericType:
        name, *args, close = children
        span = self._tspan(name).to(self._tspan(close))
        return self._nest(ty.GenericType(str(name), tuple(args), span=span), *args)

    @v_args(inline=True)
    def optional_type(self, inner: ty.NamedType | ty.GenericType) -> ty.OptionalType:
        # The '?' token is anonymous; it ends one column after the inner type.
        s = inner.span
        return ty.OptionalType(
            inner, span=Span(s.file, s.line, s.column, s.end_line, s.end_column + 1)
        )

    # -- nodes ---------------------------------------------------------------

    def _assemble(self, kind: str, name: sp.Ident, clauses: Sequence[_Clause]) -> dict[str, Any]:
        """Place clauses into node fields; report clauses the kind does not take."""
        allowed = NODE_CLAUSES[kind]
        out: dict[str, Any] = {}
        seen: dict[str, _Clause] = {}
        for c in clauses:
            if c.kind not in allowed:
                takes = ", ".join(sorted(allowed))
                self._report(
                    diag.MISPLACED_CLAUSE,
                    f"a {kind} node does not take '{c.kind}'",
                    c.span,
                    hint=f"a {kind} node takes: {takes}",
                )
                continue
            attr = CLAUSE_FIELDS[c.kind]
            if c.kind in REPEATABLE:
                out[attr] = (*out.get(attr, ()), c.value)
            elif c.kind in seen:
                first = seen[c.kind].span
                self.ctx.diagnostics.append(
                    diag.Diagnostic.of(
                        diag.MISPLACED_CLAUSE,
                        f"'{c.kind}' is given twice in node '{name.text}'",
                        c.span,
                        related=(diag.Related(first, "first given here"),),
                    )
                )
            else:
                seen[c.kind] = c
                out[attr] = c.value
        return out

    def _make_node(self, cls: Callable[..., T], kind: str, kw: Token, name: Token,
              parts: Sequence[Any], end: Span, **fields: Any) -> T:  # fmt: skip
        ident = self._ident(name)
        clauses = [p for p in parts if isinstance(p, _Clause)]
        for p in parts:
            if isinstance(p, _Block):
                clauses.extend(p.clauses)
        fields.update(self._assemble(kind, ident, clauses))
        return cls(ident, span=self._tspan(kw).to(end), **fields)

    @v_args(inline=True)
    def task_node(self, kw: Token, name: Token, work: sp.TaskWork, block: _Block) -> sp.TaskNode:
        node = self._make_node(sp.TaskNode, "task", kw, name, (block,), block.span, work=work)
        if node.form is not None and isinstance(work, sp.ServiceWork | sp.ScriptWork):
            kind = "service" if isinstance(work, sp.ServiceWork) else "script"
            self._report(
                diag.MISPLACED_CLAUSE,
                f"a {kind} task does not take 'form'",
                next(c.span for c in block.clauses if c.kind == "form"),
                hint="only user and manual tasks have a form; a service declares its result",
            )
        return node

    @v_args(inline=True)
    def service_kind(self, kw: Token, service: sp.Ident) -> sp.ServiceWork:
        return sp.ServiceWork(service, span=self._tspan(kw).to(service.span))

    @v_args(inline=True)
    def script_kind(self, kw: Token) -> sp.ScriptWork:
        return sp.ScriptWork(span=self._tspan(kw))

    @v_args(inline=True)
    def user_kind(self, kw: Token, assignee: Token | None) -> sp.UserWork:
        who = None if assignee is None else self._string(assignee)
        return sp.UserWork(who, span=self._tspan(kw).to(self._tspan(assignee or kw)))

    @v_args(inline=True)
    def manual_kind(self, kw: Token, assignee: Token | None) -> sp.ManualWork:
        who = None if assignee is None else self._string(assignee)
        return sp.ManualWork(who, span=self._tspan(kw).to(self._tspan(assignee or kw)))

    def choice_node(self, children: list[Any]) -> sp.ChoiceNode:
        kw, name, *parts, close = children
        arms = tuple(p for p in parts if isinstance(p, sp.ChoiceArm))
        clauses = [p for p in parts if isinstance(p, _Clause)]
        node = self._make_node(
            sp.ChoiceNode, "choice", kw, name, clauses, self._tspan(close), arms=arms
        )
        return self._nest(node, *(a.guard for a in arms))

    @v_args(inline=True)
    def when_arm(self, kw: Token, guard: ex.Expr, target: Token) -> sp.ChoiceArm:
        span = self._tspan(kw).to(self._tspan(target))
        return sp.ChoiceArm(guard, self._ident(target), span=span)

    @v_args(inline=True)
    def else_arm(self, kw: Token, target: Token) -> sp.ChoiceArm:
        return sp.ChoiceArm(None, self._ident(target), span=self._tspan(kw).to(self._tspan(target)))

    @v_args(inline=True)
    def wait_node(
        self, kw: Token, name: Token, trigger: sp.WaitTrigger, block: _Block
    ) -> sp.WaitNode:
        return self._make_node(sp.WaitNode, "wait", kw, name, (block,), block.span, trigger=trigger)

    @v_args(inline=True)
    def signal_wait(self, kw: Token, signal: Token) -> sp.SignalTrigger:
        return sp.SignalTrigger(self._ident(signal), span=self._tspan(kw).to(self._tspan(signal)))

    @v_args(inline=True)
    def message_wait(self, kw: Token, message: Token, correlation: ex.Expr) -> sp.MessageTrigger:
        span = self._tspan(kw).to(correlation.span)
        return sp.MessageTrigger(self._ident(message), correlation, span=span)

    @v_args(inline=True)
    def until_wait(self, kw: Token, at: ex.Expr) -> sp.UntilTrigger:
        return sp.UntilTrigger(at, span=self._tspan(kw).to(at.span))

    @v_args(inline=True)
    def sleep_node(
        self, kw: Token, name: Token, duration: ex.Expr, rest: _Block | _Clause
    ) -> sp.SleepNode:
        return self._make_node(
            sp.SleepNode, "sleep", kw, name, (rest,), rest.span, duration=duration
        )

    @v_args(inline=True)
    def short_next(self, kw: Token, target: Token) -> _Clause:
        return _Clause("next", self._ident(target), self._tspan(kw).to(self._tspan(target)))

    def parallel_node(self, children: list[Any]) -> sp.ParallelNode:
        kw, name, *parts, close = children
        branches = tuple(p for p in parts if isinstance(p, sp.Branch))
        joins = [p for p in parts if isinstance(p, tuple) and p and isinstance(p[0], sp.Join)]
        clauses = [p for p in parts if isinstance(p, _Clause)]
        join: sp.Join | None = None
        if joins:
            join, target = joins[0]
            if target is not None:
                clauses.append(_Clause("next", target, join.span))
            for extra, _ in joins[1:]:
                self.ctx.diagnostics.append(
                    diag.Diagnostic.of(
                        diag.MISPLACED_CLAUSE,
                        f"'join' is given twice in node '{name}'",
                        extra.span,
                        related=(diag.Related(join.span, "first given here"),),
                    )
                )
        node = self._make_node(
            sp.ParallelNode, "parallel", kw, name, clauses, self._tspan(close),
            branches=branches, join=join,
        )  # fmt: skip
        return self._nest(node, *branches)

    def branch(self, children: list[Any]) -> sp.Branch:
        kw, name, *nodes, close = children
        span = self._tspan(kw).to(self._tspan(close))
        return self._nest(sp.Branch(self._ident(name), tuple(nodes), span=span), *nodes)

    @v_args(inline=True)
    def join_clause(
        self, kw: Token, policy: sp.Join, target: Token | None
    ) -> tuple[sp.Join, sp.Ident | None]:
        end = self._tspan(target) if target is not None else policy.span
        join = sp.Join(policy.kind, policy.count, policy.of, span=self._tspan(kw).to(end))
        return (join, None if target is None else self._ident(target))

    def join_all(self, _: list[Any]) -> sp.Join:
        return sp.Join(sp.JoinKind.ALL)

    def join_any(self, _: list[Any]) -> sp.Join:
        return sp.Join(sp.JoinKind.ANY)

    @v_args(inline=True)
    def join_n(self, count: Token, of: Token | None) -> sp.Join:
        span = self._tspan(count).to(self._tspan(of or count))
        return sp.Join(
            sp.JoinKind.N_OF_M, self._int(count), None if of is None else self._int(of), span=span
        )

    def map_node(self, children: list[Any]) -> sp.MapNode:
        kw, name, items, alias, *parts, close = children
        nodes = tuple(p for p in parts if not isinstance(p, _Clause))
        clauses = [p for p in parts if isinstance(p, _Clause)]
        node = self._make_node(
            sp.MapNode, "map", kw, name, clauses, self._tspan(close),
            items=items, alias=self._ident(alias), nodes=nodes,
        )  # fmt: skip
        return self._nest(node, items, *nodes)

    @v_args(inline=True)
    def concurrency_option(self, kw: Token, n: Token) -> _Clause:
        return _Clause("concurrency", self._int(n), self._tspan(kw).to(self._tspan(n)))

    @v_args(inline=True)
    def sequential_option(self, kw: Token) -> _Clause:
        return _Clause("sequential", True, self._tspan(kw))

    @v_args(inline=True)
    def tolerate_option(self, kw: Token, n: Token, percent: Token | None) -> _Clause:
        span = self._tspan(kw).to(self._tspan(percent or n))
        value = sp.Tolerance(self._int(n), percent is not None, span=span)
        return _Clause("tolerate", value, span)

    @v_args(inline=True)
    def call_node(self, kw: Token, name: Token, workflow: sp.Ident, version: Token | None,
                  block: _Block) -> sp.CallNode:  # fmt: skip
        pinned = None if version is None else self._int(version)
        return self._make_node(
            sp.CallNode, "call", kw, name, (block,), block.span, workflow=workflow, version=pinned
        )

    @v_args(inline=True)
    def end_node(self, kw: Token, name: Token, outcome: Token, block: _Block | None) -> sp.EndNode:
        end = block.span if block else self._tspan(outcome)
        return self._make_node(
            sp.EndNode, "end", kw, name, (block,) if block else (), end,
            outcome=sp.Outcome(str(outcome)),
        )  # fmt: skip

    # -- clauses -------------------------------------------------------------

    def block(self, children: list[Any]) -> _Block:
        *clauses, close = children
        close_span = self._tspan(close)
        start = clauses[0].span if clauses else close_span
        return _Block(tuple(clauses), start.to(close_span))

    @v_args(inline=True)
    def args_clause(self, kw: Token, entries: tuple[tuple[sp.Entry, ...], Span]) -> _Clause:
        return _Clause("args", entries[0], self._tspan(kw).to(entries[1]))

    @v_args(inline=True)
    def output_clause(self, kw: Token, entries: tuple[tuple[sp.Entry, ...], Span]) -> _Clause:
        return _Clause("output", entries[0], self._tspan(kw).to(entries[1]))

    @v_args(inline=True)
    def form_clause(self, kw: Token, block: _Fields) -> _Clause:
        return _Clause("form", block.fields, self._tspan(kw).to(block.span))

    @v_args(inline=True)
    def next_clause(self, kw: Token, target: Token) -> _Clause:
        return _Clause("next", self._ident(target), self._tspan(kw).to(self._tspan(target)))

    @v_args(inline=True)
    def compensate_clause(self, kw: Token, target: Token) -> _Clause:
        return _Clause("compensate", self._ident(target), self._tspan(kw).to(self._tspan(target)))

    @v_args(inline=True)
    def renamed_clause(self, kw: Token, old: Token) -> _Clause:
        return _Clause("renamed", self._ident(old), self._tspan(kw).to(self._tspan(old)))

    @v_args(inline=True)
    def error_clause(self, kw: Token, error: Token) -> _Clause:
        return _Clause("error", self._ident(error), self._tspan(kw).to(self._tspan(error)))

    @v_args(inline=True)
    def on_clause(self, kw: Token, errors: tuple[sp.Ident, ...], target: Token) -> _Clause:
        span = self._tspan(kw).to(self._tspan(target))
        return _Clause("on", sp.OnError(errors, self._ident(target), span=span), span)

    def on_any(self, _: list[Any]) -> tuple[sp.Ident, ...]:
        return ()

    def on_errors(self, children: list[Token]) -> tuple[sp.Ident, ...]:
        return tuple(self._ident(t) for t in children)

    @v_args(inline=True)
    def timeout_clause(
        self, kw: Token, after: ex.Expr, mode: Token | None, target: Token
    ) -> _Clause:
        span = self._tspan(kw).to(self._tspan(target))
        value = sp.Timeout(after, self._ident(target), mode is None, span=span)
        return _Clause("timeout", value, span)

    def retry_clause(self, children: list[Any]) -> _Clause:
        kw, *settings, close = children
        span = self._tspan(kw).to(self._tspan(close))
        values: dict[str, Any] = {}
        first: dict[str, Span] = {}
        for key, value, setting_span in (s for s in settings if s is not None):
            if key in first:
                self.ctx.diagnostics.append(
                    diag.Diagnostic.of(
                        diag.MISPLACED_CLAUSE,
                        f"retry setting '{key}' is given twice",
                        setting_span,
                        related=(diag.Related(first[key], "first given here"),),
                    )
                )
                continue
            first[key] = setting_span
            if key == "backoff":
                values["initial_delay"], values["max_delay"] = value
            else:
                values[key] = value
        return _Clause("retry", sp.Retry(**values, span=span), span)

    @v_args(inline=True)
    def retry_attempts(self, kw: Token, n: Token) -> tuple[str, int, Span]:
        return ("attempts", self._int(n), self._tspan(kw).to(self._tspan(n)))

    @v_args(inline=True)
    def retry_backoff(self, kw: Token, low: Token, high: Token | None) -> tuple[str, Any, Span]:
        pair = (self.duration_lit(low), None if high is None else self.duration_lit(high))
        return ("backoff", pair, self._tspan(kw).to(self._tspan(high or low)))

    @v_args(inline=True)
    def retry_factor(self, kw: Token, n: Token) -> tuple[str, Decimal, Span]:
        return ("factor", Decimal(str(n)), self._tspan(kw).to(self._tspan(n)))

    @v_args(inline=True)
    def retry_jitter(self, kw: Token, n: Token) -> tuple[str, Decimal, Span]:
        return ("jitter", Decimal(str(n)), self._tspan(kw).to(self._tspan(n)))

    def retry_non_retryable(self, children: list[Any]) -> tuple[str, Any, Span]:
        kw, *names, close = children
        idents = tuple(self._ident(t) for t in names if t is not None)
        return ("non_retryable", idents, self._tspan(kw).to(self._tspan(close)))

    def mapping(self, children: list[Any]) -> tuple[tuple[sp.Entry, ...], Span]:
        open_, *entries, close = children
        return (
            tuple(e for e in entries if e is not None),
            self._tspan(open_).to(self._tspan(close)),
        )

    @v_args(inline=True)
    def entry(self, name: Token, value: ex.Expr) -> sp.Entry:
        return sp.Entry(self._ident(name), value, span=self._tspan(name).to(value.span))

    # -- expressions ---------------------------------------------------------

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
    def member(self, target: ex.Expr, name: Token) -> ex.Member:
        node = ex.Member(target, str(name), span=target.span.to(self._tspan(name)))
        return self._nest(node, target)

    @v_args(inline=True)
    def index(self, target: ex.Expr, idx: ex.Expr, close: Token) -> ex.Index:
        node = ex.Index(target, idx, span=target.span.to(self._tspan(close)))
        return self._nest(node, target, idx)

    def call(self, children: list[Any]) -> ex.Call:
        name, _open, *args, close = children
        fn = str(name)
        span = self._tspan(name).to(self._tspan(close))
        if fn not in ex.BUILTINS:
            close_matches = difflib.get_close_matches(fn, ex.BUILTINS, n=1)
            if fn in ("now", "today", "random", "uuid", "time"):
                hint = (
                    "workflows are deterministic: use a 'wait ... until' node or pass the value in"
                )
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
                f"decimal {_shown(text)} is out of range ({digits:,} significant digits)",
                self._tspan(tok),
                hint=f"decimals are exact with at most {DECIMAL_DIGITS} significant digits "
                f"and no smaller than 1e{DECIMAL_EMIN}",
            )
            value = Decimal(0)
        return ex.DecimalLit(value, span=self._tspan(tok))

    @v_args(inline=True)
    def string_lit(self, tok: Token) -> ex.StringLit:
        return self._string(tok)

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

    @v_args(inline=True)
    def duration_lit(self, tok: Token) -> ex.DurationLit:
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
                f"duration {_shown(text)} is out of range",
                self._tspan(tok),
                hint=f"durations are 64-bit milliseconds: the longest is {MAX_INT}ms",
            )
            millis = 0
        return ex.DurationLit(text, millis, span=self._tspan(tok))

    @v_args(inline=True)
    def timestamp_lit(self, tok: Token) -> ex.TimestampLit:
        text = str(tok)
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


def _shown(text: str) -> str:
    """A literal as a message quotes it: whole when short, else its start and its length."""
    return text if len(text) <= 30 else f"{text[:20]}... ({len(text):,} characters)"
