"""wf diff fingerprints: code, element path and arguments; not the message, not the line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import attrs
import pytest

from wflang.cli import main
from wflang.compiler.diff import diff_specs
from wflang.compiler.diff.folders import diff_folders
from wflang.compiler.diff.run import Change
from wflang.dsl.parser import parse_bytes, parse_file
from wflang.dsl.spec import WorkflowSpec

DATA = Path(__file__).resolve().parent / "data" / "diff"
CODE_DIRS = sorted(p for p in DATA.iterdir() if p.is_dir() and p.name.startswith("WF"))
KEYLESS: set[str] = set()  # every diff rule gives its findings a key


def spec(text: str, name: str) -> WorkflowSpec:
    parsed = parse_bytes(text.encode("utf-8"), name)
    assert parsed.spec is not None, parsed.diagnostics
    return parsed.spec


def read(folder: Path, which: str) -> str:
    return (folder / f"{which}.wf").read_text(encoding="utf-8")


def changes(old: str, new: str) -> tuple[Change, ...]:
    return diff_specs(spec(old, "old.wf"), spec(new, "new.wf")).changes


@pytest.mark.parametrize("folder", CODE_DIRS, ids=lambda p: p.name)
def test_every_finding_has_a_key(folder: Path) -> None:
    if (folder / "old").is_dir():
        found = diff_folders(folder / "old", folder / "new", parse_file).result.changes
    else:
        found = changes(read(folder, "old"), read(folder, "new"))
    for c in found:
        if c.diagnostic.code in KEYLESS:
            continue
        assert c.key is not None, c.diagnostic
        assert (
            c.fingerprint
            == hashlib.sha256(f"{c.diagnostic.code}:{c.key}".encode()).hexdigest()[:16]
        )


def test_edge_key_is_the_element_path() -> None:
    folder = DATA / "WF643"
    (c,) = changes(read(folder, "old"), read(folder, "new"))
    assert c.key == "node:decide/else:undo,failed"


def test_rewording_keeps_the_fingerprint() -> None:
    folder = DATA / "WF643"
    (c,) = changes(read(folder, "old"), read(folder, "new"))
    reworded = attrs.evolve(
        c, diagnostic=attrs.evolve(c.diagnostic, message="the else arm of decide moved")
    )
    assert reworded.diagnostic.message != c.diagnostic.message
    assert reworded.fingerprint == c.fingerprint
    other = attrs.evolve(c, key="node:decide/else:undo,done")
    assert other.fingerprint != c.fingerprint


def test_moving_the_element_keeps_the_fingerprint() -> None:
    folder = DATA / "WF643"
    old, new = read(folder, "old"), read(folder, "new")
    (before,) = changes(old, new)
    # a comment and blank lines above the changed element push it down
    moved = new.replace("start charge\n", "start charge\n\n// moved down\n\n\n", 1)
    (after,) = changes(old, moved)
    assert after.diagnostic.span.line != before.diagnostic.span.line
    assert after.fingerprint == before.fingerprint


def test_json_and_sarif_carry_the_diff_fingerprints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = DATA / "WF643"
    old, new = str(folder / "old.wf"), str(folder / "new.wf")
    (c,) = changes(read(folder, "old"), read(folder, "new"))
    main(["diff", "--format", "json", old, new])
    (d,) = json.loads(capsys.readouterr().out)["diagnostics"]
    assert d["fingerprint"] == c.fingerprint
    main(["diff", "--format", "sarif", old, new])
    (r,) = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert r["partialFingerprints"]["primaryLocationLineHash"] == f"{c.fingerprint}:1"
    moved = tmp_path / "new.wf"
    moved.write_text("// a new first line\n" + read(folder, "new"), encoding="utf-8")
    main(["diff", "--format", "json", old, str(moved)])
    (d2,) = json.loads(capsys.readouterr().out)["diagnostics"]
    assert d2["location"]["line"] == d["location"]["line"] + 1
    assert d2["fingerprint"] == d["fingerprint"]
