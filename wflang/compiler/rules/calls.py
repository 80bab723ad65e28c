"""Call rules: a ``call`` names an imported workflow (WF108), at a pinned version
(WF309), and calls never come back to the caller (WF111)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from wflang.compiler.graphs import Digraph, reachable
from wflang.compiler.model import Model
from wflang.compiler.program import Module
from wflang.compiler.registry import Finding, Pass, Preset, rule
from wflang.compiler.symbols import did_you_mean
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Severity
from wflang.dsl.walk import all_nodes

name_rule = partial(rule, category="reference", pass_=Pass.NAMES)


@name_rule(
    "WF108",
    "unresolved-call",
    severity=Severity.ERROR,
    summary="Checks that a 'call' names an imported workflow at an existing version.",
)
def unresolved_call(m: Model) -> Iterator[Finding]:
    """A sub-workflow comes from an imported file; the version pinned must be the
    version that file declares.

    Bad:

        import "kyc_check.wf"          // workflow kyc_check version 2
        call kyc: workflow kyc_check version 3 { next done }

    Good:

        import "kyc_check.wf"
        call kyc: workflow kyc_check version 2 { next done }
    """
    for node in m.all_nodes():
        if not isinstance(node, sp.CallNode):
            continue
        name = node.workflow.text
        target = m.workflows.get(name)
        if target is None and not m.imports_complete:
            continue  # it may be the workflow of an import WF113 reports
        if target is None:
            yield Finding(
                f"unknown workflow '{name}'",
                node.workflow.span,
                hint=did_you_mean(name, m.workflows) or "import the file that defines it",
            )
            continue
        header = target.spec.header
        assert header is not None
        if node.version is not None and node.version != header.version:
            yield Finding(
                f"workflow '{name}' is at version {header.version}, not {node.version}",
                node.span,
                hint=f"pin 'version {header.version}' ({target.path})",
            )


@name_rule(
    "WF111",
    "recursive-call",
    severity=Severity.ERROR,
    summary="Checks that no workflow calls itself, directly or through others.",
)
def recursive_call(m: Model) -> Iterator[Finding]:
    """Calls form a tree: a workflow that calls itself, or calls one that calls
    it back, never finishes.

    Bad:

        workflow a version 1
        call again: workflow a version 1 { next done }

    Good:

        workflow a version 1
        task step: service work.step { next done }
    """
    calls: Digraph[str] = Digraph()
    me = m.module.path
    for module in m.program.modules.values():
        if module.spec is None:
            continue
        known = _known_workflows(m, module)
        for node in all_nodes(module.spec.nodes):
            if isinstance(node, sp.CallNode) and node.workflow.text in known:
                calls.add_edge(module.path, known[node.workflow.text])
    if me not in calls:
        return
    for node in m.all_nodes():
        if isinstance(node, sp.CallNode):
            target = m.workflows.get(node.workflow.text)
            if target is None or target.path not in calls:
                continue
            if me in reachable(calls, [target.path]):  # itself, or through other calls
                yield Finding(
                    f"calling '{node.workflow.text}' comes back to this workflow",
                    node.workflow.span,
                )


def _known_workflows(m: Model, module: Module) -> dict[str, str]:
    known: dict[str, str] = {}
    for decl, target in module.imports:
        callee = m.program.modules.get(target) if target else None
        if callee is not None and callee.spec is not None and callee.spec.header is not None:
            name = callee.spec.header.name.text
            known[f"{decl.alias.text}.{name}" if decl.alias else name] = callee.path
    if module.spec is not None and module.spec.header is not None:
        known.setdefault(module.spec.header.name.text, module.path)
    return known


@rule(
    "WF309",
    "call-unpinned",
    severity=Severity.WARNING,
    summary="Checks that every 'call' pins the version of the sub-workflow.",
    category="versioning",
    pass_=Pass.NAMES,
    preset=Preset.RECOMMENDED,
)
def call_unpinned(m: Model) -> Iterator[Finding]:
    """An unpinned call takes whatever version is newest when it runs, so a
    deployment of the callee changes the caller.

    Bad:

        call kyc: workflow kyc_check { next done }

    Good:

        call kyc: workflow kyc_check version 2 { next done }
    """
    for node in m.all_nodes():
        if isinstance(node, sp.CallNode) and node.version is None:
            target = m.workflows.get(node.workflow.text)
            hint = None
            if target is not None and target.spec.header is not None:
                hint = f"pin 'version {target.spec.header.version}'"
            yield Finding(
                f"call of '{node.workflow.text}' is not pinned to a version", node.span, hint
            )
