"""The conveniences of the wf command that ruff and mypy users expect (issue 16): every
flag documented, an unknown flag answered with the subcommand's usage, fmt's diff,
rule selection on the command line, quiet output, statistics, one rule explained."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.cli.app import build_parser


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit:  # argparse's usage errors
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("wf",)
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the command line, with the words that reach it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def test_every_flag_and_argument_of_every_subcommand_has_help() -> None:
    undocumented = [
        f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}"
        for path, parser in parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
        and action.help in (None, argparse.SUPPRESS, "")
    ]
    assert undocumented == []


def test_the_walk_sees_every_command() -> None:
    seen = {" ".join(path) for path, _ in parsers(build_parser())}
    assert {"wf check", "wf ops force-complete", "wf worker", "wf daemon start"} <= seen


def test_an_unknown_flag_prints_the_subcommand_s_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "--bogus", "examples")
    assert (code, out) == (2, "")
    assert err.startswith("usage: wf check [-h]")
    assert err.endswith("wf check: error: unrecognized arguments: --bogus\n")


def test_an_unknown_flag_of_an_action_prints_the_action_s_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "ops", "retry", "some-id", "--nope")
    assert code == 2
    assert err.startswith("usage: wf ops retry [-h]")
    assert err.endswith("wf ops retry: error: unrecognized arguments: --nope\n")


UGLY = "workflow w version 1\nstart   a\nend a:completed\n"
PRETTY = "workflow w version 1\nstart a\nend a: completed\n"


def test_fmt_diff_shows_the_changes_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "m.wf"
    f.write_text(UGLY)
    code, out, err = run(capsys, "fmt", "--diff", str(f))
    assert (code, err) == (1, "")
    assert out == (
        f"--- {f}\n+++ {f} (formatted)\n@@ -1,3 +1,3 @@\n workflow w version 1\n"
        "-start   a\n-end a:completed\n+start a\n+end a: completed\n"
    )
    assert f.read_text() == UGLY
    f.write_text(PRETTY)
    assert run(capsys, "fmt", "--diff", str(f)) == (0, "", "")


def test_fmt_check_says_which_files_and_shows_the_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "m.wf"
    f.write_text(UGLY)
    code, out, _ = run(capsys, "fmt", "--check", str(f))
    assert code == 1
    assert out.startswith(f"would reformat {f}\n--- {f}\n+++ {f} (formatted)\n")
    assert "+end a: completed\n" in out
    assert f.read_text() == UGLY
    assert run(capsys, "fmt", "--check", "--quiet", str(f)) == (1, "", "")


def test_fmt_diff_of_standard_input_names_the_stdin_filename(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(UGLY.encode())))
    code, out, _ = run(capsys, "fmt", "--diff", "--stdin-filename", "flows/m.wf", "-")
    assert code == 1
    assert out.startswith("--- flows/m.wf\n+++ flows/m.wf (formatted)\n")


def test_fmt_quiet_rewrites_without_a_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "m.wf"
    f.write_text(UGLY)
    assert run(capsys, "fmt", "--quiet", str(f)) == (0, "", "")
    assert f.read_text() == PRETTY


FINDINGS = (
    "workflow w version 1\nsignal go\ncontext { x: int = 0 }\nstart a\n"
    "wait a: signal go {\n    next b\n}\nend b: completed\nend orphan: completed\n"
)
UNUSED = "f.wf:3:11: warning[WF304] context field 'x' is never used\n"
UNREACHABLE = (
    "f.wf:9:5: error[WF201] node 'orphan' cannot be reached from the start of the workflow\n"
)
NO_TIMEOUT = "f.wf:5:6: warning[WF402] wait 'a' has no timeout\n"


@pytest.fixture
def findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.wf").write_text(FINDINGS)
    return tmp_path


def concise(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    return run(capsys, "check", "--format", "concise", *argv, "f.wf")


def test_select_checks_only_the_rules_named(
    findings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert concise(capsys) == (1, UNUSED + UNREACHABLE, "")
    assert concise(capsys, "--select", "WF304") == (0, UNUSED, "")
    assert concise(capsys, "--select", "unreachable-node,WF304") == (1, UNUSED + UNREACHABLE, "")
    # a prefix selects a family; a rule the preset leaves off is turned on by name
    assert concise(capsys, "--select", "WF4") == (0, NO_TIMEOUT, "")


def test_extend_select_adds_to_the_configuration_and_ignore_removes(
    findings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert concise(capsys, "--extend-select", "WF402") == (1, UNUSED + NO_TIMEOUT + UNREACHABLE, "")
    assert concise(capsys, "--ignore", "WF201") == (0, UNUSED, "")
    assert concise(capsys, "--ignore", "WF2", "--ignore", "unused-declaration") == (0, "", "")
    # ignore wins over select
    assert concise(capsys, "--select", "WF304,WF201", "--ignore", "WF201") == (0, UNUSED, "")


def test_the_command_line_applies_on_top_of_tool_wflang(
    findings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (findings / "pyproject.toml").write_text(
        '[tool.wflang]\npreset = "all"\n[tool.wflang.rules]\nWF304 = "error"\n'
    )
    unused_error = UNUSED.replace("warning[WF304]", "error[WF304]")
    assert concise(capsys) == (1, unused_error + NO_TIMEOUT + UNREACHABLE, "")
    # a selected rule keeps the level the configuration gives it
    assert concise(capsys, "--select", "WF304") == (1, unused_error, "")
    assert concise(capsys, "--ignore", "WF402,WF201") == (1, unused_error, "")


def test_an_unknown_rule_on_the_command_line_is_a_usage_error(
    findings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert concise(capsys, "--select", "WF999") == (
        2,
        "",
        "wf: error: --select: unknown rule or prefix 'WF999' (see 'wf rules')\n",
    )
    assert concise(capsys, "--ignore", "unreachable") == (
        2,
        "",
        "wf: error: --ignore: unknown rule or prefix 'unreachable' (see 'wf rules')\n",
    )


def test_quiet_prints_the_findings_without_the_summary(
    findings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "check", "--quiet", "--color", "never", "f.wf")
    assert code == 1
    assert out.startswith("warning[WF304]: context field 'x' is never used\n")
    assert "Found" not in out and out.endswith("\n\n")
    (findings / "ok.wf").write_text("workflow w version 1\nstart a\nend a: completed\n")
    assert run(capsys, "check", "--quiet", "ok.wf") == (0, "", "")
    assert run(capsys, "check", "ok.wf") == (0, "All clean: 1 file checked.\n", "")


def test_statistics_count_the_findings_of_each_rule(
    findings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (findings / "g.wf").write_text(
        FINDINGS.replace("end orphan", "end orphan2: completed\nend orphan")
    )
    code, out, _ = run(capsys, "check", "--statistics", "f.wf", "g.wf")
    assert code == 1
    assert out == (
        "    3  WF201  unreachable-node    error\n"
        "    2  WF304  unused-declaration  warning\n"
        "Found 3 errors, 2 warnings in 2 files.\n"
    )
    assert run(capsys, "check", "--statistics", "--quiet", "f.wf")[1] == (
        "    1  WF201  unreachable-node    error\n    1  WF304  unused-declaration  warning\n"
    )
    assert run(capsys, "check", "--statistics", "--format", "json", "f.wf")[::2] == (
        2,
        "wf: error: --statistics prints a table for people: it takes no --format but text\n",
    )


def test_rules_explains_one_rule_as_docs_rules_md_does(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "WF201")
    assert code == 0
    assert out.startswith(
        "## WF201\n\n**`unreachable-node`** · graph · error · preset: recommended\n\n"
        "Checks that every node can be reached from the start.\n"
    )
    assert "Bad:\n\n```wf\nstart a\n" in out and "Good:\n\n```wf\n" in out
    docs = (Path(__file__).parent.parent / "docs" / "rules.md").read_text(encoding="utf-8")
    assert out in docs  # the same entry, word for word
    assert run(capsys, "rules", "unreachable-node")[1] == out  # by name too


def test_rules_explains_one_diff_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "wf601")
    assert code == 0 and out.startswith("## WF601\n\n**`required-field-added`** · callers")


def test_rules_of_an_unknown_code_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "rules", "unreachable-nod") == (
        2,
        "",
        "wf: error: unknown rule 'unreachable-nod' (see 'wf rules' for the list); "
        "did you mean 'unreachable-node'?\n",
    )


def test_rules_json_of_one_rule(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    code, out, _ = run(capsys, "rules", "--format", "json", "WF304")
    assert code == 0
    rule = json.loads(out)
    assert (rule["code"], rule["name"], rule["severity"]) == (
        "WF304",
        "unused-declaration",
        "warning",
    )
