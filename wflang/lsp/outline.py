"""A file's shape for the editor: its outline (declarations, then nodes by kind, nested
by scope), folding ranges, semantic tokens and ``wf fmt``'s formatting."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

from lsprotocol import types as lsp

from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import ParseResult
from wflang.dsl.span import Span
from wflang.dsl.walk import sub_flows
from wflang.lsp.index import Kind, Occurrence

ToRange = Callable[[Span], lsp.Range]
K = lsp.SymbolKind
_NODE_KINDS = {
    sp.TaskNode: K.Function,
    sp.ChoiceNode: K.Operator,
    sp.WaitNode: K.Event,
    sp.SleepNode: K.Event,
    sp.ParallelNode: K.Namespace,
    sp.MapNode: K.Array,
    sp.CallNode: K.Method,
    sp.EndNode: K.Constant,
}


def _symbol(name: str, detail: str, kind: lsp.SymbolKind, span: Span, name_span: Span,
            to_range: ToRange, children: list[lsp.DocumentSymbol] | None = None,
            ) -> lsp.DocumentSymbol:  # fmt: skip
    return lsp.DocumentSymbol(
        name, kind, to_range(span), to_range(name_span), detail=detail, children=children
    )


def _fields(fields: Iterable[sp.Field], to_range: ToRange) -> list[lsp.DocumentSymbol]:
    return [_symbol(f.name.text, "field", K.Field, f.span, f.name.span, to_range) for f in fields]


def _declaration(item: sp.Declaration, to_range: ToRange) -> list[lsp.DocumentSymbol]:
    match item:
        case sp.TypeDecl():
            children = _fields(item.fields, to_range)
            return [
                _symbol(
                    item.name.text, "type", K.Struct, item.span, item.name.span, to_range, children
                )
            ]
        case sp.EnumDecl():
            members = [
                _symbol(m.text, "member", K.EnumMember, m.span, m.span, to_range)
                for m in item.members
            ]
            return [
                _symbol(
                    item.name.text, "enum", K.Enum, item.span, item.name.span, to_range, members
                )
            ]
        case sp.InputDecl() | sp.ContextDecl() | sp.OutputDecl():
            word = type(item).__name__.removesuffix("Decl").lower()
            return [
                _symbol(
                    word,
                    word,
                    K.Object,
                    item.span,
                    item.span,
                    to_range,
                    _fields(item.fields, to_range),
                )
            ]
        case sp.SignalDecl() | sp.MessageDecl():
            word = "signal" if isinstance(item, sp.SignalDecl) else "message"
            children = _fields(item.payload or (), to_range)
            return [
                _symbol(
                    item.name.text, word, K.Event, item.span, item.name.span, to_range, children
                )
            ]
        case sp.ErrorDecl():
            return [
                _symbol(n.text, "error", K.Class, item.span, n.span, to_range) for n in item.names
            ]
        case sp.ServiceDecl():
            children = _fields(item.params, to_range)
            return [
                _symbol(
                    item.name.text,
                    "service",
                    K.Interface,
                    item.span,
                    item.name.span,
                    to_range,
                    children,
                )
            ]
        case _:
            return []


def _node(node: sp.Node, to_range: ToRange) -> lsp.DocumentSymbol:
    children = []
    for _, nodes in sub_flows(node):
        inner = [_node(n, to_range) for n in nodes]
        if isinstance(node, sp.ParallelNode):
            branch = next(b for b in node.branches if b.nodes is nodes)
            children.append(
                _symbol(
                    branch.name.text,
                    "branch",
                    K.Namespace,
                    branch.span,
                    branch.name.span,
                    to_range,
                    inner,
                )
            )
        else:
            children.extend(inner)
    kind = type(node).__name__.removesuffix("Node").lower()
    return _symbol(
        node.name.text, kind, _NODE_KINDS[type(node)], node.span, node.name.span, to_range, children
    )


def document_symbols(spec: sp.WorkflowSpec, to_range: ToRange) -> list[lsp.DocumentSymbol]:
    found: list[lsp.DocumentSymbol] = []
    for item in spec.items:
        if isinstance(item, sp.NODE_CLASSES):
            found.append(_node(item, to_range))
        else:
            found.extend(_declaration(item, to_range))
    return found


def folding_ranges(spec: sp.WorkflowSpec) -> list[lsp.FoldingRange]:
    """Every declaration, node and branch over several lines, and runs of comments."""
    found = []

    def fold(span: Span, kind: str | None = None) -> None:
        if span.end_line > span.line:
            found.append(lsp.FoldingRange(span.line - 1, span.end_line - 1, kind=kind))

    def nodes(items: Iterable[sp.Item]) -> None:
        for item in items:
            fold(item.span)
            if isinstance(item, sp.ParallelNode):
                for b in item.branches:
                    fold(b.span)
                    nodes(b.nodes)
            elif isinstance(item, sp.MapNode):
                nodes(item.nodes)

    nodes(spec.items)
    run: list[sp.Comment] = []
    for c in [*spec.comments, None]:
        if c is not None and run and c.span.line == run[-1].span.line + 1:
            run.append(c)
            continue
        if len(run) > 1:
            fold(run[0].span.to(run[-1].span), lsp.FoldingRangeKind.Comment)
        run = [c] if c is not None else []
    return found


TOKEN_TYPES: dict[Kind, str] = {
    "node": "function",
    "type": "type",
    "member": "enumMember",
    "field": "property",
    "service": "interface",
    "signal": "event",
    "message": "event",
    "error": "class",
    "param": "parameter",
}
LEGEND = lsp.SemanticTokensLegend(
    token_types=sorted(set(TOKEN_TYPES.values())), token_modifiers=["declaration"]
)


def semantic_tokens(names: Iterable[Occurrence], to_range: ToRange) -> list[int]:
    """The names of the file, typed by what they name (keywords are the grammar's)."""
    data: list[int] = []
    line = column = 0
    for o in names:
        r = to_range(o.span)
        if r.start.line != r.end.line:
            continue
        delta_line = r.start.line - line
        delta_column = r.start.character - column if delta_line == 0 else r.start.character
        if delta_line == 0 and data and delta_column < 0:
            continue  # overlapping (never for names, which the grammar keeps apart)
        token = LEGEND.token_types.index(TOKEN_TYPES[o.kind])
        data += [
            delta_line,
            delta_column,
            r.end.character - r.start.character,
            token,
            int(o.declaration),
        ]
        line, column = r.start.line, r.start.character
    return data


def formatting(parsed: ParseResult, first: int | None = None, last: int | None = None,
               ) -> list[tuple[int, int, str]]:  # fmt: skip
    """``wf fmt``'s changes as (first line, end line, new text) replacements of whole
    lines (0-based, end exclusive); only those touching lines ``first``..``last`` when
    given. A file with syntax errors is left as it is."""
    if parsed.spec is None:
        return []
    old = parsed.text.splitlines(keepends=True)
    new = format_spec(parsed.spec, parsed.text).splitlines(keepends=True)
    edits = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if first is not None and last is not None and (i2 < first or i1 > last):
            continue
        edits.append((i1, i2, "".join(new[j1:j2])))
    return edits
