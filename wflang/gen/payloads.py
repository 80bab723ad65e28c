"""The values a workflow takes from outside, as declared: what ``wf gen json-schema``
describes and ``wf gen typescript`` types, for other languages and API gateways.

A workflow's boundary is what the runtime checks a value from outside against
(``runtime.shapes``): its input; each signal's and message's payload; each human task's
form; each error's payload (a handler or a person failing a task with it); each called
service's result (what a handler in another language returns: fields beyond the declared
ones are let through, ``open``). They are found as the checker finds the names a
workflow sees (``compiler.model``): the files it imports first, later imports winning,
its own declarations last; each payload keeps the file its fields are written in, whose
``Scope`` resolves their types.
"""

from __future__ import annotations

from collections.abc import Iterator

from attrs import frozen

from wflang.compiler.program import Module, Program
from wflang.dsl import spec as sp
from wflang.dsl.walk import all_nodes
from wflang.gen.names import GenError, Scope, scope_of


@frozen
class Payload:
    """One kind of value a workflow takes from outside, by the fields it is declared with.

    ``kind`` is ``input``, ``signal``, ``message``, ``form``, ``error`` or ``result``;
    ``name`` the signal, message, task, error or service (the workflow for its input)."""

    kind: str
    name: str
    fields: tuple[sp.Field, ...]
    scope: Scope  # the file the fields are written in
    open: bool = False  # fields beyond the declared ones are let through (a result)

    @property
    def title(self) -> str:
        """``input``, ``signal card_updated``, ``result of payments.charge``."""
        if self.kind == "input":
            return "input"
        if self.kind == "result":
            return f"result of {self.name}"
        return f"{self.kind} {self.name}"


class Scopes:
    """The scope of each file of a program, made once."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._made: dict[str, Scope] = {}

    def of(self, path: str) -> Scope:
        found = self._made.get(path)
        if found is None:
            found = self._made[path] = scope_of(self.program.modules[path], self.program)
        return found


def boundary(module: Module, scopes: Scopes) -> list[Payload]:
    """The payloads of the workflow of ``module``, in a fixed order: the input, the
    signals and the messages by name, the forms in source order, the errors by name,
    the results of the services in the order of their first call."""
    spec = module.spec
    assert spec is not None and spec.header is not None
    seen = _visible(module, scopes.program)
    here = scopes.of(module.path)
    inputs = next((d.fields for d in spec.declarations if isinstance(d, sp.InputDecl)), ())
    found = [Payload("input", spec.header.name.text, inputs, here)]
    events: dict[tuple[str, str], Payload] = {}  # later wins, as in the checker's symbols
    for m, d in seen:
        if isinstance(d, sp.SignalDecl | sp.MessageDecl):
            kind = "signal" if isinstance(d, sp.SignalDecl) else "message"
            events[kind, d.name.text] = Payload(
                kind, d.name.text, d.payload or (), scopes.of(m.path)
            )
    found += [events[key] for key in sorted(events)]
    for node in all_nodes(spec.nodes):
        if isinstance(node, sp.TaskNode) and node.form is not None:
            found.append(Payload("form", node.name.text, node.form, here))
    errors: dict[str, Payload] = {}
    for m, d in seen:
        if isinstance(d, sp.ErrorDecl):
            for name, fields in d.payloads:
                errors[name] = Payload("error", name, fields, scopes.of(m.path))
    found += [errors[name] for name in sorted(errors)]
    services = {d.name.text: (m, d) for m, d in seen if isinstance(d, sp.ServiceDecl)}
    for name in called(spec):
        if name not in services:
            raise GenError(f"{module.path}: service '{name}' is not declared")
        declaring, service = services[name]
        result = _result(service, scopes.of(declaring.path), scopes)
        if result is not None:
            found.append(Payload("result", name, result[0], result[1], open=True))
    return found


def _visible(module: Module, program: Program) -> list[tuple[Module, sp.Declaration]]:
    """The declarations ``module`` sees with the file of each: its direct imports' first,
    in order, then its own (``compiler.model.build_model``'s order)."""
    found = []
    for m in [*program.imported(module), module]:
        if m.spec is not None:
            found += [(m, d) for d in m.spec.declarations]
    return found


def _result(
    decl: sp.ServiceDecl, scope: Scope, scopes: Scopes
) -> tuple[tuple[sp.Field, ...], Scope] | None:
    """A service's result fields and where they are written (a record named as the
    result: its declaring file), or None when it has no result."""
    if decl.result is None:
        return None
    if isinstance(decl.result, tuple):
        return decl.result, scope
    named = scope.types.get(decl.result.name)
    if named is None or not isinstance(named.decl, sp.TypeDecl):
        raise GenError(f"{scope.path}: the result of {decl.name.text} is not a record")
    return named.decl.fields, scopes.of(named.path)


def called(spec: sp.WorkflowSpec) -> Iterator[str]:
    """The services the workflow's tasks call, each once, in the order of first call."""
    seen: set[str] = set()
    for node in all_nodes(spec.nodes):
        if isinstance(node, sp.TaskNode) and isinstance(node.work, sp.ServiceWork):
            name = node.work.service.text
            if name not in seen:
                seen.add(name)
                yield name
