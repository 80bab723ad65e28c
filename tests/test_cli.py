"""The wf command: output, exit codes, stdin, folders; nothing lost on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wflang.cli import main

GOOD = "workflow w version 1\nstart a\nend a: completed\n"
BAD = "workflow w version 1\nstart a\ntsak a: script {\n}\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_clean_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "ok.wf"
    f.write_text(GOOD)
    assert run(capsys, "check", str(f))[:2] == (0, "All clean: 1 file checked.\n")


def test_check_text_shows_snippet_caret_and_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "bad.wf"
    f.write_text(BAD)
    code, out, _ = run(capsys, "check", "--color", "never", str(f))
    assert code == 1
    assert f"--> {f}:3:1" in out
    assert "3 | tsak a: script {" in out
    assert "  | ^^^^ syntax-error" in out
    assert "= hint: did you mean 'task'?" in out
    assert out.endswith("Found 1 error in 1 file.\n")


def test_check_concise_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.wf"
    f.write_text(BAD)
    code, out, _ = run(capsys, "check", "--format", "concise", str(f))
    assert code == 1
    assert out.startswith(f"{f}:3:1: error[WF001] unexpected name 'tsak'")
    code, out, _ = run(capsys, "check", "--format", "json", str(f))
    doc = json.loads(out)
    assert doc["version"] == 1 and doc["summary"]["error"] == 1
    assert doc["diagnostics"][0]["location"]["line"] == 3


def test_check_folder_and_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.wf").write_text(GOOD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.wf").write_text(BAD)
    assert run(capsys, "check", "--format", "concise", str(tmp_path))[0] == 1
    code, _, err = run(capsys, "check", str(tmp_path / "nope.wf"))
    assert code == 2
    assert "cannot read" in err and "no such file" in err


def test_fmt_check_and_rewrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "m.wf"
    f.write_text("workflow w version 1\nstart   a\nend a:completed\n")
    code, out, _ = run(capsys, "fmt", "--check", str(f))
    assert code == 1 and out.startswith(f"would reformat {f}\n--- {f}\n")
    assert f.read_text() == "workflow w version 1\nstart   a\nend a:completed\n"
    code, _, err = run(capsys, "fmt", str(f))
    assert code == 0 and "reformatted" in err
    assert f.read_text() == GOOD
    assert run(capsys, "fmt", "--check", str(f))[0] == 0


def test_fmt_leaves_a_broken_file_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "bad.wf"
    f.write_text(BAD)
    code, out, _ = run(capsys, "fmt", str(f))
    assert code == 1 and "WF001" in out
    assert f.read_text() == BAD


def test_fmt_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"workflow  w version 1\n")))
    assert run(capsys, "fmt", "-")[:2] == (0, "workflow w version 1\n")


def test_parse_json_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wflang.dsl.serialize import structure

    f = tmp_path / "ok.wf"
    f.write_text(GOOD)
    code, out, _ = run(capsys, "parse", "--json", str(f))
    assert code == 0
    spec = structure(json.loads(out))
    assert spec.header is not None and spec.header.name.text == "w"


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for command in ("parse", "fmt", "check"):
        assert command in out


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_fmt_writes_newlines_only(
    newline: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "w.wf"
    f.write_bytes(GOOD.replace("\n", newline).encode())
    assert run(capsys, "fmt", "--check", str(f))[:2] == (1, f"would reformat {f}\n")
    assert run(capsys, "fmt", str(f))[0] == 0
    assert f.read_bytes() == GOOD.encode()


def test_check_shows_the_block_a_missing_brace_left_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "open.wf"
    f.write_text(
        "workflow w version 1\nstart a\ntask a: script {\n    next b\n\n"
        "task b: script {\n    next e\n}\nend e: completed\n"
    )
    code, out, _ = run(capsys, "check", "--color", "never", str(f))
    assert code == 1
    assert f"--> {f}:6:1" in out
    assert f"  = note: unclosed '{{' at {f}:3:16\n" in out
    assert "  = hint: is a '}' missing? The '{' on line 3 is not closed\n" in out
