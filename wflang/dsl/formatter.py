"""The canonical printer: spec (plus the source's comments and blank lines) to text.

``format_spec`` is what ``wf fmt`` writes: four-space indentation, one clause
per line, short mappings on one line, operators spaced, parentheses only where
precedence needs them. Comments are kept where they were (``wflang.dsl.layout``
places them). Single blank lines between elements are kept; runs of blank lines
become one. Clauses, retry settings and map options keep their source order.
Formatting is idempotent and ``parse(format(src))`` equals ``parse(src)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, assert_never

from wflang.dsl import spec as sp
from wflang.dsl.expr import Expr
from wflang.dsl.expr_format import format_decimal, format_expr, format_string
from wflang.dsl.layout import Writer
from wflang.dsl.span import Span

# The expressions' printing lives in ``expr_format``; their names are the formatter's too.
__all__ = ["format_decimal", "format_expr", "format_spec", "format_string"]

_NONE = Span("", 0, 0, 0, 0)
T = TypeVar("T")


def format_spec(spec: sp.WorkflowSpec, text: str = "") -> str:
    """Print ``spec`` canonically; ``text`` (its source) supplies blank lines."""
    w = Writer(text, spec.comments)
    if spec.header is not None:
        h = spec.header
        w.line(f"workflow {h.name.text} version {h.version}", h.span)
    for item in spec.items:
        _item(item, w)
    w.finish()
    return "\n".join(w.out).rstrip("\n") + "\n"


# ------------------------------------------------------------- shared pieces


def _field(f: sp.Field) -> str:
    default = "" if f.default is None else f" = {format_expr(f.default)}"
    return f"{f.name.text}: {f.type}{default}"


def _entry(e: sp.Entry) -> str:
    return f"{'local.' if e.local else ''}{e.name.text}: {format_expr(e.value)}"


def _braced(w: Writer, prefix: str, items: Sequence[tuple[str, Span]], span: Span,
            suffix: str = "") -> None:  # fmt: skip
    """``prefix { a, b }`` on one line when it fits and holds no comment, else one per line."""
    one = f"{prefix} {_one_line(items)}{suffix}"
    opening, closing = w.braces(span)
    if w.fits(one) and not w.has_comment_inside(span, closing):
        w.line(one, span)
        return
    w.open(prefix, span, opening + 1 if opening >= 0 else -1)
    for text, item_span in items:
        w.line(text + ",", item_span)
    w.close(span, closing, suffix)


def _one_line(items: Sequence[tuple[str, Span]]) -> str:
    return f"{{ {', '.join(t for t, _ in items)} }}" if items else "{}"


def _fields(
    w: Writer, prefix: str, fields: Sequence[sp.Field], span: Span, suffix: str = ""
) -> None:
    _braced(w, prefix, [(_field(f), f.span) for f in fields], span, suffix)


def _names(idents: Sequence[sp.Ident]) -> str:
    return ", ".join(i.text for i in idents)


# --------------------------------------------------------------- declarations


def _item(item: sp.Item, w: Writer) -> None:
    """Print one declaration or node with the printer of its kind (below)."""
    match item:
        case sp.ImportDecl():
            _import(item, w)
        case sp.TypeDecl():
            _type(item, w)
        case sp.EnumDecl():
            _enum(item, w)
        case sp.InputDecl() | sp.ContextDecl() | sp.OutputDecl():
            _block_decl(item, w)
        case sp.SignalDecl() | sp.MessageDecl():
            _event_decl(item, w)
        case sp.ErrorDecl():
            _error(item, w)
        case sp.ServiceDecl():
            _service(item, w)
        case sp.StartDecl():
            _start(item, w)
        case sp.TaskNode():
            _task(item, w)
        case sp.ChoiceNode():
            _choice(item, w)
        case sp.WaitNode():
            _wait(item, w)
        case sp.FirstNode():
            _first(item, w)
        case sp.SleepNode():
            _sleep(item, w)
        case sp.ParallelNode():
            _parallel(item, w)
        case sp.MapNode():
            _map(item, w)
        case sp.CallNode():
            _call(item, w)
        case sp.EndNode():
            _end(item, w)
        case _:
            assert_never(item)


def _import(d: sp.ImportDecl, w: Writer) -> None:
    alias = "" if d.alias is None else f" as {d.alias.text}"
    w.line(f"import {format_string(d.path)}{alias}", d.span)


def _type(d: sp.TypeDecl, w: Writer) -> None:
    _fields(w, f"type {d.name.text}", d.fields, d.span)


def _enum(d: sp.EnumDecl, w: Writer) -> None:
    _braced(w, f"enum {d.name.text}", [(m.text, m.span) for m in d.members], d.span)


_BLOCK_KEYWORDS = {sp.InputDecl: "input", sp.ContextDecl: "context", sp.OutputDecl: "output"}


def _block_decl(d: sp.InputDecl | sp.ContextDecl | sp.OutputDecl, w: Writer) -> None:
    _fields(w, _BLOCK_KEYWORDS[type(d)], d.fields, d.span)


def _event_decl(d: sp.SignalDecl | sp.MessageDecl, w: Writer) -> None:
    keyword = "signal" if isinstance(d, sp.SignalDecl) else "message"
    if d.payload is None:
        w.line(f"{keyword} {d.name.text}", d.span)
    else:
        _fields(w, f"{keyword} {d.name.text}", d.payload, d.span)


def _error(d: sp.ErrorDecl, w: Writer) -> None:
    if d.payloads:  # declared alone, with its payload
        name, fields = d.payloads[0]
        _fields(w, f"error {name}", fields, d.span)
        return
    w.line(f"error {_names(d.names)}", d.span)


def _service(d: sp.ServiceDecl, w: Writer) -> None:
    """One line when it fits; else the result, then the parameters, one per line.
    What follows the result (``reads``, then ``raises``) stays on its closing line."""
    raises = (" reads" if d.read_only else "") + (f" raises {_names(d.raises)}" if d.raises else "")
    params = [(_field(p), p.span) for p in d.params]
    head = f"service {d.name.text}({', '.join(t for t, _ in params)})"
    result = None if not isinstance(d.result, tuple) else [(_field(f), f.span) for f in d.result]
    named = "" if d.result is None or isinstance(d.result, tuple) else f" -> {d.result}"
    inline = named if result is None else f" -> {_one_line(result)}"
    _, closing = w.braces(d.span, "(", "}" if result is not None else ")")
    if w.fits(head + inline + raises) and not w.has_comment_inside(d.span, closing):
        w.line(head + inline + raises, d.span)
        return
    if result is not None and w.fits(head + " -> {") and not w.has_comment_inside(_params(w, d)):
        _braced(w, f"{head} ->", result, d.span, raises)
        return
    paren, rparen = w.braces(_params(w, d), "(", ")")
    w.open(f"service {d.name.text}", d.span, paren + 1 if paren >= 0 else -1, opener="(")
    for text, item_span in params:
        w.line(text + ",", item_span)
    opening, closing = w.braces(d.span)
    result_has_comment = w.comment_between(opening, closing)
    if result is None or (w.fits(")" + inline + raises) and not result_has_comment):
        w.close(d.span, rparen, inline + raises, closer=")")
        return
    w.turn(") -> {", rparen, opening)
    for text, item_span in result:
        w.line(text + ",", item_span)
    w.close(d.span, closing, raises)


def _params(w: Writer, d: sp.ServiceDecl) -> Span:
    """The span of a service's parameter list, ``( … )``."""
    if d.span.line <= 0:
        return d.span
    start = w.start(d.name.span)
    rparen = w.find(")", w.end(d.params[-1].span) if d.params else w.find("(", start))
    return w.span(d.span.file, start, rparen + 1) if rparen >= 0 else d.span


def _start(d: sp.StartDecl, w: Writer) -> None:
    w.line(f"start {d.target.text}", d.span)


# ---------------------------------------------------------------------- nodes

#: A piece of a node body: where it was written (for ordering) and how to print it.
_Part = tuple[Span, Callable[[Writer], None]]


def _in_source_order(parts: Sequence[tuple[Span, T]]) -> list[T]:
    """The parts in the order they were written.

    A part without a source position (generated, or an empty clause) keeps its
    canonical place: right after the part that precedes it in canonical order.
    """
    keys, last = [], (0, 0)
    for span, _ in parts:
        last = (span.line, span.column) if span.line > 0 else last
        keys.append(last)
    return [p for _, (_, p) in sorted(zip(keys, parts, strict=True), key=lambda kp: kp[0])]


def _body(w: Writer, head: str, span: Span, parts: list[_Part], head_end: int | None = None,
          ) -> None:  # fmt: skip
    """``head { parts }`` with the parts in source order (canonical order if generated).

    ``head_end`` is where the head ends in the source when it has no brace
    (a sleep written ``sleep s 1s next t``).
    """
    opening, closing = w.braces(span)
    if not parts and not w.has_comment_inside(span, closing):
        w.line(head + " {}", span)
        return
    if head_end is None or opening >= 0:
        head_end = opening + 1 if opening >= 0 else -1
    w.open(head, span, head_end)
    for printer in _in_source_order(parts):
        printer(w)
    w.close(span, closing)


def _line_part(span: Span, text: str) -> _Part:
    return (span, lambda w: w.line(text, span))


def _items_part(w: Writer, keyword: str, items: list[tuple[str, Span]], node: object) -> _Part:
    """A braced clause (``args {…}``, ``form {…}``) located by its items in the source,
    or, empty, by its keyword and braces (so that comments inside stay there)."""
    if items:
        span = w.enclosing(keyword, items[0][1], items[-1][1])
    else:
        span = _empty_clause(w, keyword, node) or _NONE
    return (span, lambda w: _braced(w, keyword, items, span))


def _empty_clause(w: Writer, keyword: str, node: object) -> Span | None:
    """Where an empty clause of a node is written; None in a node holding other nodes,
    whose clauses could be found in them."""
    if isinstance(node, sp.ParallelNode | sp.MapNode):
        return None
    return w.empty_clause(keyword, getattr(node, "span", _NONE))


def _commented_empty(w: Writer, keyword: str, node: object) -> _Part | None:
    """An empty ``args {}`` or ``output {}`` holding comments: printed to keep them
    (without comments, the clause says nothing and is left out)."""
    span = _empty_clause(w, keyword, node)
    if span is None or not w.has_comment_inside(span):
        return None
    return (span, lambda w: _braced(w, keyword, [], span))


#: A retry setting's keyword; group 1 is its name.
_SETTING = r"\b(attempts|backoff|factor|jitter|non_retryable)\s*:"


def _retry_settings(r: sp.Retry) -> list[tuple[str, str]]:
    """Each setting given, as (keyword, text), in canonical order."""
    settings = []
    if r.attempts is not None:
        settings.append(("attempts", f"attempts: {r.attempts}"))
    if r.initial_delay is not None:
        high = "" if r.max_delay is None else f"..{r.max_delay.text}"
        settings.append(("backoff", f"backoff: {r.initial_delay.text}{high}"))
    if r.factor is not None:
        settings.append(("factor", f"factor: {format(r.factor, 'f')}"))
    if r.jitter is not None:
        settings.append(("jitter", f"jitter: {format(r.jitter, 'f')}"))
    if r.non_retryable is not None:
        settings.append(("non_retryable", f"non_retryable: [{_names(r.non_retryable)}]"))
    return settings


def _clause_parts(w: Writer, node: object) -> list[_Part]:
    """The clauses a node holds, each as a part; in the canonical order of the sketch."""
    parts: list[_Part] = []
    args: tuple[sp.Entry, ...] = getattr(node, "args", ())
    if args:
        parts.append(_items_part(w, "args", [(_entry(e), e.span) for e in args], node))
    elif hasattr(node, "args") and (empty := _commented_empty(w, "args", node)):
        parts.append(empty)
    form: tuple[sp.Field, ...] | None = getattr(node, "form", None)
    if form is not None:
        parts.append(_items_part(w, "form", [(_field(f), f.span) for f in form], node))
    raises: tuple[sp.Ident, ...] = getattr(node, "raises", ())
    if raises:
        parts.append(_line_part(raises[0].span.to(raises[-1].span), f"raises {_names(raises)}"))
    output: tuple[sp.Entry, ...] = getattr(node, "output", ())
    if output:
        parts.append(_items_part(w, "output", [(_entry(e), e.span) for e in output], node))
    elif hasattr(node, "output") and (empty := _commented_empty(w, "output", node)):
        parts.append(empty)
    retry: sp.Retry | None = getattr(node, "retry", None)
    if retry is not None:
        where = w.keywords(_SETTING, retry.span, ())
        found = [(where.get(key, _NONE), (text, where.get(key, _NONE))) for key, text in
                 _retry_settings(retry)]  # fmt: skip
        settings = _in_source_order(found)
        parts.append((retry.span, lambda w: _braced(w, "retry", settings, retry.span)))
    heartbeat: Expr | None = getattr(node, "heartbeat", None)
    if heartbeat is not None:
        parts.append(_line_part(heartbeat.span, f"heartbeat {format_expr(heartbeat)}"))
    for t in getattr(node, "timeouts", ()):
        if t.cycle is not None:  # ``every 10m, at most 3`` or ``every R3/PT10M``
            when = t.when if t.cycle.iso else t.when.removeprefix("every ")
            parts.append(_line_part(t.span, f"every {when} -> {t.target.text}"))
            continue
        mode = "" if t.interrupting else " non-interrupting"
        parts.append(_line_part(t.span, f"timeout {format_expr(t.after)}{mode} -> {t.target.text}"))
    for h in getattr(node, "handlers", ()):
        errors = "any" if h.catch_all else _names(h.errors)
        parts.append(_line_part(h.span, f"on {errors} -> {h.target.text}"))
    for event in getattr(node, "events", ()):
        parts.append(_event_part(w, event))
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


def _event_part(w: Writer, e: sp.OnEvent) -> _Part:
    """``on signal S [non-interrupting] -> NODE``, with its ``{ output { … } }`` if any."""
    mode = "" if e.interrupting else " non-interrupting"
    head = f"on {_trigger(e.trigger)}{mode} -> {e.target.text}"
    if not e.output:
        return _line_part(e.span, head)
    output = _items_part(w, "output", [(_entry(x), x.span) for x in e.output], e)
    return (e.span, lambda w: _body(w, head, e.span, [output]))


def _work(work: sp.TaskWork) -> str:
    if isinstance(work, sp.ServiceWork):
        return f"service {work.service.text}" + (" async" if work.asynchronous else "")
    if isinstance(work, sp.ScriptWork):
        return "script"
    if isinstance(work, sp.SendWork):
        to = work.kind.target_keyword
        return f"send {work.kind.value} {work.name.text} {to} {format_expr(work.target)}"
    keyword = "user" if isinstance(work, sp.UserWork) else "manual"
    return keyword if work.assignee is None else f"{keyword} {format_expr(work.assignee)}"


def _task(n: sp.TaskNode, w: Writer) -> None:
    _body(w, f"task {n.name.text}: {_work(n.work)}", n.span, _clause_parts(w, n))


def _choice(n: sp.ChoiceNode, w: Writer) -> None:
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


def _wait(n: sp.WaitNode, w: Writer) -> None:
    _body(w, f"wait {n.name.text}: {_trigger(n.trigger)}", n.span, _clause_parts(w, n))


def _first(n: sp.FirstNode, w: Writer) -> None:
    parts = [_arm_part(w, arm) for arm in n.arms]
    if n.renamed_from is not None:
        parts.append(_line_part(n.renamed_from.span, f"renamed from {n.renamed_from.text}"))
    _body(w, f"first {n.name.text}", n.span, parts)


def _arm_part(w: Writer, arm: sp.EventArm) -> _Part:
    """An arm on one line, or with its ``output`` (or a comment) in a block."""
    t = arm.trigger
    if isinstance(t, sp.AfterTrigger):
        when = f"after {format_expr(t.after)}"
    elif isinstance(t, sp.UntilTrigger):
        when = f"until {format_expr(t.at)}"
    else:
        when = f"on {_trigger(t)}"
    head = f"{when} -> {arm.target.text}"
    # A timer arm takes no block (the grammar): a comment inside it goes with its line.
    timer = isinstance(t, sp.TimerTrigger)
    if timer or (not arm.output and not w.has_comment_inside(arm.span)):
        return _line_part(arm.span, head)
    return (arm.span, lambda w: _body(w, head, arm.span, _clause_parts(w, arm)))


def _sleep(n: sp.SleepNode, w: Writer) -> None:
    head = f"sleep {n.name.text} {format_expr(n.duration)}"
    written_as_block = n.span.end_line > n.span.line or w.has_comment_inside(n.span)
    if n.next is not None and n.renamed_from is None and not written_as_block:
        w.line(f"{head} next {n.next.text}", n.span)
    else:
        _body(w, head, n.span, _clause_parts(w, n), w.end(n.duration.span))


def _join(n: sp.ParallelNode, j: sp.Join) -> str:
    if j.kind is sp.JoinKind.ALL:
        policy = "all"
    elif j.kind is sp.JoinKind.ANY:
        policy = "any"
    else:
        policy = f"{j.count}" + ("" if j.of is None else f" of {j.of}")
    target = "" if n.next is None else f" -> {n.next.text}"
    return f"join {policy}{target}"


def _branch(w: Writer, b: sp.Branch) -> None:
    _nodes_body(w, f"branch {b.name.text}", b.span, b.nodes, [])


def _nodes_body(w: Writer, head: str, span: Span, nodes: Sequence[sp.Node],
                before: list[_Part], after: list[_Part] | None = None) -> None:  # fmt: skip
    """A body of nodes (a branch, a map) with the options before and clauses after."""
    parts = list(before)
    for node in nodes:
        parts.append((node.span, _node_printer(node)))
    _body(w, head, span, parts + (after or []))


def _node_printer(node: sp.Node) -> Callable[[Writer], None]:
    return lambda w: _item(node, w)


def _branch_printer(b: sp.Branch) -> Callable[[Writer], None]:
    return lambda w: _branch(w, b)


def _parallel(n: sp.ParallelNode, w: Writer) -> None:
    parts: list[_Part] = [(b.span, _branch_printer(b)) for b in n.branches]
    if n.join is not None:
        parts.append(_line_part(n.join.span, _join(n, n.join)))
    parts += _clause_parts(w, n)
    _body(w, f"parallel {n.name.text}", n.span, parts)


#: A map option kept as a plain value; group 1 is its keyword.
_OPTION = r"\b(concurrency(?=\s+[0-9])|sequential)\b"


def _map(n: sp.MapNode, w: Writer) -> None:
    clauses = _clause_parts(w, n)
    opening, _ = w.braces(n.span)
    body = n.span if opening < 0 else w.span(n.span.file, opening, w.end(n.span))
    skip = [p.span for p in n.nodes] + [s for s, _ in clauses]
    skip += [c.span for c in n.collects] + [f.span for f in n.locals]
    if n.tolerate is not None:
        skip.append(n.tolerate.span)
    where = w.keywords(_OPTION, body, skip)
    options: list[_Part] = []
    if n.concurrency is not None:
        options.append(_line_part(where.get("concurrency", _NONE), f"concurrency {n.concurrency}"))
    if n.sequential:
        options.append(_line_part(where.get("sequential", _NONE), "sequential"))
    if n.tolerate is not None:
        pct = "%" if n.tolerate.percent else ""
        options.append(_line_part(n.tolerate.span, f"tolerate {n.tolerate.value}{pct}"))
    if n.locals:
        options.append(_items_part(w, "local", [(_field(f), f.span) for f in n.locals], n))
    for c in n.collects:
        options.append(_line_part(c.span, f"collect {format_expr(c.value)} into context."
                                  f"{c.target.text}"))  # fmt: skip
    head = f"map {n.name.text} over {format_expr(n.items)} as {n.alias.text}"
    _nodes_body(w, head, n.span, n.nodes, options, clauses)


def _call(n: sp.CallNode, w: Writer) -> None:
    version = "" if n.version is None else f" version {n.version}"
    _body(
        w, f"call {n.name.text}: workflow {n.workflow.text}{version}", n.span, _clause_parts(w, n)
    )


def _end(n: sp.EndNode, w: Writer) -> None:
    head = f"end {n.name.text}: {n.outcome.value}"
    parts = _clause_parts(w, n)
    _, closing = w.braces(n.span)
    if parts or w.has_comment_inside(n.span, closing):
        _body(w, head, n.span, parts)
    else:
        w.line(head, n.span)
