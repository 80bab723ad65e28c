"""The ``wf diff`` rules: small pure functions over the paired versions.

Codes: ``WF60x`` callers (the input, signals, messages, the workflow's name),
``WF62x`` consumers (outcomes, outputs, called versions), ``WF64x`` instances
(nodes, edges, context, policies), ``WF69x`` versions. Every finding points at
the new source; the old location is a related location. Removed elements point
at the new workflow's header.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal

from wflang.compiler.diff.pairing import Pairing, is_optional
from wflang.compiler.diff.registry import Category, Level, diff_rule, meta_rule
from wflang.compiler.diff.types import Change, compare
from wflang.compiler.registry import Finding
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_expr
from wflang.dsl.walk import TOP

CALLERS, CONSUMERS, INSTANCES = Category.CALLERS, Category.CONSUMERS, Category.INSTANCES
BREAKING, WARNING, SAFE = Level.BREAKING, Level.WARNING, Level.SAFE


def key(path: str, *args: object) -> str:
    """What a finding's fingerprint is made of, apart from its code: the element's
    path (``input.amount``, ``node:charge/next``) and the values that matter, never
    the message or the line, so rewording or moving the element keeps it."""
    return ":".join([path, ",".join(str(a) for a in args)])


def _path(where: str, name: str) -> str:
    """``input.amount``, ``signal:approval.note``."""
    return f"{where.replace(' ', ':')}.{name}"


def kind(node: sp.Node) -> str:
    """A node's kind for people: ``service task``, ``choice``, ``end``."""
    if isinstance(node, sp.TaskNode):
        work = type(node.work).__name__.removesuffix("Work").lower()
        return f"{work} task"
    return type(node).__name__.removesuffix("Node").lower()


# ------------------------------------------------------------------- callers


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
                    key=key(_path(where, name)),
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
                yield Finding(
                    f"{where} field '{x.key}' became required: callers of the old version "
                    "may leave it out",
                    x.new.name.span,
                    related=p.was(x.old.span, "optional in the old version"),
                    key=key(_path(where, x.key)),
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
            change = compare(x.old.type, x.new.type)
            if change in (Change.NARROWER, Change.OTHER):
                what = "narrowed" if change is Change.NARROWER else "changed"
                yield Finding(
                    f"{where} field '{x.key}' type {what} from {x.old.type} to {x.new.type}: "
                    "values old callers send may be refused",
                    x.new.type.span,
                    related=p.was(x.old.type.span),
                    key=key(_path(where, x.key), x.old.type, x.new.type),
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
            if compare(x.old.type, x.new.type) is Change.WIDER:
                yield Finding(
                    f"{where} field '{x.key}' type widened from {x.old.type} to {x.new.type}",
                    x.new.type.span,
                    related=p.was(x.old.type.span),
                    key=key(_path(where, x.key), x.old.type, x.new.type),
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
            yield Finding(
                f"{where} field '{name}' was removed: callers of the old version still send it",
                p.anchor,
                related=p.was(f.span),
                key=key(_path(where, name)),
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
                    key=key(_path(where, name)),
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
                yield Finding(
                    f"enum {e.key} lost its member '{m.text}'",
                    e.new.name.span,
                    related=p.was(m.span),
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
                yield Finding(
                    f"enum {e.key} gained the member '{m.text}'",
                    m.span,
                    related=p.was(e.old.name.span),
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
    for name, s in p.signals.removed:
        yield Finding(f"signal '{name}' was removed: senders of it are refused",
                      p.anchor, related=p.was(s.span), key=key(f"signal:{name}"))  # fmt: skip
    for name, m in p.messages.removed:
        yield Finding(f"message '{name}' was removed: senders of it are refused",
                      p.anchor, related=p.was(m.span), key=key(f"message:{name}"))  # fmt: skip


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
        for name, f in old.items():
            if name not in new:
                yield Finding(f"type {r.key} lost its field '{name}'", r.new.name.span,
                              related=p.was(f.span), key=key(f"type:{r.key}.{name}"))  # fmt: skip
            elif f != new[name]:
                yield Finding(
                    f"type {r.key} field '{name}' changed from {_field(f)} to {_field(new[name])}",
                    new[name].span,
                    related=p.was(f.span),
                    key=key(f"type:{r.key}.{name}", _field(f), _field(new[name])),
                )
        for name, f in new.items():
            if name not in old:
                yield Finding(
                    f"type {r.key} gained the field '{name}'",
                    f.span,
                    key=key(f"type:{r.key}.{name}"),
                )


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
        yield Finding(
            f"workflow '{old.name.text}' was renamed to '{new.name.text}'",
            new.name.span,
            related=p.was(old.name.span),
            key=key("workflow", old.name.text, new.name.text),
        )


# ----------------------------------------------------------------- consumers


@diff_rule(
    "WF620",
    "end-removed",
    level=BREAKING,
    category=CONSUMERS,
    summary="An end of the workflow was removed: consumers wait for its outcome.",
)
def end_removed(p: Pairing) -> Iterator[Finding]:
    """Old:

        end rejected: failed

    New:

        // no end rejected
    """
    new_ends = p.ends(p.new_nodes)
    for name, end in p.ends(p.old_nodes).items():
        if name not in new_ends and name not in p.renames:
            yield Finding(
                f"end '{name}' ({end.outcome.value}) was removed",
                p.anchor,
                related=p.was(end.name.span),
                key=key(f"node:{name}", end.outcome.value),
            )


@diff_rule(
    "WF621",
    "outcome-kind-changed",
    level=BREAKING,
    category=CONSUMERS,
    summary="An end present in both versions ends with another outcome.",
)
def outcome_kind_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        end rejected: failed

    New:

        end rejected: cancelled
    """
    new_ends = p.ends(p.new_nodes)
    for name, old in p.ends(p.old_nodes).items():
        new = new_ends.get(name)
        if new is not None and new.outcome is not old.outcome:
            yield Finding(
                f"end '{name}' now ends {new.outcome.value}, not {old.outcome.value}",
                new.name.span,
                related=p.was(old.name.span),
                key=key(f"node:{name}", old.outcome.value, new.outcome.value),
            )


@diff_rule(
    "WF622",
    "outcome-kind-added",
    level=WARNING,
    category=CONSUMERS,
    summary="The workflow can now end with an outcome it never had.",
)
def outcome_kind_added(p: Pairing) -> Iterator[Finding]:
    """Old:

        end done: completed

    New:

        end done: completed
        end withdrawn: cancelled
    """
    kinds = {e.outcome for e in p.ends(p.old_nodes).values()}
    for end in p.ends(p.new_nodes).values():
        if end.outcome not in kinds:
            kinds.add(end.outcome)
            yield Finding(
                f"the workflow can now end {end.outcome.value} (end '{end.name.text}')",
                end.name.span,
                key=key(f"node:{end.name.text}", end.outcome.value),
            )


@diff_rule(
    "WF623",
    "end-added",
    level=SAFE,
    category=CONSUMERS,
    summary="A new end of an outcome the workflow already had.",
)
def end_added(p: Pairing) -> Iterator[Finding]:
    """Old:

        end failed: failed

    New:

        end failed: failed
        end expired: failed
    """
    old_ends = p.ends(p.old_nodes)
    kinds = {e.outcome for e in old_ends.values()}
    targets = set(p.renames.values())
    for name, end in p.ends(p.new_nodes).items():
        if name not in old_ends and name not in targets and end.outcome in kinds:
            yield Finding(
                f"end '{name}' ({end.outcome.value}) was added",
                end.name.span,
                key=key(f"node:{name}", end.outcome.value),
            )


@diff_rule(
    "WF624",
    "output-field-removed",
    level=BREAKING,
    category=CONSUMERS,
    summary="A field of the workflow's output was removed: consumers read it.",
)
def output_field_removed(p: Pairing) -> Iterator[Finding]:
    """Old:

        output { order_id: string, status: string }

    New:

        output { order_id: string }
    """
    for name, f in p.output.removed:
        yield Finding(
            f"output field '{name}' was removed",
            p.anchor,
            related=p.was(f.span),
            key=key(f"output.{name}"),
        )


@diff_rule(
    "WF625",
    "output-field-loosened",
    level=BREAKING,
    category=CONSUMERS,
    summary="An output field may now hold values consumers never saw (T to T?...).",
)
def output_field_loosened(p: Pairing) -> Iterator[Finding]:
    """Old:

        output { shipment_id: string }

    New:

        output { shipment_id: string? }
    """
    for x in p.output.both:
        change = compare(x.old.type, x.new.type)
        if change in (Change.WIDER, Change.OTHER):
            what = "widened" if change is Change.WIDER else "changed"
            yield Finding(
                f"output field '{x.key}' type {what} from {x.old.type} to {x.new.type}: "
                "consumers may get values they do not expect",
                x.new.type.span,
                related=p.was(x.old.type.span),
                key=key(f"output.{x.key}", x.old.type, x.new.type),
            )


@diff_rule(
    "WF626",
    "output-field-added",
    level=SAFE,
    category=CONSUMERS,
    summary="A field was added to the workflow's output.",
)
def output_field_added(p: Pairing) -> Iterator[Finding]:
    """Old:

        output { order_id: string }

    New:

        output { order_id: string, total: decimal }
    """
    for name, f in p.output.added:
        yield Finding(f"output field '{name}' was added", f.name.span, key=key(f"output.{name}"))


@diff_rule(
    "WF627",
    "call-version-changed",
    level=WARNING,
    category=CONSUMERS,
    summary="A call now starts another workflow or another version of it.",
)
def call_version_changed(p: Pairing) -> Iterator[Finding]:
    """Diff the called workflow's versions too: its contract may have changed.

    Old:

        call kyc: workflow kyc_check version 1 { next done }

    New:

        call kyc: workflow kyc_check version 2 { next done }
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if not (isinstance(old, sp.CallNode) and isinstance(new, sp.CallNode)):
            continue
        if (old.workflow.text, old.version) != (new.workflow.text, new.version):
            yield Finding(
                f"call '{x.key}' now starts {_callee(new)}, not {_callee(old)}",
                new.workflow.span,
                related=p.was(old.workflow.span),
                key=key(f"node:{x.key}", _callee(old), _callee(new)),
            )


def _callee(node: sp.CallNode) -> str:
    version = "(unpinned)" if node.version is None else f"version {node.version}"
    return f"{node.workflow.text} {version}"


# ----------------------------------------------------------------- instances


@diff_rule(
    "WF640",
    "node-removed",
    level=BREAKING,
    category=INSTANCES,
    summary="A node was removed: instances waiting at it cannot go on.",
)
def node_removed(p: Pairing) -> Iterator[Finding]:
    """Old:

        task notify: service mail.send { next done }

    New:

        // no node notify
    """
    for name, rec in p.nodes.removed:
        if name in p.renames or (rec.scope == TOP and isinstance(rec.node, sp.EndNode)):
            continue  # node-renamed, end-removed
        yield Finding(
            f"{kind(rec.node)} '{name}' was removed",
            p.anchor,
            related=p.was(rec.node.name.span),
            key=key(f"node:{name}", kind(rec.node)),
        )


@diff_rule(
    "WF641",
    "node-renamed",
    level=BREAKING,
    category=INSTANCES,
    summary="A node was renamed (same kind and body): a removal plus an addition.",
)
def node_renamed(p: Pairing) -> Iterator[Finding]:
    """Instances at the old name cannot resume; callers and dashboards name nodes too.

    Old:

        task notify: service mail.send { next done }

    New:

        task send_mail: service mail.send { next done }
    """
    for old_name, new_name in p.renames.items():
        old, new = p.old_nodes[old_name].node, p.new_nodes[new_name].node
        yield Finding(
            f"{kind(old)} '{old_name}' was removed and '{new_name}' added with the same body",
            new.name.span,
            hint=f"if '{new_name}' is '{old_name}' renamed, say so inside it: "
            f"'renamed from {old_name}' (then the rename is safe)",
            related=p.was(old.name.span),
            key=key(f"node:{old_name}", new_name),
        )


@diff_rule(
    "WF656",
    "node-renamed-declared",
    level=SAFE,
    category=INSTANCES,
    summary="A node says 'renamed from' its old name: the same node, paired across the rename.",
)
def node_renamed_declared(p: Pairing) -> Iterator[Finding]:
    """With ``renamed from``, an instance waiting at the old name resumes at the new
    one; every other rule compares the node with its old self.

    Old:

        task notify: service mail.send { next done }

    New:

        task send_mail: service mail.send { renamed from notify next done }
    """
    for old_name, new_name in p.declared_renames.items():
        rec = p.new_nodes[old_name]
        was = rec.node.renamed_from
        yield Finding(
            f"'{old_name}' is renamed to '{new_name}'",
            was.span if was is not None else rec.node.name.span,
            related=p.was(p.old_nodes[old_name].node.name.span),
            key=key(f"node:{old_name}", new_name),
        )


@diff_rule(
    "WF642",
    "node-kind-changed",
    level=BREAKING,
    category=INSTANCES,
    summary="A node present in both versions is of another kind.",
)
def node_kind_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        task approve: user { next done }

    New:

        wait approve: signal approval { next done }
    """
    for x in p.nodes.both:
        if kind(x.old.node) != kind(x.new.node):
            yield Finding(
                f"'{x.key}' is now a {kind(x.new.node)}, not a {kind(x.old.node)}",
                x.new.node.name.span,
                related=p.was(x.old.node.name.span),
                key=key(f"node:{x.key}", kind(x.old.node), kind(x.new.node)),
            )


@diff_rule(
    "WF643",
    "edge-retargeted",
    level=WARNING,
    category=INSTANCES,
    summary="An edge of a node present in both versions leads elsewhere.",
)
def edge_retargeted(p: Pairing) -> Iterator[Finding]:
    """Old:

        task charge: service payments.charge { on Declined -> failed next ship }

    New:

        task charge: service payments.charge { on Declined -> retry_later next ship }
    """
    for x, edges in p.edges():
        for e in edges.both:
            if e.old.target != e.new.target:
                yield Finding(
                    f"'{e.key}' of '{x.key}' now leads to '{e.new.target}', not '{e.old.target}'",
                    e.new.span,
                    related=p.was(e.old.span),
                    key=key(f"node:{x.key}/{e.key}", e.old.target, e.new.target),
                )


@diff_rule(
    "WF657",
    "steps-reordered",
    level=BREAKING,
    category=INSTANCES,
    summary="Two steps present in both versions run in the opposite order.",
)
def steps_reordered(p: Pairing) -> Iterator[Finding]:
    """An instance that did the first step is past it in the old order; in the new
    order it would run the second step again, or skip the first. Temporal calls this
    non-determinism; here it is a breaking change.

    Old:

        task reserve: service inventory.reserve { next charge }
        task charge: service payments.charge { next done }

    New:

        task charge: service payments.charge { next reserve }
        task reserve: service inventory.reserve { next done }
    """
    later = _successors(p)
    for x, edges in p.edges():
        for e in edges.both:
            first, second = x.key, e.old.target
            if e.old.target == e.new.target or second not in p.new_nodes:
                continue
            if first in later(second) and second not in later(first):
                yield Finding(
                    f"'{second}' came after '{first}'; now '{first}' comes after '{second}'",
                    p.new_nodes[second].node.name.span,
                    related=p.was(e.old.span, "the old order"),
                    key=key(f"order:{first}", second),
                )


def _successors(p: Pairing) -> Callable[[str], set[str]]:
    """Nodes reachable from a node in the new version (named as in the old one),
    computed on demand: only retargeted edges ask."""
    succ = {
        name: {e.target for e in p.new_edges(rec.node).values()}
        for name, rec in p.new_nodes.items()
    }
    cache: dict[str, set[str]] = {}

    def reach(start: str) -> set[str]:
        if start not in cache:
            seen: set[str] = set()
            todo = list(succ.get(start, ()))
            while todo:
                n = todo.pop()
                if n not in seen:
                    seen.add(n)
                    todo.extend(succ.get(n, ()))
            cache[start] = seen
        return cache[start]

    return reach


@diff_rule(
    "WF644",
    "edge-removed",
    level=WARNING,
    category=INSTANCES,
    summary="An edge of a node present in both versions was removed.",
)
def edge_removed(p: Pairing) -> Iterator[Finding]:
    """A removed guard or handler changes what the node does; an edited guard is
    a removed edge plus an added one.

    Old:

        task charge: service payments.charge { on Declined -> failed next ship }

    New:

        task charge: service payments.charge { next ship }
    """
    for x, edges in p.edges():
        for label, e in edges.removed:
            yield Finding(
                f"'{label}' of '{x.key}' (to '{e.target}') was removed",
                x.new.node.name.span,
                related=p.was(e.span),
                key=key(f"node:{x.key}/{label}", e.target),
            )


@diff_rule(
    "WF645",
    "start-changed",
    level=WARNING,
    category=INSTANCES,
    summary="The workflow starts at another node.",
)
def start_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        start reserve

    New:

        start validate
    """
    from wflang.compiler.diff.pairing import start_of

    old, new = start_of(p.old), start_of(p.new)
    if old is not None and new is not None and old.target.text != new.target.text:
        yield Finding(
            f"the workflow now starts at '{new.target.text}', not '{old.target.text}'",
            new.target.span,
            related=p.was(old.target.span),
            key=key("start", old.target.text, new.target.text),
        )


@diff_rule(
    "WF646",
    "context-field-removed",
    level=BREAKING,
    category=INSTANCES,
    summary="A context field was removed: stored instances hold it.",
)
def context_field_removed(p: Pairing) -> Iterator[Finding]:
    """Old:

        context { reservation: string? }

    New:

        context { }
    """
    for name, f in p.context.removed:
        yield Finding(
            f"context field '{name}' was removed",
            p.anchor,
            related=p.was(f.span),
            key=key(f"context.{name}"),
        )


@diff_rule(
    "WF647",
    "context-field-retyped",
    level=BREAKING,
    category=INSTANCES,
    summary="A context field has another type: stored values may not fit it.",
)
def context_field_retyped(p: Pairing) -> Iterator[Finding]:
    """Old:

        context { total: decimal = 0.0 }

    New:

        context { total: int = 0 }
    """
    for x in p.context.both:
        if x.old.type != x.new.type:
            yield Finding(
                f"context field '{x.key}' type changed from {x.old.type} to {x.new.type}",
                x.new.type.span,
                related=p.was(x.old.type.span),
                key=key(f"context.{x.key}", x.old.type, x.new.type),
            )


@diff_rule(
    "WF648",
    "step-added",
    level=SAFE,
    category=INSTANCES,
    summary="A node was added (an edge retargeted to it is reported on its own).",
)
def step_added(p: Pairing) -> Iterator[Finding]:
    """Old:

        choice c { when input.vip -> done else -> done }

    New:

        choice c { when input.vip -> welcome else -> done }
        task welcome: service mail.send { next done }
    """
    targets = set(p.renames.values())
    for name, rec in p.nodes.added:
        if name in targets or (rec.scope == TOP and isinstance(rec.node, sp.EndNode)):
            continue  # node-renamed, end-added, outcome-kind-added
        yield Finding(
            f"{kind(rec.node)} '{name}' was added",
            rec.node.name.span,
            key=key(f"node:{name}", kind(rec.node)),
        )


@diff_rule(
    "WF649",
    "retry-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A node's retry policy changed.",
)
def retry_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        retry { attempts: 5, backoff: 1s..5m }

    New:

        retry { attempts: 2, backoff: 1s..5m }
    """
    for x in p.nodes.both:
        old, new = getattr(x.old.node, "retry", None), getattr(x.new.node, "retry", None)
        if old != new:
            span = new.span if new is not None else x.new.node.name.span
            related = p.was(old.span) if old is not None else ()
            what = "added" if old is None else "removed" if new is None else "changed"
            detail = f" ({_retry_changes(old, new)})" if old is not None and new is not None else ""
            yield Finding(
                f"the retry policy of '{x.key}' was {what}{detail}",
                span,
                related=related,
                key=key(f"node:{x.key}/retry", what),
            )


RETRY_FIELDS = ("attempts", "initial_delay", "max_delay", "factor", "jitter", "non_retryable")


def _retry_changes(old: sp.Retry, new: sp.Retry) -> str:
    """``attempts 3 -> 5, max_delay 1m -> 5m``."""
    out = []
    for name in RETRY_FIELDS:
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            out.append(f"{name} {_value(a)} -> {_value(b)}")
    return ", ".join(out)


def _value(v: object) -> str:
    if v is None:
        return "unset"
    if isinstance(v, tuple):
        return "[" + ", ".join(i.text for i in v if isinstance(i, sp.Ident)) + "]"
    if isinstance(v, int | Decimal):
        return str(v)
    return format_expr(v)  # type: ignore[arg-type]


@diff_rule(
    "WF650",
    "timeout-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A node's timeouts were added, removed, or fire at another time.",
)
def timeout_changed(p: Pairing) -> Iterator[Finding]:
    """Where a timeout leads is an edge (edge-retargeted); this rule is about when.

    Old:

        timeout 30s -> failed

    New:

        timeout 10s -> failed
    """
    for x in p.nodes.both:
        old = getattr(x.old.node, "timeouts", ())
        new = getattr(x.new.node, "timeouts", ())
        before = [(t.after, t.interrupting) for t in old]
        after = [(t.after, t.interrupting) for t in new]
        if before != after:
            span = new[0].span if new else x.new.node.name.span
            related = p.was(old[0].span) if old else ()
            yield Finding(
                f"the timeouts of '{x.key}' changed from {_timeouts(old)} to {_timeouts(new)}",
                span,
                related=related,
                key=key(f"node:{x.key}/timeout", _timeouts(old), _timeouts(new)),
            )


def _timeouts(ts: tuple[sp.Timeout, ...]) -> str:
    if not ts:
        return "none"
    return ", ".join(
        ("" if t.interrupting else "non-interrupting ") + format_expr(t.after) for t in ts
    )


@diff_rule(
    "WF651",
    "compensation-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A step's compensation was added, removed or changed.",
)
def compensation_changed(p: Pairing) -> Iterator[Finding]:
    """Instances that registered the old compensation run it on failure.

    Old:

        compensate release

    New:

        compensate release_all
    """
    for x in p.nodes.both:
        old = getattr(x.old.node, "compensate", None)
        new = getattr(x.new.node, "compensate", None)
        if (old and old.text) != (new and new.text):
            yield Finding(
                f"the compensation of '{x.key}' changed from {_name(old)} to {_name(new)}",
                new.span if new is not None else x.new.node.name.span,
                related=p.was(old.span) if old is not None else (),
                key=key(f"node:{x.key}/compensate", _name(old), _name(new)),
            )


def _name(ident: sp.Ident | None) -> str:
    return "none" if ident is None else f"'{ident.text}'"


@diff_rule(
    "WF652",
    "service-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A service task calls another service.",
)
def service_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        task charge: service payments.charge { next done }

    New:

        task charge: service billing.charge { next done }
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if (
            isinstance(old, sp.TaskNode)
            and isinstance(new, sp.TaskNode)
            and isinstance(old.work, sp.ServiceWork)
            and isinstance(new.work, sp.ServiceWork)
            and old.work.service.text != new.work.service.text
        ):
            yield Finding(
                f"'{x.key}' now calls {new.work.service.text}, not {old.work.service.text}",
                new.work.service.span,
                related=p.was(old.work.service.span),
                key=key(f"node:{x.key}/service", old.work.service.text, new.work.service.text),
            )


@diff_rule(
    "WF653",
    "join-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A parallel waits for its branches in another way.",
)
def join_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        join all

    New:

        join any
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if (
            isinstance(old, sp.ParallelNode)
            and isinstance(new, sp.ParallelNode)
            and old.join != new.join
        ):
            yield Finding(
                f"the join of '{x.key}' changed",
                new.join.span if new.join is not None else new.name.span,
                related=p.was(old.join.span if old.join is not None else old.name.span),
                key=key(f"node:{x.key}/join"),
            )


@diff_rule(
    "WF654",
    "no-longer-completes",
    level=BREAKING,
    category=INSTANCES,
    summary="A node in both versions can no longer reach an end.",
)
def no_longer_completes(p: Pairing) -> Iterator[Finding]:
    """Instances at the node would never finish.

    Old:

        task a: script { next done }

    New:

        task a: script { next b }
        task b: script { next a }
    """
    for x in p.nodes.both:
        if x.key in p.old_completes and x.key not in p.new_completes:
            yield Finding(
                f"'{x.key}' can no longer reach an end: instances there would never finish",
                x.new.node.name.span,
                related=p.was(x.old.node.name.span, "could complete in the old version"),
                key=key(f"node:{x.key}"),
            )


@diff_rule(
    "WF655",
    "node-moved",
    level=BREAKING,
    category=INSTANCES,
    summary="A node moved to another scope (the workflow, a branch, a map body).",
)
def node_moved(p: Pairing) -> Iterator[Finding]:
    """Instances at the node are in the old scope: its branch or its map item.

    Old:

        parallel notify {
            branch mail { task send: service mail.send { next sent } end sent: completed }
            join all -> done
        }

    New:

        parallel notify {
            branch post { task send: service mail.send { next sent } end sent: completed }
            join all -> done
        }
    """
    for x in p.nodes.both:
        if x.old.scope != x.new.scope:
            yield Finding(
                f"'{x.key}' moved from {_scope(x.old.scope)} to {_scope(x.new.scope)}",
                x.new.node.name.span,
                related=p.was(x.old.node.name.span),
                key=key(f"node:{x.key}", x.old.scope, x.new.scope),
            )


def _scope(scope: str) -> str:
    if scope == TOP:
        return "the workflow"
    if "/" in scope:
        owner, branch = scope.split("/", 1)
        return f"branch '{branch}' of '{owner}'"
    return f"the body of map '{scope}'"


# ------------------------------------------------------------------ versions


@diff_rule(
    "WF691",
    "version-decreased",
    level=BREAKING,
    category=INSTANCES,
    summary="The new version number is lower than the old one.",
)
def version_decreased(p: Pairing) -> Iterator[Finding]:
    """Old:

        workflow order version 3

    New:

        workflow order version 2
    """
    old, new = p.old.header, p.new.header
    if old is not None and new is not None and new.version < old.version:
        yield Finding(
            f"the version went down from {old.version} to {new.version}",
            new.span,
            related=p.was(old.span),
            key=key("workflow", old.version, new.version),
        )


VERSION_NOT_BUMPED = meta_rule(
    "WF690",
    "version-not-bumped",
    level=BREAKING,
    category=INSTANCES,
    summary="A breaking change was made without raising the version.",
    doc="""Breaking changes with a higher version are accepted: they are still listed as
    breaking, but do not fail `wf diff`.

    Old:

        workflow order version 3
        input { order_id: string }

    New:

        workflow order version 3
        input { order_id: string, channel: string }
    """,
)


# ------------------------------------------------------------ folders (wf diff OLD_DIR NEW_DIR)

WORKFLOW_REMOVED = meta_rule(
    "WF612",
    "workflow-removed",
    level=BREAKING,
    category=CALLERS,
    summary="A workflow of the old folder is missing from the new one: callers start it by name.",
    doc="""Only when two folders are compared: workflows are paired by the name in their
    header, whatever file they are in. A version bump cannot accept the removal.

    Old:

        // old/refund.wf
        workflow refund version 2

    New:

        // new/: no file declares 'workflow refund'
    """,
)

WORKFLOW_ADDED = meta_rule(
    "WF613",
    "workflow-added",
    level=SAFE,
    category=CALLERS,
    summary="A workflow of the new folder is not in the old one.",
    doc="""Only when two folders are compared: workflows are paired by the name in their
    header, whatever file they are in.

    Old:

        // old/: no file declares 'workflow refund'

    New:

        // new/refund.wf
        workflow refund version 1
    """,
)
