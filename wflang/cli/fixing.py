"""``wf check --fix`` and ``--diff``: the safe quick fixes of the findings
(``compiler/fixes.py``, the language server's own), applied until none is left.

A safe fix only repairs what the checker names (a misspelt name it knows the spelling
of), so applying one cannot change what a working program does. Each round fixes the
findings of every file, then checks the fixed texts again, since a fix may reveal the
next finding (at most ``ROUNDS`` rounds). ``--fix`` writes the files and says each
change; ``--diff`` writes nothing and shows them as a diff.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

from wflang.cli.files import write
from wflang.cli.framework import Out
from wflang.compiler.check import CheckResult
from wflang.compiler.config import Config
from wflang.compiler.fixes import Edit, apply, offset, safe_edits
from wflang.compiler.program import Reader
from wflang.dsl.parser import ParseResult, parse

ROUNDS = 10


@frozen
class Change:
    """One edit as the author reads it: where, what was written, what is now."""

    file: str
    line: int
    column: int
    before: str
    after: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.before!r} -> {self.after!r}"


@frozen
class Fixed:
    texts: dict[str, str]  # every file that changed: its new text
    changes: tuple[Change, ...]
    result: CheckResult  # the check of the fixed files


def fix(
    parsed: list[ParseResult],
    result: CheckResult,
    check: Callable[[list[ParseResult], Config, Reader], CheckResult],
    config: Config,
    reader: Reader,
) -> Fixed:
    """Apply the safe fixes of ``result`` (the check of ``parsed``) round after round."""
    texts = {p.file: p.text for p in parsed}
    changes: list[Change] = []
    for _ in range(ROUNDS):
        edits = {
            file: safe_edits(
                [d for d in result.diagnostics if d.span.file == file],
                result.models.get(file),
                texts[file],
            )
            for file in texts
        }
        if not any(edits.values()):
            break
        for file, made in edits.items():
            changes += [_change(texts[file], e) for e in sorted(made, key=_position)]
            texts[file] = apply(texts[file], made)
        parsed = [parse(texts[p.file], p.file) for p in parsed]
        result = check(parsed, config, reader)
    return Fixed(texts, tuple(changes), result)


def _position(edit: Edit) -> tuple[int, int]:
    return (edit.span.line, edit.span.column)


def _change(text: str, edit: Edit) -> Change:
    s = edit.span
    before = text[offset(text, s.line, s.column) : offset(text, s.end_line, s.end_column)]
    return Change(s.file, s.line, s.column, before, edit.text)


def report(fixed: Fixed, originals: dict[str, str], *, diff: bool, color: bool, out: Out) -> None:
    """Write the fixed files and say each change (``--fix``), or show the diffs (``--diff``)."""
    from wflang.cli.source import unified_diff

    changed = {f: t for f, t in fixed.texts.items() if t != originals[f]}
    if diff:
        for file, text in changed.items():
            out.write(unified_diff(originals[file], text, file, color, change="fixed"))
        n = len(fixed.changes)
        out.print(f"would fix {n} finding{'s' if n != 1 else ''}", err=True)
        return
    for file, text in changed.items():
        write(file, text.encode("utf-8"))
    for change in fixed.changes:
        out.print(f"fixed {change}", err=True)
