"""Running the diff rules: pair two versions once, run every rule, judge versions.

A breaking change made while the version went up is *accepted*: it keeps its
level and is still shown, but it does not count for ``--fail-on``. One made
without a version bump adds ``version-not-bumped`` (WF690).
"""

from __future__ import annotations

import hashlib

from attrs import frozen

from wflang.compiler.diff import rules as _rules  # noqa: F401  (registers every rule)
from wflang.compiler.diff.pairing import Pairing
from wflang.compiler.diff.registry import DIFF_RULES, DiffRule, Level, diff_rules_in_order
from wflang.compiler.diff.rules import VERSION_NOT_BUMPED
from wflang.compiler.registry import Finding
from wflang.dsl.diagnostics import Diagnostic, Related, Severity, sorted_diagnostics
from wflang.dsl.spec import WorkflowSpec


@frozen
class Change:
    """One finding of ``wf diff``: the rule, the diagnostic, and whether it is accepted."""

    rule: DiffRule
    diagnostic: Diagnostic
    accepted: bool = False
    key: str | None = None

    @property
    def level(self) -> Level:
        return self.rule.level

    @property
    def fingerprint(self) -> str | None:
        """``sha256("{code}:{element path}:{arguments}")[:16]``, or None for a rule
        that gives no key (the line-based fingerprint of reports is used then).

        Neither the message nor the line takes part, so rewording a message or
        moving the element keeps it."""
        if self.key is None:
            return None
        text = f"{self.diagnostic.code}:{self.key}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@frozen
class DiffResult:
    """Every change between two versions, in source order of the new version."""

    changes: tuple[Change, ...]

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return tuple(c.diagnostic for c in self.changes)

    @property
    def fingerprints(self) -> dict[Diagnostic, str]:
        """The fingerprint of every change whose rule gives a key."""
        return {c.diagnostic: fp for c in self.changes if (fp := c.fingerprint) is not None}

    def fails(self, threshold: Level) -> bool:
        """Whether a change that is not accepted is at least as bad as ``threshold``."""
        worst = {Level.BREAKING: 2, Level.WARNING: 1, Level.SAFE: 0}
        return any(not c.accepted and worst[c.level] >= worst[threshold] for c in self.changes)


def _diagnostic(
    rule: DiffRule, f: Finding, note: str = "", *, accepted: bool = False
) -> Diagnostic:
    # An accepted change fails nothing: reports show it as a note (a GitHub ::notice,
    # a SARIF note), never as an error beside an exit code of 0.
    severity = Severity.INFO if accepted else rule.level.severity
    return Diagnostic(
        rule.id, rule.code.name, severity, f.message + note, f.span, f.hint, f.related
    )


def diff_specs(old: WorkflowSpec, new: WorkflowSpec) -> DiffResult:
    """Every change from ``old`` to ``new``, by every registered diff rule."""
    pairing = Pairing(old, new)
    found: list[tuple[DiffRule, Finding]] = []
    for rule in diff_rules_in_order():
        if rule.check is not None:
            found.extend((rule, f) for f in rule.check(pairing))
    old_v, new_v = pairing.old_version, pairing.new_version
    bumped = old_v is not None and new_v is not None and new_v > old_v
    breaking = [f for r, f in found if r.level is Level.BREAKING]
    changes: list[Change] = []
    for rule, f in found:
        if bumped and rule.level is Level.BREAKING:
            note = f" (accepted: the version went from {old_v} to {new_v})"
            accepted = _diagnostic(rule, f, note, accepted=True)
            changes.append(Change(rule, accepted, accepted=True, key=f.key))
        else:
            changes.append(Change(rule, _diagnostic(rule, f), key=f.key))
    if breaking and old_v is not None and new_v is not None and new_v == old_v:
        assert new.header is not None and old.header is not None
        rule = DIFF_RULES[VERSION_NOT_BUMPED.id]
        f = Finding(
            f"{len(breaking)} breaking change{'s' if len(breaking) != 1 else ''} but the "
            f"version is still {new_v}",
            new.header.span,
            hint=f"raise it to 'version {new_v + 1}', so that running instances stay "
            "on the old version",
            related=(Related(old.header.span, "the old version"),),
            key=f"workflow:{old_v},{new_v}",
        )
        changes.append(Change(rule, _diagnostic(rule, f), key=f.key))
    order = {d: i for i, d in enumerate(sorted_diagnostics(c.diagnostic for c in changes))}
    return DiffResult(tuple(sorted(changes, key=lambda c: order[c.diagnostic])))
