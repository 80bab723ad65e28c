"""Fixtures of the browser tests: one headless Chromium per session, and a folder of
the session's screenshots (docs/console/ gets the docs' ones on request)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..store.conftest import clock, opener, store, url  # the store suite's fixtures
from .harness import Shots, chromium

__all__ = ["clock", "opener", "store", "url"]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Shots:
    return Shots(tmp_path_factory.mktemp("screenshots"))
