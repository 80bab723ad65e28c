"""The connection pool's background threads never move the global ``random`` state
(tests/conftest.py): a property test on PostgreSQL would otherwise fail whenever the
pool opened a connection while Hypothesis drew an example."""

from __future__ import annotations

import random

import pytest

pool_base = pytest.importorskip("psycopg_pool.base")


def test_the_pools_jitter_leaves_the_global_random_state_alone() -> None:
    before = random.getstate()
    jittered = [pool_base.BasePool._jitter(3600.0, -0.05, 0.0) for _ in range(5)]
    assert random.getstate() == before
    # still a jitter: within the pool's range, not a constant
    assert all(3600.0 * 0.95 <= j <= 3600.0 for j in jittered)
    assert len(set(jittered)) > 1
