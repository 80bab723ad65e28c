"""The rules of ``wf check``, one module per family; importing this registers them all."""

from wflang.compiler.rules import (
    calls,
    errors,
    events,
    graph,
    locals,
    loops,
    names,
    policy,
    typing,
    usage,
)

__all__ = [
    "calls",
    "errors",
    "events",
    "graph",
    "locals",
    "loops",
    "names",
    "policy",
    "typing",
    "usage",
]
