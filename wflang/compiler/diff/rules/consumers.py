"""Diff rules for consumers (WF62x): outcomes, outputs and the versions called."""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.diff.pairing import Pairing
from wflang.compiler.diff.registry import diff_rule
from wflang.compiler.diff.rules.common import (
    BREAKING,
    CONSUMERS,
    SAFE,
    WARNING,
    changed,
    key,
    removed,
    retyped,
)
from wflang.compiler.diff.types import Change
from wflang.compiler.registry import Finding
from wflang.dsl import spec as sp


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
            yield removed(
                p,
                f"end '{name}' ({end.outcome.value}) was removed",
                was=end.name.span,
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
            yield changed(
                p,
                f"end '{name}' now ends {new.outcome.value}, not {old.outcome.value}",
                new.name.span,
                was=old.name.span,
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
        yield removed(
            p, f"output field '{name}' was removed", was=f.span, key=key(f"output.{name}")
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
        yield from retyped(
            p,
            x,
            f"output field '{x.key}'",
            f"output.{x.key}",
            (Change.WIDER, Change.OTHER),
            ": consumers may get values they do not expect",
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
            yield changed(
                p,
                f"call '{x.key}' now starts {_callee(new)}, not {_callee(old)}",
                new.workflow.span,
                was=old.workflow.span,
                key=key(f"node:{x.key}", _callee(old), _callee(new)),
            )


def _callee(node: sp.CallNode) -> str:
    version = "(unpinned)" if node.version is None else f"version {node.version}"
    return f"{node.workflow.text} {version}"


@diff_rule(
    "WF628",
    "send-changed",
    level=BREAKING,
    category=CONSUMERS,
    summary="A send task sends another signal or message: its receivers wait for the old one.",
)
def send_changed(p: Pairing) -> Iterator[Finding]:
    """The workflows that wait for what a send task sends (choreography) no longer get
    it: change them first, or send both for a while.

    Old:

        task tell: send message order_ready correlate input.order_id { next done }

    New:

        task tell: send message order_packed correlate input.order_id { next done }
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if not (isinstance(old, sp.TaskNode) and isinstance(new, sp.TaskNode)):
            continue
        if not (isinstance(old.work, sp.SendWork) and isinstance(new.work, sp.SendWork)):
            continue
        was, now = _sent(old.work), _sent(new.work)
        if was != now:
            yield changed(
                p,
                f"'{x.key}' now sends the {now}, not the {was}",
                new.work.name.span,
                was=old.work.name.span,
                key=key(f"node:{x.key}/send", was, now),
            )


def _sent(work: sp.SendWork) -> str:
    return f"{work.kind.value} '{work.name.text}'"
