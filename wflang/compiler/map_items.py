"""The type of ``result`` in a map's ``output``: the list of its items' outputs."""

from __future__ import annotations

from collections.abc import Mapping

from wflang.compiler.types import (
    LOCAL_ROOT,
    NULL,
    UNKNOWN,
    UNKNOWN_LOCAL,
    Inference,
    ListT,
    Opt,
    Type,
    TypeEnv,
    Unknown,
    strip,
    widen,
)
from wflang.dsl import spec as sp


def item_outputs(here: Inference, env: TypeEnv, node: sp.MapNode) -> Type:
    """``result`` in a map's ``output``: the outputs of its items that completed, in item
    order, each the record its ``end`` gives (a field that not every completed end of
    the body gives may be null). Ends that give a field types with nothing in common
    are reported here."""
    inner = Inference(env, body_roots(env, here.roots, node), [])
    ends = [n for n in node.nodes if isinstance(n, sp.EndNode)]
    completed = [n for n in ends if n.outcome is sp.Outcome.COMPLETED]
    given: dict[str, tuple[Type, int]] = {}  # field -> (common type, how many ends give it)
    for entry in (entry for end in completed for entry in end.output):
        name, got = entry.name.text, inner.infer(entry.value)
        if name not in given:
            given[name] = (got, 1)
            continue
        common, count = given[name]
        wider = widen(common, got)
        if wider is None:
            here.problem(
                "mismatch",
                f"every item of map '{node.name.text}' must give '{name}' as {common}, not {got}",
                entry.value.span,
            )
        given[name] = (common if wider is None else wider, count + 1)
    fields: dict[str, Type] = {}
    for name, (t, count) in given.items():
        always = count == len(completed) or isinstance(t, Opt | Unknown) or t == NULL
        fields[name] = t if always else Opt(t)
    return ListT(env.shape(f"item of {node.name.text}", fields))


def body_roots(env: TypeEnv, roots: Mapping[str, Type], node: sp.MapNode) -> dict[str, Type]:
    """The roots a map's body sees: those around it, its item by its alias and, when it
    declares them, its item's variables as ``local`` (a map inside keeps them visible
    unless it declares its own)."""
    quiet = Inference(env, roots, [])  # the walk reports each expression's problems
    inner = {**roots, node.alias.text: element(strip(quiet.infer(node.items)))}
    if node.locals:
        name = f"locals of {node.name.text}"
        env.kinds[name] = UNKNOWN_LOCAL
        inner[LOCAL_ROOT] = env.record(name, node.locals)
    return inner


def element(items: Type) -> Type:
    """The type of an item of a list (unknown for anything else)."""
    return items.elem if isinstance(items, ListT) else UNKNOWN
