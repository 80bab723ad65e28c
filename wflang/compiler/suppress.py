"""Suppression comments: ``// wf: ignore[WF201, dead-end]`` and ``// wf: ignore-file[…]``.

A suppression on a line silences findings that start on that line; a
suppression alone on its line also silences the next line. Suppressions that
silence nothing (WF901), that name no rule (WF902) or that name none at all
(WF903, strict) are findings themselves.
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from attrs import frozen

from wflang.compiler.registry import Preset, meta_rule
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import CODES, Diagnostic, Severity

UNUSED_SUPPRESSION = meta_rule(
    "WF901", "unused-suppression", category="suppression", severity=Severity.WARNING,
    summary="Checks that every suppression silences a finding.",
    doc="A suppression that silences nothing hides nothing today and may hide a real "
    "problem tomorrow.\n\nBad:\n\n    start a  // wf: ignore[WF201]\n\nGood:\n\n    start a",
)  # fmt: skip
UNKNOWN_RULE = meta_rule(
    "WF902", "unknown-rule", category="suppression", severity=Severity.WARNING,
    summary="Checks that suppressions name existing rules.",
    doc="Bad:\n\n    // wf: ignore[WF999]\n\nGood:\n\n    // wf: ignore[WF201]",
)  # fmt: skip
BLANKET_SUPPRESSION = meta_rule(
    "WF903", "blanket-suppression", category="suppression", severity=Severity.WARNING,
    summary="Checks that suppressions name the rules they silence.",
    doc="A suppression without codes silences everything on its line, including the "
    "mistakes nobody meant to allow. On in the strict preset.\n\n"
    "Bad:\n\n    task t: service s.t {}  // wf: ignore\n\n"
    "Good:\n\n    task t: service s.t {}  // wf: ignore[dead-end]",
    preset=Preset.STRICT,
)  # fmt: skip


@frozen
class Applied:
    kept: tuple[Diagnostic, ...]
    suppressed: int
    findings: tuple[Diagnostic, ...]  # WF901..WF903 about the suppressions themselves


def apply(
    spec: sp.WorkflowSpec,
    text: str,
    diagnostics: Iterable[Diagnostic],
    active: Container[str] | None = None,
) -> Applied:
    """Drop the diagnostics a file's suppressions silence; report the suppressions.

    ``active`` holds the codes the configuration runs: a suppression of a rule
    that is off cannot silence anything, and is not reported as unused.
    """
    lines = text.split("\n")
    used: set[int] = set()
    kept: list[Diagnostic] = []
    suppressed = 0
    found: list[Diagnostic] = []
    resolved: list[tuple[sp.Suppression, set[str]]] = []
    for s in spec.suppressions:
        ids: set[str] = set()
        for key in s.codes:
            code = CODES.lookup(key)
            if code is None:
                found.append(Diagnostic.of(UNKNOWN_RULE, f"no rule is called '{key}'", s.span))
            else:
                ids.add(code.id)
        if not s.codes:
            found.append(
                Diagnostic.of(BLANKET_SUPPRESSION, "this suppression names no rule", s.span)
            )
        resolved.append((s, ids))
    # Each finding looks only at the suppressions of its line (and the file's), so
    # that many findings and many suppressions cost their sum, not their product.
    file_level: list[int] = []
    by_line: dict[int, list[int]] = {}
    for i, (s, _) in enumerate(resolved):
        if s.file_level:
            file_level.append(i)
            continue
        by_line.setdefault(s.line, []).append(i)
        if 0 < s.line <= len(lines) and lines[s.line - 1].strip().startswith("//"):
            by_line.setdefault(s.line + 1, []).append(i)  # alone on its line: the next too
    for d in diagnostics:
        candidates = sorted((*file_level, *by_line.get(d.span.line, ())))
        hit = next((i for i in candidates if _names(resolved[i], d)), None)
        if hit is None:
            kept.append(d)
        else:
            used.add(hit)
            suppressed += 1
    for i, (s, ids) in enumerate(resolved):
        runs = active is None or not ids or any(code in active for code in ids)
        if i not in used and (ids or not s.codes) and runs:
            what = ", ".join(s.codes) or "anything"
            found.append(
                Diagnostic.of(
                    UNUSED_SUPPRESSION, f"this suppression of {what} silences nothing", s.span
                )
            )
    return Applied(tuple(kept), suppressed, tuple(found))


def _names(suppression: tuple[sp.Suppression, set[str]], d: Diagnostic) -> bool:
    """Whether a suppression (of ``d``'s line) names ``d``'s rule, or every rule."""
    s, ids = suppression
    return not s.codes or d.code in ids
