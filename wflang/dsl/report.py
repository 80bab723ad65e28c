"""Diagnostics for people and for tools: text with source snippets, concise, JSON.

Printing is kept out of the stages: they return ``Diagnostic`` values and only
this module (called by the CLI) turns them into text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from wflang.dsl.diagnostics import Diagnostic, Severity

JSON_SCHEMA_VERSION = 1

_COLORS = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFO: "\x1b[1;36m",
}
_BOLD, _BLUE, _RESET = "\x1b[1m", "\x1b[1;34m", "\x1b[0m"


def format_text(d: Diagnostic, source: str | None, *, color: bool = False) -> str:
    """rustc-style: the message, the location, the source line and a caret under the span."""
    sev, bold, blue, reset = (
        (_COLORS[d.severity], _BOLD, _BLUE, _RESET) if color else ("", "", "", "")
    )
    out = [f"{sev}{d.severity.value}[{d.code}]{reset}{bold}: {d.message}{reset}"]
    s = d.span
    lines = source.split("\n") if source else []
    gutter = len(str(max(s.end_line, s.line, 1)))
    pad = " " * gutter
    out.append(f"{pad}{blue}-->{reset} {s.file}:{s.line}:{s.column}")
    if 1 <= s.line <= len(lines):
        text = lines[s.line - 1].rstrip("\r").expandtabs(1)
        end = s.end_column if s.end_line == s.line else len(text) + 1
        width = max(1, end - s.column)
        out.append(f"{pad} {blue}|{reset}")
        out.append(f"{blue}{s.line:>{gutter}} |{reset} {text}")
        caret = " " * (s.column - 1) + "^" * width
        out.append(f"{pad} {blue}|{reset} {sev}{caret} {d.name}{reset}")
    for r in d.related:
        out.append(
            f"{pad} {blue}={reset} note: {r.message} at {r.span.file}:{r.span.line}:{r.span.column}"
        )
    if d.hint:
        out.append(f"{pad} {blue}={reset} {bold}hint{reset}: {d.hint}")
    return "\n".join(out)


def format_concise(d: Diagnostic) -> str:
    """``path:line:col: error[WF001] message`` — one line, gcc/mypy style."""
    s = d.span
    hint = f" (hint: {d.hint})" if d.hint else ""
    return f"{s.file}:{s.line}:{s.column}: {d.severity.value}[{d.code}] {d.message}{hint}"


def to_json(diagnostics: Sequence[Diagnostic], files: Sequence[str]) -> str:
    """A versioned JSON document of all findings, for tools."""
    counts: dict[str, int] = {s.value: 0 for s in Severity}
    for d in diagnostics:
        counts[d.severity.value] += 1
    doc: Mapping[str, Any] = {
        "version": JSON_SCHEMA_VERSION,
        "tool": "wflang",
        "files": list(files),
        "summary": counts,
        "diagnostics": [_diagnostic_json(d) for d in diagnostics],
    }
    return json.dumps(doc, indent=2)


def _diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    s = d.span
    return {
        "code": d.code,
        "name": d.name,
        "severity": d.severity.value,
        "message": d.message,
        "hint": d.hint,
        "location": {
            "file": s.file,
            "line": s.line,
            "column": s.column,
            "end_line": s.end_line,
            "end_column": s.end_column,
        },
        "related": [
            {
                "message": r.message,
                "file": r.span.file,
                "line": r.span.line,
                "column": r.span.column,
            }
            for r in d.related
        ],
    }
