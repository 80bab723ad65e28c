"""How a field's type changed between two versions: same, wider, narrower or other.

``wider`` accepts every old value (``T`` -> ``T?``, ``int`` -> ``decimal``, and
the same inside ``list`` and ``map``); ``narrower`` is the opposite; ``other``
is anything else (an unrelated type). Callers are broken by narrower types,
consumers by wider ones, both by other ones.
"""

from __future__ import annotations

import enum

from wflang.dsl.types import GenericType, NamedType, OptionalType, TypeSpec

WIDENINGS = frozenset({("int", "decimal")})


class Change(enum.Enum):
    SAME = "same"
    WIDER = "wider"
    NARROWER = "narrower"
    OTHER = "other"


def _join(a: Change, b: Change) -> Change:
    if a is Change.SAME:
        return b
    if b is Change.SAME or a is b:
        return a
    return Change.OTHER


def compare(old: TypeSpec, new: TypeSpec) -> Change:
    """The change from ``old`` to ``new``."""
    if old == new:
        return Change.SAME
    if isinstance(old, OptionalType) and isinstance(new, OptionalType):
        return compare(old.inner, new.inner)
    if isinstance(new, OptionalType):
        return _join(Change.WIDER, compare(old, new.inner))
    if isinstance(old, OptionalType):
        return _join(Change.NARROWER, compare(old.inner, new))
    if isinstance(old, NamedType) and isinstance(new, NamedType):
        if (old.name, new.name) in WIDENINGS:
            return Change.WIDER
        if (new.name, old.name) in WIDENINGS:
            return Change.NARROWER
        return Change.OTHER
    if (
        isinstance(old, GenericType)
        and isinstance(new, GenericType)
        and old.name == new.name
        and len(old.args) == len(new.args)
    ):
        out = Change.SAME
        for a, b in zip(old.args, new.args, strict=True):
            out = _join(out, compare(a, b))
        return out
    return Change.OTHER
