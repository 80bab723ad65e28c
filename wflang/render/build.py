"""From the checker's ``Model`` to a ``Diagram``: nodes, clusters and edges.

The model already knows every node, the scope it lives in and its edges
(``outgoing``); ``wf diff``'s pairing already knows what each edge is called
(``edges_of``). This module only lays them out as things to draw, in one pass
over the scopes in source order, so the output is deterministic and linear in
the size of the workflow.

A parallel becomes a cluster holding a fork, one sub-cluster per branch and a
join; a map becomes a cluster holding a fork, its body and a join. Edges a
parallel or map takes when it is done leave its join; its boundary timeouts and
errors are drawn from the cluster's border.
"""

from __future__ import annotations

from attrs import define, field

from wflang.compiler.diff.pairing import edges_of
from wflang.compiler.model import Edge, Model, outgoing
from wflang.dsl import spec as sp
from wflang.dsl.walk import TOP, scope_name
from wflang.render.diagram import Cluster, DEdge, Diagram, DNode
from wflang.render.kinds import classify, join_label, map_detail

START = "-start"  # keys with '-' cannot clash with a node name


def join_key(name: str) -> str:
    """The key of the join node a parallel or map ``name`` adds."""
    return f"{name}-join"


def cluster_of(scope: str) -> str | None:
    """The cluster a scope is drawn in: none for the workflow, else the scope itself
    (``war_room/bridge`` for a branch, the map's name for a map body)."""
    return None if scope == TOP else scope


def node_for(node: sp.Node, cluster: str | None, read_only: frozenset[str] = frozenset()) -> DNode:
    """The drawn node of a spec node (the fork, for a parallel or a map); ``read_only``:
    the services declared ``reads``."""
    kind, detail = classify(node, read_only)
    return DNode(node.name.text, kind, node.name.text, detail, cluster)


#: The kinds of edge that leave a parallel's or map's border: its boundary routes.
_BOUNDARY = frozenset({"timeout", "timeout-side", "error", "event", "event-side"})


def edge_label(edge: Edge) -> str:
    """What an edge says: the guard, ``else``, the timer or the errors it catches."""
    labels = {
        "when": edge.label,
        "else": "else",
        "timeout": f"◷ {edge.label.removeprefix('after ')}",
        "timeout-side": f"◷ {edge.label.removeprefix('after ')} non-interrupting",
        "error": f"⚡ {'any error' if edge.label == 'any' else edge.label}",
        "event": _event_label(edge.label),
        "event-side": f"{_event_label(edge.label)} non-interrupting",
        "arm": _event_label(edge.label),
    }
    return labels.get(edge.kind, "")


#: The marks of the waits, on the edges of what waits for the same: a boundary event, an
#: arm of a ``first``.
_MARKERS = {"signal": "△", "message": "✉", "after": "◷", "until": "◷"}


def _event_label(label: str) -> str:
    """``signal cancel`` -> ``△ cancel``, ``message paid`` -> ``✉ paid``, an arm's
    ``after 2d`` -> ``◷ 2d`` (``until`` likewise): the marks of the waits for them."""
    kind, _, name = label.partition(" ")
    return f"{_MARKERS.get(kind, kind)} {name}"


def edges_for(node: sp.Node, tail: str, boundary: str | None) -> list[DEdge]:
    """The drawn edges a node writes, keyed as ``wf diff`` names them."""
    out: list[DEdge] = []
    named = edges_of(node)  # same order as outgoing(): labels of wf diff
    for edge, label in zip(outgoing(node, labels=True), named, strict=False):
        leaves = boundary if edge.kind in _BOUNDARY else None
        out.append(
            DEdge(
                f"{node.name.text}/{label}",
                tail,
                edge.target.text,
                edge.kind,
                edge_label(edge),
                leaves,
            )
        )
    compensate = getattr(node, "compensate", None)
    if compensate is not None:
        out.append(
            DEdge(
                f"{node.name.text}/compensate",
                node.name.text,
                compensate.text,
                "compensate",
                "compensate",
            )
        )
    return out


@define
class _Builder:
    model: Model
    nodes: list[DNode] = field(factory=list)
    edges: list[DEdge] = field(factory=list)
    clusters: list[Cluster] = field(factory=list)
    #: The services declared ``reads``: their tasks are drawn apart.
    read_only: frozenset[str] = frozenset()

    def scope(self, scope: str) -> None:
        for name in self.model.scopes.get(scope, []):
            self.node(self.model.nodes[name].node, cluster_of(scope))

    def node(self, node: sp.Node, cluster: str | None) -> None:
        name = node.name.text
        inside = isinstance(node, sp.ParallelNode | sp.MapNode)  # the fork is in its cluster
        self.nodes.append(node_for(node, name if inside else cluster, self.read_only))
        if isinstance(node, sp.ParallelNode):
            self.parallel(node, cluster)
        elif isinstance(node, sp.MapNode):
            self.map(node, cluster)
        elif not isinstance(node, sp.EndNode):
            self.edges.extend(edges_for(node, name, None))

    def body(self, owner: str, scope: str) -> None:
        """A branch or map body: fork -> its first node, its ends -> the join."""
        entry = self.model.entry(scope)
        join = join_key(owner)
        if entry is None:
            self.edges.append(DEdge(f"{scope}/fork", owner, join, "fork"))
            return
        self.edges.append(DEdge(f"{scope}/fork", owner, entry, "fork"))
        self.scope(scope)
        for end in self.model.ends(scope):
            self.edges.append(DEdge(f"{end}/done", end, join, "done"))

    def parallel(self, node: sp.ParallelNode, cluster: str | None) -> None:
        name = node.name.text
        self.clusters.append(Cluster(name, "parallel", name, "+ parallel", cluster))
        for branch in node.branches:
            scope = scope_name(node, branch)
            self.clusters.append(Cluster(scope, "branch", branch.name.text, "", name))
            self.body(name, scope)
        self.join(node, f"join {join_label(node.join)}", cluster=name)

    def map(self, node: sp.MapNode, cluster: str | None) -> None:
        name = node.name.text
        self.clusters.append(Cluster(name, "map", name, map_detail(node), cluster))
        self.body(name, scope_name(node))
        self.join(node, "join", cluster=name)

    def join(self, node: sp.ParallelNode | sp.MapNode, label: str, cluster: str) -> None:
        self.nodes.append(DNode(join_key(node.name.text), "join", label, (), cluster))
        self.edges.extend(edges_for(node, join_key(node.name.text), cluster))

    def missing(self) -> None:
        """Targets named but not defined get a node of their own (drawn in red)."""
        known = {n.key for n in self.nodes}
        for edge in self.edges:
            if edge.head not in known:
                known.add(edge.head)
                self.nodes.append(DNode(edge.head, "missing", edge.head, ("? not defined",)))


def title(spec: sp.WorkflowSpec) -> str:
    if spec.header is None:
        return spec.file
    return f"{spec.header.name.text} v{spec.header.version}"


def build(model: Model) -> Diagram:
    """The diagram of a workflow: its start, every node and edge, in source order."""
    b = _Builder(model, read_only=frozenset(n for n, d in model.services.items() if d.read_only))
    start = model.start
    b.nodes.append(DNode(START, "start", "start"))
    if start is not None:
        b.edges.append(DEdge("start", START, start.target.text, "next"))
    b.scope(TOP)
    b.missing()
    return Diagram(title(model.spec), tuple(b.nodes), tuple(b.edges), tuple(b.clusters))
