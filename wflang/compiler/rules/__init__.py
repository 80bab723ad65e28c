"""The rules of ``wf check``, one module per family; importing this registers them all."""

from wflang.compiler.rules import graph, names, policy, typing

__all__ = ["graph", "names", "policy", "typing"]
