"""GitHub Actions: workflow-command annotations, and a Markdown table for the step summary.

GitHub turns at most 10 error, 10 warning and 10 notice commands of a step into
annotations (50 per job) and silently drops the rest (actions/toolkit,
docs/problem-matchers.md). So the most severe findings come first, each level is
capped, and when some are left out a ``::notice::`` says so *before* the others
(to be shown itself) and points to the step summary, which lists every finding:
the CLI writes ``github_step_summary`` to ``$GITHUB_STEP_SUMMARY``.
"""

from __future__ import annotations

from pathlib import Path

from wflang.compiler.report.model import Report, locate, plural, summary_line
from wflang.dsl.diagnostics import Diagnostic, Severity

ANNOTATIONS_PER_LEVEL = 10
"""Annotations GitHub shows per step for each of error, warning and notice."""

SUMMARY_LIMIT = 1024 * 1024
"""Bytes GitHub accepts in one step's summary."""

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape the message of a workflow command (actions/toolkit ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value of a workflow command (actions/toolkit ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic, root: Path) -> str:
    """``::error file=…,line=…,col=…,endLine=…,endColumn=…,title=WF001 syntax-error::message``.

    Columns are given only for a span on one line: GitHub refuses them otherwise.
    The hint, if any, is a second line of the message.
    """
    s = d.span
    path, _ = locate(s.file, root)
    props = [("file", path)]
    if s.line >= 1:
        props.append(("line", str(s.line)))
        if s.end_line <= s.line:
            props.append(("col", str(s.column)))
            props.append(("endLine", str(s.line)))
            props.append(("endColumn", str(s.end_column)))
        else:
            props.append(("endLine", str(s.end_line)))
    props.append(("title", f"{d.code} {d.name}"))
    message = f"{d.message}\nhint: {d.hint}" if d.hint else d.message
    properties = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{COMMANDS[d.severity]} {properties}::{escape_data(message)}"


def _select(report: Report) -> tuple[list[Diagnostic], dict[Severity, int]]:
    """The findings to annotate, most severe first, and how many of each level are left out."""
    levels = {s: [d for d in report.diagnostics if d.severity is s] for s in Severity}
    limits = dict.fromkeys(Severity, ANNOTATIONS_PER_LEVEL)
    if any(len(ds) > ANNOTATIONS_PER_LEVEL for ds in levels.values()):
        limits[Severity.INFO] -= 1  # the overflow notice takes one notice slot
    shown = [d for s, ds in levels.items() for d in ds[: limits[s]]]
    left = {s: max(0, len(ds) - limits[s]) for s, ds in levels.items()}
    return shown, left


def render_github(report: Report, *, color: bool = False, root: Path | None = None) -> str:
    """One workflow command per finding (capped per level), then the summary line."""
    base = Path.cwd() if root is None else root
    shown, left = _select(report)
    lines = []
    if total := sum(left.values()):
        counts = ", ".join(plural(n, s.value) for s, n in left.items() if n)
        note = (
            f"wflang: {plural(total, 'more finding')} ({counts}) than GitHub shows as "
            "annotations; the step summary lists them all."
        )
        lines.append(f"::notice::{escape_data(note)}")
    lines.extend(annotation(d, base) for d in shown)
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    for old, new in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(old, new)
    return "<br>".join(text.splitlines())


def github_step_summary(report: Report, *, root: Path | None = None) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: the summary line and a table of every finding."""
    base = Path.cwd() if root is None else root
    head = f"### wflang check\n\n{summary_line(report)}\n"
    if not report.diagnostics:
        return head
    out = [
        head,
        "| Severity | Code | Location | Message |",
        "| --- | --- | --- | --- |",
    ]
    size = sum(len(line.encode()) + 1 for line in out)
    budget = SUMMARY_LIMIT - 200  # room for the closing note
    for i, d in enumerate(report.diagnostics):
        path, _ = locate(d.span.file, base)
        where = f"{path}:{d.span.line}:{d.span.column}".replace("`", "'")
        message = f"{d.message}\nhint: {d.hint}" if d.hint else d.message
        row = f"| {d.severity.value} | {d.code} {d.name} | `{where}` | {_cell(message)} |"
        size += len(row.encode()) + 1
        if size > budget:
            rest = len(report.diagnostics) - i
            out.append(f"\n…and {plural(rest, 'more finding')}: see the log of this step.")
            break
        out.append(row)
    return "\n".join(out) + "\n"
