"""Shared test setup: no test reads or writes the user's cache of ``wf check`` results,
and the connection pool's background threads leave the global ``random`` alone."""

from __future__ import annotations

import random

import pytest

try:
    from psycopg_pool import base as _pool_base
except ImportError:  # pragma: no cover - the postgres extra is installed in CI
    pass
else:
    # psycopg_pool jitters each new connection's lifetime with the global ``random``,
    # from its own worker threads. Hypothesis checks that the global generator's state
    # does not change while it draws an example, so a connection opened in the
    # background during a draw fails a property test on PostgreSQL at random
    # ("Do not use the `random` module inside strategies"). The pool gets a generator
    # of its own: same jitter, no shared state.
    _pool_base.random = random.Random().random  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _no_check_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """``wf check`` runs uncached unless a test gives it a folder of its own
    (``tests/test_check_cache.py``); subprocesses inherit the setting."""
    monkeypatch.setenv("WFLANG_NO_CACHE", "1")
