"""Overlay marks and how they look: one registry shared by both formats.

A mark is a word an overlay puts on a node, edge or cluster (``error``,
``added``, ``visited``...). An element with several marks is drawn in the one
that comes first in ``PRECEDENCE``: a failed step that was also visited is
drawn as failed.
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen


@frozen
class MarkStyle:
    """The colours of a mark; ``dashed`` for what is not in the drawn version."""

    color: str
    fill: str
    penwidth: float = 2.4
    dashed: bool = False
    legend: str = ""


MARKS: dict[str, MarkStyle] = {
    "failed": MarkStyle("#b71c1c", "#ffcdd2", 3.2, legend="failed step"),
    "current": MarkStyle("#6a1b9a", "#f3e5f5", 3.2, legend="current (active tokens)"),
    "error": MarkStyle("#d32f2f", "#ffebee", legend="error"),
    "removed": MarkStyle("#c62828", "#f5f5f5", dashed=True, legend="removed"),
    "added": MarkStyle("#2e7d32", "#e8f5e9", legend="added"),
    "changed": MarkStyle("#e68a00", "#fff3cd", legend="changed"),
    "warning": MarkStyle("#ef6c00", "#fff3e0", legend="warning"),
    "info": MarkStyle("#1565c0", "#e3f2fd", legend="info"),
    "visited": MarkStyle("#1565c0", "#e3f2fd", legend="visited"),
}

PRECEDENCE = tuple(MARKS)


def strongest(marks: Iterable[str]) -> MarkStyle | None:
    """The style an element with these marks is drawn in, or None for no mark."""
    present = set(marks)
    for name in PRECEDENCE:
        if name in present:
            return MARKS[name]
    return None
