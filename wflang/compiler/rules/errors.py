"""The error rule (WF214): an error route on a parallel or a map that nothing raises.

An error a branch (or a map item) raises and does not handle itself reaches the
parallel (or map) under its own name. What a node can raise, by name: a service
task the errors its service declares (``raises``: a contract the runtime holds the
handler to, ``validate.undeclared_error``), a user or manual task those its ``raises``
clause lets a person raise, and those the runtime gives any call
(``RUNTIME_ERRORS``: no handler, a result that does not fit, an at-most-once call
whose worker stopped), a call what the called
workflow can fail with, a ``failed`` end its ``error``, a parallel or map what its
body can raise; each less what the node's own ``on`` handlers catch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from wflang.compiler.model import Model
from wflang.compiler.registry import Finding, Pass, rule
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Severity
from wflang.dsl.walk import child_nodes
from wflang.runtime.failures import RUNTIME_ERRORS

#: The errors a container raises itself when a branch or an item fails, whatever the cause.
CONTAINER_ERRORS = frozenset({"BranchFailed", "MapFailed"})


class _Unknown(Exception):
    """A service or workflow whose declaration is missing: it may raise anything."""


def raised(m: Model, nodes: Iterable[sp.Node], calling: frozenset[str] = frozenset()) -> set[str]:
    """The errors, by name, that these nodes can raise and do not handle."""
    found: set[str] = set()
    for node in nodes:
        found |= _raised_by(m, node, calling)
    return found


def _raised_by(m: Model, node: sp.Node, calling: frozenset[str]) -> set[str]:
    errors: set[str] = set()
    work = getattr(node, "work", None)
    if isinstance(work, sp.ServiceWork):
        service = m.services.get(work.service.text)
        if service is None:
            raise _Unknown
        errors = {e.text for e in service.raises} | RUNTIME_ERRORS
    elif isinstance(node, sp.TaskNode) and isinstance(work, sp.UserWork | sp.ManualWork):
        errors = {e.text for e in node.raises} | RUNTIME_ERRORS  # what the person may raise
    elif isinstance(node, sp.CallNode):
        callee = m.workflows.get(node.workflow.text)
        if callee is None:
            raise _Unknown
        if node.workflow.text not in calling:  # a recursive call is WF111's
            # What it can fail with: its failed ends' errors, what its steps raise
            # unhandled (its services are among this file's symbols: it is imported).
            errors = raised(m, callee.spec.nodes, calling | {node.workflow.text})
    elif isinstance(node, sp.EndNode):
        if node.outcome is sp.Outcome.FAILED and node.error is not None:
            errors = {node.error.text}
    elif isinstance(node, sp.ParallelNode | sp.MapNode):
        errors = raised(m, child_nodes(node), calling)
    handlers: tuple[sp.OnError, ...] = getattr(node, "handlers", ())
    if any(h.catch_all for h in handlers):
        return set()
    return errors - {e.text for h in handlers for e in h.errors}


@rule(
    "WF214",
    "unraisable-error",
    severity=Severity.WARNING,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that an error route on a parallel or map names an error its body can raise.",
)
def unraisable_error(m: Model) -> Iterator[Finding]:
    """An error a branch or a map item raises and does not handle reaches the
    parallel or map under its own name; a route for an error that no branch or
    item can raise is never taken. A service raises only what it declares: a
    handler that fails with another declared error fails its task with
    ``InvalidResult`` instead. (``on any``, ``BranchFailed`` and ``MapFailed``
    take any failure; any service call can also fail with the runtime's
    ``NoHandler``, ``InvalidResult``, ``Interrupted`` and ``WorkerError``.)

    Bad:

        parallel p { branch a { task t: service s.t { next e } end e: completed } on Declined -> f next done }

    Good:

        parallel p { branch a { task t: service pay.charge { next e } end e: completed } on Declined -> f next done }
    """
    if not m.imports_complete:
        return  # a service may be declared in a file that could not be read
    for node in m.all_nodes():
        if isinstance(node, sp.ParallelNode):
            what = f"no branch of '{node.name.text}'"
        elif isinstance(node, sp.MapNode):
            what = f"no item of map '{node.name.text}'"
        else:
            continue
        try:
            can = raised(m, child_nodes(node))
        except _Unknown:
            continue  # unknown-reference says what is missing
        declared = sorted(e for e in can if e in m.errors)  # routable, so worth naming
        for h in node.handlers:
            for e in h.errors:
                if e.text in m.errors and e.text not in can | CONTAINER_ERRORS:
                    yield Finding(
                        f"{what} can raise '{e.text}', so this route is never taken",
                        e.span,
                        hint=(
                            f"its body can raise: {', '.join(declared)}"
                            if declared
                            else "nothing in its body raises a named error"
                        ),
                    )
