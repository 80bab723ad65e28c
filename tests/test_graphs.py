"""The compiler's graph algorithms against networkx, on random graphs (issue 13).

``wflang.compiler.graphs`` replaced networkx in the checker so that ``wf check``
starts fast; networkx stays a test dependency to be the reference here.
"""

from __future__ import annotations

import networkx as nx
from hypothesis import given
from hypothesis import strategies as st

from wflang.compiler.graphs import (
    Digraph,
    condensation,
    dfs_postorder,
    reachable,
    strongly_connected_components,
)

NODES = st.integers(0, 11)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[Digraph[int], nx.DiGraph[int]]:
    """The same random graph (self-loops and cycles included) built both ways."""
    nodes = draw(st.lists(NODES, unique=True, min_size=1))
    edges = draw(st.lists(st.tuples(st.sampled_from(nodes), st.sampled_from(nodes))))
    ours: Digraph[int] = Digraph(nodes, edges)
    theirs: nx.DiGraph[int] = nx.DiGraph()
    theirs.add_nodes_from(nodes)
    theirs.add_edges_from(edges)
    return ours, theirs


@given(graphs(), st.data())
def test_reachable_is_the_sources_and_their_descendants(
    pair: tuple[Digraph[int], nx.DiGraph[int]], data: st.DataObject
) -> None:
    ours, theirs = pair
    sources = data.draw(st.lists(st.sampled_from(list(ours))))
    expected = set(sources).union(*(nx.descendants(theirs, s) for s in sources))
    assert reachable(ours, sources) == expected


@given(graphs(), st.data())
def test_reachable_through_some_edges_only(
    pair: tuple[Digraph[int], nx.DiGraph[int]], data: st.DataObject
) -> None:
    ours, theirs = pair
    source = data.draw(st.sampled_from(list(ours)))
    blocked = set(data.draw(st.lists(st.sampled_from(list(ours.edges()) or [(-1, -1)]))))
    view = nx.subgraph_view(theirs, filter_edge=lambda a, b: (a, b) not in blocked)
    expected = {source} | nx.descendants(view, source)
    assert reachable(ours, [source], lambda a, b: (a, b) not in blocked) == expected


@given(graphs(), st.data())
def test_dfs_postorder_is_networkx_order(
    pair: tuple[Digraph[int], nx.DiGraph[int]], data: st.DataObject
) -> None:
    ours, theirs = pair
    source = data.draw(st.sampled_from(list(ours)))
    assert dfs_postorder(ours, source) == list(nx.dfs_postorder_nodes(theirs, source))


@given(graphs())
def test_strongly_connected_components(pair: tuple[Digraph[int], nx.DiGraph[int]]) -> None:
    ours, theirs = pair
    found = strongly_connected_components(ours)
    assert sorted(map(sorted, found)) == sorted(
        map(sorted, nx.strongly_connected_components(theirs))
    )
    # each component comes after every component it reaches (reverse topological order)
    position = {node: i for i, c in enumerate(found) for node in c}
    assert all(position[t] <= position[s] for s, t in ours.edges())


@given(graphs())
def test_condensation(pair: tuple[Digraph[int], nx.DiGraph[int]]) -> None:
    ours, theirs = pair
    condensed = condensation(ours)
    reference = nx.condensation(theirs)
    members = {c: frozenset(reference.nodes[c]["members"]) for c in reference}
    assert set(condensed) == set(members.values())
    assert set(condensed.edges()) == {(members[a], members[b]) for a, b in reference.edges}
    for c in reference:
        assert condensed.in_degree(members[c]) == reference.in_degree(c)
        assert condensed.out_degree(members[c]) == reference.out_degree(c)


@given(graphs(), st.data())
def test_subgraph_keeps_the_edges_among_its_nodes(
    pair: tuple[Digraph[int], nx.DiGraph[int]], data: st.DataObject
) -> None:
    ours, theirs = pair
    kept = data.draw(st.lists(st.sampled_from(list(ours))))
    sub, reference = ours.subgraph(kept), theirs.subgraph(kept)
    assert set(sub) == set(reference) and set(sub.edges()) == set(reference.edges)
    for n in sub:
        assert set(sub.predecessors(n)) == set(reference.predecessors(n))
        assert sub.has_edge(n, n) == reference.has_edge(n, n)


def test_orders_follow_insertion_not_hashing() -> None:
    g: Digraph[str] = Digraph(["c", "a", "b"], [("c", "b"), ("c", "a"), ("a", "b")])
    assert list(g) == ["c", "a", "b"]
    assert list(g.successors("c")) == ["b", "a"]
    assert dfs_postorder(g, "c") == ["b", "a", "c"]
    assert strongly_connected_components(g) == [{"b"}, {"a"}, {"c"}]
    assert list(condensation(g)) == [{"c"}, {"a"}, {"b"}]


def test_a_long_chain_needs_no_recursion() -> None:
    size = 50_000  # far beyond the interpreter's recursion limit
    chain: Digraph[int] = Digraph(range(size), ((i, i + 1) for i in range(size - 1)))
    chain.add_edge(size - 1, 0)  # one cycle through every node
    assert dfs_postorder(chain, 0) == list(range(size - 1, -1, -1))
    assert strongly_connected_components(chain) == [frozenset(range(size))]
    assert len(reachable(chain, [size // 2])) == size
