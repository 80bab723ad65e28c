"""What a file declares, as the rules read it: named declarations, field groups,
the type names a type mentions, and close matches for a misspelt name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from wflang.compiler.model import Model
from wflang.dsl import spec as sp
from wflang.dsl import types as ty


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """A hint naming the closest candidate, if one is close enough."""
    import difflib  # only for a finding's hint: not on every check's path

    match = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f"did you mean '{match[0]}'?" if match else None


def declared_names(spec: sp.WorkflowSpec) -> Iterator[tuple[str, str, sp.Ident, object]]:
    """(namespace, name, ident, what it declares) of every named declaration in a file."""
    for d in spec.declarations:
        if isinstance(d, sp.TypeDecl | sp.EnumDecl):
            yield "type", d.name.text, d.name, d
        elif isinstance(d, sp.SignalDecl):
            yield "signal", d.name.text, d.name, d
        elif isinstance(d, sp.MessageDecl):
            yield "message", d.name.text, d.name, d
        elif isinstance(d, sp.ErrorDecl):
            for n in d.names:
                yield "error", n.text, n, n
        elif isinstance(d, sp.ServiceDecl):
            yield "service", d.name.text, d.name, d


def keyword(d: sp.InputDecl | sp.ContextDecl | sp.OutputDecl | sp.StartDecl) -> str:
    """The keyword a single declaration is written with: ``input``, ``start``…"""
    return type(d).__name__.removesuffix("Decl").lower()


def field_groups(m: Model) -> Iterator[tuple[str, tuple[sp.Field, ...]]]:
    """Every group of fields written in this file, with what owns it (for messages)."""
    for d in m.spec.declarations:
        if isinstance(d, sp.TypeDecl):
            yield f"type {d.name.text}", d.fields
        elif isinstance(d, sp.InputDecl | sp.ContextDecl | sp.OutputDecl):
            yield keyword(d), d.fields
        elif isinstance(d, sp.SignalDecl | sp.MessageDecl) and d.payload:
            yield f"payload of {d.name.text}", d.payload
        elif isinstance(d, sp.ErrorDecl):
            for name, payload in d.payloads:
                yield f"payload of error {name}", payload
        elif isinstance(d, sp.ServiceDecl):
            yield f"parameters of {d.name.text}", d.params
            if isinstance(d.result, tuple):  # a named result's fields are its type's
                yield f"result of {d.name.text}", d.result
    for node in m.all_nodes():
        form = getattr(node, "form", None)
        if form:
            yield f"form of {node.name.text}", form
        if isinstance(node, sp.MapNode) and node.locals:
            yield f"locals of {node.name.text}", node.locals


def all_fields(m: Model) -> Iterator[sp.Field]:
    """Every field written in this file: declarations, payloads, signatures, forms."""
    for _, fields in field_groups(m):
        yield from fields


def type_names(t: ty.TypeSpec) -> Iterator[ty.NamedType | ty.GenericType]:
    """The named and generic types a type is written with, outermost first."""
    if isinstance(t, ty.OptionalType):
        yield from type_names(t.inner)
    elif isinstance(t, ty.GenericType):
        yield t
        for a in t.args:
            yield from type_names(a)
    else:
        yield t
