"""Diff rules for callers (WF60x, WF61x): the input, signals, messages, records and
enums callers write, and the workflow's name.
"""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.diff.pairing import Pairing, is_optional, named
from wflang.compiler.diff.registry import diff_rule
from wflang.compiler.diff.rules.common import (
    BREAKING,
    CALLERS,
    CONSUMERS,
    SAFE,
    WARNING,
    changed,
    key,
    path,
    removed,
    retyped,
)
from wflang.compiler.diff.types import Change
from wflang.compiler.registry import Finding
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_expr
from wflang.dsl.span import Span
from wflang.dsl.types import NamedType


@diff_rule(
    "WF601",
    "required-field-added",
    level=BREAKING,
    category=CALLERS,
    summary="A field callers must now send was added to the input or a payload.",
)
def required_field_added(p: Pairing) -> Iterator[Finding]:
    """Callers of the old version do not send the new field, so the new version refuses them.

    Old:

        input { order_id: string }

    New:

        input { order_id: string, channel: string }
    """
    for where, fields in p.caller_fields():
        for name, f in fields.added:
            if not is_optional(f):
                yield Finding(
                    f"{where} field '{name}' was added without a default: callers of the "
                    "old version do not send it",
                    f.name.span,
                    hint=f"give it a default ('{name}: {f.type} = ...') or an optional type",
                    key=key(path(where, name)),
                )


@diff_rule(
    "WF602",
    "field-made-required",
    level=BREAKING,
    category=CALLERS,
    summary="A field callers could leave out lost its default or optional type.",
)
def field_made_required(p: Pairing) -> Iterator[Finding]:
    """Old:

        input { express: bool = false }

    New:

        input { express: bool }
    """
    for where, fields in p.caller_fields():
        for x in fields.both:
            if is_optional(x.old) and not is_optional(x.new):
                yield changed(
                    p,
                    f"{where} field '{x.key}' became required: callers of the old version "
                    "may leave it out",
                    x.new.name.span,
                    was=x.old.span,
                    old="optional in the old version",
                    key=key(path(where, x.key)),
                )


@diff_rule(
    "WF603",
    "field-type-narrowed",
    level=BREAKING,
    category=CALLERS,
    summary="A field callers send now accepts fewer values, or other ones.",
)
def field_type_narrowed(p: Pairing) -> Iterator[Finding]:
    """Old:

        input { amount: decimal }

    New:

        input { amount: int }
    """
    for where, fields in p.caller_fields():
        for x in fields.both:
            yield from retyped(
                p,
                x,
                f"{where} field '{x.key}'",
                path(where, x.key),
                (Change.NARROWER, Change.OTHER),
                ": values old callers send may be refused",
            )


@diff_rule(
    "WF604",
    "field-type-widened",
    level=SAFE,
    category=CALLERS,
    summary="A field callers send now accepts more values (T to T?, int to decimal).",
)
def field_type_widened(p: Pairing) -> Iterator[Finding]:
    """Old:

        input { qty: int }

    New:

        input { qty: decimal }
    """
    for where, fields in p.caller_fields():
        for x in fields.both:
            yield from retyped(
                p, x, f"{where} field '{x.key}'", path(where, x.key), (Change.WIDER,)
            )


@diff_rule(
    "WF605",
    "field-removed",
    level=WARNING,
    category=CALLERS,
    summary="A field callers send was removed from the input or a payload.",
)
def field_removed(p: Pairing) -> Iterator[Finding]:
    """Callers of the old version still send it; it is refused if unknown fields are.

    Old:

        input { order_id: string, note: string? }

    New:

        input { order_id: string }
    """
    for where, fields in p.caller_fields():
        for name, f in fields.removed:
            yield removed(
                p,
                f"{where} field '{name}' was removed: callers of the old version still send it",
                was=f.span,
                key=key(path(where, name)),
            )


@diff_rule(
    "WF606",
    "optional-field-added",
    level=SAFE,
    category=CALLERS,
    summary="A field callers may leave out was added to the input or a payload.",
)
def optional_field_added(p: Pairing) -> Iterator[Finding]:
    """Old:

        input { order_id: string }

    New:

        input { order_id: string, express: bool = false }
    """
    for where, fields in p.caller_fields():
        for name, f in fields.added:
            if is_optional(f):
                yield Finding(
                    f"{where} field '{name}' was added (optional)",
                    f.name.span,
                    key=key(path(where, name)),
                )


@diff_rule(
    "WF607",
    "enum-value-removed",
    level=BREAKING,
    category=CALLERS,
    summary="A member of an enum was removed: callers may still send it.",
)
def enum_value_removed(p: Pairing) -> Iterator[Finding]:
    """Old:

        enum Priority { low, normal, high }

    New:

        enum Priority { normal, high }
    """
    for e in p.enums.both:
        new = {m.text for m in e.new.members}
        for m in e.old.members:
            if m.text not in new:
                yield changed(
                    p,
                    f"enum {e.key} lost its member '{m.text}'",
                    e.new.name.span,
                    was=m.span,
                    key=key(f"enum:{e.key}", m.text),
                )


@diff_rule(
    "WF608",
    "enum-value-added",
    level=WARNING,
    category=CONSUMERS,
    summary="A member was added to an enum: consumers may not handle it.",
)
def enum_value_added(p: Pairing) -> Iterator[Finding]:
    """Old:

        enum Priority { low, high }

    New:

        enum Priority { low, high, urgent }
    """
    for e in p.enums.both:
        old = {m.text for m in e.old.members}
        for m in e.new.members:
            if m.text not in old:
                yield changed(
                    p,
                    f"enum {e.key} gained the member '{m.text}'",
                    m.span,
                    was=e.old.name.span,
                    key=key(f"enum:{e.key}", m.text),
                )


@diff_rule(
    "WF609",
    "signal-removed",
    level=BREAKING,
    category=CALLERS,
    summary="A signal or message was removed: senders get it refused.",
)
def signal_removed(p: Pairing) -> Iterator[Finding]:
    """Old:

        signal approval { approved: bool }

    New:

        // no signal approval
    """
    for what, gone in (("signal", p.signals.removed), ("message", p.messages.removed)):
        for name, decl in gone:
            yield removed(
                p,
                f"{what} '{name}' was removed: senders of it are refused",
                was=decl.span,
                key=key(f"{what}:{name}"),
            )


@diff_rule(
    "WF610",
    "record-field-changed",
    level=WARNING,
    category=CALLERS,
    summary="A field of a record type was added, removed or retyped.",
)
def record_field_changed(p: Pairing) -> Iterator[Finding]:
    """A record may be sent by callers or read by consumers; review who uses it.

    Old:

        type Item { sku: string, qty: int }

    New:

        type Item { sku: string, qty: int, lot: string }
    """
    for r in p.records.both:
        old = {f.name.text: f for f in r.old.fields}
        new = {f.name.text: f for f in r.new.fields}
        yield from _fields_changed(p, f"type {r.key}", f"type:{r.key}", old, new, r.new.name.span)


def _fields_changed(
    p: Pairing,
    what: str,
    path: str,
    old: dict[str, sp.Field],
    new: dict[str, sp.Field],
    anchor: Span,
) -> Iterator[Finding]:
    """The fields of a record (``what``, ``type Item``) lost, retyped and gained;
    ``anchor``: where a lost field is reported."""
    for name, f in old.items():
        if name not in new:
            yield changed(p, f"{what} lost its field '{name}'", anchor, was=f.span,
                          key=key(f"{path}.{name}"))  # fmt: skip
        elif f != new[name]:
            yield changed(
                p,
                f"{what} field '{name}' changed from {_field(f)} to {_field(new[name])}",
                new[name].span,
                was=f.span,
                key=key(f"{path}.{name}", _field(f), _field(new[name])),
            )
    for name, f in new.items():
        if name not in old:
            yield Finding(f"{what} gained the field '{name}'", f.span, key=key(f"{path}.{name}"))


@diff_rule(
    "WF614",
    "service-result-changed",
    level=WARNING,
    category=CALLERS,
    summary="A field of a service's result was added, removed or retyped.",
)
def service_result_changed(p: Pairing) -> Iterator[Finding]:
    """Handlers send the result (like a caller sends the input); review them. A result
    written inline and the same fields as a record type (``-> Quote``) are the same
    result: no change. A record of another file is compared by its name only.

    Old:

        service pricing.quote(sku: string) -> { price: decimal }

    New:

        service pricing.quote(sku: string) -> { price: decimal, currency: string }
    """
    for s in p.services.both:
        if _named(s.old) is not None and _named(s.old) == _named(s.new):
            continue  # the same record: its changes are record-field-changed's
        old, new = _result(p.old, s.old), _result(p.new, s.new)
        if isinstance(old, str) or isinstance(new, str):
            if old != new:
                yield changed(
                    p,
                    f"service {s.key} result changed from {_shown(old)} to {_shown(new)}",
                    s.new.name.span,
                    was=s.old.name.span,
                    key=key(f"service:{s.key}.result", _shown(old), _shown(new)),
                )
            continue
        yield from _fields_changed(
            p, f"service {s.key} result", f"service:{s.key}.result", old, new, s.new.name.span
        )


def _result(spec: sp.WorkflowSpec, service: sp.ServiceDecl) -> dict[str, sp.Field] | str:
    """A service's result fields by name, or the name of a record this file does not
    declare (an imported one: compared by name)."""
    result = service.result
    if result is None or isinstance(result, tuple):
        return {f.name.text: f for f in result or ()}
    record = named(spec.declarations, sp.TypeDecl).get(result.name)
    return result.name if record is None else {f.name.text: f for f in record.fields}


def _named(service: sp.ServiceDecl) -> str | None:
    return service.result.name if isinstance(service.result, NamedType) else None


def _shown(result: dict[str, sp.Field] | str) -> str:
    return f"'{result}'" if isinstance(result, str) else "its fields"


def _field(f: sp.Field) -> str:
    default = "" if f.default is None else f" = {format_expr(f.default)}"
    return f"'{f.type}{default}'"


@diff_rule(
    "WF611",
    "workflow-renamed",
    level=BREAKING,
    category=CALLERS,
    summary="The workflow's name changed: callers start it by name.",
)
def workflow_renamed(p: Pairing) -> Iterator[Finding]:
    """Old:

        workflow order version 1

    New:

        workflow order_saga version 2
    """
    old, new = p.old.header, p.new.header
    if old is not None and new is not None and old.name.text != new.name.text:
        yield changed(
            p,
            f"workflow '{old.name.text}' was renamed to '{new.name.text}'",
            new.name.span,
            was=old.name.span,
            key=key("workflow", old.name.text, new.name.text),
        )


@diff_rule(
    "WF615",
    "person-error-removed",
    level=BREAKING,
    category=CALLERS,
    summary="A user or manual task no longer lets a person raise an error it did.",
)
def person_error_removed(p: Pairing) -> Iterator[Finding]:
    """A person (or the tool they use) raising the error on the task's new instances
    is refused (``wf tasks complete --error``), as a caller sending a removed field.

    Old:

        task approve: user "managers" { raises Rejected, Withdrawn next done }

    New:

        task approve: user "managers" { raises Rejected next done }
    """
    for n in p.nodes.both:
        old, new = n.old.node, n.new.node
        if not (isinstance(old, sp.TaskNode) and isinstance(new, sp.TaskNode)):
            continue
        kept = {e.text for e in new.raises}
        for e in old.raises:
            if e.text not in kept:
                yield changed(
                    p,
                    f"task '{n.key}' no longer lets a person raise '{e.text}': "
                    "whoever raises it there is refused",
                    new.name.span,
                    was=e.span,
                    key=key(f"node:{n.key}/raises", e.text),
                )
