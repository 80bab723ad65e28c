"""Replay: re-derive an instance from its history, and find where a new table diverges.

A history is the list of committed steps (event, time, decisions, commands).
``replay`` runs the same events through the step function of a table and
compares what it decides with what was recorded; with the table the history was
made on, it reproduces the instance exactly. With a changed table it reports the
first step whose decisions or commands differ: the check to run a new version
against recorded production histories before deploying it.

Everything is compared type-strictly (``values.identical``): to Python ``True == 1``
and ``Decimal("1.0") == 1``, but a step that gives ``1`` where ``true`` was recorded
decides differently.

A compacted history (``runtime.history``) replays from its checkpoint: the instance
as it was after the step before the first one kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from wflang.runtime import instance as rt
from wflang.runtime import step as st
from wflang.runtime.engine import HistoryEntry
from wflang.runtime.history import CompactedError
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.table import Table
from wflang.runtime.values import identical


@frozen
class Divergence:
    """The first recorded step the table decides differently."""

    seq: int
    event: str
    recorded: tuple[str, ...]
    replayed: tuple[str, ...]

    def __str__(self) -> str:
        return (
            f"step {self.seq} ({self.event}) diverges:\n"
            f"  recorded: {'; '.join(self.recorded)}\n"
            f"  replayed: {'; '.join(self.replayed)}"
        )


@frozen
class Replayed:
    instance: rt.Instance | None
    divergence: Divergence | None

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def reproduces(self, instance: rt.Instance) -> bool:
        """Whether the replay went through and gave exactly ``instance`` (a stored one):
        the same values of the same types, not just ``==``."""
        return self.ok and identical(self.instance, instance)


def replay(
    table: Table,
    instance_id: str,
    history: Sequence[HistoryEntry],
    seed: int = 0,
    limits: Limits = DEFAULT_LIMITS,
    checkpoint: rt.Instance | None = None,
) -> Replayed:
    """Run a history's events through ``table`` (under the limits it ran with), from its
    start or, for a compacted one, from its ``checkpoint``; stop at the first divergence.
    A history that does not begin there is refused (``CompactedError``)."""
    _check_start(history, checkpoint)
    instance = checkpoint
    for entry in history:
        if entry.event is None:
            result = st.start(table, instance_id, dict(entry.input or {}), entry.at, seed, limits)
            label = "start"
        else:
            assert instance is not None, "a history starts with its start"
            result = st.step(table, instance, entry.event, entry.at, limits)
            label = type(entry.event).__name__
        same = tuple(result.decisions) == tuple(entry.decisions) and identical(
            tuple(result.commands), tuple(entry.commands)
        )
        if not same:
            got = _shape(result.decisions, result.commands)
            want = _shape(entry.decisions, entry.commands)
            return Replayed(instance, Divergence(entry.seq, label, want, got))
        instance = result.instance
    return Replayed(instance, None)


def _check_start(history: Sequence[HistoryEntry], checkpoint: rt.Instance | None) -> None:
    first = history[0] if history else None
    if first is None:
        return
    if checkpoint is None and first.event is not None:
        raise CompactedError(
            f"the history begins at step {first.seq}: the steps before it were compacted, "
            "so it replays only from its checkpoint (`compacted` in `wf history --json`)"
        )
    if checkpoint is not None and first.seq != checkpoint.seq + 1:
        raise CompactedError(
            f"the history begins at step {first.seq} but its checkpoint is at step "
            f"{checkpoint.seq}: it replays only from the checkpoint right before it"
        )


def _shape(decisions: tuple[str, ...], commands: tuple[rt.Command, ...]) -> tuple[str, ...]:
    return (*decisions, *(repr(c) for c in commands))
