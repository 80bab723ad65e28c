"""The commands in README.md and docs/*.md are kept honest (issue 12).

Three checks, from the strictest to the widest:

* A fenced block whose info string is ``console`` is a session that runs: each
  ``$ wf ...`` line is a command (run in-process from the repository root, on a
  fresh SQLite store per block through ``$WFLANG_STORE``), the lines under it are
  what it prints (standard output, then standard error; ``...`` stands for any
  text, on a line of its own for any lines), and a ``[exit N]`` line gives its exit
  status (0 when there is none). So a documented exit code or message is tested.
* Every ``wf`` line of a ``sh`` block parses: its command and options exist and
  its values are accepted.
* Every ``wf ...`` inline code span names a command and options that exist (values
  may be placeholders such as ``FILE`` or ``N``).

To document a new session, write it as a ``console`` block; to show a command
without running it, use ``sh``.
"""

from __future__ import annotations

import argparse
import re
import shlex
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from attrs import frozen

from wflang.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^( *)```(\w*)[^\n]*\n(.*?)^\1```", re.M | re.S)
_INLINE = re.compile(r"`(wf [^`]+)`")
_EXIT = re.compile(r"\[exit (\d+)\]")


@frozen
class Command:
    argv: tuple[str, ...]
    expected: str  # what it prints, ``...`` for any text
    exit: int


@frozen
class Block:
    where: str  # file:line, for the test id
    lang: str
    text: str


def _blocks() -> Iterator[Block]:
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):  # a block in a list item is indented
            line = text.count("\n", 0, m.start()) + 1
            body = textwrap.dedent(m.group(3)) if m.group(1) else m.group(3)
            yield Block(f"{doc.relative_to(ROOT)}:{line}", m.group(2), body)


def _session(block: Block) -> list[Command]:
    """The commands of a console block, with what each prints and its exit status."""
    commands: list[Command] = []
    argv: list[str] | None = None
    lines: list[str] = []
    status = 0

    def close() -> None:
        if argv is not None:
            commands.append(Command(tuple(argv), "\n".join(lines).strip("\n"), status))

    for line in block.text.splitlines():
        if line.startswith("$ "):
            close()
            argv, lines, status = shlex.split(line[2:]), [], 0
            assert argv[0] == "wf", f"{block.where}: only wf commands run: {line}"
        elif (m := _EXIT.fullmatch(line.strip())) is not None:
            status = int(m.group(1))
        else:
            lines.append(line.rstrip())
    close()
    return commands


def _matches(expected: str, actual: str) -> bool:
    """Whether the output fits the expected text, ``...`` standing for any text."""
    parts = [re.escape(p) for p in expected.split("...")]
    return re.fullmatch(".*?".join(parts), actual.strip("\n"), re.S) is not None


SESSIONS = [b for b in _blocks() if b.lang == "console"]
SHELL = [b for b in _blocks() if b.lang == "sh" and re.search(r"^wf ", b.text, re.M)]


def test_the_docs_have_sessions_to_run() -> None:
    assert len(SESSIONS) >= 3


@pytest.mark.parametrize("block", SESSIONS, ids=lambda b: b.where)
def test_documented_sessions_print_what_the_docs_say(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("WFLANG_STORE", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.setenv("WF_ACTOR", "docs")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    for command in _session(block):
        try:
            code = main(list(command.argv[1:]))
        except SystemExit as exit:  # argparse's own usage errors
            code = int(exit.code or 0)
        out, err = capsys.readouterr()
        said = (out + err).rstrip()
        shown = " ".join(command.argv)
        assert code == command.exit, f"{block.where}: `{shown}` exited {code}:\n{said}"
        assert _matches(command.expected, said), (
            f"{block.where}: `{shown}` printed:\n{said}\n--- the docs say:\n{command.expected}"
        )


def _lines(block: Block) -> Iterator[list[str]]:
    for line in block.text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split, lexer.commenters = True, "#"
        words = list(lexer)
        while words:  # `wf status x; wf history x` is two commands
            cut = next((i for i, w in enumerate(words) if w in (";", "&&")), len(words))
            if words[0] == "wf":
                yield words[1:cut]
            words = words[cut + 1 :]


@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.where)
def test_documented_shell_commands_parse(block: Block) -> None:
    parser = build_parser()
    for argv in _lines(block):
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"{block.where}: `wf {' '.join(argv)}` does not parse")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _spans() -> Iterator[tuple[str, str]]:
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in _INLINE.finditer(line):
                yield f"{doc.relative_to(ROOT)}:{n}", m.group(1)


def test_documented_inline_commands_name_real_commands_and_options() -> None:
    wrong = []
    for where, span in _spans():
        words = span.replace("[", " ").replace("]", " ").replace("|", " ").split()[1:]
        parser = build_parser()
        while words and words[0] in _subparsers(parser):
            parser = _subparsers(parser)[words.pop(0)]
        if parser.prog == "wf" and words and not words[0].startswith("-"):
            wrong.append(f"{where}: `{span}`: no command '{words[0]}'")
            continue
        options = parser._option_string_actions
        for word in words:
            option = word.split("=", 1)[0]
            if option.startswith("-") and option != "-" and option not in options:
                wrong.append(f"{where}: `{span}`: {parser.prog} has no option {option}")
    assert not wrong, "\n".join(wrong)
