"""Name rules (WF1xx): every name is defined once and every reference resolves."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from wflang.compiler.model import Model, outgoing
from wflang.compiler.registry import Finding, Pass, rule
from wflang.compiler.suggest import NearNames
from wflang.compiler.symbols import (
    all_fields,
    declared_names,
    did_you_mean,
    field_groups,
    keyword,
    type_names,
)
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.diagnostics import Related, Severity
from wflang.dsl.walk import TOP, triggers

name_rule = partial(rule, category="reference", pass_=Pass.NAMES)


@name_rule(
    "WF101",
    "duplicate-node",
    severity=Severity.ERROR,
    blocks=True,
    summary="Checks that no two nodes share a name, in any branch or map body.",
)
def duplicate_node(m: Model) -> Iterator[Finding]:
    """Node names are unique in the whole workflow: history, ops commands and
    diagrams refer to a node by its name alone.

    Bad:

        task notify: service mail.send { next done }
        parallel p { branch b { task notify: script { next e } end e: completed } }

    Good:

        task notify: service mail.send { next done }
        parallel p { branch b { task notify_branch: script { next e } end e: completed } }
    """
    for first, again in m.duplicate_nodes:
        yield Finding(
            f"node '{again.name.text}' is defined twice",
            again.name.span,
            related=(Related(first.name.span, "first defined here"),),
        )


@name_rule(
    "WF105",
    "duplicate-declaration",
    severity=Severity.ERROR,
    summary="Checks that declarations, fields and enum members are not given twice.",
)
def duplicate_declaration(m: Model) -> Iterator[Finding]:
    """A type, enum, signal, message, error or service is declared once per file;
    the files a file imports may declare it too, but only in the same way. Fields
    and enum members are given once each; ``input``, ``context``, ``output`` and
    ``start`` at most once.

    Bad:

        error Declined
        error Declined

    Good:

        error Declined
    """
    # The same declaration in two files is harmless (spans take no part in equality);
    # two different ones leave the reader to guess which one holds.
    imported: dict[tuple[str, str], tuple[str, object]] = {}  # -> (import path, declaration)
    for decl, target in m.module.imports:
        module = m.program.modules.get(target) if target else None
        if module is None or module.spec is None:
            continue
        for kind, name, ident, what in declared_names(module.spec):
            other = imported.setdefault((kind, name), (decl.path, what))
            if other[1] != what:
                yield Finding(
                    f"{kind} '{name}' is declared differently in '{other[0]}' and '{decl.path}'",
                    decl.span,
                    related=(Related(ident.span, "declared here"),),
                )
    seen: dict[tuple[str, str], sp.Ident] = {}
    for kind, name, ident, what in declared_names(m.spec):
        if (kind, name) in seen:
            yield Finding(
                f"{kind} '{name}' is declared twice",
                ident.span,
                related=(Related(seen[kind, name].span, "first declared here"),),
            )
        elif (kind, name) in imported and imported[kind, name][1] != what:
            yield Finding(
                f"{kind} '{name}' is declared differently in '{imported[kind, name][0]}'",
                ident.span,
                hint="use the imported declaration, or rename this one",
            )
        seen.setdefault((kind, name), ident)
    for owner, fields in field_groups(m):
        first: dict[str, sp.Field] = {}
        for f in fields:
            if f.name.text in first:
                yield Finding(
                    f"field '{f.name.text}' is given twice in {owner}",
                    f.name.span,
                    related=(Related(first[f.name.text].name.span, "first given here"),),
                )
            first.setdefault(f.name.text, f)
    for d in m.spec.declarations:
        if isinstance(d, sp.EnumDecl):
            members: set[str] = set()
            for member in d.members:
                if member.text in members:
                    yield Finding(f"enum member '{member.text}' is given twice", member.span)
                members.add(member.text)
    singles: dict[type, sp.Declaration] = {}
    for d in m.spec.declarations:
        if isinstance(d, sp.InputDecl | sp.ContextDecl | sp.OutputDecl | sp.StartDecl):
            if type(d) in singles:
                yield Finding(
                    f"'{keyword(d)}' is given twice",
                    d.span,
                    related=(Related(singles[type(d)].span, "first given here"),),
                )
            singles.setdefault(type(d), d)


def _flow_targets(m: Model) -> Iterator[tuple[str, str, sp.Ident]]:
    """(scope, source node, target) of every flow edge written."""
    for name, info in m.nodes.items():
        for edge in outgoing(info.node):
            yield info.scope, name, edge.target


@name_rule(
    "WF102",
    "unknown-target",
    severity=Severity.ERROR,
    blocks=True,
    summary="Checks that every 'next', '->' and 'compensate' names an existing node.",
)
def unknown_target(m: Model) -> Iterator[Finding]:
    """Every transition names a node of the workflow.

    Bad:

        task charge: service pay.charge { next shipp }
        end ship: completed

    Good:

        task charge: service pay.charge { next ship }
        end ship: completed
    """
    near: dict[str, NearNames] = {}  # per scope, indexed at its first unknown target
    for scope, _, target in _flow_targets(m):
        if target.text not in m.nodes:
            if scope not in near:
                near[scope] = NearNames(m.scopes.get(scope, []))
            yield Finding(
                f"unknown node '{target.text}'", target.span, hint=near[scope].hint(target.text)
            )
    every: NearNames | None = None
    for node in m.all_nodes():
        c = getattr(node, "compensate", None)
        if c is not None and c.text not in m.nodes:
            every = every or NearNames(m.nodes)
            yield Finding(f"unknown compensation node '{c.text}'", c.span, hint=every.hint(c.text))


@name_rule(
    "WF107",
    "scope-escape",
    severity=Severity.ERROR,
    blocks=True,
    summary="Checks that no edge leaves a parallel branch or a map body.",
)
def scope_escape(m: Model) -> Iterator[Finding]:
    """A branch or a map body is a sub-flow: it ends at its own ``end`` nodes and
    the parallel or map node goes on from there. An edge into another scope would
    leave tokens behind.

    Bad:

        parallel p {
            branch a { task t: script { next done } }
            join all -> done
        }

    Good:

        parallel p {
            branch a { task t: script { next a_done } end a_done: completed }
            join all -> done
        }
    """
    for scope, source, target in _flow_targets(m):
        info = m.nodes.get(target.text)
        if info is not None and info.scope != scope:
            where = "the workflow" if scope == TOP else f"'{scope}'"
            yield Finding(
                f"'{source}' jumps out of {where} to '{target.text}'",
                target.span,
                hint="end the sub-flow with an 'end' node; the parallel or map node goes on",
            )


@name_rule(
    "WF103",
    "missing-start",
    severity=Severity.ERROR,
    blocks=True,
    summary="Checks that a workflow says where it starts, at one of its top-level nodes.",
)
def missing_start(m: Model) -> Iterator[Finding]:
    """A workflow needs nodes, and ``start NAME`` naming a top-level one.

    A file without a ``workflow`` header is a library of declarations and needs neither.

    Bad:

        workflow w version 1
        end done: completed

    Good:

        workflow w version 1
        start done
        end done: completed
    """
    start = m.start
    if not m.spec.nodes and start is None:
        if m.spec.header is not None:  # a library file (no header) has no nodes
            yield Finding(
                f"workflow '{m.spec.header.name.text}' has no nodes",
                m.spec.header.span,
                hint="a workflow needs a start and an end, e.g. 'start done' and "
                "'end done: completed'",
            )
        return
    if start is None:
        where = m.spec.header.span if m.spec.header else m.spec.nodes[0].span
        first = m.spec.nodes[0].name.text
        yield Finding("the workflow has no 'start'", where, hint=f"add 'start {first}'")
        return
    target = start.target.text
    if target not in m.nodes:
        top = m.scopes[TOP]
        yield Finding(
            f"start node '{target}' is not defined",
            start.target.span,
            hint=did_you_mean(target, top),
        )
    elif m.nodes[target].scope != TOP:
        yield Finding(
            f"start node '{target}' is inside '{m.nodes[target].scope}'",
            start.target.span,
            hint="a workflow starts at one of its top-level nodes",
        )


@name_rule(
    "WF116",
    "invalid-rename",
    severity=Severity.ERROR,
    summary="Checks that 'renamed from' names a node this version no longer has.",
)
def invalid_rename(m: Model) -> Iterator[Finding]:
    """``renamed from old`` tells ``wf diff`` that a node is the old one under a new
    name. The old name must be gone from this version, and be named only once.

    Bad:

        task charge: service pay.charge { renamed from pay next done }
        task pay: service pay.refund { next done }

    Good:

        task charge: service pay.charge { renamed from pay next done }
    """
    claimed: dict[str, sp.Ident] = {}
    for node in m.all_nodes():
        old = node.renamed_from
        if old is None:
            continue
        if old.text == node.name.text:
            yield Finding(f"'{old.text}' is renamed from itself", old.span)
        elif old.text in m.nodes:
            yield Finding(
                f"'{node.name.text}' is renamed from '{old.text}', which is still a node here",
                old.span,
                related=(Related(m.nodes[old.text].node.name.span, "still defined here"),),
            )
        elif old.text in claimed:
            yield Finding(
                f"two nodes are renamed from '{old.text}'",
                old.span,
                related=(Related(claimed[old.text].span, "first renamed here"),),
            )
        claimed.setdefault(old.text, old)


@name_rule(
    "WF115",
    "missing-header",
    severity=Severity.ERROR,
    blocks=True,
    summary="Checks that a file with nodes begins with 'workflow NAME version N'.",
)
def missing_header(m: Model) -> Iterator[Finding]:
    """Only a workflow has nodes; a file without a header is a library of shared
    declarations.

    Bad:

        start a
        end a: completed

    Good:

        workflow w version 1
        start a
        end a: completed
    """
    if m.spec.header is None and m.spec.nodes:
        yield Finding(
            "nodes need a workflow: this file has no 'workflow NAME version N' header",
            m.spec.nodes[0].span,
        )


@name_rule(
    "WF104",
    "unknown-reference",
    severity=Severity.ERROR,
    summary="Checks that every type, signal, message, error and service used is declared.",
)
def unknown_reference(m: Model) -> Iterator[Finding]:
    """Types, signals, messages, errors and services are declared in the file or
    in a file it imports; ``alias.Type`` names a type of the file imported
    ``as alias``. A service's result named by a type must name a record.

    Bad:

        task charge: service payments.charge { on Declinde -> failed next done }

    Good:

        error Declined
        service payments.charge(amount: decimal)
        task charge: service payments.charge { on Declined -> failed next done }
    """
    from wflang.compiler.types import GENERICS, PRIMITIVES

    # A name may come from an import that could not be read (WF113 says so): don't guess.
    known = m.imports_complete
    for f in all_fields(m):
        for t in type_names(f.type):
            if isinstance(t, ty.GenericType):
                arity = GENERICS.get(t.name)
                if arity is None:
                    yield Finding(
                        f"unknown generic type '{t.name}'",
                        t.span,
                        hint="use list[T] or map[string, T]",
                    )
                elif len(t.args) != arity:
                    yield Finding(f"'{t.name}' takes {arity} type argument(s)", t.span)
            elif t.name not in PRIMITIVES and t.name not in m.types and known:
                yield _unknown_type(m, t)
    for d in m.spec.declarations:
        if isinstance(d, sp.ServiceDecl) and isinstance(d.result, ty.NamedType) and known:
            decl = m.types.get(d.result.name)
            if decl is None and d.result.name not in PRIMITIVES:
                yield _unknown_type(m, d.result)
            elif not isinstance(decl, sp.TypeDecl):
                what = "an enum" if decl is not None else "a primitive type"
                yield Finding(
                    f"the result of {d.name.text} must be a record, but '{d.result}' is {what}",
                    d.result.span,
                    hint="declare a record: type Result { ... }, or write the fields: -> { ... }",
                )

    def error(ident: sp.Ident) -> Iterator[Finding]:
        if ident.text not in m.errors and known:
            yield Finding(
                f"unknown error '{ident.text}'", ident.span, hint=did_you_mean(ident.text, m.errors)
            )

    for d in m.spec.declarations:
        if isinstance(d, sp.ServiceDecl):
            for e in d.raises:
                yield from error(e)
    for node in m.all_nodes():
        for h in getattr(node, "handlers", ()):
            for e in h.errors:
                yield from error(e)
        retry = getattr(node, "retry", None)
        for e in (retry.non_retryable or ()) if retry else ():
            yield from error(e)
        end_error = getattr(node, "error", None)
        if end_error is not None:
            yield from error(end_error)
        for e in getattr(node, "raises", ()):
            yield from error(e)
        work = getattr(node, "work", None)
        if not known:
            continue
        if isinstance(work, sp.ServiceWork) and work.service.text not in m.services:
            yield Finding(
                f"unknown service '{work.service.text}'",
                work.service.span,
                hint=did_you_mean(work.service.text, m.services)
                or f"declare it: service {work.service.text}(...) -> {{ ... }}",
            )
        for trigger in triggers(node):
            if isinstance(trigger, sp.SignalTrigger) and trigger.signal.text not in m.signals:
                yield Finding(
                    f"unknown signal '{trigger.signal.text}'",
                    trigger.signal.span,
                    hint=did_you_mean(trigger.signal.text, m.signals),
                )
            if isinstance(trigger, sp.MessageTrigger) and trigger.message.text not in m.messages:
                yield Finding(
                    f"unknown message '{trigger.message.text}'",
                    trigger.message.span,
                    hint=did_you_mean(trigger.message.text, m.messages),
                )


def _unknown_type(m: Model, t: ty.NamedType) -> Finding:
    """An unknown type name; for ``alias.Type``, whether the alias or the type is unknown."""
    from wflang.compiler.types import PRIMITIVES

    alias, dot, name = t.name.rpartition(".")
    if not dot:
        return Finding(
            f"unknown type '{t.name}'", t.span, hint=did_you_mean(t.name, [*PRIMITIVES, *m.types])
        )
    declared = m.aliases.get(alias)
    if declared is None:
        known = ", ".join(sorted(m.aliases)) or "none"
        return Finding(
            f"unknown import alias '{alias}' in '{t.name}' (aliases: {known})",
            t.span,
            hint=did_you_mean(alias, m.aliases) or f'import the file: import "FILE.wf" as {alias}',
        )
    return Finding(
        f"the file imported as '{alias}' declares no type '{name}'",
        t.span,
        hint=did_you_mean(name, declared),
    )


@name_rule(
    "WF106",
    "name-collision",
    severity=Severity.WARNING,
    summary="Checks that a map item alias does not hide a root such as 'input'.",
)
def name_collision(m: Model) -> Iterator[Finding]:
    """Names that mean two things confuse readers: a map alias that hides a root
    (``input``, ``context``, ``result``, ``signal``, ``message``, ``error``, ``local``: a
    map's item variables win over an item called so) or a type, or a node named like a
    signal.

    Bad:

        map m over input.orders as input { ... }

    Good:

        map m over input.orders as order { ... }
    """
    roots = {"input", "context", "result", "signal", "message", "error", "local"}
    for node in m.all_nodes():
        if isinstance(node, sp.MapNode):
            alias = node.alias.text
            if alias in roots or alias in m.types:
                yield Finding(f"map item '{alias}' hides the name '{alias}'", node.alias.span)
        name = node.name.text
        if name in m.signals or name in m.messages:
            kind = "signal" if name in m.signals else "message"
            yield Finding(f"node '{name}' has the name of a {kind}", node.name.span)
