"""Fixtures of the store test suite: every test gets its own store on each backend.

SQLite: a fresh file in ``tmp_path``. PostgreSQL (when ``WFLANG_TEST_PG_DSN`` is set,
skipped otherwise): a fresh schema ``wf_t_<random>`` selected through
``options=-csearch_path=...`` in the URL and dropped (CASCADE) after the test. Time is
virtual: stores are opened with ``clock=`` a mutable ``VirtualClock``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from wflang.store import Store, open_store

from .kit import PG_DSN, Factory, VirtualClock, with_search_path


def _pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty (unmigrated) store URL on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.db'}"
        return
    if not PG_DSN:
        pytest.skip("WFLANG_TEST_PG_DSN is not set")
    schema = f"wf_t_{uuid.uuid4().hex[:12]}"
    _pg_admin(f"CREATE SCHEMA {schema}")
    try:
        yield with_search_path(PG_DSN, schema)
    finally:
        _pg_admin(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def opener(url: str, clock: VirtualClock) -> Iterator[Factory]:
    """Open (unmigrated) stores on the test's URL; all are closed after the test."""
    opened: list[Store] = []

    def open_(*, virtual: bool = True) -> Store:
        store = open_store(url, clock=clock if virtual else None, pool=4)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(opener: Factory) -> Store:
    """A migrated store on the virtual clock."""
    s: Store = opener()
    s.migrate()
    return s
