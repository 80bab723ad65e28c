"""Fixtures of the console's HTTP tests (issue 19): a migrated store on each backend
(SQLite, PostgreSQL) on a virtual clock, and the console over it through Starlette's
TestClient, with an operator token configured (``TOKEN``) or none."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from wflang.console.app import create_app
from wflang.console.security import Guard
from wflang.store import Store

from ..store.conftest import clock, opener, store, url  # the store suite's fixtures
from .kit import TOKEN

__all__ = ["clock", "opener", "store", "url"]


@pytest.fixture
def web(store: Store) -> Iterator[TestClient]:
    """The console with an operator token configured; nobody signed in yet."""
    with TestClient(create_app(store, Guard.new(TOKEN)), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def read_only(store: Store) -> Iterator[TestClient]:
    """The console with no token configured: nobody can act."""
    with TestClient(create_app(store, Guard.new(None)), base_url="http://127.0.0.1") as client:
        yield client
