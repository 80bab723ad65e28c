"""``wf render --diff OLD NEW``: the new version, with what changed since the old one.

Everything comes from ``wf diff``: its ``Pairing`` says which nodes and edges
were added, removed or kept (renames declared with ``renamed from`` are kept),
and its ``DiffResult`` lists the changes with their codes, levels and element
paths (``node:charge/next``), which put each code on its node. Removed nodes
and edges are drawn as dashed ghosts where they were.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from wflang.compiler.diff import DiffResult, Level
from wflang.compiler.diff.pairing import NodeRec, Pairing, edges_of, start_of
from wflang.dsl import spec as sp
from wflang.render.build import cluster_of, join_key, node_for
from wflang.render.diagram import DEdge, Diagram, DNode, LegendEntry, Overlay

LEVEL_MARK = {Level.BREAKING: "error", Level.WARNING: "warning", Level.SAFE: "info"}
GHOST_KIND = {"fork.parallel": "join", "fork.map": "join"}  # a removed body: one node


def ghost_key(name: str) -> str:
    return f"{name}-removed"


def _shallow(node: sp.Node) -> sp.Node:
    """A node without its body: a parallel or map is changed by its own clauses,
    its body's nodes are compared one by one."""
    if isinstance(node, sp.ParallelNode):
        return attrs.evolve(node, branches=tuple(attrs.evolve(b, nodes=()) for b in node.branches))
    if isinstance(node, sp.MapNode):
        return attrs.evolve(node, nodes=())
    return node


def _changed(old: NodeRec, new: NodeRec) -> bool:
    a = _shallow(old.node)
    b = attrs.evolve(_shallow(new.node), name=old.node.name, renamed_from=old.node.renamed_from)
    return a != b or old.scope != new.scope


def _tail(node: sp.Node, key: str) -> tuple[str, str | None]:
    """Where a node's edges leave: a parallel's or map's join, with its cluster."""
    if isinstance(node, sp.ParallelNode | sp.MapNode):
        return join_key(key), key
    return key, None


def _ghosts(
    p: Pairing, clusters: set[str], where: Callable[[str], str | None]
) -> tuple[list[DNode], list[DEdge]]:
    """Removed nodes, drawn dashed in the cluster they had, with the edges they had."""
    extra_nodes: list[DNode] = []
    extra_edges: list[DEdge] = []
    for name, rec in p.nodes.removed:
        ghost = node_for(rec.node, cluster_of(rec.scope))
        kind = GHOST_KIND.get(ghost.kind, ghost.kind)
        cluster = ghost.cluster if ghost.cluster in clusters else None
        extra_nodes.append(
            attrs.evolve(
                ghost, key=ghost_key(name), kind=kind, cluster=cluster, marks=frozenset({"removed"})
            )
        )
        if isinstance(rec.node, sp.EndNode):
            continue
        for label, e in edges_of(rec.node).items():
            head = where(e.target)
            if head is not None:
                extra_edges.append(
                    DEdge(
                        f"{name}/{label}-removed",
                        ghost_key(name),
                        head,
                        _kind(label, rec.node),
                        "" if label == "next" else label,
                        marks=frozenset({"removed"}),
                    )
                )
    return extra_nodes, extra_edges


def diff_overlay(d: Diagram, p: Pairing, result: DiffResult) -> Overlay:
    """Marks, ghosts and a legend for the changes from ``p.old`` to ``p.new``."""
    clusters = {c.key for c in d.clusters}
    drawn = {n.key for n in d.nodes}
    nodes: dict[str, set[str]] = {}
    edges: dict[str, set[str]] = {}
    notes: dict[str, list[str]] = {}
    new_name = {k: rec.node.name.text for k, rec in p.new_nodes.items()}
    removed = dict(p.nodes.removed)

    def where(old_name: str) -> str | None:
        """The drawn key of an old node's name: itself in the new version, or its ghost."""
        if old_name in new_name:
            return new_name[old_name]
        return ghost_key(old_name) if old_name in removed else None

    for name, _rec in p.nodes.added:
        nodes.setdefault(new_name[name], set()).add("added")
    added = {new_name[name] for name, _rec in p.nodes.added}
    for x in p.nodes.both:
        key = new_name[x.key]
        if _changed(x.old, x.new):
            nodes.setdefault(key, set()).add("changed")
            if key != x.key:
                notes.setdefault(key, []).append(f"renamed from {x.key}")
    extra_nodes, extra_edges = _ghosts(p, clusters, where)
    for x, paired in p.edges():
        key = new_name[x.key]
        for label, _e in paired.added:
            edges.setdefault(f"{key}/{label}", set()).add("added")
        for both in paired.both:
            if both.old.target != both.new.target:
                edges.setdefault(f"{key}/{both.key}", set()).add("changed")
        tail, boundary = _tail(x.new.node, key)
        for label, gone in paired.removed:
            head = where(gone.target)
            if head is not None and tail in drawn:
                extra_edges.append(
                    DEdge(
                        f"{key}/{label}-removed",
                        tail,
                        head,
                        _kind(label, x.old.node),
                        "" if label == "next" else label,
                        boundary,
                        frozenset({"removed"}),
                    )
                )
        old_c = getattr(x.old.node, "compensate", None)
        new_c = getattr(x.new.node, "compensate", None)
        if new_c is not None and (old_c is None or where(old_c.text) != new_c.text):
            edges.setdefault(f"{key}/compensate", set()).add(
                "added" if old_c is None else "changed"
            )
        if old_c is not None and new_c is None and (head := where(old_c.text)) is not None:
            extra_edges.append(
                DEdge(
                    f"{key}/compensate-removed",
                    key,
                    head,
                    "compensate",
                    "compensate",
                    marks=frozenset({"removed"}),
                )
            )
    for e in d.edges:  # the edges of an added node are added with it
        if e.tail in added or e.tail.removesuffix("-join") in added:
            edges.setdefault(e.key, set()).add("added")
    old_start, new_start = start_of(p.old), start_of(p.new)
    if old_start and new_start and where(old_start.target.text) != new_start.target.text:
        edges.setdefault("start", set()).add("changed")
    badges: dict[str, list[str]] = {}
    legend = [
        LegendEntry("added", "added"),
        LegendEntry("removed", "removed (dashed: only in the old version)"),
        LegendEntry("changed", "changed"),
    ]
    for change in result.changes:
        diag = change.diagnostic
        target = _element(change.key, where)
        if target is not None:
            badges.setdefault(target, []).append(diag.code)
        level = change.level.value + (", accepted" if change.accepted else "")
        legend.append(
            LegendEntry(
                LEVEL_MARK[change.level], f"{diag.code} {diag.name} [{level}]: {diag.message}"
            )
        )
    count = len(result.changes)
    return Overlay(
        nodes={k: frozenset(v) for k, v in nodes.items()},
        edges={k: frozenset(v) for k, v in edges.items()},
        clusters={k: frozenset(v) for k, v in nodes.items() if k in clusters},
        badges={k: tuple(dict.fromkeys(v)) for k, v in badges.items()},
        notes={k: tuple(v) for k, v in notes.items()},
        extra_nodes=tuple(extra_nodes),
        extra_edges=tuple(extra_edges),
        legend_title=f"wf diff: {count} change{'s' if count != 1 else ''}",
        legend=tuple(legend),
        title=f"{d.title} (changes since {_title(p.old)})",
    )


def _element(key: str | None, where: Callable[[str], str | None]) -> str | None:
    """The drawn node a change's element path is about: ``node:X...`` or ``order:X``."""
    if key is None:
        return None
    path = key.split(":", 2)
    if len(path) < 2 or path[0] not in ("node", "order"):
        return None
    name = path[1].split("/", 1)[0]
    return where(name)


def _kind(label: str, node: sp.Node) -> str:
    """The drawn kind of a removed edge of ``node``, from its ``wf diff`` label (every
    edge of a ``first`` is an arm)."""
    if isinstance(node, sp.FirstNode):
        return "arm"
    prefixes = {"on signal ": "event", "on message ": "event", "on ": "error", "timeout": "timeout"}
    return next((k for p, k in prefixes.items() if label.startswith(p)), "next")


def _title(spec: sp.WorkflowSpec) -> str:
    if spec.header is None:
        return spec.file
    return f"{spec.header.name.text} v{spec.header.version}"
