"""What every ``wf diff`` rule module shares: levels, categories, fingerprints, kinds,
and the findings a rule makes of what ``Pairing`` paired (removed, or changed)."""

from __future__ import annotations

from collections.abc import Collection, Iterator

from wflang.compiler.diff.pairing import Pair, Pairing
from wflang.compiler.diff.registry import Category, Level
from wflang.compiler.diff.types import Change, compare
from wflang.compiler.registry import Finding
from wflang.dsl import spec as sp
from wflang.dsl.span import Span

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


def removed(p: Pairing, message: str, *, was: Span, key: str) -> Finding:
    """A finding about an element only the old version has: it points at the new
    workflow's header (``Pairing.anchor``), related to where the element was."""
    return Finding(message, p.anchor, related=p.was(was), key=key)


def changed(
    p: Pairing,
    message: str,
    at: Span,
    *,
    was: Span,
    key: str,
    hint: str | None = None,
    old: str = "in the old version",
) -> Finding:
    """A finding about an element in both versions: at the new one (``at``), related to
    the old one (``was``, said to be ``old``)."""
    return Finding(message, at, hint=hint, related=p.was(was, old), key=key)


#: A type's change in words.
_CHANGE_WORDS = {Change.WIDER: "widened", Change.NARROWER: "narrowed", Change.OTHER: "changed"}


def retyped(
    p: Pairing, x: Pair[sp.Field], field: str, at: str, changes: Collection[Change], then: str = ""
) -> Iterator[Finding]:
    """``FIELD type widened from T to U`` (or narrowed, or changed) and ``then``, if the
    type of a field in both versions (at path ``at``) changed in one of the ``changes``."""
    change = compare(x.old.type, x.new.type)
    if change in changes:
        yield changed(
            p,
            f"{field} type {_CHANGE_WORDS[change]} from {x.old.type} to {x.new.type}{then}",
            x.new.type.span,
            was=x.old.type.span,
            key=key(at, x.old.type, x.new.type),
        )
