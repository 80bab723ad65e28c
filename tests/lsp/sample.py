"""A small project for the server's tests: a workflow importing a type from a second
file, with a node of each common clause (its text is ``wf fmt``'s and ``wf check``-clean)."""

from __future__ import annotations

from pathlib import Path

TYPES = "type Parcel { weight: decimal }\n"
SHIP = """workflow ship version 1

import "types.wf"

enum Speed { slow, fast }

input { parcel: Parcel, speed: Speed }

context { total: decimal = 0.0 }

error Lost

service post.send(weight: decimal, express: bool) -> { tracking: string } raises Lost

start send

// Sends the parcel.
// Then finishes.
task send: service post.send {
    args { weight: input.parcel.weight, express: input.speed == Speed.fast }
    output { total: input.parcel.weight * 2 }
    on Lost -> failed
    next done
}

end done: completed

end failed: failed
"""


def project(folder: Path) -> tuple[Path, Path]:
    """Write the two files (and a pyproject.toml: the project's root); return them."""
    (folder / "pyproject.toml").write_text("")
    types = folder / "types.wf"
    types.write_text(TYPES)
    ship = folder / "ship.wf"
    ship.write_text(SHIP)
    return ship, types


def position(text: str, needle: str, nth: int = 0, offset: int = 0) -> tuple[int, int]:
    """The 0-based (line, character) of the ``nth`` ``needle`` in ``text``, plus ``offset``."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += offset
    line = text.count("\n", 0, at)
    return line, at - (text.rfind("\n", 0, at) + 1)
