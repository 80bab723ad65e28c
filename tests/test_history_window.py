"""Bounded histories in memory (issue 18 item 4): the engine and the test kit keep a
checkpoint and the steps after it, as the stores do, and replay from it."""

from __future__ import annotations

import pytest

from wflang.runtime.history import CompactedError, HistoryPolicy
from wflang.runtime.replay import replay
from wflang.testing import WorkflowEnv

from .store.kit import data_table

TICKER = data_table("ticker")


def test_the_kit_keeps_a_window_and_replays_from_its_checkpoint() -> None:
    env = WorkflowEnv([TICKER], {}, history=HistoryPolicy(every=10))
    iid = env.start("ticker", {"id": "a"})
    kept = []
    for _ in range(300):
        env.advance(minutes=1)
        kept.append(len(env.history(iid)))
    assert max(kept) <= 2 * 10 + 1 and kept[-1] >= 10
    checkpoint = env.checkpoint(iid)
    assert checkpoint is not None
    assert env.history(iid)[0].seq == checkpoint.seq + 1
    assert env.replay(iid).reproduces(env.engine.instance(iid))
    assert env.context(iid) == {"ticks": 300}
    with pytest.raises(CompactedError, match="replays only from its checkpoint"):
        replay(TICKER, iid, env.history(iid), 0)


def test_without_a_policy_every_step_is_kept() -> None:
    env = WorkflowEnv([TICKER], {}, history=None)
    iid = env.start("ticker", {"id": "a"})
    env.advance(minutes=2500)
    assert len(env.history(iid)) == 2501 and env.checkpoint(iid) is None
    assert env.replay(iid).reproduces(env.engine.instance(iid))


def test_the_default_keeps_about_two_thousand_steps() -> None:
    env = WorkflowEnv([TICKER], {})
    iid = env.start("ticker", {"id": "a"})
    env.advance(minutes=2500)
    assert 1000 <= len(env.history(iid)) <= 2001


@pytest.mark.parametrize("every", [0, 9, -1, 2**31 + 1])
def test_a_policy_out_of_range_is_refused(every: int) -> None:
    with pytest.raises(ValueError, match=f"every {every} steps: it must be from 10 to"):
        HistoryPolicy(every=every)
