"""``wf diff --format text``: changes grouped by level, each with both snippets.

The new source line (with a caret) shows where the change is; the old source
line shows what it was, so a reviewer sees the two versions side by side.
"""

from __future__ import annotations

from collections.abc import Mapping

from wflang.compiler.diff.markdown import summary
from wflang.compiler.diff.registry import Level
from wflang.compiler.diff.run import DiffResult
from wflang.compiler.report import format_text
from wflang.compiler.report.model import source_lines
from wflang.dsl.span import Span

_HEADINGS = {
    Level.BREAKING: "Breaking changes",
    Level.WARNING: "Changes to review",
    Level.SAFE: "Safe changes",
}


def render_text(result: DiffResult, sources: Mapping[str, str], *, color: bool = False) -> str:
    out: list[str] = []
    for level in Level:
        changes = [c for c in result.changes if c.level is level]
        if not changes:
            continue
        out += [f"== {_HEADINGS[level]} ({len(changes)}) ==", ""]
        for change in changes:
            d = change.diagnostic
            out.append(format_text(d, sources.get(d.span.file), color=color))
            for related in d.related:
                old = _line(sources, related.span)
                if old is not None:
                    out.append(f"   | was: {old}")
            out.append("")
    out.append(summary(result))
    return "\n".join(out) + "\n"


def _line(sources: Mapping[str, str], span: Span) -> str | None:
    text = sources.get(span.file)
    if text is None or span.line < 1:
        return None
    lines = source_lines(text)
    return lines[span.line - 1].strip() if span.line <= len(lines) else None
