"""``dsl/incremental.py``: the parse of an edit is the full parse's, item for item and
span for span, whether the edited items were parsed alone or the file whole."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from wflang.dsl.incremental import _splice, reparse
from wflang.dsl.parser import parse

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.wf"))
ALPHABET = 'abz_ 1{}()",.:-/>=x'


def _edits(text: str, rng: random.Random, count: int) -> list[str]:
    """One-character edits (typing, deleting, replacing) that keep the line count."""
    found: list[str] = []
    while len(found) < count:
        at = rng.randrange(len(text))
        kind = rng.choice("idr")
        if kind != "i" and text[at] == "\n":
            continue
        char = rng.choice(ALPHABET)
        if kind == "i":
            found.append(text[:at] + char + text[at:])
        elif kind == "d":
            found.append(text[:at] + text[at + 1 :])
        else:
            found.append(text[:at] + char + text[at + 1 :])
    return found


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_a_reparse_is_the_full_parse(path: Path) -> None:
    rng = random.Random(path.name)
    text = path.read_text(encoding="utf-8")
    old = parse(text, str(path))
    assert old.spec is not None
    spliced = 0
    for new in _edits(text, rng, 25):
        full = parse(new, str(path))
        again = reparse(old, new)
        assert repr(again) == repr(full)
        if again.spec is not None and full.spec is not None:  # comments take no part in ==
            assert again.spec.comments == full.spec.comments
        spliced += _splice(old, new) is not None
    assert spliced >= 3  # the items were parsed alone often enough to be tested


def test_an_edit_of_the_header_or_of_the_line_count_parses_the_whole_file() -> None:
    text = EXAMPLES[0].read_text(encoding="utf-8")
    old = parse(text, "f.wf")
    assert _splice(old, text.replace("\n", "\n\n", 1)) is None
    assert _splice(old, text.replace("version", "versio", 1)) is None
