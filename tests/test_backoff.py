"""Retry delays (``step.backoff_ms``): exponential, spread by seeded jitter, capped."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wflang.runtime.step import backoff_ms
from wflang.runtime.table import Retry


@settings(max_examples=300, deadline=None)
@given(
    initial=st.integers(0, 10**7),
    cap=st.integers(0, 10**7),
    factor=st.decimals(1, 10, places=2),
    jitter=st.decimals(0, 1, places=2),
    attempt=st.integers(1, 60),
    seed=st.integers(0, 2**63),
    token=st.integers(0, 10**6),
)
def test_the_maximum_delay_holds_after_jitter(
    initial: int, cap: int, factor: object, jitter: object, attempt: int, seed: int, token: int
) -> None:
    retry = Retry(10, initial, max(initial, cap), str(factor), str(jitter))
    delay = backoff_ms(retry, attempt, seed, token)
    assert 0 <= delay <= max(initial, cap)


def test_jitter_spreads_a_delay_at_the_cap_below_it() -> None:
    retry = Retry(10, 1_000, 10_000, "10", "0.5")
    delays = {backoff_ms(retry, 3, seed, 1) for seed in range(200)}
    assert max(delays) == 10_000  # half the draws land above the cap: they wait the cap
    assert 5_000 <= min(delays) < 6_000
    assert len(delays) > 50
