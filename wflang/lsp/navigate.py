"""Definitions, references, highlights and hover: questions about the name or the
expression under the cursor, answered from the index (``index.py``) and the typing
of the last check of each file."""

from __future__ import annotations

from collections.abc import Iterator

from attrs import define, field

from wflang.compiler.fixes import offset
from wflang.compiler.inference import typing_of
from wflang.compiler.model import Model, outgoing
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_expr
from wflang.dsl.span import Span
from wflang.dsl.walk import node_expressions, subexpressions, walk_nodes
from wflang.lsp.analysis import Analysis, Checked
from wflang.lsp.index import Occurrence, at, occurrences
from wflang.lsp.positions import contains


@define
class Index:
    """The occurrences of each checked file, made once per check."""

    analysis: Analysis
    _made: dict[str, tuple[Checked, list[Occurrence]]] = field(factory=dict)

    def of(self, path: str) -> tuple[Model | None, list[Occurrence]]:
        """The model and names of a file: its current check when it parses, else the
        last check that did (what an editor shows while a line is half typed)."""
        checked = self.analysis.good(path)
        if checked is None or checked.model is None:
            return None, []
        kept = self._made.get(path)
        if kept is None or kept[0] is not checked:
            kept = self._made[path] = (checked, occurrences(checked.model))
        return checked.model, kept[1]

    def under(self, path: str, line: int, column: int) -> Occurrence | None:
        return at(self.of(path)[1], line, column)

    def references(self, target: Span, here: str) -> list[Occurrence]:
        """Every occurrence of what ``target`` declares: in its file, in this one and in
        every open file whose check read its file."""
        files = {target.file, here, *self.analysis.importers(target.file)}
        found: list[Occurrence] = []
        for path in sorted(files):
            if path.startswith("<"):
                continue
            found.extend(o for o in self.of(path)[1] if o.target == target)
        return found


def hover_text(index: Index, checked: Checked, line: int, column: int) -> str | None:
    """Markdown for the cursor: what the name or expression is, and the explanation of
    each finding there."""
    parts = []
    model, names = index.of(checked.path)
    if model is not None:
        said = _expression(model, line, column)
        occurrence = at(names, line, column)
        if occurrence is not None and occurrence.target is not None:
            about = _about(index, model, occurrence)
            if about:
                parts.append(about)
        if said and not (occurrence is not None and occurrence.kind in ("node", "type")):
            parts.insert(0, f"```wf\n{said}\n```")
    from wflang.lsp.report import explain

    for d in checked.result.diagnostics:
        if d.span.file == checked.path and contains(d.span, line, column):
            parts.append(explain(d.code) or d.code)
    return "\n\n---\n\n".join(parts) or None


def _expression(model: Model, line: int, column: int) -> str | None:
    """``context.total: decimal``: the smallest typed expression under the cursor."""
    types = typing_of(model).types
    best: tuple[int, str] | None = None
    for root in _roots(model):
        if not contains(root.span, line, column):
            continue
        for e in subexpressions(root):
            t = types.get((e, e.span))
            if t is None or not contains(e.span, line, column):
                continue
            size = (e.span.end_line - e.span.line) * 10_000 + e.span.end_column - e.span.column
            if best is None or size < best[0]:
                best = (size, f"{format_expr(e)}: {t}")
    return best[1] if best else None


def _roots(model: Model) -> Iterator[ex.Expr]:
    for placed in walk_nodes(model.spec.nodes):
        yield from node_expressions(placed.node)


def _about(index: Index, model: Model, o: Occurrence) -> str | None:
    target = o.target
    assert target is not None
    if o.kind == "node":
        info = model.nodes.get(o.name)
        return _node(info.node, info.scope) if info else None
    text = index.analysis.text(target.file) or ""
    declaration = _declaration_at(index, target)
    if declaration is None:
        return None
    start = offset(text, declaration.line, declaration.column)
    end = offset(text, declaration.end_line, declaration.end_column)
    where = "" if target.file == model.spec.file else f"\n\n(declared in `{target.file}`)"
    return f"```wf\n{text[start:end]}\n```{where}"


def _declaration_at(index: Index, target: Span) -> Span | None:
    """The span of the declaration (or field) whose name is at ``target``."""
    model, _ = index.of(target.file)
    if model is None:
        return None
    for item in model.spec.items:
        if isinstance(item, sp.TypeDecl | sp.InputDecl | sp.ContextDecl | sp.OutputDecl):
            for f in item.fields:
                if f.name.span == target:
                    return f.span
        names = _item_names(item)
        if target in names:
            return item.span
        for fields in _payloads(item):
            for f in fields:
                if f.name.span == target:
                    return f.span
    return None


def _item_names(item: sp.Item) -> list[Span]:
    if isinstance(item, sp.ErrorDecl):
        return [n.span for n in item.names]
    name = getattr(item, "name", None)
    return [name.span] if isinstance(name, sp.Ident) else []


def _payloads(item: sp.Item) -> Iterator[tuple[sp.Field, ...]]:
    if isinstance(item, sp.SignalDecl | sp.MessageDecl) and item.payload:
        yield item.payload
    if isinstance(item, sp.ErrorDecl):
        yield from (p for _, p in item.payloads)
    if isinstance(item, sp.ServiceDecl):
        yield item.params
        if isinstance(item.result, tuple):
            yield item.result


def _node(node: sp.Node, scope: str) -> str:
    kind = type(node).__name__.removesuffix("Node").lower()
    where = f" (in `{scope}`)" if scope else ""
    lines = [f"**{kind}** `{node.name.text}`{where}"]
    if isinstance(node, sp.TaskNode) and isinstance(node.work, sp.ServiceWork):
        lines[0] += f": service `{node.work.service.text}`"
    routes = [
        f"- {e.kind} → `{e.target.text}`" + (f" ({e.label})" if e.label else "")
        for e in outgoing(node, labels=True)
    ]
    return "\n".join(lines + (["", "Routes:", *routes] if routes else []))
