"""Output for people: rustc-style snippets (``text``) and one line per finding (``concise``)."""

from __future__ import annotations

from pathlib import Path

from wflang.compiler.report.model import Report, source_lines, summary_line
from wflang.dsl.diagnostics import Diagnostic, Severity

_COLORS = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFO: "\x1b[1;36m",
}
_BOLD, _BLUE, _RESET = "\x1b[1m", "\x1b[1;34m", "\x1b[0m"


def format_text(d: Diagnostic, source: str | None, *, color: bool = False) -> str:
    """rustc-style: the message, the location, the source line and a caret under the span.

    The caret runs under the exact span (to the end of the line when the span
    goes on), with the rule name after it; related locations follow as
    ``= note:`` lines and the hint as ``= hint:``.
    """
    sev, bold, blue, reset = (
        (_COLORS[d.severity], _BOLD, _BLUE, _RESET) if color else ("", "", "", "")
    )
    out = [f"{sev}{d.severity.value}[{d.code}]{reset}{bold}: {d.message}{reset}"]
    s = d.span
    lines = source_lines(source) if source else ()
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
    """``path:line:col: error[WF001] message`` — one line, gcc/mypy style.

    Line breaks in the message or hint become spaces, so that a problem matcher
    sees exactly one finding per line.
    """
    s = d.span
    hint = f" (hint: {d.hint})" if d.hint else ""
    line = f"{s.file}:{s.line}:{s.column}: {d.severity.value}[{d.code}] {d.message}{hint}"
    return " ".join(line.splitlines())


def render_text(report: Report, *, color: bool = False, root: Path | None = None) -> str:
    """Every finding as a snippet followed by a blank line, then the summary line."""
    blocks = [
        format_text(d, report.sources.get(d.span.file), color=color) + "\n\n"
        for d in report.diagnostics
    ]
    return "".join(blocks) + summary_line(report) + "\n"


def render_concise(report: Report, *, color: bool = False, root: Path | None = None) -> str:
    """One line per finding and nothing else (no output when clean)."""
    return "".join(format_concise(d) + "\n" for d in report.diagnostics)
