"""Instances as this process last committed them (``InstanceCache``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from wflang.runtime import instance as rt
from wflang.store import rows


class InstanceCache:
    """Instances as this process last committed them, by id: decoding the stored
    document again is the costliest part of locking an instance; with its row's
    columns as committed, a step can be carried (``wflang.store.carried``)."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._decoded: dict[str, tuple[rt.Instance, rows.Locked | None]] = {}
        #: the rows of instances this process created that nobody has stepped here yet
        #: (a client's threads add to it while a worker's take from it: ``_lock``)
        self._created: dict[str, rows.Locked] = {}
        self._lock = threading.Lock()

    def get(self, instance_id: str, seq: int) -> rt.Instance | None:
        """The instance, if nobody stepped it since this process did."""
        hit = self._decoded.get(instance_id)
        return hit[0] if hit is not None and hit[0].seq == seq else None

    def carried(self, instance_id: str) -> tuple[rows.Locked, rt.Instance] | None:
        """The instance's row (its state not kept) and the instance, as this process
        last committed them, if it knows the row."""
        hit = self._decoded.get(instance_id)
        if hit is None or hit[1] is None:
            return None
        return hit[1], hit[0]

    def created(self, row: rows.Locked) -> None:
        """An instance this process has just created, its row as written. Only the last
        two are kept (a row holds the input): one is all a start carried needs, and of
        two or more the general path starts them together."""
        with self._lock:
            self._created[row.id] = row
            while len(self._created) > 2:
                del self._created[next(iter(self._created))]

    def fresh(self) -> rows.Locked | None:
        """The row of the one instance this process created and has not stepped, if
        there is just one: its start can be carried (more are for the general path)."""
        with self._lock:
            return next(iter(self._created.values())) if len(self._created) == 1 else None

    def remember(
        self, decoded: Mapping[str, rt.Instance], written: Mapping[str, rows.Locked] | None = None
    ) -> None:
        """Keep what a committed transaction stepped (not what has finished), with the
        rows it ``written``, as they are now."""
        cache = self._decoded
        with self._lock:
            for iid in decoded:
                self._created.pop(iid, None)
        for iid, inst in decoded.items():
            cache.pop(iid, None)
            if not inst.status.finished:
                cache[iid] = (inst, None if written is None else written.get(iid))
        while len(cache) > self.size:
            del cache[next(iter(cache))]  # the least recently stepped

    def forget(self, ids: Sequence[str]) -> None:
        with self._lock:
            for iid in ids:
                self._created.pop(iid, None)
        for iid in ids:
            self._decoded.pop(iid, None)
