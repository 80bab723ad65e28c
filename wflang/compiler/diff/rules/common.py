"""What every ``wf diff`` rule module shares: levels, categories, fingerprints, kinds."""

from __future__ import annotations

from wflang.compiler.diff.registry import Category, Level
from wflang.dsl import spec as sp

CALLERS, CONSUMERS, INSTANCES = Category.CALLERS, Category.CONSUMERS, Category.INSTANCES
BREAKING, WARNING, SAFE = Level.BREAKING, Level.WARNING, Level.SAFE


def key(path: str, *args: object) -> str:
    """What a finding's fingerprint is made of, apart from its code: the element's
    path (``input.amount``, ``node:charge/next``) and the values that matter, never
    the message or the line, so rewording or moving the element keeps it."""
    return ":".join([path, ",".join(str(a) for a in args)])


def path(where: str, name: str) -> str:
    """``input.amount``, ``signal:approval.note``."""
    return f"{where.replace(' ', ':')}.{name}"


def kind(node: sp.Node) -> str:
    """A node's kind for people: ``service task``, ``choice``, ``end``."""
    if isinstance(node, sp.TaskNode):
        work = type(node.work).__name__.removesuffix("Work").lower()
        return f"{work} task"
    return type(node).__name__.removesuffix("Node").lower()
