"""The heartbeats of the calls that ``Worker.run_until_idle`` runs inline.

A call runs in the worker's own thread there, so its lease is renewed from another
one. One thread per process serves every such run, of every worker: a thread started
and joined by each ``run_until_idle`` cost a sequential worker (one instance run to its
end at a time) a tenth of its CPU, and on a busy machine more of its wall time (issue
18). A run registers what renews its leases (``renewing``); the thread calls it every
``every_s`` seconds from then on, until the run ends. The thread is started when first
needed (and again in a forked child), and ends once no run has come for a minute.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator

from attrs import define

log = logging.getLogger("wflang.worker")

#: How long the thread waits for a run once none is left before it ends (a sequential
#: worker starts the next run at once; an idle process keeps no thread).
_LINGER_S = 60.0


@define
class _Run:
    renew: Callable[[], None]
    every_s: float
    due: float  # time.monotonic() of its next renewal


class Heartbeats:
    """The thread, and the runs it renews the leases of."""

    def __init__(self, name: str = "wf-heartbeat") -> None:
        self.name = name  # of its thread
        self._reset()

    def _reset(self) -> None:
        """No thread, no runs, a lock nobody holds: at first, and in a forked child (the
        parent's thread and runs are not the child's)."""
        self._cond = threading.Condition()
        self._runs: dict[int, _Run] = {}
        self._count = 0
        self._thread: threading.Thread | None = None
        #: When the thread wakes up next: a run due earlier wakes it at once (-inf: it
        #: is awake, and looks at the runs before it sleeps again).
        self._wakes_at = -math.inf

    @contextlib.contextmanager
    def renewing(self, renew: Callable[[], None], every_s: float) -> Iterator[None]:
        """Call ``renew`` every ``every_s`` seconds in the heartbeat thread while the
        block runs (never after it, unless a call had begun: ``renew`` finds nothing
        left to renew then)."""
        with self._cond:
            self._count += 1
            key = self._count
            run = _Run(renew, every_s, time.monotonic() + every_s)
            self._runs[key] = run
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            elif run.due < self._wakes_at:
                self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                del self._runs[key]

    def runs(self) -> int:
        """How many runs it renews now."""
        with self._cond:
            return len(self._runs)

    def _loop(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                due = [run for run in self._runs.values() if run.due <= now]
                if due:
                    for run in due:
                        run.due = now + run.every_s
                    self._cond.release()  # a renewal is a transaction: runs come and go
                    try:
                        for run in due:
                            _renew(run)
                    finally:
                        self._cond.acquire()
                    continue
                if not self._runs:  # nothing to renew: wait a while for a run, then end
                    self._wakes_at = math.inf
                    if not self._cond.wait(_LINGER_S) and not self._runs:
                        self._thread = None
                        return
                else:
                    self._wakes_at = min(run.due for run in self._runs.values())
                    self._cond.wait(self._wakes_at - now)
                self._wakes_at = -math.inf


def _renew(run: _Run) -> None:
    try:
        run.renew()
    except Exception:  # renewed next time; a lease lost meanwhile refuses the result
        log.exception("heartbeat failed")


#: The one of this process.
HEARTBEATS = Heartbeats()
os.register_at_fork(after_in_child=HEARTBEATS._reset)
