"""Every rule has a fixture that triggers it and one that does not.

``tests/data/check/<CODE>-bad.wf`` shows the mistake and ``<CODE>-good.wf`` its
corrected form. Expectations are comments in the fixtures themselves: on the line
where a finding starts, ``// expect: WF201`` (several codes comma-separated);
``// expect-next: WF201`` expects a finding on the next line, for lines that
cannot carry a comment. A bad fixture must produce exactly its expected findings
under the ``all`` preset; a good fixture must produce none. Files in
``tests/data/check/lib/`` are imported by fixtures and are not fixtures themselves.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wflang.compiler import docs
from wflang.compiler.check import check
from wflang.compiler.config import Config
from wflang.compiler.registry import RULES, Preset
from wflang.dsl.diagnostics import CODES
from wflang.dsl.parser import parse_file

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "data" / "check"
FIXTURE_FILES = sorted(FIXTURES.glob("*.wf"))
NAME = re.compile(r"(?P<code>WF\d{3})-(?P<kind>bad|good)\.wf")
EXPECT = re.compile(
    r"//\s*expect(?P<next>-next)?:\s*(?P<codes>WF\d{3}(?:\s*,\s*WF\d{3})*)\s*(?://|$)"
)
ANY_EXPECT = re.compile(r"//\s*expect", re.IGNORECASE)


def expectations(text: str) -> list[tuple[int, str]]:
    """The (line, code) pairs a fixture's expectation comments ask for, sorted."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        matches = list(EXPECT.finditer(line))
        if len(matches) != len(ANY_EXPECT.findall(line)):
            raise ValueError(f"line {number}: malformed expectation: {line.strip()}")
        for m in matches:
            target = number + 1 if m.group("next") else number
            found.extend((target, code.strip()) for code in m.group("codes").split(","))
    return sorted(found)


def findings(path: Path, preset: Preset = Preset.ALL) -> list[tuple[int, str]]:
    """The (line, code) of every diagnostic of one file, sorted."""
    result = check([parse_file(path)], Config(preset))
    return sorted((d.span.line, d.code) for d in result.diagnostics if d.span.file == str(path))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_fixture(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    expected = expectations(text)
    if path.stem.endswith("-bad"):
        code = path.stem.removesuffix("-bad")
        assert any(c == code for _, c in expected), f"{path.name} expects no {code}"
    else:
        assert expected == [], f"{path.name} is a good fixture: it expects no findings"
    assert findings(path) == expected


@pytest.mark.parametrize("preset", [Preset.RECOMMENDED, Preset.STRICT], ids=lambda p: p.value)
@pytest.mark.parametrize(
    "path", [p for p in FIXTURE_FILES if p.stem.endswith("-good")], ids=lambda p: p.stem
)
def test_good_fixture_is_clean_under_every_preset(path: Path, preset: Preset) -> None:
    assert findings(path, preset) == []


@pytest.mark.parametrize("path", sorted((FIXTURES / "lib").glob("*.wf")), ids=lambda p: p.stem)
def test_imported_file(path: Path) -> None:
    """Files the fixtures import hold only the findings they expect (most hold none)."""
    assert findings(path) == expectations(path.read_text(encoding="utf-8"))


def test_every_code_has_fixtures() -> None:
    names = {p.name for p in FIXTURE_FILES}
    missing = [
        f"{code.id}-{kind}.wf"
        for code in CODES.all()
        for kind in ("bad", "good")
        if f"{code.id}-{kind}.wf" not in names
    ]
    assert missing == []


def test_every_fixture_names_a_code() -> None:
    strays = []
    for p in FIXTURE_FILES:
        m = NAME.fullmatch(p.name)
        if m is None or CODES.lookup(m.group("code")) is None:
            strays.append(p.name)
    assert strays == []


def test_every_rule_is_documented() -> None:
    undocumented = [
        rule.id
        for rule in RULES.values()
        if "Bad:" not in rule.code.doc or "Good:" not in rule.code.doc
    ]
    assert undocumented == []


def test_every_code_is_documented() -> None:
    undocumented = [c.id for c in CODES.all() if not c.summary or not c.doc]
    assert undocumented == []


def test_rules_md_is_current() -> None:
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == docs.rules_markdown(), (
        "docs/rules.md is stale: run '.venv/bin/wf rules --format markdown > docs/rules.md'"
    )


@pytest.mark.parametrize("preset", [Preset.RECOMMENDED, Preset.STRICT])
def test_examples_are_clean(preset: Preset) -> None:
    """The examples show how to write workflows: clean under the strict preset too
    (every input and context field they declare is read)."""
    examples = sorted((ROOT / "examples").glob("*.wf"))
    assert examples
    result = check([parse_file(p) for p in examples], Config(preset))
    shown = [f"{d.span.file}:{d.span.line}: {d.code} {d.message}" for d in result.diagnostics]
    assert shown == []


def test_expectation_comments() -> None:
    text = "a // expect: WF201\n// expect-next: WF901, WF902\nb\nc // expect: WF201, WF201\n"
    assert expectations(text) == [
        (1, "WF201"),
        (3, "WF901"),
        (3, "WF902"),
        (4, "WF201"),
        (4, "WF201"),
    ]


@pytest.mark.parametrize(
    "line", ["a // expect WF201", "a // Expect: WF201", "a // expect: WF201 WF202", "// expect:"]
)
def test_malformed_expectation_comments_fail(line: str) -> None:
    with pytest.raises(ValueError, match="malformed expectation"):
        expectations(line)
