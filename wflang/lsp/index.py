"""Every name written in a file, with what it names: the one index that definitions,
references, highlights, rename, hover and semantic tokens read.

An occurrence is resolved through the checker's model (the declarations by name,
imported ones included, so a target may be in another file) and its typing (a field
read ``context.total`` resolves through the type of ``context``). Two occurrences
name the same thing when their targets are the same span.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Literal

from attrs import frozen

from wflang.compiler.inference import typing_of
from wflang.compiler.model import Model
from wflang.compiler.symbols import type_names
from wflang.compiler.types import Record, strip
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.span import Span
from wflang.dsl.walk import node_expressions, subexpressions, triggers, walk_nodes

Kind = Literal[
    "node", "type", "member", "field", "service", "signal", "message", "error", "param"
]  # fmt: skip


@frozen
class Occurrence:
    kind: Kind
    name: str
    span: Span  # where the name is written
    target: Span | None  # the name in its declaration (None: it names nothing known)
    declaration: bool = False


def occurrences(model: Model) -> list[Occurrence]:
    """Every name of the model's file, in source order."""
    found = list(_declarations(model))
    found.extend(_nodes(model))
    found.extend(_field_reads(model))
    found.sort(key=lambda o: (o.span.line, o.span.column))
    return found


def at(found: Iterable[Occurrence], line: int, column: int) -> Occurrence | None:
    """The occurrence under a cursor (a cursor just after a name is on it)."""
    for o in found:
        s = o.span
        if s.line == line and s.column <= column <= s.end_column:
            return o
    return None


def _define(kind: Kind, ident: sp.Ident) -> Occurrence:
    return Occurrence(kind, ident.text, ident.span, ident.span, True)


def _fields(fields: Iterable[sp.Field], model: Model) -> Iterator[Occurrence]:
    for f in fields:
        yield _define("field", f.name)
        yield from _types(f.type, model)


def _types(spec: ty.TypeSpec, model: Model) -> Iterator[Occurrence]:
    for t in type_names(spec):
        if isinstance(t, ty.NamedType):
            decl = model.types.get(t.name)
            yield Occurrence("type", t.name, t.span, decl.name.span if decl else None)


def _declarations(model: Model) -> Iterator[Occurrence]:
    for item in model.spec.items:
        match item:
            case sp.TypeDecl():
                yield _define("type", item.name)
                yield from _fields(item.fields, model)
            case sp.EnumDecl():
                yield _define("type", item.name)
                yield from (_define("member", m) for m in item.members)
            case sp.InputDecl() | sp.ContextDecl() | sp.OutputDecl():
                yield from _fields(item.fields, model)
            case sp.SignalDecl() | sp.MessageDecl():
                yield _define("signal" if isinstance(item, sp.SignalDecl) else "message", item.name)
                yield from _fields(item.payload or (), model)
            case sp.ErrorDecl():
                yield from (_define("error", n) for n in item.names)
                for _, payload in item.payloads:
                    yield from _fields(payload, model)
            case sp.ServiceDecl():
                yield _define("service", item.name)
                yield from _fields(item.params, model)
                if isinstance(item.result, ty.NamedType):
                    yield from _types(item.result, model)
                elif item.result is not None:
                    yield from _fields(item.result, model)
                yield from _errors(item.raises, model)
            case sp.StartDecl():
                yield _node_ref(item.target, model)


def _node_ref(ident: sp.Ident, model: Model) -> Occurrence:
    info = model.nodes.get(ident.text)
    return Occurrence("node", ident.text, ident.span, info.node.name.span if info else None)


def _errors(idents: Iterable[sp.Ident], model: Model) -> Iterator[Occurrence]:
    for i in idents:
        decl = model.errors.get(i.text)
        yield Occurrence("error", i.text, i.span, decl.span if decl else None)


def _named(kind: Kind, ident: sp.Ident, decls: Mapping[str, sp.SignalDecl | sp.MessageDecl]
           ) -> Occurrence:  # fmt: skip
    decl = decls.get(ident.text)
    return Occurrence(kind, ident.text, ident.span, decl.name.span if decl else None)


def _nodes(model: Model) -> Iterator[Occurrence]:
    for placed in walk_nodes(model.spec.nodes):
        node = placed.node
        yield _define("node", node.name)
        targets = [getattr(node, "next", None), getattr(node, "compensate", None)]
        targets += [t.target for t in getattr(node, "timeouts", ())]
        targets += [h.target for h in getattr(node, "handlers", ())]
        targets += [e.target for e in getattr(node, "events", ())]
        if isinstance(node, sp.ChoiceNode):
            targets += [a.target for a in node.arms]
        yield from (_node_ref(t, model) for t in targets if t is not None)
        for h in getattr(node, "handlers", ()):
            yield from _errors(h.errors, model)
        retry = getattr(node, "retry", None)
        if retry is not None and retry.non_retryable:
            yield from _errors(retry.non_retryable, model)
        yield from _errors(getattr(node, "raises", ()), model)
        if isinstance(node, sp.EndNode) and node.error is not None:
            yield from _errors((node.error,), model)
        yield from _work(node, model)
        yield from _outputs(node, model)


def _work(node: sp.Node, model: Model) -> Iterator[Occurrence]:
    for trigger in triggers(node):  # a wait's, the boundary events', a first's arms'
        if isinstance(trigger, sp.SignalTrigger):
            yield _named("signal", trigger.signal, model.signals)
        else:
            yield _named("message", trigger.message, model.messages)
    if isinstance(node, sp.TaskNode) and isinstance(node.work, sp.SendWork):
        yield from _send(node, node.work, model)
    if isinstance(node, sp.TaskNode) and isinstance(node.work, sp.ServiceWork):
        ident = node.work.service
        service = model.services.get(ident.text)
        yield Occurrence("service", ident.text, ident.span, service.name.span if service else None)
        params = {p.name.text: p for p in service.params} if service else {}
        for entry in node.args:
            param = params.get(entry.name.text)
            yield Occurrence(
                "param", entry.name.text, entry.name.span, param.name.span if param else None
            )


def _send(node: sp.TaskNode, work: sp.SendWork, model: Model) -> Iterator[Occurrence]:
    """``send signal S`` / ``send message M``: the name sent, and the payload's fields
    its ``args`` fill."""
    signal = work.kind is sp.SendKind.SIGNAL
    decls = model.signals if signal else model.messages
    yield _named("signal" if signal else "message", work.name, decls)
    decl = decls.get(work.name.text)
    payload = {f.name.text: f for f in (decl.payload or ())} if decl is not None else {}
    for entry in node.args:
        field = payload.get(entry.name.text)
        target = field.name.span if field is not None else None
        yield Occurrence("field", entry.name.text, entry.name.span, target)


def _outputs(node: sp.Node, model: Model) -> Iterator[Occurrence]:
    """``output { total: … }`` writes ``context.total`` (an end's, the workflow's output)."""
    fields = model.output if isinstance(node, sp.EndNode) else model.context
    events = getattr(node, "events", ())
    for entry in (*getattr(node, "output", ()), *(x for e in events for x in e.output)):
        if entry.local:
            continue
        declared = fields.get(entry.name.text)
        target = declared.name.span if declared else None
        yield Occurrence("field", entry.name.text, entry.name.span, target)


def _expressions(model: Model) -> Iterator[ex.Expr]:
    for placed in walk_nodes(model.spec.nodes):
        yield from node_expressions(placed.node)


def _field_reads(model: Model) -> Iterator[Occurrence]:
    """``a.b``: the field ``b`` of the record ``a`` is typed as (its declaration)."""
    typing = typing_of(model)
    env = typing.env
    if env is None:
        return
    for root in _expressions(model):
        for e in subexpressions(root):
            if not isinstance(e, ex.Member):
                continue
            owner = typing.types.get((e.target, e.target.span))
            record = strip(owner) if owner is not None else None
            fields = env.fields(record) if isinstance(record, Record) else None
            declared = fields.get(e.name) if fields else None
            s = e.span
            where = Span(s.file, s.end_line, s.end_column - len(e.name), s.end_line, s.end_column)
            target = declared.name.span if declared is not None else None
            yield Occurrence("field", e.name, where, target)
