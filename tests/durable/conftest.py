"""Fixtures of the durable-execution reliability tests (issue 5).

Every test gets a store of its own: a fresh SQLite file in ``tmp_path``, or on
PostgreSQL (when ``WFLANG_TEST_PG_DSN`` is set; skipped otherwise) a uniquely
named schema selected through ``options=-csearch_path=...`` in the URL, dropped
after the test.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from wflang.store import Clock, Store, open_store

from .helpers import CRASH_TOTALS, PG_DSN, SUMMARY, VirtualClock, with_search_path


def _pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(sql)


def _store_url(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.db'}"
        return
    if not PG_DSN:
        pytest.skip("WFLANG_TEST_PG_DSN is not set")
    schema = f"wf_test_{uuid.uuid4().hex[:12]}"
    _pg_admin(f"CREATE SCHEMA {schema}")
    try:
        yield with_search_path(PG_DSN, schema)
    finally:
        _pg_admin(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty store URL on each backend (PostgreSQL skips without a DSN)."""
    yield from _store_url(str(request.param), tmp_path)


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    """A fresh, empty PostgreSQL schema (skips without a DSN)."""
    yield from _store_url("postgresql", tmp_path)


@pytest.fixture
def make_store() -> Iterator[Callable[..., Store]]:
    """Open and migrate stores; every store opened here is closed after the test."""
    opened: list[Store] = []

    def make(url: str, clock: Clock | None = None) -> Store:
        store = open_store(url, clock=clock)
        store.migrate()
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SUMMARY:
        terminalreporter.section("durable reliability figures")
        for line in SUMMARY:
            terminalreporter.write_line(line)
        for backend, totals in sorted(CRASH_TOTALS.items()):
            terminalreporter.write_line(
                f"crash totals {backend}: " + ", ".join(f"{k} {n}" for k, n in totals.items())
            )
