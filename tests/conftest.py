"""Shared test setup: no test reads or writes the user's cache of ``wf check`` results."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_check_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """``wf check`` runs uncached unless a test gives it a folder of its own
    (``tests/test_check_cache.py``); subprocesses inherit the setting."""
    monkeypatch.setenv("WFLANG_NO_CACHE", "1")
