"""The diagram: what is drawn, independent of the output format.

``build`` turns a checked model into a ``Diagram``; overlays add *marks* to its
nodes, edges and clusters (``error``, ``added``, ``visited``...) and entries to
its legend; ``dot`` and ``mermaid`` write it out. Keeping one format-neutral
value in the middle means both formats draw the same thing and overlays are
written once. Everything is a frozen value in a deterministic order.
"""

from __future__ import annotations

from attrs import evolve, field, frozen


@frozen
class DNode:
    """A drawn node.

    ``key`` identifies it (the source name, or ``name-join`` and friends for the
    nodes a parallel or map adds); ``kind`` names its style in ``kinds.KINDS``;
    ``detail`` holds the small lines under the name (service, callee, trigger).
    """

    key: str
    kind: str
    name: str
    detail: tuple[str, ...] = ()
    cluster: str | None = None
    marks: frozenset[str] = frozenset()
    badges: tuple[str, ...] = ()  # short codes shown on the node (WF201, ...)
    notes: tuple[str, ...] = ()  # longer text for the tooltip


@frozen
class DEdge:
    """A drawn edge. ``key`` is ``node/label`` with the labels of ``wf diff``
    (``charge/next``, ``reserve/on OutOfStock``, ``triage/when ...``), so diff
    changes and findings find their edge; ``boundary`` names the cluster whose
    border the edge leaves (a parallel's or map's timeout or error)."""

    key: str
    tail: str
    head: str
    kind: str
    label: str = ""
    boundary: str | None = None
    marks: frozenset[str] = frozenset()


@frozen
class Cluster:
    """A parallel or map body, or one branch of a parallel."""

    key: str
    kind: str  # "parallel", "map" or "branch"
    label: str
    detail: str = ""
    parent: str | None = None
    marks: frozenset[str] = frozenset()


@frozen
class LegendEntry:
    """One line of the legend: a swatch in the colour of ``mark`` and its text."""

    mark: str
    text: str


@frozen
class Diagram:
    """A workflow ready to be written out."""

    title: str
    nodes: tuple[DNode, ...]
    edges: tuple[DEdge, ...]
    clusters: tuple[Cluster, ...]
    legend_title: str = ""
    legend: tuple[LegendEntry, ...] = ()

    def contents(self) -> tuple[dict[str | None, list[DNode]], dict[str | None, list[Cluster]]]:
        """The nodes and the clusters drawn directly in each container, by its key (None:
        the top level, where a node of a cluster the diagram does not have goes too)."""
        cluster_keys = {c.key for c in self.clusters}
        nodes: dict[str | None, list[DNode]] = {}
        for n in self.nodes:
            nodes.setdefault(n.cluster if n.cluster in cluster_keys else None, []).append(n)
        clusters: dict[str | None, list[Cluster]] = {}
        for c in self.clusters:
            clusters.setdefault(c.parent, []).append(c)
        return nodes, clusters


@frozen
class Overlay:
    """What an overlay adds to a diagram, by key: marks, badges, notes, extra
    nodes and edges (a diff's removed ones), a legend and a new title."""

    nodes: dict[str, frozenset[str]] = field(factory=dict)
    edges: dict[str, frozenset[str]] = field(factory=dict)
    clusters: dict[str, frozenset[str]] = field(factory=dict)
    badges: dict[str, tuple[str, ...]] = field(factory=dict)
    notes: dict[str, tuple[str, ...]] = field(factory=dict)
    edge_codes: dict[str, tuple[str, ...]] = field(factory=dict)
    extra_nodes: tuple[DNode, ...] = ()
    extra_edges: tuple[DEdge, ...] = ()
    legend_title: str = ""
    legend: tuple[LegendEntry, ...] = ()
    title: str | None = None


def apply(d: Diagram, o: Overlay) -> Diagram:
    """The diagram with an overlay's marks on its elements (one pass over each)."""
    nodes = tuple(
        evolve(
            n,
            marks=n.marks | o.nodes.get(n.key, frozenset()),
            badges=n.badges + o.badges.get(n.key, ()),
            notes=n.notes + o.notes.get(n.key, ()),
        )
        for n in (*d.nodes, *o.extra_nodes)
    )
    edges = tuple(
        evolve(
            e,
            marks=e.marks | o.edges.get(e.key, frozenset()),
            label=" ".join(x for x in (e.label, *o.edge_codes.get(e.key, ())) if x),
        )
        for e in (*d.edges, *o.extra_edges)
    )
    clusters = tuple(
        evolve(c, marks=c.marks | o.clusters.get(c.key, frozenset())) for c in d.clusters
    )
    return Diagram(
        o.title if o.title is not None else d.title,
        nodes,
        edges,
        clusters,
        o.legend_title or d.legend_title,
        d.legend + o.legend,
    )
