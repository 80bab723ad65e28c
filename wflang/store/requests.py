"""The plumbing of a ``Store`` as the bases that hold its requests see it
(``Histories``, ``Upkeep``): each request is one transaction of the store's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from wflang.store.backend import Dialect, Tx

T = TypeVar("T")


class Requests:
    """The plumbing of a ``Store`` as the bases that hold its requests see it (the
    store's own: ``_read``, ``_write``, ``now``)."""

    dialect: Dialect

    def _read(self, fn: Callable[[Tx], T]) -> T:
        raise NotImplementedError

    def _write(self, fn: Callable[[Tx], T], *, pipelined: bool = True) -> T:
        raise NotImplementedError

    def now(self, tx: Tx | None = None) -> int:
        raise NotImplementedError
