"""The canonical printer: spec (plus the source's comments and blank lines) to text.

``format_spec`` is what ``wf fmt`` writes: four-space indentation, one clause
per line, short mappings on one line, operators spaced, parentheses only where
precedence needs them. Comments are kept where they were: a comment on its own
line stays before the element that followed it, a comment at the end of a line
stays at the end of that element's line. Single blank lines between elements
are kept; runs of blank lines become one. Clauses keep their source order.
Formatting is idempotent and ``parse(format(src))`` equals ``parse(src)``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import singledispatch

from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.span import Span

INDENT = "    "
WIDTH = 100
_NONE = Span("", 0, 0, 0, 0)


def format_spec(spec: sp.WorkflowSpec, text: str = "") -> str:
    """Print ``spec`` canonically; ``text`` (its source) supplies blank lines."""
    w = _Writer(text, spec.comments)
    if spec.header is not None:
        h = spec.header
        w.line(f"workflow {h.name.text} version {h.version}", h.span)
    for item in spec.items:
        _item(item, w)
    w.finish()
    return "\n".join(w.out).rstrip("\n") + "\n"


# ----------------------------------------------------------------- expressions


@singledispatch
def format_expr(e: ex.Expr) -> str:
    """An expression in canonical form, parenthesised only where precedence needs it."""
    raise TypeError(f"not an expression: {e!r}")


def _wrap(e: ex.Expr, needs: bool) -> str:
    s = format_expr(e)
    return f"({s})" if needs else s


@format_expr.register
def _binary(e: ex.Binary) -> str:
    p = ex.BINARY_PRECEDENCE[e.op]
    lp, rp = ex.precedence(e.left), ex.precedence(e.right)
    comparison = p == ex.BINARY_PRECEDENCE["=="]
    left = _wrap(e.left, lp < p or (comparison and lp == p))
    right = _wrap(e.right, rp <= p)
    return f"{left} {e.op} {right}"


@format_expr.register
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


@format_expr.register
def _literal(e: ex.IntLit | ex.BoolLit | ex.NullLit) -> str:
    if isinstance(e, ex.NullLit):
        return "null"
    if isinstance(e, ex.BoolLit):
        return "true" if e.value else "false"
    return str(e.value)


@format_expr.register
def _decimal(e: ex.DecimalLit) -> str:
    return format_decimal(e.value)


@format_expr.register
def _string(e: ex.StringLit) -> str:
    return format_string(e.value)


@format_expr.register
def _as_written(e: ex.DurationLit | ex.TimestampLit) -> str:
    return e.text


@format_expr.register
def _ref(e: ex.Ref) -> str:
    return e.name


@format_expr.register
def _member(e: ex.Member) -> str:
    return f"{_postfix_target(e.target)}.{e.name}"


@format_expr.register
def _index(e: ex.Index) -> str:
    return f"{_postfix_target(e.target)}[{format_expr(e.index)}]"


@format_expr.register
def _call_expr(e: ex.Call) -> str:
    return f"{e.function}({_joined(e.args)})"


@format_expr.register
def _list(e: ex.ListLit) -> str:
    return f"[{_joined(e.items)}]"


def _joined(items: Sequence[ex.Expr]) -> str:
    return ", ".join(format_expr(i) for i in items)


# --------------------------------------------------------------------- writer


class _Writer:
    """Emits lines, and the source's comments and blank lines at the right places."""

    def __init__(self, text: str, comments: Sequence[sp.Comment]) -> None:
        self.out: list[str] = []
        self.depth = 0
        self.text = text
        self.src = text.split("\n") if text else []
        self.line_starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self.line_starts.append(i + 1)
        self.comments = sorted(comments, key=lambda c: (c.span.line, c.span.column))
        self.next_comment = 0
        self.block_start = True
        self.last_line = 0  # the source line where the last printed element ended

    # -- comments and blank lines ------------------------------------------

    def _blank_before(self, line: int) -> None:
        if self.block_start or line < 2 or line - 2 >= len(self.src):
            return
        if line <= self.last_line + 1:  # nothing between this and what came before
            return
        if not self.src[line - 2].strip() and self.out and self.out[-1] != "":
            self.out.append("")

    def _emit_comment(self, c: sp.Comment) -> None:
        self._blank_before(c.span.line)
        first, *rest = c.text.rstrip().split("\n")
        self.out.append(INDENT * self.depth + first)
        self.out.extend(r.rstrip() for r in rest)
        self.block_start = False
        self.last_line = max(self.last_line, c.span.end_line)

    def leading(self, line: int) -> None:
        """Emit the comments that stand before source line ``line``."""
        while self.next_comment < len(self.comments):
            c = self.comments[self.next_comment]
            if c.span.line >= line:
                break
            self._emit_comment(c)
            self.next_comment += 1

    def _trailing(self, line: int) -> str:
        parts = []
        while self.next_comment < len(self.comments):
            c = self.comments[self.next_comment]
            if c.span.line != line:
                break
            parts.append(c.text.rstrip())
            self.next_comment += 1
        return ("  " + " ".join(parts)) if parts else ""

    def has_comment_inside(self, span: Span) -> bool:
        """Whether a comment sits within ``span`` (then it cannot be joined on one line)."""
        if span.line <= 0:
            return False
        for c in self.comments[self.next_comment :]:
            start = (c.span.line, c.span.column)
            if start >= (span.end_line, span.end_column):
                return False
            if start > (span.line, span.column):
                return True
        return False

    # -- lines and blocks -----------------------------------------------------

    def line(self, text: str, span: Span) -> None:
        """One line for an element written at ``span``."""
        if span.line > 0:
            self.leading(span.line)
            self._blank_before(span.line)
        trailing = self._trailing(span.end_line) if span.line > 0 else ""
        self.out.append(INDENT * self.depth + text + trailing)
        self.block_start = False
        self.last_line = max(self.last_line, span.end_line)

    def open(self, text: str, span: Span, first: Span | None = None, opener: str = " {") -> None:
        """The first line of a block, ``text {``; the block's content follows.

        A comment at the end of the opening line belongs to the block's first
        element instead when that element was written on the same line.
        """
        if span.line > 0:
            self.leading(span.line)
            self._blank_before(span.line)
        same_line = first is not None and first.line == span.line
        trailing = self._trailing(span.line) if span.line > 0 and not same_line else ""
        self.out.append(INDENT * self.depth + text + opener + trailing)
        self.depth += 1
        self.block_start = True
        self.last_line = max(self.last_line, span.line)

    def turn(self, text: str) -> None:
        """End one bracketed part and open the next on the same line, as ``) -> {``."""
        self.out.append(INDENT * (self.depth - 1) + text)
        self.block_start = True

    def close(self, span: Span, suffix: str = "", closer: str = "}") -> None:
        """The closing ``}`` of a block whose element is written at ``span``."""
        if span.line > 0:
            self.leading(span.end_line)
        self.depth -= 1
        trailing = self._trailing(span.end_line) if span.line > 0 else ""
        self.out.append(INDENT * self.depth + closer + suffix + trailing)
        self.block_start = False
        self.last_line = max(self.last_line, span.end_line)

    def enclosing(self, keyword: str, first: Span, last: Span) -> Span:
        """The span of ``keyword { … }`` around items spanning ``first``..``last``.

        The spec keeps the items of a clause, not the clause; its keyword and
        braces are found in the source, so that comments stay on their lines.
        """
        if first.line <= 0 or not self.src:
            return first.to(last)
        text = self.text
        start = self._offset(first.line, first.column)
        brace = text.rfind("{", 0, start)
        kw = text.rfind(keyword, 0, brace) if brace >= 0 else -1
        close = text.find("}", self._offset(last.end_line, last.end_column))
        if kw < 0 or close < 0:
            return first.to(last)
        (sl, sc), (el, ec) = self._position(kw), self._position(close + 1)
        return Span(first.file, sl, sc, el, ec)

    def _offset(self, line: int, column: int) -> int:
        return self.line_starts[line - 1] + column - 1

    def _position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def fits(self, text: str) -> bool:
        return len(INDENT * self.depth) + len(text) <= WIDTH

    def finish(self) -> None:
        self.leading(1 << 30)


# ------------------------------------------------------------- shared pieces


def _field(f: sp.Field) -> str:
    default = "" if f.default is None else f" = {format_expr(f.default)}"
    return f"{f.name.text}: {f.type}{default}"


def _entry(e: sp.Entry) -> str:
    return f"{e.name.text}: {format_expr(e.value)}"


def _braced(w: _Writer, prefix: str, items: Sequence[tuple[str, Span]], span: Span,
            suffix: str = "") -> None:  # fmt: skip
    """``prefix { a, b }`` on one line when it fits and holds no comment, else one per line."""
    if not items:
        w.line(f"{prefix} {{}}{suffix}".lstrip(), span)
        return
    one = f"{prefix} {{ {', '.join(t for t, _ in items)} }}{suffix}".lstrip()
    if w.fits(one) and not w.has_comment_inside(span):
        w.line(one, span)
        return
    w.open(prefix, span, items[0][1])
    for text, item_span in items:
        w.line(text + ",", item_span)
    w.close(span, suffix)


def _fields(
    w: _Writer, prefix: str, fields: Sequence[sp.Field], span: Span, suffix: str = ""
) -> None:
    _braced(w, prefix, [(_field(f), f.span) for f in fields], span, suffix)


def _names(idents: Sequence[sp.Ident]) -> str:
    return ", ".join(i.text for i in idents)


# --------------------------------------------------------------- declarations


@singledispatch
def _item(item: object, w: _Writer) -> None:
    """Print one declaration or node; each kind registers its printer below."""
    raise TypeError(f"not a declaration or node: {item!r}")


@_item.register
def _import(d: sp.ImportDecl, w: _Writer) -> None:
    alias = "" if d.alias is None else f" as {d.alias.text}"
    w.line(f"import {format_string(d.path)}{alias}", d.span)


@_item.register
def _type(d: sp.TypeDecl, w: _Writer) -> None:
    _fields(w, f"type {d.name.text}", d.fields, d.span)


@_item.register
def _enum(d: sp.EnumDecl, w: _Writer) -> None:
    _braced(w, f"enum {d.name.text}", [(m.text, m.span) for m in d.members], d.span)


_BLOCK_KEYWORDS = {sp.InputDecl: "input", sp.ContextDecl: "context", sp.OutputDecl: "output"}


@_item.register
def _block_decl(d: sp.InputDecl | sp.ContextDecl | sp.OutputDecl, w: _Writer) -> None:
    _fields(w, _BLOCK_KEYWORDS[type(d)], d.fields, d.span)


@_item.register
def _event_decl(d: sp.SignalDecl | sp.MessageDecl, w: _Writer) -> None:
    keyword = "signal" if isinstance(d, sp.SignalDecl) else "message"
    if d.payload is None:
        w.line(f"{keyword} {d.name.text}", d.span)
    else:
        _fields(w, f"{keyword} {d.name.text}", d.payload, d.span)


@_item.register
def _error(d: sp.ErrorDecl, w: _Writer) -> None:
    w.line(f"error {_names(d.names)}", d.span)


@_item.register
def _service(d: sp.ServiceDecl, w: _Writer) -> None:
    """One line when it fits; else the result, then the parameters, one per line."""
    raises = f" raises {_names(d.raises)}" if d.raises else ""
    params = [(_field(p), p.span) for p in d.params]
    head = f"service {d.name.text}({', '.join(t for t, _ in params)})"
    result = None if d.result is None else [(_field(f), f.span) for f in d.result]
    inline = (
        ""
        if result is None
        else f" -> {{ {', '.join(t for t, _ in result)} }}".replace("{  }", "{}")
    )
    if w.fits(head + inline + raises) and not w.has_comment_inside(d.span):
        w.line(head + inline + raises, d.span)
        return
    if result is not None and w.fits(head + " -> {"):
        _braced(w, f"{head} ->", result, d.span, raises)
        return
    w.open(f"service {d.name.text}", d.span, params[0][1] if params else None, opener="(")
    for text, item_span in params:
        w.line(text + ",", item_span)
    if result is None or w.fits(")" + inline + raises):
        w.close(d.span, inline + raises, closer=")")
        return
    w.turn(") -> {")
    for text, item_span in result:
        w.line(text + ",", item_span)
    w.close(d.span, raises)


@_item.register
def _start(d: sp.StartDecl, w: _Writer) -> None:
    w.line(f"start {d.target.text}", d.span)


# ---------------------------------------------------------------------- nodes

#: A piece of a node body: where it was written (for ordering) and how to print it.
_Part = tuple[Span, Callable[[_Writer], None]]


def _at(span: Span) -> tuple[int, int]:
    return (span.line, span.column)


def _body(w: _Writer, head: str, span: Span, parts: list[_Part]) -> None:
    """``head { parts }`` with the parts in source order (canonical order if generated)."""
    if not parts:
        w.line(head + " {}", span)
        return
    # A part without a source position (generated, or an empty clause) keeps its
    # canonical place: right after the part that precedes it in canonical order.
    keys, last = [], (0, 0)
    for part_span, _ in parts:
        last = _at(part_span) if part_span.line > 0 else last
        keys.append(last)
    ordered = [p for _, p in sorted(zip(keys, parts, strict=True), key=lambda kp: kp[0])]
    w.open(head, span, ordered[0][0])
    for _, printer in ordered:
        printer(w)
    w.close(span)


def _line_part(span: Span, text: str) -> _Part:
    return (span, lambda w: w.line(text, span))


def _items_part(w: _Writer, keyword: str, items: list[tuple[str, Span]]) -> _Part:
    """A braced clause (``args {…}``, ``form {…}``) located by its items in the source."""
    span = w.enclosing(keyword, items[0][1], items[-1][1]) if items else _NONE
    return (span, lambda w: _braced(w, keyword, items, span))


def _retry_text(r: sp.Retry) -> list[str]:
    settings = []
    if r.attempts is not None:
        settings.append(f"attempts: {r.attempts}")
    if r.initial_delay is not None:
        high = "" if r.max_delay is None else f"..{r.max_delay.text}"
        settings.append(f"backoff: {r.initial_delay.text}{high}")
    if r.factor is not None:
        settings.append(f"factor: {format(r.factor, 'f')}")
    if r.jitter is not None:
        settings.append(f"jitter: {format(r.jitter, 'f')}")
    if r.non_retryable is not None:
        settings.append(f"non_retryable: [{_names(r.non_retryable)}]")
    return settings


def _clause_parts(w: _Writer, node: object) -> list[_Part]:
    """The clauses a node holds, each as a part; in the canonical order of the sketch."""
    parts: list[_Part] = []
    args: tuple[sp.Entry, ...] = getattr(node, "args", ())
    if args:
        parts.append(_items_part(w, "args", [(_entry(e), e.span) for e in args]))
    form: tuple[sp.Field, ...] | None = getattr(node, "form", None)
    if form is not None:
        parts.append(_items_part(w, "form", [(_field(f), f.span) for f in form]))
    output: tuple[sp.Entry, ...] = getattr(node, "output", ())
    if output:
        parts.append(_items_part(w, "output", [(_entry(e), e.span) for e in output]))
    retry: sp.Retry | None = getattr(node, "retry", None)
    if retry is not None:
        settings = [(text, _NONE) for text in _retry_text(retry)]
        parts.append((retry.span, lambda w: _braced(w, "retry", settings, retry.span)))
    for t in getattr(node, "timeouts", ()):
        mode = "" if t.interrupting else " non-interrupting"
        parts.append(_line_part(t.span, f"timeout {format_expr(t.after)}{mode} -> {t.target.text}"))
    for h in getattr(node, "handlers", ()):
        errors = "any" if h.catch_all else _names(h.errors)
        parts.append(_line_part(h.span, f"on {errors} -> {h.target.text}"))
    compensate: sp.Ident | None = getattr(node, "compensate", None)
    if compensate is not None:
        parts.append(_line_part(compensate.span, f"compensate {compensate.text}"))
    error: sp.Ident | None = getattr(node, "error", None)
    if error is not None:
        parts.append(_line_part(error.span, f"error {error.text}"))
    renamed: sp.Ident | None = getattr(node, "renamed_from", None)
    if renamed is not None:
        parts.append(_line_part(renamed.span, f"renamed from {renamed.text}"))
    nxt: sp.Ident | None = getattr(node, "next", None)
    if nxt is not None and not (isinstance(node, sp.ParallelNode) and node.join is not None):
        parts.append(_line_part(nxt.span, f"next {nxt.text}"))
    return parts


def _work(work: sp.TaskWork) -> str:
    if isinstance(work, sp.ServiceWork):
        return f"service {work.service.text}"
    if isinstance(work, sp.ScriptWork):
        return "script"
    keyword = "user" if isinstance(work, sp.UserWork) else "manual"
    return keyword if work.assignee is None else f"{keyword} {format_string(work.assignee.value)}"


@_item.register
def _task(n: sp.TaskNode, w: _Writer) -> None:
    _body(w, f"task {n.name.text}: {_work(n.work)}", n.span, _clause_parts(w, n))


@_item.register
def _choice(n: sp.ChoiceNode, w: _Writer) -> None:
    parts: list[_Part] = []
    for arm in n.arms:
        if arm.guard is None:
            parts.append(_line_part(arm.span, f"else -> {arm.target.text}"))
        else:
            parts.append(
                _line_part(arm.span, f"when {format_expr(arm.guard)} -> {arm.target.text}")
            )
    if n.renamed_from is not None:
        parts.append(_line_part(n.renamed_from.span, f"renamed from {n.renamed_from.text}"))
    _body(w, f"choice {n.name.text}", n.span, parts)


def _trigger(t: sp.WaitTrigger) -> str:
    if isinstance(t, sp.SignalTrigger):
        return f"signal {t.signal.text}"
    if isinstance(t, sp.MessageTrigger):
        return f"message {t.message.text} correlate {format_expr(t.correlation)}"
    return f"until {format_expr(t.at)}"


@_item.register
def _wait(n: sp.WaitNode, w: _Writer) -> None:
    _body(w, f"wait {n.name.text}: {_trigger(n.trigger)}", n.span, _clause_parts(w, n))


@_item.register
def _sleep(n: sp.SleepNode, w: _Writer) -> None:
    head = f"sleep {n.name.text} {format_expr(n.duration)}"
    written_as_block = n.span.end_line > n.span.line or w.has_comment_inside(n.span)
    if n.next is not None and n.renamed_from is None and not written_as_block:
        w.line(f"{head} next {n.next.text}", n.span)
    else:
        _body(w, head, n.span, _clause_parts(w, n))


def _join(n: sp.ParallelNode, j: sp.Join) -> str:
    if j.kind is sp.JoinKind.ALL:
        policy = "all"
    elif j.kind is sp.JoinKind.ANY:
        policy = "any"
    else:
        policy = f"{j.count}" + ("" if j.of is None else f" of {j.of}")
    target = "" if n.next is None else f" -> {n.next.text}"
    return f"join {policy}{target}"


def _branch(w: _Writer, b: sp.Branch) -> None:
    _nodes_body(w, f"branch {b.name.text}", b.span, b.nodes, [])


def _nodes_body(w: _Writer, head: str, span: Span, nodes: Sequence[sp.Node],
                before: list[_Part], after: list[_Part] | None = None) -> None:  # fmt: skip
    """A body of nodes (a branch, a map) with the options before and clauses after."""
    parts = list(before)
    for node in nodes:
        parts.append((node.span, _node_printer(node)))
    _body(w, head, span, parts + (after or []))


def _node_printer(node: sp.Node) -> Callable[[_Writer], None]:
    return lambda w: _item(node, w)


def _branch_printer(b: sp.Branch) -> Callable[[_Writer], None]:
    return lambda w: _branch(w, b)


@_item.register
def _parallel(n: sp.ParallelNode, w: _Writer) -> None:
    parts: list[_Part] = [(b.span, _branch_printer(b)) for b in n.branches]
    if n.join is not None:
        parts.append(_line_part(n.join.span, _join(n, n.join)))
    parts += _clause_parts(w, n)
    _body(w, f"parallel {n.name.text}", n.span, parts)


@_item.register
def _map(n: sp.MapNode, w: _Writer) -> None:
    options: list[_Part] = []
    none = _NONE
    if n.concurrency is not None:
        options.append(_line_part(none, f"concurrency {n.concurrency}"))
    if n.sequential:
        options.append(_line_part(none, "sequential"))
    if n.tolerate is not None:
        pct = "%" if n.tolerate.percent else ""
        options.append(_line_part(n.tolerate.span, f"tolerate {n.tolerate.value}{pct}"))
    head = f"map {n.name.text} over {format_expr(n.items)} as {n.alias.text}"
    _nodes_body(w, head, n.span, n.nodes, options, _clause_parts(w, n))


@_item.register
def _call(n: sp.CallNode, w: _Writer) -> None:
    version = "" if n.version is None else f" version {n.version}"
    _body(
        w, f"call {n.name.text}: workflow {n.workflow.text}{version}", n.span, _clause_parts(w, n)
    )


@_item.register
def _end(n: sp.EndNode, w: _Writer) -> None:
    head = f"end {n.name.text}: {n.outcome.value}"
    parts = _clause_parts(w, n)
    if parts:
        _body(w, head, n.span, parts)
    else:
        w.line(head, n.span)
