"""wf check as CI runs it: presets, configuration, --fail-on, formats, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wflang.cli import main

# Clean but for one warning: the signal is declared and never used (WF304).
WARNS = "workflow w version 1\nsignal poke\nstart a\nend a: completed\n"
# Unreachable node (WF201, error).
BROKEN = (
    "workflow w version 1\n"
    "start a\n"
    "end a: completed\n"
    "end b: completed\n"
    "task orphan: script {\n"
    "    next a\n"
    "}\n"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "warns.wf").write_text(WARNS)
    (tmp_path / "broken.wf").write_text(BROKEN)
    return tmp_path


def test_warnings_pass_unless_fail_on_warning(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "check", "--format", "concise", "warns.wf")
    assert code == 0
    assert out.startswith("warns.wf:2:8: warning[WF304] signal 'poke' is never used")
    assert run(capsys, "check", "--fail-on", "warning", "warns.wf")[0] == 1


def test_errors_fail_and_every_file_is_reported(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "check", "--format", "concise", ".")
    assert code == 1
    lines = out.splitlines()
    assert (
        "broken.wf:4:5: error[WF201] node 'b' cannot be reached from the start of the workflow"
        in lines
    )
    assert any(line.startswith("warns.wf:2:8: warning[WF304]") for line in lines)


def test_config_turns_a_rule_off_and_strict_raises_warnings(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text('[tool.wflang.rules]\nunused-declaration = "off"\n')
    code, out, _ = run(capsys, "check", "warns.wf")
    assert (code, out) == (0, "All clean: 1 file checked.\n")
    (project / "pyproject.toml").write_text('[tool.wflang]\npreset = "strict"\n')
    code, out, _ = run(capsys, "check", "--format", "concise", "warns.wf")
    assert code == 1
    assert "error[WF304]" in out


def test_bad_config_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text('[tool.wflang.rules]\nWF999 = "off"\n')
    code, _, err = run(capsys, "check", "warns.wf")
    assert code == 2
    assert "unknown rule 'WF999'" in err


def test_suppression_silences_a_finding(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "quiet.wf").write_text(
        WARNS.replace("signal poke\n", "signal poke  // wf: ignore[WF304]\n")
    )
    assert run(capsys, "check", "quiet.wf")[:2] == (0, "All clean: 1 file checked.\n")


def test_sarif_and_github_formats(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, "check", "--format", "sarif", "broken.wf")
    assert code == 1
    sarif = json.loads(out)
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "WF201"]
    assert len(results) == 2  # 'b' and 'orphan'
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "broken.wf"
    assert location["region"]["startLine"] == 4
    summary = project / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = run(capsys, "check", "--format", "github", "broken.wf")
    assert code == 1
    assert "::error file=broken.wf,line=4,col=5" in out
    assert "WF201" in summary.read_text()


def test_stdin_and_missing_import(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    source = b'workflow w version 1\nimport "nowhere.wf"\nstart a\nend a: completed\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source)))
    code, out, _ = run(capsys, "check", "--format", "concise", "-")
    assert code == 1
    assert out.startswith("<stdin>:2:1: error[WF113] cannot import 'nowhere.wf'")


def test_rules_lists_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules")
    assert code == 0
    assert "WF201  unreachable-node" in out
    code, out, _ = run(capsys, "rules", "--format", "json")
    codes = {r["code"] for r in json.loads(out)}
    assert {"WF001", "WF201", "WF301", "WF901"} <= codes


def test_json_output_follows_the_published_schema(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import jsonschema

    code, out, _ = run(capsys, "schema")
    schema = json.loads(out)
    code, out, _ = run(capsys, "check", "--format", "json", ".")
    assert code == 1
    jsonschema.Draft202012Validator(schema).validate(json.loads(out))


def test_suppressing_a_rule_that_is_off_is_not_unused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (
        "workflow w version 1\nsignal go\nstart w1\n"
        "// wf: ignore[wait-without-timeout]\n"
        "wait w1: signal go {\n    next done\n}\nend done: completed\n"
    )
    (project / "open_wait.wf").write_text(source)
    assert run(capsys, "check", "open_wait.wf")[:2] == (0, "All clean: 1 file checked.\n")
    assert run(capsys, "check", "--preset", "all", "open_wait.wf")[:2] == (
        0,
        "All clean: 1 file checked.\n",
    )


def test_stdin_with_its_file_name_resolves_imports_from_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cat flows/x.wf | wf check - --stdin-filename flows/x.wf` checks it as that file:
    its imports are found beside it and findings carry its name (issue 12)."""
    import io
    import sys

    example = Path(__file__).resolve().parent.parent / "examples" / "order_saga.wf"
    monkeypatch.chdir(tmp_path)  # elsewhere: shared_types.wf is not in the working folder
    source = example.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source)))
    code, out, _ = run(capsys, "check", "--format", "concise", "-")
    assert code == 1 and "<stdin>:10:1: error[WF113] cannot import 'shared_types.wf'" in out
    broken = source.replace(b"next ship", b"next shipp", 1)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(broken)))
    code, out, _ = run(
        capsys, "check", "--format", "concise", "-", "--stdin-filename", str(example)
    )
    assert code == 1 and "WF113" not in out
    assert out.startswith(f"{example}:") and "'shipp'" in out
