"""The conveniences of the wf command that ruff and mypy users expect (issue 16): every
flag documented, an unknown flag answered with the subcommand's usage, fmt's diff,
rule selection on the command line, quiet output, statistics, one rule explained."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

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
