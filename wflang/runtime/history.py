"""A bounded history: a checkpoint of the instance and the steps after it.

An instance that loops for ever (a timer every minute for a year) would otherwise
keep every step it ever took. Under a ``HistoryPolicy`` the engine, the test kit and
the durable stores keep, for each instance, a **checkpoint** (the instance exactly as
it was after some step K) and the steps after K; the steps up to K are dropped (or,
on a store, archived). Replaying the kept steps from the checkpoint gives the
instance again, exactly, as replaying the whole history from its start did.

When: each time an instance's sequence number crosses a multiple of ``every``, its
state then becomes a new checkpoint, and the checkpoint before it becomes the base
of the history: what came before that one goes. So between ``every`` and
``2 * every`` steps stay (plus the few steps one batch of events may add), a
checkpoint is written once per ``every`` steps (amortised, never per step), and the
steps that go are always ones a checkpoint already covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from attrs import frozen

from wflang.runtime import instance as rt

#: Steps between two checkpoints unless configured: at most about twice as many kept.
DEFAULT_EVERY = 1000
#: The smallest ``every`` a policy takes: below it a checkpoint (a whole instance) is
#: written more often than the steps it saves are worth.
MIN_EVERY = 10
#: The largest: a checkpoint so rare is no bound.
MAX_EVERY = 2**31


@frozen
class HistoryPolicy:
    """How much history an instance keeps (``None`` for a policy: all of it)."""

    #: steps between two checkpoints: an instance keeps between ``every`` and about
    #: ``2 * every`` steps
    every: int = DEFAULT_EVERY
    #: a store moves the steps that go to ``wf_history_archive`` instead of deleting
    #: them (the engine and the test kit always drop them)
    archive: bool = False

    def __attrs_post_init__(self) -> None:
        if not MIN_EVERY <= self.every <= MAX_EVERY:
            raise ValueError(
                f"a history checkpoint every {self.every} steps: it must be from "
                f"{MIN_EVERY} to {MAX_EVERY}"
            )


DEFAULT = HistoryPolicy()


def crosses(policy: HistoryPolicy | None, before: int, after: int) -> bool:
    """Whether steps from sequence number ``before`` to ``after`` cross a checkpoint."""
    return policy is not None and before // policy.every < after // policy.every


class CompactedError(ValueError):
    """Asked for a step the history no longer keeps (it was compacted)."""


class _Step(Protocol):
    @property
    def seq(self) -> int: ...


E = TypeVar("E", bound=_Step)


def compact(
    policy: HistoryPolicy | None,
    checkpoints: list[rt.Instance],
    history: list[E],
    before: int,
    instance: rt.Instance,
) -> None:
    """Keep an in-memory history bounded (the engine's, the test kit's): after steps
    from ``before`` to ``instance.seq``, make ``instance`` a checkpoint if they cross
    one, and drop the steps the older checkpoint covers. ``checkpoints`` (oldest first,
    at most two) and ``history`` change in place."""
    if not crosses(policy, before, instance.seq):
        return
    checkpoints.append(instance)
    del checkpoints[:-2]
    if len(checkpoints) == 2:
        base = checkpoints[0].seq
        drop = next((i for i, e in enumerate(history) if e.seq > base), len(history))
        del history[:drop]


def base(checkpoints: Sequence[rt.Instance]) -> rt.Instance | None:
    """The checkpoint a history kept by ``compact`` replays from (None: its start)."""
    return checkpoints[-2] if len(checkpoints) >= 2 else None
