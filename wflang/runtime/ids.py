"""Ids the runtime derives: the same functions in memory and in the stores (the keys
are in ``wflang.runtime.keys``)."""

from __future__ import annotations

import hashlib
import re
import zlib

#: The last segment of a child's id (see ``child_id``).
_CHILD_SEGMENT = re.compile(r"/[0-9a-f]{16}\Z")


def child_id(parent_id: str, key: str) -> str:
    """The id of the child instance a call starts: ``ROOT/HASH``.

    ROOT is the id of the top-level instance the call descends from (a child's own
    segment is taken off its id), and HASH comes from the call's idempotency key, which
    names the calling instance, the step, its visit and attempt. So the id is the same
    whenever the call is replayed, different for every call, and as short at any depth
    as at the first: the root's id and 17 characters. (It was the parent's id and the
    key, which starts with the parent's id again: the id doubled at every level.)
    """
    root = _CHILD_SEGMENT.sub("", parent_id, count=1)
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{root}/{digest}"


def instance_seed(instance_id: str) -> int:
    """The seed of an instance's randomness (a backoff's jitter) in a store, and of a
    child instance everywhere: stable per id, the same on every worker and replay."""
    return zlib.crc32(instance_id.encode("utf-8", "surrogatepass"))
