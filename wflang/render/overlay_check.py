"""``wf render --check``: the checker's findings drawn on the elements they are about.

A finding points at a span; the element it belongs to is found by position:
an edge when the span starts where an edge's clause or target is written, a
node when it starts at a node's name, otherwise the innermost node whose text
contains it. Findings about declarations (inputs, services...) have no element
and are only listed in the legend. Colours are the findings' severities.
"""

from __future__ import annotations

from collections.abc import Iterable

from wflang.compiler.diff.pairing import edges_of
from wflang.compiler.model import Model
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Diagnostic
from wflang.dsl.span import Span
from wflang.render.build import join_key
from wflang.render.diagram import LegendEntry, Overlay

Pos = tuple[int, int]


def _pos(span: Span) -> Pos:
    return (span.line, span.column)


def _index(model: Model) -> tuple[dict[Pos, str], dict[Pos, str]]:
    """Where each edge (its clause, its target) and each node name starts -> its key."""
    edges: dict[Pos, str] = {}
    names: dict[Pos, str] = {}
    if model.start is not None:
        edges[_pos(model.start.target.span)] = "start"
    for name, info in model.nodes.items():
        node = info.node
        names[_pos(node.name.span)] = name
        labels = list(edges_of(node))  # in the order of outgoing(): arms, timeouts, handlers
        clauses: list[sp.ChoiceArm | sp.Timeout | sp.OnError | sp.OnEvent] = [
            *getattr(node, "arms", ()),
            *getattr(node, "timeouts", ()),
            *getattr(node, "handlers", ()),
            *getattr(node, "events", ()),
        ]
        for label, clause in zip(labels, clauses, strict=False):
            edges.setdefault(_pos(clause.span), f"{name}/{label}")
            edges.setdefault(_pos(clause.target.span), f"{name}/{label}")
        for label, rec in edges_of(node).items():
            edges.setdefault(_pos(rec.span), f"{name}/{label}")
        compensate = getattr(node, "compensate", None)
        if compensate is not None:
            edges.setdefault(_pos(compensate.span), f"{name}/compensate")
    return edges, names


def _within(span: Span, pos: Pos) -> bool:
    return (span.line, span.column) <= pos <= (span.end_line, span.end_column)


def _innermost(model: Model, pos: Pos) -> str | None:
    best: tuple[int, str] | None = None
    for name, info in model.nodes.items():
        s = info.node.span
        if _within(s, pos):
            size = (s.end_line - s.line) * 10_000 + (s.end_column - s.column)
            if best is None or size < best[0]:
                best = (size, name)
    return best[1] if best else None


def check_overlay(model: Model, diagnostics: Iterable[Diagnostic]) -> Overlay:
    """Marks, badges and a legend for the findings of one workflow file."""
    edge_at, name_at = _index(model)
    nodes: dict[str, set[str]] = {}
    edges: dict[str, set[str]] = {}
    badges: dict[str, list[str]] = {}
    codes: dict[str, list[str]] = {}
    notes: dict[str, list[str]] = {}
    legend: list[LegendEntry] = []
    found = [d for d in diagnostics if d.span.file == model.spec.file]
    for d in found:
        pos, mark = _pos(d.span), d.severity.value
        edge = edge_at.get(pos)
        node = None if edge else name_at.get(pos) or _innermost(model, pos)
        where = f"line {d.span.line}"
        if edge is not None:
            edges.setdefault(edge, set()).add(mark)
            codes.setdefault(edge, []).append(d.code)
        elif node is not None:
            nodes.setdefault(node, set()).add(mark)
            badges.setdefault(node, []).append(d.code)
            notes.setdefault(node, []).append(f"{d.code} {d.name}: {d.message}")
            if isinstance(model.nodes[node].node, sp.ParallelNode | sp.MapNode):
                nodes.setdefault(join_key(node), set()).add(mark)
        else:
            where += ", not on a node"
        legend.append(LegendEntry(mark, f"{d.code} {d.name} ({where}): {d.message}"))
    clusters = {
        n: frozenset(m)
        for n, m in nodes.items()
        if n in model.nodes and isinstance(model.nodes[n].node, sp.ParallelNode | sp.MapNode)
    }
    count = len(found)
    title = f"wf check: {count} finding{'s' if count != 1 else ''}" if count else "wf check: clean"
    return Overlay(
        nodes={k: frozenset(v) for k, v in nodes.items()},
        edges={k: frozenset(v) for k, v in edges.items()},
        clusters=clusters,
        badges={k: tuple(dict.fromkeys(v)) for k, v in badges.items()},
        notes={k: tuple(v) for k, v in notes.items()},
        edge_codes={k: tuple(dict.fromkeys(v)) for k, v in codes.items()},
        legend_title=title,
        legend=tuple(legend),
    )
