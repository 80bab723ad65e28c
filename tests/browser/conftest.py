"""Fixtures of the browser tests: one headless Chromium per session, a folder of the
session's screenshots (docs/console/ gets the docs' ones on request), and the console
served in-process over a store seeded through the runtime (``seed.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from wflang.store import Store

from ..store.conftest import clock, opener, store, url  # the store suite's fixtures
from ..store.kit import VirtualClock
from .harness import Shots, chromium, serving
from .pages import Console
from .seed import seed

__all__ = ["clock", "opener", "store", "url"]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Shots:
    return Shots(tmp_path_factory.mktemp("screenshots"))


@pytest.fixture
def console(store: Store, clock: VirtualClock, browser: Any) -> Iterator[Console]:
    """The console (an operator token configured) over the seeded store, served on a
    free port; the browser starts with no cookies of an earlier test's console."""
    from wflang.console.app import create_app
    from wflang.console.security import Guard

    seeded = seed(store, clock)
    with serving(create_app(store, Guard.new(Console.TOKEN))) as base:
        browser.get(base + "/instances")
        browser.delete_all_cookies()
        yield Console(base, browser, seeded)
