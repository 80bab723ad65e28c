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


def test_a_year_of_minute_timers_in_memory_stays_under_the_bound() -> None:
    """As on the stores (``tests/store/test_bounded_history.py``): the last eight windows
    of a year, from the instance as the kit leaves it after the rest (``year_scale``)."""
    from wflang.runtime import codec

    from .store.test_bounded_history import ROW, STATE, YEAR, year_scale

    every = 50
    env = WorkflowEnv([TICKER], {}, history=HistoryPolicy(every=every), now=0)
    iid = env.start("ticker", {"id": "a"})
    env.advance(minutes=1)
    first = env.engine.instance(iid)
    fired = YEAR - 8 * every
    env.engine.now = (fired - 1) * 60_000
    record = env.engine.records[iid]
    record.instance = year_scale(first, fired, first, env.engine.now + 60_000)
    (timer,) = record.instance.timers
    env.engine.timers = {timer.id: (timer.due, iid)}
    for _ in range(8 * every):
        env.advance(minutes=1)
        kept = sum(len(codec.dumps(codec.unstructure_entry(e))) for e in env.history(iid))
        points = sum(len(codec.dump_instance(c)) for c in record.checkpoints)
        assert len(env.history(iid)) <= 2 * every + 1 and len(record.checkpoints) <= 2
        assert kept + points <= (2 * every + 1) * ROW + 2 * STATE
    assert env.context(iid) == {"ticks": YEAR}
    assert env.replay(iid).reproduces(env.engine.instance(iid))
