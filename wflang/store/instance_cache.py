"""Instances as this process last committed them (``InstanceCache``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wflang.runtime import instance as rt


class InstanceCache:
    """Instances as this process last committed them, by id: decoding the stored
    document again is the costliest part of locking an instance."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._decoded: dict[str, rt.Instance] = {}

    def get(self, instance_id: str, seq: int) -> rt.Instance | None:
        """The instance, if nobody stepped it since this process did."""
        hit = self._decoded.get(instance_id)
        return hit if hit is not None and hit.seq == seq else None

    def remember(self, decoded: Mapping[str, rt.Instance]) -> None:
        """Keep what a committed transaction stepped (not what has finished)."""
        cache = self._decoded
        for iid, inst in decoded.items():
            cache.pop(iid, None)
            if not inst.status.finished:
                cache[iid] = inst
        while len(cache) > self.size:
            del cache[next(iter(cache))]  # the least recently stepped

    def forget(self, ids: Sequence[str]) -> None:
        for iid in ids:
            self._decoded.pop(iid, None)
