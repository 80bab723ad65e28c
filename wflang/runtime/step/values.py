"""What a step gives back, and how it fails."""

from __future__ import annotations

from attrs import frozen

from wflang.runtime import instance as rt
from wflang.runtime.changes import Change

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
