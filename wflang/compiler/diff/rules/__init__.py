"""The ``wf diff`` rules: small pure functions over the paired versions.

Codes: ``WF60x`` callers (the input, signals, messages, the workflow's name),
``WF62x`` consumers (outcomes, outputs, called versions), ``WF64x`` instances
(nodes, edges, context, policies), ``WF69x`` versions. Every finding points at
the new source; the old location is a related location. Removed elements point
at the new workflow's header.

One module per who a change may break: ``callers`` (with ``events``, what nodes
catch and wait for), ``consumers``, ``instances`` (with ``policies``), and
``versions``; importing this package registers them all.
"""

from wflang.compiler.diff.rules import callers, consumers, events, instances, policies, versions
from wflang.compiler.diff.rules.common import key, kind
from wflang.compiler.diff.rules.versions import VERSION_NOT_BUMPED, WORKFLOW_ADDED, WORKFLOW_REMOVED

__all__ = [
    "VERSION_NOT_BUMPED",
    "WORKFLOW_ADDED",
    "WORKFLOW_REMOVED",
    "callers",
    "consumers",
    "events",
    "instances",
    "key",
    "kind",
    "policies",
    "versions",
]
