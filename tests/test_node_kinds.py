"""Every node kind in every per-kind table: a new node kind cannot be forgotten.

The per-kind tables of the dsl, the compiler and the renderer dispatch with
``match`` and ``assert_never``, so mypy fails on a kind one of them misses; this
test runs every kind through each of them. The examples together use every node
kind, task kind, wait trigger and declaration (the first test says which one is
missing when a kind is added): the builder makes them, the formatter prints them
back, the model places them, the lowering gives each a state, the renderer a
style, and the diff pairs each with itself. (The step function's tables have
their own test in the runtime's suite.)
"""

from __future__ import annotations

import typing
from functools import cache
from pathlib import Path

from wflang.compiler.check import module_model
from wflang.compiler.diff.pairing import Pairing, edges_of
from wflang.compiler.diff.rules import kind
from wflang.compiler.diff.run import diff_specs
from wflang.compiler.lower import lower
from wflang.compiler.program import load_program
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse, parse_file
from wflang.dsl.walk import walk_nodes
from wflang.render.kinds import KINDS, classify

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.wf"))
NODE_KINDS = frozenset(typing.get_args(sp.Node))


@cache
def seen_by_stage() -> dict[str, set[type]]:
    """The node classes each stage handled, over every example."""
    seen: dict[str, set[type]] = {}

    def saw(stage: str, node: sp.Node) -> None:
        seen.setdefault(stage, set()).add(type(node))

    for path in EXAMPLES:
        parsed = parse_file(path)
        spec = parsed.spec
        assert spec is not None and not parsed.diagnostics, path
        nodes = [p.node for p in walk_nodes(spec.nodes)]
        for node in nodes:
            saw("builder", node)
        # formatter: printing every kind and reading it back gives the same spec
        printed = parse(format_spec(spec, parsed.text), str(path)).spec
        assert printed == spec, path
        for node in nodes:
            saw("formatter", node)
        # model: every node placed in its scope, drawn in the flow graph
        model = module_model(load_program([parsed]), str(path))
        for node in nodes:
            info = model.nodes[node.name.text]
            assert node.name.text in model.graph
            saw("model", info.node)
        # lowering: one state per node, of the node's kind
        if spec.header is not None:
            table = lower(model)
            states = {s.name: s for s in table.states}
            for node in nodes:
                assert (
                    states[node.name.text].kind == type(node).__name__.removesuffix("Node").lower()
                )
                saw("lowering", node)
        # renderer: every kind has a style
        for node in nodes:
            key, _ = classify(node)
            assert key in KINDS, key
            saw("render", node)
        # diff: every node is paired with itself, with its edges, and nothing changed
        pairing = Pairing(spec, spec)
        assert {p.key for p in pairing.nodes.both} == {n.name.text for n in nodes}
        for node in nodes:
            assert kind(node)
            edges_of(node)
            saw("diff", node)
        assert diff_specs(spec, spec).changes == ()
    return seen


def test_the_examples_use_every_kind() -> None:
    """A new kind needs an example (docs/architecture.md, "how to add a node kind")."""
    assert set(sp.NODE_CLASSES) == NODE_KINDS
    tasks: set[type] = set()
    triggers: set[type] = set()
    declarations: set[type] = set()
    for path in EXAMPLES:
        spec = parse_file(path).spec
        assert spec is not None
        declarations |= {type(d) for d in spec.declarations}
        for placed in walk_nodes(spec.nodes):
            node = placed.node
            if isinstance(node, sp.TaskNode):
                tasks.add(type(node.work))
            if isinstance(node, sp.WaitNode):
                triggers.add(type(node.trigger))
    assert seen_by_stage()["builder"] == NODE_KINDS
    assert tasks == set(typing.get_args(sp.TaskWork))
    assert triggers == set(typing.get_args(sp.WaitTrigger))
    assert declarations == set(typing.get_args(sp.Declaration))


def test_every_stage_handles_every_node_kind() -> None:
    seen = seen_by_stage()
    for stage in ("builder", "formatter", "model", "lowering", "render", "diff"):
        missing = NODE_KINDS - seen.get(stage, set())
        assert not missing, f"{stage} handled no {sorted(c.__name__ for c in missing)}"
