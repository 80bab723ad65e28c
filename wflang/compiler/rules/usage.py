"""Usage rules: declarations nothing uses (WF304) and fields nothing reads (WF305)."""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.dataflow import reads
from wflang.compiler.model import Model
from wflang.compiler.registry import Finding, Pass, Preset, rule
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.diagnostics import Severity
from wflang.dsl.walk import node_expressions, subexpressions, triggers


@rule(
    "WF304",
    "unused-declaration",
    severity=Severity.WARNING,
    category="reference",
    pass_=Pass.NAMES,
    summary="Checks that declarations, context fields and imported workflows are used.",
)
def unused_declaration(m: Model) -> Iterator[Finding]:
    """A declaration nothing uses is noise, or a sign of a forgotten step: a
    signal, message, error, type or service nothing names, a context field
    nothing reads or writes, an imported workflow file that no ``call`` starts
    and none of whose declarations is used. Files without a workflow header are
    libraries: their declarations are for importers.

    Bad:

        signal cancel
        start a
        end a: completed

    Good:

        signal cancel
        start a
        wait a: signal cancel { next done }
        end done: completed
    """
    if m.spec.header is None:
        return
    used = _used_names(m)
    for d in m.spec.declarations:
        if isinstance(
            d, sp.SignalDecl | sp.MessageDecl | sp.TypeDecl | sp.EnumDecl | sp.ServiceDecl
        ):
            if d.name.text not in used:
                kind = type(d).__name__.removesuffix("Decl").lower()
                yield Finding(f"{kind} '{d.name.text}' is never used", d.name.span)
        elif isinstance(d, sp.ErrorDecl):
            for n in d.names:
                if n.text not in used:
                    yield Finding(f"error '{n.text}' is never used", n.span)
        elif isinstance(d, sp.ContextDecl):
            read = _fields_read(m, "context")
            written = _written(m)
            for f in d.fields:
                if read is not None and f.name.text not in read | written:
                    yield Finding(f"context field '{f.name.text}' is never used", f.name.span)
    yield from _unused_imports(m, used)


@rule(
    "WF305",
    "unread-field",
    severity=Severity.WARNING,
    category="reference",
    pass_=Pass.NAMES,
    preset=Preset.STRICT,
    summary="Checks that every input field is read, and every context field written is read.",
)
def unread_field(m: Model) -> Iterator[Finding]:
    """An input field nothing reads, or a context field steps write and nothing
    reads, is data the workflow carries for no step: often a forgotten step or a
    leftover of an earlier version. In the strict preset: a field kept only as a
    record of the instance (for ``wf status``) is a choice some teams make.

    Bad:

        input { order_id: string, coupon: string? }
        context { receipt: string? }
        task pay: service pay.charge { args { order: input.order_id } output { receipt: result.id } next done }

    Good:

        input { order_id: string }
        task pay: service pay.charge { args { order: input.order_id } next done }
    """
    if m.spec.header is None:
        return
    for d in m.spec.declarations:
        if not isinstance(d, sp.InputDecl | sp.ContextDecl):
            continue
        root = "input" if isinstance(d, sp.InputDecl) else "context"
        read = _fields_read(m, root)
        if read is None:
            continue  # the whole record is read
        written = _written(m) if root == "context" else set()
        for f in d.fields:
            if f.name.text in read:
                continue
            if root == "input":
                yield Finding(f"input field '{f.name.text}' is never read", f.name.span)
            elif f.name.text in written:
                yield Finding(
                    f"context field '{f.name.text}' is written but never read", f.name.span
                )


def _written(m: Model) -> set[str]:
    return {field for name in m.nodes for field in m.writes(name)}


def _fields_read(m: Model, root: str) -> set[str] | None:
    """The fields of ``input`` or ``context`` the workflow reads (None: it reads the
    whole record, as a value)."""
    fields: set[str] = set()
    for node in m.all_nodes():
        for e in node_expressions(node):
            targets = set()
            for name, member in reads(e, root):
                fields.add(name)
                targets.add(id(member.target))
            for sub in subexpressions(e):
                if isinstance(sub, ex.Ref) and sub.name == root and id(sub) not in targets:
                    return None
    return fields


def _unused_imports(m: Model, used: set[str]) -> Iterator[Finding]:
    """Imported workflow files that nothing uses: no call starts their workflow
    and this file names none of their declarations."""
    called = {node.workflow.text for node in m.all_nodes() if isinstance(node, sp.CallNode)}
    for decl, target in m.module.imports:
        module = m.program.modules.get(target) if target else None
        spec = module.spec if module is not None else None
        if spec is None or spec.header is None:
            continue  # a library, or a file WF113 reports
        name = spec.header.name.text
        if (f"{decl.alias.text}.{name}" if decl.alias is not None else name) in called:
            continue
        if any(_declared(d) & used for d in spec.declarations):
            continue
        yield Finding(f"workflow '{name}' is imported but never called", decl.span)


def _declared(d: sp.Declaration) -> set[str]:
    if isinstance(d, sp.ErrorDecl):
        return {n.text for n in d.names}
    if isinstance(d, sp.SignalDecl | sp.MessageDecl | sp.TypeDecl | sp.EnumDecl | sp.ServiceDecl):
        return {d.name.text}
    return set()


def _used_names(m: Model) -> set[str]:
    """Every name a workflow file mentions outside its own declarations' names."""
    used: set[str] = set()
    for node in m.all_nodes():
        for e in node_expressions(node):
            for sub in subexpressions(e):
                if isinstance(sub, ex.Ref):
                    used.add(sub.name)
        work = getattr(node, "work", None)
        if isinstance(work, sp.ServiceWork):
            used.add(work.service.text)
        if isinstance(work, sp.SendWork):
            used.add(work.name.text)
        for trig in triggers(node):
            used.add(trig.signal.text if isinstance(trig, sp.SignalTrigger) else trig.message.text)
        for h in getattr(node, "handlers", ()):
            used.update(e.text for e in h.errors)
        retry = getattr(node, "retry", None)
        if retry is not None:
            used.update(e.text for e in retry.non_retryable or ())
        err = getattr(node, "error", None)
        if err is not None:
            used.add(err.text)
        used.update(e.text for e in getattr(node, "raises", ()))
        used.update(_type_names(getattr(node, "form", None) or ()))
    for d in m.spec.declarations:
        if isinstance(d, sp.ServiceDecl):
            used.update(e.text for e in d.raises)
            used.update(_type_names(d.params))
            if isinstance(d.result, tuple):
                used.update(_type_names(d.result))
            elif d.result is not None:
                used.add(d.result.name)
        elif isinstance(d, sp.TypeDecl | sp.InputDecl | sp.ContextDecl | sp.OutputDecl):
            used.update(_type_names(d.fields))
        elif isinstance(d, sp.SignalDecl | sp.MessageDecl):
            used.update(_type_names(d.payload or ()))
    return used


def _type_names(fields: tuple[sp.Field, ...]) -> set[str]:
    names: set[str] = set()
    for f in fields:
        stack: list[ty.TypeSpec] = [f.type]
        while stack:
            t = stack.pop()
            if isinstance(t, ty.OptionalType):
                stack.append(t.inner)
            elif isinstance(t, ty.GenericType):
                stack.extend(t.args)
            else:
                names.add(t.name)
        if f.default is not None:
            names.update(s.name for s in subexpressions(f.default) if isinstance(s, ex.Ref))
    return names
