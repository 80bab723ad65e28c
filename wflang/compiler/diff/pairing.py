"""Pairing: the old and the new workflow's elements, matched once for every rule.

Nodes are paired by name (in any scope), declarations by name, fields by their
path (``input.amount``, ``signal approval.approved``), and the edges of a node
present in both versions by their label (``next``, ``else``, ``when <guard>``,
``on OutOfStock``, ``timeout #1``). Spans take no part in equality, so two
elements written differently but meaning the same compare equal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Generic, TypeVar

import attrs
from attrs import frozen

from wflang.compiler.model import outgoing
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Related
from wflang.dsl.formatter import format_expr
from wflang.dsl.span import Span
from wflang.dsl.types import OptionalType
from wflang.dsl.walk import TOP, walk_nodes

T = TypeVar("T")
N = TypeVar("N", bound=sp.TypeDecl | sp.EnumDecl | sp.SignalDecl | sp.MessageDecl | sp.ServiceDecl)


@frozen
class Pair(Generic[T]):
    """An element present in both versions, under the same key."""

    key: str
    old: T
    new: T


@frozen
class Paired(Generic[T]):
    """Elements of two versions matched by key: in both, only old, only new."""

    both: tuple[Pair[T], ...]
    removed: tuple[tuple[str, T], ...]
    added: tuple[tuple[str, T], ...]


def pair(old: Mapping[str, T], new: Mapping[str, T]) -> Paired[T]:
    """Match two keyed collections; each part keeps the order of its version."""
    return Paired(
        tuple(Pair(k, old[k], v) for k, v in new.items() if k in old),
        tuple((k, v) for k, v in old.items() if k not in new),
        tuple((k, v) for k, v in new.items() if k not in old),
    )


@frozen
class NodeRec:
    """A node and the scope it lives in (``""``, ``parallel/branch`` or a map's name)."""

    node: sp.Node
    scope: str


@frozen
class EdgeRec:
    """A written edge: its target, and the span of the clause that says it."""

    target: str
    span: Span


def nodes_of(spec: sp.WorkflowSpec) -> dict[str, NodeRec]:
    """Every node of a workflow by name, nested ones too (the first of duplicates wins)."""
    out: dict[str, NodeRec] = {}
    for placed in walk_nodes(spec.nodes):
        out.setdefault(placed.name, NodeRec(placed.node, placed.scope))
    return out


def edges_of(node: sp.Node) -> dict[str, EdgeRec]:
    """A node's edges by label; an end's edges are never taken and are left out."""
    if isinstance(node, sp.EndNode):
        return {}
    out: dict[str, EdgeRec] = {}
    timeouts = 0
    arms = iter(node.arms) if isinstance(node, sp.ChoiceNode) else iter(())
    for edge in outgoing(node, labels=isinstance(node, sp.FirstNode)):
        if edge.kind in ("when", "else"):
            arm = next(arms)
            label = "else" if arm.guard is None else f"when {format_expr(arm.guard)}"
            span = arm.span
        elif edge.kind.startswith("timeout"):
            timeouts += 1
            label, span = f"timeout #{timeouts}", edge.target.span
        elif edge.kind == "arm":  # a first's arm, by its event (a timer by its order)
            timer = edge.label.partition(" ")[0]
            label = timer if timer in ("after", "until") else f"on {edge.label}"
            span = edge.target.span
        elif edge.kind in ("error", "event", "event-side"):  # on E, on signal S
            label, span = f"on {edge.label}", edge.target.span
        else:
            label, span = "next", edge.target.span
        key, n = label, 1
        while key in out:
            n += 1
            key = f"{label} #{n}"
        out[key] = EdgeRec(edge.target.text, span)
    return out


def fields(
    decls: tuple[sp.Declaration, ...], kind: type[sp.InputDecl | sp.ContextDecl | sp.OutputDecl]
) -> dict[str, sp.Field]:
    """The fields of every declaration of a kind (input, context, output), by name."""
    out: dict[str, sp.Field] = {}
    for d in decls:
        if isinstance(d, kind):
            for f in d.fields:
                out.setdefault(f.name.text, f)
    return out


def named(decls: tuple[sp.Declaration, ...], kind: type[N]) -> dict[str, N]:
    """Declarations of a kind by name."""
    return {d.name.text: d for d in decls if isinstance(d, kind)}


def error_names(decls: tuple[sp.Declaration, ...]) -> dict[str, sp.Ident]:
    return {n.text: n for d in decls if isinstance(d, sp.ErrorDecl) for n in d.names}


def is_optional(f: sp.Field) -> bool:
    """A field a caller may leave out: it has a default or an optional type."""
    return f.default is not None or isinstance(f.type, OptionalType)


def start_of(spec: sp.WorkflowSpec) -> sp.StartDecl | None:
    return next((d for d in spec.declarations if isinstance(d, sp.StartDecl)), None)


def can_complete(nodes: Mapping[str, NodeRec]) -> set[str]:
    """Nodes from which an end of their own scope can be reached."""
    preds: dict[str, set[str]] = {}
    for name, rec in nodes.items():
        for edge in edges_of(rec.node).values():
            target = nodes.get(edge.target)
            if target is not None and target.scope == rec.scope:
                preds.setdefault(edge.target, set()).add(name)
    done = {n for n, r in nodes.items() if isinstance(r.node, sp.EndNode)}
    todo = list(done)
    while todo:
        for p in preds.get(todo.pop(), ()):
            if p not in done:
                done.add(p)
                todo.append(p)
    return done


def same_but_name(old: sp.Node, new: sp.Node) -> bool:
    """Whether two nodes differ in their name only (a rename)."""
    return type(old) is type(new) and attrs.evolve(new, name=old.name) == old


@frozen
class Pairing:
    """The two versions of one workflow with their elements paired.

    Rules read the pairs; they never pair anything themselves. ``anchor`` is
    where findings about removed elements point: the new workflow's header.
    """

    old: sp.WorkflowSpec
    new: sp.WorkflowSpec

    @property
    def anchor(self) -> Span:
        return self.new.header.span if self.new.header is not None else self.new.span

    @staticmethod
    def was(span: Span, what: str = "in the old version") -> tuple[Related, ...]:
        """The old location of an element, as a related location."""
        return (Related(span, what),)

    # -- header

    @property
    def old_version(self) -> int | None:
        return self.old.header.version if self.old.header is not None else None

    @property
    def new_version(self) -> int | None:
        return self.new.header.version if self.new.header is not None else None

    # -- nodes and edges

    @cached_property
    def old_nodes(self) -> dict[str, NodeRec]:
        return nodes_of(self.old)

    @cached_property
    def declared_renames(self) -> dict[str, str]:
        """Old name -> new name, for nodes that say ``renamed from OLD``.

        Such a node is paired with the old one under the old name, and edges to it
        are read as edges to the old name: the rename itself is then the only change.
        """
        old, new = self.old_nodes, nodes_of(self.new)
        out: dict[str, str] = {}
        for name, rec in new.items():
            was = rec.node.renamed_from
            if was is not None and was.text in old and was.text not in new:
                out.setdefault(was.text, name)
        return out

    @cached_property
    def _back(self) -> dict[str, str]:
        return {new: old for old, new in self.declared_renames.items()}

    @cached_property
    def new_nodes(self) -> dict[str, NodeRec]:
        """The new version's nodes, a declared rename under its old name."""
        return {self._back.get(n, n): rec for n, rec in nodes_of(self.new).items()}

    def new_edges(self, node: sp.Node) -> dict[str, EdgeRec]:
        """A new node's edges, with targets that were renamed read as their old names."""
        back = self._back
        return {
            label: EdgeRec(back.get(e.target, e.target), e.span)
            for label, e in edges_of(node).items()
        }

    @cached_property
    def nodes(self) -> Paired[NodeRec]:
        return pair(self.old_nodes, self.new_nodes)

    @cached_property
    def renames(self) -> dict[str, str]:
        """Removed node -> added node that differs from it only in its name."""
        out: dict[str, str] = {}
        taken: set[str] = set()
        for old_name, old in self.nodes.removed:
            for new_name, new in self.nodes.added:
                if new_name not in taken and same_but_name(old.node, new.node):
                    out[old_name] = new_name
                    taken.add(new_name)
                    break
        return out

    def edges(self) -> Iterator[tuple[Pair[NodeRec], Paired[EdgeRec]]]:
        """The edges of every node present in both versions, paired by label."""
        for p in self.nodes.both:
            yield p, pair(edges_of(p.old.node), self.new_edges(p.new.node))

    @cached_property
    def old_completes(self) -> set[str]:
        return can_complete(self.old_nodes)

    @cached_property
    def new_completes(self) -> set[str]:
        return {self._back.get(n, n) for n in can_complete(nodes_of(self.new))}

    # -- declarations

    @cached_property
    def input(self) -> Paired[sp.Field]:
        return pair(fields(self.old.declarations, sp.InputDecl),
                    fields(self.new.declarations, sp.InputDecl))  # fmt: skip

    @cached_property
    def context(self) -> Paired[sp.Field]:
        return pair(fields(self.old.declarations, sp.ContextDecl),
                    fields(self.new.declarations, sp.ContextDecl))  # fmt: skip

    @cached_property
    def output(self) -> Paired[sp.Field]:
        return pair(fields(self.old.declarations, sp.OutputDecl),
                    fields(self.new.declarations, sp.OutputDecl))  # fmt: skip

    @cached_property
    def signals(self) -> Paired[sp.SignalDecl]:
        return pair(named(self.old.declarations, sp.SignalDecl),
                    named(self.new.declarations, sp.SignalDecl))  # fmt: skip

    @cached_property
    def messages(self) -> Paired[sp.MessageDecl]:
        return pair(named(self.old.declarations, sp.MessageDecl),
                    named(self.new.declarations, sp.MessageDecl))  # fmt: skip

    @cached_property
    def enums(self) -> Paired[sp.EnumDecl]:
        return pair(named(self.old.declarations, sp.EnumDecl),
                    named(self.new.declarations, sp.EnumDecl))  # fmt: skip

    @cached_property
    def records(self) -> Paired[sp.TypeDecl]:
        return pair(named(self.old.declarations, sp.TypeDecl),
                    named(self.new.declarations, sp.TypeDecl))  # fmt: skip

    @cached_property
    def services(self) -> Paired[sp.ServiceDecl]:
        return pair(named(self.old.declarations, sp.ServiceDecl),
                    named(self.new.declarations, sp.ServiceDecl))  # fmt: skip

    @cached_property
    def errors(self) -> Paired[sp.Ident]:
        return pair(error_names(self.old.declarations), error_names(self.new.declarations))

    def caller_fields(self) -> Iterator[tuple[str, Paired[sp.Field]]]:
        """What callers write: the input, and the payload of every signal and message
        present in both versions, each with the prefix of its paths."""
        yield "input", self.input
        for s in self.signals.both:
            yield f"signal {s.key}", pair(_payload(s.old.payload), _payload(s.new.payload))
        for m in self.messages.both:
            yield f"message {m.key}", pair(_payload(m.old.payload), _payload(m.new.payload))
        # an error's payload is sent by the handlers (and people) that raise it
        old_payloads, new_payloads = error_payloads(self.old), error_payloads(self.new)
        for e in self.errors.both:
            was, now = old_payloads.get(e.key), new_payloads.get(e.key)
            if was is not None or now is not None:
                yield f"error {e.key}", pair(_payload(was), _payload(now))

    def map_locals(self) -> Iterator[tuple[str, Paired[sp.Field]]]:
        """The item variables (``local { … }``) of every map in both versions, by map."""
        for p in self.nodes.both:
            old, new = p.old.node, p.new.node
            if isinstance(old, sp.MapNode) and isinstance(new, sp.MapNode):
                yield p.key, pair(_payload(old.locals), _payload(new.locals))

    # -- ends

    def ends(self, which: Mapping[str, NodeRec]) -> dict[str, sp.EndNode]:
        """Top-level ends: the outcomes of the workflow itself."""
        return {
            n: r.node for n, r in which.items() if r.scope == TOP and isinstance(r.node, sp.EndNode)
        }


def error_payloads(spec: sp.WorkflowSpec) -> dict[str, tuple[sp.Field, ...]]:
    """The payload fields of the errors a file declares with one, by name."""
    return {n: f for d in spec.declarations if isinstance(d, sp.ErrorDecl) for n, f in d.payloads}


def _payload(payload: tuple[sp.Field, ...] | None) -> dict[str, sp.Field]:
    return {f.name.text: f for f in payload or ()}
