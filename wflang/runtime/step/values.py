"""What a step gives back, and how it fails."""

from __future__ import annotations

from attrs import frozen

from wflang.runtime import instance as rt
from wflang.runtime.changes import Change, context_changes

#: Transitions one step may take before it stops a loop that never waits.
STEP_BUDGET = 100_000
#: The last instant a timer may be due at (9999-12-31T23:59:59.999Z), in epoch ms.
LAST_INSTANT = 253_402_300_799_999


class WorkflowError(Exception):
    """A failure of the workflow itself (not of a handler): an expression, a budget."""


@frozen(slots=False)
class Step:
    """The outcome of one step: the new instance, what to do, and why (for the history),
    and what it changed in the context (``changes.context_changes``, for the history)."""

    instance: rt.Instance
    commands: tuple[rt.Command, ...]
    decisions: tuple[str, ...]
    changes: tuple[Change, ...] = ()

    def __getattr__(self, name: str) -> tuple[Change, ...]:
        """``changes`` of a step made by ``build.stepped``, found when first asked: the
        engine, the test kit and the stores ask (they record it), a replay or a bare
        ``step`` does not, and the comparison cost a fan-out's step 14% of its time
        (bench/RESULTS.md, 2026-12-02). Such a step keeps the old context instead."""
        before = self.__dict__.pop(BEFORE, None) if name == "changes" else None
        if before is None:
            raise AttributeError(name)
        found = context_changes(before, self.instance.context)
        self.__dict__["changes"] = found  # once: frozen against users, not against this
        return found


#: Where a step made by ``build.stepped`` keeps the old context until ``changes`` is asked.
BEFORE = "_context_before"
