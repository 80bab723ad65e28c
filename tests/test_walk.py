"""The spec walker (``wflang.dsl.walk``): the one walk every stage uses."""

from __future__ import annotations

import typing

from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.parser import parse
from wflang.dsl.walk import (
    TOP,
    child_expressions,
    node_expressions,
    scope_name,
    sub_flows,
    subexpressions,
    walk_expressions,
    walk_nodes,
)

SOURCE = """workflow w version 1
input { items: list[string], n: int }
start p
parallel p {
    branch a { task a1: script { next a_end } end a_end: completed }
    branch b {
        map m over input.items as item {
            choice c { when len(item) > input.n -> m_end else -> m_end }
            end m_end: completed
            next b_end
        }
    }
    join all -> done
}
end b_end: completed
end done: completed
"""


def test_nodes_come_with_their_scope_and_owner_in_source_order() -> None:
    spec = parse(SOURCE).spec
    assert spec is not None
    placed = [(p.name, p.scope, p.owner) for p in walk_nodes(spec.nodes)]
    assert placed == [
        ("p", TOP, None),
        ("a1", "p/a", "p"),
        ("a_end", "p/a", "p"),
        ("m", "p/b", "p"),
        ("c", "m", "m"),
        ("m_end", "m", "m"),
        ("b_end", TOP, None),
        ("done", TOP, None),
    ]
    p = spec.nodes[0]
    assert isinstance(p, sp.ParallelNode)
    assert [scope for scope, _ in sub_flows(p)] == ["p/a", "p/b"]
    assert scope_name(p, p.branches[1]) == "p/b"


def test_expressions_of_every_node_and_inside_every_expression() -> None:
    spec = parse(SOURCE).spec
    assert spec is not None
    found = [(p.name, type(e).__name__) for p, e in walk_expressions(spec.nodes)]
    assert found == [("m", "Member"), ("c", "Binary")]
    p = spec.nodes[0]
    assert isinstance(p, sp.ParallelNode)
    m = p.branches[1].nodes[0]
    assert isinstance(m, sp.MapNode)
    guard = next(node_expressions(m.nodes[0]))
    names = {type(e).__name__ for e in subexpressions(guard)}
    assert names == {"Binary", "Call", "Ref", "Member"}


def test_every_expression_kind_has_its_children() -> None:
    """A new expression kind must say what it holds (``child_expressions``)."""
    one = ex.IntLit(1)
    samples: dict[type, ex.Expr] = {
        ex.IntLit: one,
        ex.DecimalLit: ex.DecimalLit(__import__("decimal").Decimal("1.5")),
        ex.StringLit: ex.StringLit("s"),
        ex.BoolLit: ex.BoolLit(True),
        ex.NullLit: ex.NullLit(),
        ex.DurationLit: ex.DurationLit("1s", 1000),
        ex.TimestampLit: ex.TimestampLit("2024-01-01T00:00:00Z"),
        ex.Ref: ex.Ref("input"),
        ex.Member: ex.Member(one, "x"),
        ex.Index: ex.Index(one, one),
        ex.Call: ex.Call("len", (one,)),
        ex.Project: ex.Project(one, ("x",)),
        ex.Lambda: ex.Lambda("x", one),
        ex.Unary: ex.Unary("-", one),
        ex.Binary: ex.Binary("+", one, one),
        ex.ListLit: ex.ListLit((one, one)),
    }
    assert set(samples) == set(typing.get_args(ex.Expr))
    for cls, sample in samples.items():
        children = list(child_expressions(sample))
        fields = [f.name for f in __import__("attrs").fields(cls)]
        kinds = typing.get_args(ex.Expr)
        nested = sum(
            1
            if isinstance(getattr(sample, f), kinds)
            else sum(isinstance(i, kinds) for i in getattr(sample, f))  # not Project's names
            for f in fields
            if isinstance(getattr(sample, f), (*kinds, tuple))
        )
        assert len(children) == nested, cls
