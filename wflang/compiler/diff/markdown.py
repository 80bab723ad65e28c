"""A Markdown table of the changes, for pull-request comments."""

from __future__ import annotations

from wflang.compiler.diff.registry import Level
from wflang.compiler.diff.run import DiffResult


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary(result: DiffResult) -> str:
    """``2 breaking (1 accepted), 1 warning, 0 safe`` or ``No changes``."""
    if not result.changes:
        return "No changes that matter to callers, consumers or instances."
    parts = []
    for level in Level:
        of_level = [c for c in result.changes if c.level is level]
        accepted = sum(c.accepted for c in of_level)
        note = f" ({accepted} accepted)" if accepted else ""
        parts.append(f"{len(of_level)} {level.value}{note}")
    return ", ".join(parts) + "."


def render_markdown(result: DiffResult, old: str, new: str) -> str:
    """The whole report: a heading, a summary line and one row per change."""
    out = [f"### `wf diff` {old} → {new}", "", summary(result)]
    if result.changes:
        out += ["", "| level | code | change | where |", "| --- | --- | --- | --- |"]
        for c in result.changes:
            d = c.diagnostic
            level = c.level.value + (" (accepted)" if c.accepted else "")
            out.append(
                f"| {level} | {d.code} `{d.name}` | {_cell(d.message)} "
                f"| `{d.span.file}:{d.span.line}` |"
            )
    return "\n".join(out) + "\n"
