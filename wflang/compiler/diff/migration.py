"""``wf diff --instances``: which waiting instances could move to the new version.

An instance waiting at a node of the old version can continue on the new one
when that node exists there (by name, or declared ``renamed from`` it) with the
same kind and the same outgoing events (edge labels: ``next``, ``on Error``,
``timeout #1``...), and no context field that the node or any node after it
reads was removed or retyped (the compensating tasks of the steps before and
after it count: a failure may run them). Nobody waits at a choice or an end, so
those always can. A node that cannot continue means the old version must be
drained.
"""

from __future__ import annotations

import json

from attrs import frozen

from wflang.compiler.dataflow import context_reads
from wflang.compiler.diff.pairing import NodeRec, Pairing, edges_of, fields, nodes_of
from wflang.compiler.diff.rules import kind
from wflang.dsl import spec as sp
from wflang.dsl.walk import child_nodes, owner_of


@frozen
class NodeMigration:
    """Whether instances waiting at one node of the old version could continue."""

    node: str
    kind: str
    scope: str
    reasons: tuple[str, ...]

    @property
    def can_continue(self) -> bool:
        return not self.reasons


@frozen
class Migration:
    """Every node of the old version, in source order."""

    nodes: tuple[NodeMigration, ...]

    @property
    def can_continue(self) -> bool:
        return all(n.can_continue for n in self.nodes)


def _reads(node: sp.Node) -> set[str]:
    """Context fields a node reads, with the nodes nested in it."""
    out = {name for name, _ in context_reads(node)}
    for child in child_nodes(node):
        out |= _reads(child)
    return out


def _later(nodes: dict[str, NodeRec], start: str) -> list[str]:
    """``start`` and every node reachable from it, leaving a branch or a map body
    through the node that owns it."""
    seen = [start]
    todo = [start]
    while todo:
        rec = nodes[todo.pop()]
        targets = [e.target for e in edges_of(rec.node).values()]
        owner = owner_of(rec.scope)
        if owner is not None:
            targets.append(owner)
        for t in targets:
            if t in nodes and t not in seen:
                seen.append(t)
                todo.append(t)
    return seen


def _compensations(nodes: dict[str, NodeRec], steps: set[str]) -> list[str]:
    """The compensating tasks of ``steps``: a later failure may run any of them."""
    out = []
    for s in sorted(steps):
        comp = getattr(nodes[s].node, "compensate", None)
        if comp is not None and comp.text in nodes:
            out.append(comp.text)
    return out


#: Nodes nobody waits at: a choice decides at once, an end has finished the instance.
_NEVER_WAITED_AT = (sp.ChoiceNode, sp.EndNode)


def migrate(old: sp.WorkflowSpec, new: sp.WorkflowSpec) -> Migration:
    """For each node of ``old``, why instances waiting there could not go on in ``new``."""
    pairing = Pairing(old, new)
    old_nodes = nodes_of(old)
    new_nodes = pairing.new_nodes  # a node declared `renamed from X` stands in for X
    old_ctx = fields(old.declarations, sp.ContextDecl)
    new_ctx = fields(new.declarations, sp.ContextDecl)
    broken_ctx: dict[str, str] = {}
    for name, f in old_ctx.items():
        if name not in new_ctx:
            broken_ctx[name] = f"context field '{name}' was removed"
        elif new_ctx[name].type != f.type:
            broken_ctx[name] = (
                f"context field '{name}' changed from {f.type} to {new_ctx[name].type}"
            )
    ancestors: dict[str, set[str]] = {}
    for n in old_nodes:
        for m in _later(old_nodes, n):
            ancestors.setdefault(m, set()).add(n)
    rows: list[NodeMigration] = []
    for name, rec in old_nodes.items():
        reasons: list[str] = []
        if isinstance(rec.node, _NEVER_WAITED_AT):
            rows.append(NodeMigration(name, kind(rec.node), rec.scope, ()))
            continue
        there = new_nodes.get(name)
        if there is None and name in pairing.renames:
            reasons.append(
                f"it was renamed to '{pairing.renames[name]}' (an instance follows a rename "
                f"only when the new node says 'renamed from {name}')"
            )
        elif there is None:
            reasons.append("the node is gone")
        elif kind(there.node) != kind(rec.node):
            reasons.append(f"it is now a {kind(there.node)}")
        else:
            before, after = set(edges_of(rec.node)), set(edges_of(there.node))
            reasons += [f"event '{e}' is gone" for e in sorted(before - after)]
            reasons += [f"event '{e}' is new" for e in sorted(after - before)]
        read: set[str] = set()
        later = _later(old_nodes, name)
        for n in later:
            read |= _reads(old_nodes[n].node)
        for n in _compensations(old_nodes, {*later, *ancestors.get(name, ())}):
            read |= _reads(old_nodes[n].node)
        reasons += [broken_ctx[f] for f in sorted(read) if f in broken_ctx]
        rows.append(NodeMigration(name, kind(rec.node), rec.scope, tuple(reasons)))
    return Migration(tuple(rows))


def render_text(m: Migration) -> str:
    """A table: node, kind, whether instances there can continue, and why not."""
    head = ("node", "kind", "continue", "why not")
    body = [
        (n.node, n.kind, "yes" if n.can_continue else "no", "; ".join(n.reasons)) for n in m.nodes
    ]
    widths = [max(len(r[i]) for r in (head, *body)) for i in range(3)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3]
        for r in (head, *body)
    ]
    stuck = sum(not n.can_continue for n in m.nodes)
    lines.append("")
    lines.append(
        "Every waiting instance can continue on the new version."
        if not stuck
        else f"{stuck} of {len(m.nodes)} nodes cannot continue: drain the old version."
    )
    return "\n".join(line.rstrip() for line in lines) + "\n"


def render_json(m: Migration, old: str, new: str) -> str:
    doc = {
        "old": old,
        "new": new,
        "can_continue": m.can_continue,
        "nodes": [
            {
                "node": n.node,
                "kind": n.kind,
                "scope": n.scope,
                "can_continue": n.can_continue,
                "reasons": list(n.reasons),
            }
            for n in m.nodes
        ],
    }
    return json.dumps(doc, indent=2) + "\n"
