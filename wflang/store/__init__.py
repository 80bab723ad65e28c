"""Durable stores: where instances, histories, timers, inboxes and tasks live.

``open_store(url)`` gives a ``Store`` on SQLite (``sqlite:///path.db``, the
default ``sqlite:///.wflang/state.db``) or PostgreSQL (``postgresql://...``).
"""

from __future__ import annotations

import os

from wflang.store.backend import redact_url
from wflang.store.records import StoreError
from wflang.store.sql import Clock, Store

DEFAULT_URL = "sqlite:///.wflang/state.db"


def default_url() -> str:
    """``$WFLANG_STORE`` if set, else the embedded SQLite file of the current folder."""
    return os.environ.get("WFLANG_STORE") or DEFAULT_URL


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///`` URL; None for any other store."""
    return url.removeprefix(_SQLITE) if url.startswith(_SQLITE) else None


_SQLITE = "sqlite:///"


def open_store(
    url: str | None = None,
    *,
    clock: Clock | None = None,
    pool: int = 8,
    timeout: float = 30.0,
    create: bool = False,
) -> Store:
    """Open the store at ``url``; the schema is not touched (see ``Store.migrate``).
    ``timeout``: seconds a request waits for a PostgreSQL connection before failing.

    A SQLite file that is not there is made when first used, in a folder that must
    exist: a missing folder is a ``StoreError`` (most often a typo in the path) unless
    ``create`` makes it (and its parents)."""
    url = url or default_url()
    path = sqlite_path(url)
    if path is not None:
        from wflang.store.sqlite import SqliteBackend

        if not path:
            raise StoreError(f"no file in {url!r}: write sqlite:///path/state.db")
        return Store(SqliteBackend(path, create=create), clock)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from wflang.store.postgres import PostgresBackend
        except ImportError as err:  # pragma: no cover - the extra is installed in CI
            raise StoreError("PostgreSQL needs psycopg 3: pip install 'wflang[postgres]'") from err
        return Store(PostgresBackend(url, max_size=pool, timeout=timeout), clock)
    raise StoreError(
        f"unknown store URL {redact_url(url)!r}: use sqlite:///path/state.db or postgresql://user@host/db"
    )


__all__ = [
    "DEFAULT_URL",
    "Clock",
    "Store",
    "StoreError",
    "default_url",
    "open_store",
    "sqlite_path",
]
