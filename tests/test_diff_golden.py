"""Golden outputs of `wf diff` in every format (regenerate: WFLANG_UPDATE_GOLDEN=1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import wflang
from wflang.cli import main

ROOT = Path(__file__).parent.parent
GOLDEN = Path(__file__).parent / "golden" / "diff"
PAIR = ("tests/data/diff/WF641/old.wf", "tests/data/diff/WF641/new.wf")
FORMATS = {
    "text": "text.txt",
    "concise": "concise.txt",
    "json": "json.json",
    "sarif": "sarif.json",
    "github": "github.txt",
    "markdown": "markdown.md",
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_diff_output_matches_golden(
    fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(wflang, "__version__", "9.8.7")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code = main(["diff", *PAIR, "--format", fmt, "--color", "never"])
    # SARIF names the checkout's folder as %SRCROOT%: a golden file cannot hold it.
    out = capsys.readouterr().out.replace(ROOT.resolve().as_uri() + "/", "file:///ROOT/")
    assert code == 0  # the breaking change is accepted: the version was bumped
    golden = GOLDEN / FORMATS[fmt]
    if os.environ.get("WFLANG_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8")
