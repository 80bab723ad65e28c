"""``wf check --fix`` applies the safe quick fixes (the language server's own,
``compiler/fixes.py``) and says what it changed; ``--diff`` shows them, writing nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.cli import main

MISSPELT = """workflow w version 1

service s.a()

start a

task a: service s.a {
    next don
}

end done: completed
"""
FIXED = MISSPELT.replace("next don", "next done")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def misspelt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.wf").write_text(MISSPELT)
    return tmp_path / "w.wf"


def test_fix_repairs_the_file_and_says_what_it_changed(
    misspelt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "check", "--fix", "w.wf") == (
        0,
        "All clean: 1 file checked.\n",
        "fixed w.wf:8:10: 'don' -> 'done'\n",
    )
    assert misspelt.read_text() == FIXED
    assert run(capsys, "check", "--fix", "w.wf") == (0, "All clean: 1 file checked.\n", "")


def test_fix_leaves_what_it_cannot_fix_safely_and_reports_it(
    misspelt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    misspelt.write_text(MISSPELT + "\nend orphan: completed\n")
    code, out, err = run(capsys, "check", "--fix", "--format", "concise", "w.wf")
    assert code == 1
    assert err == "fixed w.wf:8:10: 'don' -> 'done'\n"
    assert (
        out
        == "w.wf:13:5: error[WF201] node 'orphan' cannot be reached from the start of the workflow\n"
    )
    assert misspelt.read_text() == FIXED + "\nend orphan: completed\n"


def test_diff_shows_the_fixes_and_writes_nothing(
    misspelt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "check", "--diff", "w.wf")
    assert (code, err) == (1, "would fix 1 finding\n")
    assert out == (
        "--- w.wf\n+++ w.wf (fixed)\n@@ -5,7 +5,7 @@\n start a\n \n task a: service s.a {\n"
        "-    next don\n+    next done\n }\n \n end done: completed\n"
    )
    assert misspelt.read_text() == MISSPELT
    misspelt.write_text(FIXED)
    assert run(capsys, "check", "--diff", "w.wf") == (0, "", "would fix 0 findings\n")


def test_fix_of_standard_input_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "check", "--fix", "-") == (
        2,
        "",
        "wf: error: --fix rewrites files: standard input ('-') cannot be (try --diff)\n",
    )
