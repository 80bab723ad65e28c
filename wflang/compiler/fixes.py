"""Quick fixes: edits of the source computed from a finding, for the language server's
code actions and ``wf check --fix``.

A fix is pure: a title and text edits (a span of the file and its new text) made from
the finding, the file's text and its model. ``safe`` fixes only repair an error the
checker names (a misspelt name it suggests the spelling of), so applying them cannot
change what a working program does; the others make a choice for the author (which
node a new ``next`` goes to, a new declaration) and are offered, never applied
unasked. ``suppression`` silences a finding on its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from attrs import frozen

from wflang.compiler.guards import uncovered_cases
from wflang.compiler.inference import type_env, typing_of
from wflang.compiler.model import Model
from wflang.compiler.types import Unknown
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Diagnostic
from wflang.dsl.formatter import format_expr
from wflang.dsl.span import Span

_DID_YOU_MEAN = re.compile(r"did you mean '([^']+)'\?")
_UNKNOWN = re.compile(r"^unknown (signal|message|service|error) '([^']+)'")
_WORD = re.compile(r"[A-Za-z_]\w*$")


@frozen
class Edit:
    """Replace the text of ``span`` (an empty span: insert at its start) by ``text``."""

    span: Span
    text: str


@frozen
class Fix:
    title: str
    code: str  # the finding's
    edits: tuple[Edit, ...]
    safe: bool = False


def fixes(d: Diagnostic, model: Model | None, text: str) -> list[Fix]:
    """The fixes of one finding of the file ``text`` (whose model is ``model``)."""
    found = list(_did_you_mean(d, text))
    if model is not None:
        if d.code == "WF203":
            found.extend(_add_next(d, model, text))
        elif d.code == "WF211":
            found.extend(_cover_choice(d, model, text))
        elif m := _UNKNOWN.match(d.message):
            found.extend(_declare(d, model, m.group(1), m.group(2)))
    return found


def offset(text: str, line: int, column: int) -> int:
    """The index in ``text`` of a span's (line, column)."""
    start = 0
    for _ in range(line - 1):
        found = text.find("\n", start)
        if found < 0:
            return len(text)
        start = found + 1
    return start + column - 1


def apply(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with the edits made (they must not overlap), the last first."""
    placed = sorted(
        ((_start(text, e.span), _end(text, e.span), e.text) for e in edits), reverse=True
    )
    for start, end, new in placed:
        text = text[:start] + new + text[end:]
    return text


def safe_edits(findings: Iterable[Diagnostic], model: Model | None, text: str) -> list[Edit]:
    """The edits of ``wf check --fix`` for one file: the first safe fix of each finding,
    leaving out any that would overlap one taken before."""
    taken: list[Edit] = []
    for d in findings:
        for fix in fixes(d, model, text):
            if fix.safe and not any(_overlap(e, t) for e in fix.edits for t in taken):
                taken.extend(fix.edits)
                break
    return taken


def _start(text: str, span: Span) -> int:
    return offset(text, span.line, span.column)


def _end(text: str, span: Span) -> int:
    return offset(text, span.end_line, span.end_column)


def _overlap(a: Edit, b: Edit) -> bool:
    a0, a1 = (a.span.line, a.span.column), (a.span.end_line, a.span.end_column)
    b0, b1 = (b.span.line, b.span.column), (b.span.end_line, b.span.end_column)
    return (a0 < b1 and b0 < a1) or a0 == b0


def _point(file: str, line: int, column: int) -> Span:
    return Span(file, line, column, line, column)


def _did_you_mean(d: Diagnostic, text: str) -> Iterator[Fix]:
    m = _DID_YOU_MEAN.search(d.hint or "")
    if m is None or d.span.line != d.span.end_line:
        return
    better = m.group(1)
    written = text[
        offset(text, d.span.line, d.span.column) : offset(text, d.span.end_line, d.span.end_column)
    ]
    word = _WORD.search(written)
    if "." in better or word is None:
        span = d.span  # a dotted name (``post.send``) is the whole span
    else:  # ``input.totl``: the last name of the span
        span = Span(
            d.span.file,
            d.span.line,
            d.span.end_column - len(word.group()),
            d.span.end_line,
            d.span.end_column,
        )
    yield Fix(f"Change to '{better}'", d.code, (Edit(span, better),), safe=True)


def _node_at(model: Model, span: Span) -> tuple[sp.Node, str] | None:
    for info in model.nodes.values():
        if info.node.name.span == span:
            return info.node, info.scope
    return None


def closing_clause(node: sp.Node, text: str, inner: str) -> Edit:
    """Insert the clause ``inner`` as the last of the node's block (or after the node
    when it has none)."""
    s = node.span
    last = text.splitlines()[s.end_line - 1] if s.end_line <= text.count("\n") + 1 else ""
    if not text[: offset(text, s.end_line, s.end_column)].endswith("}"):
        return Edit(_point(s.file, s.end_line, s.end_column), f" {inner}")
    if last.strip() == "}":
        indent = " " * (s.column - 1 + 4)
        return Edit(_point(s.file, s.end_line, 1), f"{indent}{inner}\n")
    return Edit(_point(s.file, s.end_line, s.end_column - 1), f"{inner} ")


def _add_next(d: Diagnostic, model: Model, text: str) -> Iterator[Fix]:
    found = _node_at(model, d.span)
    if found is None:
        return
    node, scope = found
    ends = model.ends(scope)
    completed = [
        e for e in ends if getattr(model.nodes[e].node, "outcome", None) is sp.Outcome.COMPLETED
    ]
    for target in (completed or ends)[:1]:
        yield Fix(f"Add 'next {target}'", d.code, (closing_clause(node, text, f"next {target}"),))


def _cover_choice(d: Diagnostic, model: Model, text: str) -> Iterator[Fix]:
    found = _node_at(model, d.span)
    if found is None or not isinstance(found[0], sp.ChoiceNode) or not found[0].arms:
        return
    node = found[0]
    target = node.arms[-1].target.text
    yield Fix(f"Add 'else -> {target}'", d.code, (closing_clause(node, text, f"else -> {target}"),))
    cases = uncovered_cases(type_env(model), node) or []
    subject = _subject(node)
    members = [f"{enum}.{member}" for enum, member in cases if member is not None]
    if subject is None or not members:
        return
    arms = "\n".join(f"when {subject} == {m} -> {target}" for m in members)
    indent = " " * (node.span.column - 1 + 4)
    block = closing_clause(node, text, arms.replace("\n", "\n" + indent))
    yield Fix(f"Add the uncovered cases ({', '.join(members)})", d.code, (block,))


def _subject(node: sp.ChoiceNode) -> str | None:
    """What the guards compare to enum members: ``input.priority`` of
    ``input.priority == Priority.high``."""
    for arm in node.arms:
        g = arm.guard
        if isinstance(g, ex.Binary) and g.op == "==":
            for one, other in ((g.left, g.right), (g.right, g.left)):
                if isinstance(other, ex.Member) and isinstance(other.target, ex.Ref):
                    return format_expr(one)
    return None


def _declare(d: Diagnostic, model: Model, kind: str, name: str) -> Iterator[Fix]:
    """``unknown signal 'approve'``: declare it above the first node (or ``start``)."""
    declaration = f"{kind} {name}"
    if kind == "service":
        params = _params(model, d.span)
        if params is None:
            return
        declaration += f"({params})"
    first = next(
        (i for i in model.spec.items if isinstance(i, (sp.StartDecl, *sp.NODE_CLASSES))), None
    )
    where = first.span if first is not None else model.spec.span
    line = where.line if first is not None else where.end_line + 1
    edit = Edit(_point(d.span.file, line, 1), f"{declaration}\n\n")
    yield Fix(f"Declare '{declaration}'", d.code, (edit,))


def _params(model: Model, span: Span) -> str | None:
    """The parameters a new service takes: the task's arguments, typed as written."""
    types = typing_of(model).types
    for info in model.nodes.values():
        node = info.node
        if (
            isinstance(node, sp.TaskNode)
            and isinstance(node.work, sp.ServiceWork)
            and node.work.service.span == span
        ):
            typed = [(a.name.text, types.get((a.value, a.value.span))) for a in node.args]
            if any(t is None or isinstance(t, Unknown) for _, t in typed):
                return None
            return ", ".join(f"{n}: {t}" for n, t in typed)
    return None


def suppression(d: Diagnostic, spec: sp.WorkflowSpec | None, text: str) -> Fix | None:
    """``// wf: ignore[CODE]`` on the finding's line: added to a suppression there,
    else at the end of the line, else (the line has a comment) on a line above."""
    if spec is None:
        return None
    line = d.span.line
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return None
    title = f"Suppress {d.code} on this line"
    for s in spec.suppressions:
        if s.line == line and s.codes and not s.file_level:
            end = s.span.end_column - 1
            close = text[: offset(text, line, end + 1)].rfind("]")
            column = close - offset(text, line, 1) + 1
            return Fix(title, d.code, (Edit(_point(d.span.file, line, column), f", {d.code}"),))
    if any(c.span.line <= line <= c.span.end_line for c in spec.comments):
        indent = re.match(r"\s*", lines[line - 1])
        pad = indent.group() if indent else ""
        return Fix(
            title, d.code, (Edit(_point(d.span.file, line, 1), f"{pad}// wf: ignore[{d.code}]\n"),)
        )
    end = len(lines[line - 1]) + 1
    return Fix(title, d.code, (Edit(_point(d.span.file, line, end), f"  // wf: ignore[{d.code}]"),))
