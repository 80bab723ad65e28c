"""Diff rules for running instances (WF64x, WF65x): the nodes, edges, start and
context that instances are in, whether the flow still completes, and moves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from wflang.compiler.diff.pairing import Pairing
from wflang.compiler.diff.registry import diff_rule
from wflang.compiler.diff.rules.common import (
    BREAKING,
    INSTANCES,
    SAFE,
    WARNING,
    changed,
    key,
    kind,
    removed,
)
from wflang.compiler.registry import Finding
from wflang.dsl import spec as sp
from wflang.dsl.walk import TOP


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
        yield removed(
            p,
            f"{kind(rec.node)} '{name}' was removed",
            was=rec.node.name.span,
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
        yield changed(
            p,
            f"{kind(old)} '{old_name}' was removed and '{new_name}' added with the same body",
            new.name.span,
            hint=f"if '{new_name}' is '{old_name}' renamed, say so inside it: "
            f"'renamed from {old_name}' (then the rename is safe)",
            was=old.name.span,
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
        yield changed(
            p,
            f"'{old_name}' is renamed to '{new_name}'",
            was.span if was is not None else rec.node.name.span,
            was=p.old_nodes[old_name].node.name.span,
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
            yield changed(
                p,
                f"'{x.key}' is now a {kind(x.new.node)}, not a {kind(x.old.node)}",
                x.new.node.name.span,
                was=x.old.node.name.span,
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
                yield changed(
                    p,
                    f"'{e.key}' of '{x.key}' now leads to '{e.new.target}', not '{e.old.target}'",
                    e.new.span,
                    was=e.old.span,
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
                yield changed(
                    p,
                    f"'{second}' came after '{first}'; now '{first}' comes after '{second}'",
                    p.new_nodes[second].node.name.span,
                    was=e.old.span,
                    old="the old order",
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
            yield changed(
                p,
                f"'{label}' of '{x.key}' (to '{e.target}') was removed",
                x.new.node.name.span,
                was=e.span,
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
        yield changed(
            p,
            f"the workflow now starts at '{new.target.text}', not '{old.target.text}'",
            new.target.span,
            was=old.target.span,
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
        yield removed(
            p, f"context field '{name}' was removed", was=f.span, key=key(f"context.{name}")
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
            yield changed(
                p,
                f"context field '{x.key}' type changed from {x.old.type} to {x.new.type}",
                x.new.type.span,
                was=x.old.type.span,
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
            yield changed(
                p,
                f"'{x.key}' can no longer reach an end: instances there would never finish",
                x.new.node.name.span,
                was=x.old.node.name.span,
                old="could complete in the old version",
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
            yield changed(
                p,
                f"'{x.key}' moved from {_scope(x.old.scope)} to {_scope(x.new.scope)}",
                x.new.node.name.span,
                was=x.old.node.name.span,
                key=key(f"node:{x.key}", x.old.scope, x.new.scope),
            )


def _scope(scope: str) -> str:
    if scope == TOP:
        return "the workflow"
    if "/" in scope:
        owner, branch = scope.split("/", 1)
        return f"branch '{branch}' of '{owner}'"
    return f"the body of map '{scope}'"


@diff_rule(
    "WF658",
    "service-effect-changed",
    level=BREAKING,
    category=INSTANCES,
    summary="A service became read-only (reads) or stopped being read-only.",
)
def service_effect_changed(p: Pairing) -> Iterator[Finding]:
    """Both directions break what running instances rely on. A service that now
    writes was called without compensation (it only read): a saga of an instance
    that called it leaves its effect in place, and retries may repeat it. A service
    that now only reads may have had compensation registered for its calls: those
    instances still undo what the new version says was never done.

    Old:

        service risk.score(id: string) -> { score: int } reads

    New:

        service risk.score(id: string) -> { score: int }
    """
    for s in p.services.both:
        if s.old.read_only == s.new.read_only:
            continue
        was, now = ("reads", "writes") if s.old.read_only else ("writes", "reads")
        why = (
            "it was called without compensation, which running instances' sagas now miss"
            if s.old.read_only
            else "running instances may still compensate calls it now says change nothing"
        )
        yield Finding(
            f"service {s.key} now {'only reads' if now == 'reads' else 'writes'}"
            f" (it {'wrote' if was == 'writes' else 'only read'}): {why}",
            s.new.name.span,
            related=p.was(s.old.name.span),
            key=key(f"service:{s.key}", was, now),
        )


@diff_rule(
    "WF659",
    "map-local-removed",
    level=BREAKING,
    category=INSTANCES,
    summary="A map's item variable was removed: the items of stored instances hold it.",
)
def map_local_removed(p: Pairing) -> Iterator[Finding]:
    """An item running when its instance moves to the new version keeps the variables
    it had; a variable that is gone is a value the new body no longer knows.

    Old:

        map ask over input.skus as sku { local { quote: Quote?, rounds: int = 0 } ... }

    New:

        map ask over input.skus as sku { local { quote: Quote? } ... }
    """
    for owner, variables in p.map_locals():
        for name, f in variables.removed:
            yield removed(
                p,
                f"variable '{name}' of map '{owner}' was removed",
                was=f.span,
                key=key(f"node:{owner}/local.{name}"),
            )


@diff_rule(
    "WF660",
    "map-local-retyped",
    level=BREAKING,
    category=INSTANCES,
    summary="A map's item variable has another type: the values items hold may not fit it.",
)
def map_local_retyped(p: Pairing) -> Iterator[Finding]:
    """Old:

        map ask over input.skus as sku { local { rounds: int = 0 } ... }

    New:

        map ask over input.skus as sku { local { rounds: decimal = 0 } ... }
    """
    for owner, variables in p.map_locals():
        for x in variables.both:
            if x.old.type != x.new.type:
                yield changed(
                    p,
                    f"variable '{x.key}' of map '{owner}' type changed from {x.old.type} "
                    f"to {x.new.type}",
                    x.new.type.span,
                    was=x.old.type.span,
                    key=key(f"node:{owner}/local.{x.key}", x.old.type, x.new.type),
                )


@diff_rule(
    "WF661",
    "map-local-added",
    level=WARNING,
    category=INSTANCES,
    summary="A map's item variable was added: items already running start without it.",
)
def map_local_added(p: Pairing) -> Iterator[Finding]:
    """New items start with the variable's default; an item already running when its
    instance moves to the new version has no value for it, and reads null until its
    body writes one.

    Old:

        map ask over input.skus as sku { local { quote: Quote? } ... }

    New:

        map ask over input.skus as sku { local { quote: Quote?, rounds: int = 0 } ... }
    """
    for owner, variables in p.map_locals():
        for name, f in variables.added:
            yield changed(
                p,
                f"variable '{name}' was added to map '{owner}': items already running "
                "have no value for it",
                f.span,
                was=p.old_nodes[owner].node.name.span,
                key=key(f"node:{owner}/local.{name}"),
            )
