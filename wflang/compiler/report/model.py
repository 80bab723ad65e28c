"""What every output format shares: the ``Report`` value and the helpers on it.

Paths: a span names its file as it was given (relative to the working folder or
absolute). Tools want it relative to the repository root instead; ``locate``
does that conversion once for every format.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Protocol

from attrs import field, frozen

import wflang
from wflang.dsl.diagnostics import Diagnostic, Severity

INFORMATION_URI = "https://github.com/wflang/wflang"
"""The project's home page, named in SARIF ``tool.driver.informationUri``."""

RULES_DOC_URI = f"{INFORMATION_URI}/blob/main/docs/rules.md"
"""The rule catalogue; each rule's help is at ``#<lowercase id>``."""


@frozen
class Report:
    """The findings of one ``wf check`` run, ready to be rendered in any format.

    ``sources`` maps a file path (as spans name it) to its text; a file whose
    text is unknown (unreadable, not UTF-8) is simply missing. ``files`` are all
    files checked, clean ones included, in the order they were checked.
    """

    diagnostics: tuple[Diagnostic, ...]
    sources: Mapping[str, str] = field(factory=dict)
    files: tuple[str, ...] = ()
    fingerprints: Mapping[Diagnostic, str] = field(factory=dict)
    """Fingerprints given by whoever made the report (``wf diff``), used instead of
    the line-based ones."""

    def counts(self) -> dict[Severity, int]:
        """How many findings of each severity, every severity present (most severe first)."""
        out = dict.fromkeys(Severity, 0)
        for d in self.diagnostics:
            out[d.severity] += 1
        return out

    def source_line(self, file: str, line: int) -> str | None:
        """The text of a 1-based line of a file, without its line break; None if unknown."""
        text = self.sources.get(file)
        if text is None or line < 1:
            return None
        lines = source_lines(text)
        return lines[line - 1].rstrip("\r") if line <= len(lines) else None


@functools.lru_cache(maxsize=8)
def source_lines(text: str) -> tuple[str, ...]:
    """A source split into lines, once per text: every finding of a file reads a line
    of it, and splitting the file for each would make reporting quadratic."""
    return tuple(text.split("\n"))


class Renderer(Protocol):
    """A format: the whole output for a report, ending in a newline unless empty."""

    def __call__(self, report: Report, *, color: bool, root: Path) -> str: ...


def tool_version() -> str:
    """The version of wflang named in machine-readable outputs (read at call time)."""
    return wflang.__version__


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def summary_line(report: Report) -> str:
    """``Found 1 error, 2 warnings in 3 files.`` or ``All clean: 3 files checked.``"""
    files = len(report.files)
    if not report.diagnostics:
        return f"All clean: {plural(files, 'file')} checked."
    parts = [plural(n, s.value) for s, n in report.counts().items() if n]
    return f"Found {', '.join(parts)} in {plural(files, 'file')}."


def _is_pseudo(file: str) -> bool:
    """Names such as ``<stdin>`` that stand for no file on disk."""
    return file.startswith("<") and file.endswith(">")


def locate(file: str, root: Path) -> tuple[str, bool]:
    """A file's path in posix form, and whether it lies under ``root``.

    Under ``root`` the path is relative to it (``flows/order.wf``); outside, it is
    absolute. Relative inputs are taken relative to the working folder, as the
    CLI gives them. Pseudo-files like ``<stdin>`` are kept as they are.
    """
    if _is_pseudo(file):
        return file, True
    absolute = Path(os.path.abspath(file))
    base = Path(os.path.abspath(root))
    try:
        return absolute.relative_to(base).as_posix(), True
    except ValueError:
        return PurePosixPath(absolute.as_posix()).as_posix(), False


def normalized_line(report: Report, d: Diagnostic) -> str:
    """The source line of a finding with its white space collapsed.

    Falls back to the message when the source is unknown, so a fingerprint never
    depends on the line number.
    """
    text = report.source_line(d.span.file, d.span.line)
    return " ".join((d.message if text is None else text).split())


def fingerprint(report: Report, d: Diagnostic, root: Path) -> str:
    """A stable id of a finding: code, file and line text, not line number.

    ``sha256("{code}:{relative path}:{normalized source line}")[:16]``, so a
    finding keeps its fingerprint when lines are added above it. A fingerprint
    the report was given (``Report.fingerprints``) wins.
    """
    given = report.fingerprints.get(d)
    if given is not None:
        return given
    path, _ = locate(d.span.file, root)
    key = f"{d.code}:{path}:{normalized_line(report, d)}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
