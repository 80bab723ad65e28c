"""Named crash points, for the crash tests: ``WFLANG_FAULT=point[@service][:n]``.

A worker process started with this variable kills itself with SIGKILL the n-th
time (default 1) it passes ``point`` (for a handler point, only for calls to
``service``). Nothing happens when the variable is unset, which is always the
case outside the crash tests. The points:

* ``claim.before-commit``: a transaction that claims tasks, before its commit;
* ``handler.before``, ``handler.after``: around a handler's call (its effect);
* ``transition.before-commit``: a transaction that steps instances, before commit;
* ``transition.after-commit``: just after such a commit, before anything else.
"""

from __future__ import annotations

import functools
import os
import signal
import threading

_lock = threading.Lock()
_hits: dict[str, int] = {}


@functools.cache
def _spec() -> tuple[str, str | None, int] | None:
    """Read once per process: the variable is set when the worker process starts."""
    raw = os.environ.get("WFLANG_FAULT")
    if not raw:
        return None
    point, _, count = raw.partition(":")
    point, _, service = point.partition("@")
    return point, service or None, int(count or "1")


def hit(point: str, service: str | None = None) -> None:
    """Pass a crash point: die here if this run was told to."""
    spec = _spec()
    if spec is None or spec[0] != point or (spec[1] is not None and spec[1] != service):
        return
    with _lock:
        _hits[point] = _hits.get(point, 0) + 1
        if _hits[point] == spec[2]:
            os.kill(os.getpid(), signal.SIGKILL)
