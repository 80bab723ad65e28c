"""A worker: steps ready instances and runs their service calls, durably.

One thread owns every write: it calls ``Store.advance`` in a loop, which in
one transaction commits the handler results that came back (fenced by their
lease epochs), steps every instance they or a signal, timer or child woke, and
claims due tasks for the free slots of a bounded thread pool. Handlers run in
that pool, outside any transaction, and hand their result back through a
queue; the loop renews the leases of running calls by heartbeat. Backpressure
is the pool's size: a worker never claims more calls than it can run.

SIGTERM (``stop``) drains: no new claims, running calls finish and their
results commit, then the worker exits. LISTEN/NOTIFY on PostgreSQL, and on SQLite
the commits of its own process, wake an idle worker early; polling every ``poll_ms``
is what it relies on.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import gc
import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

from attrs import define, field

from wflang import faults
from wflang.durable.client import check_id, start_input
from wflang.durable.heartbeats import HEARTBEATS
from wflang.handlers.load import load
from wflang.handlers.registry import Registry
from wflang.handlers.verify import verify
from wflang.runtime import instance as rt
from wflang.runtime.failures import WORKER_ERROR
from wflang.runtime.history import DEFAULT as DEFAULT_HISTORY
from wflang.runtime.history import HistoryPolicy
from wflang.runtime.ir import Value
from wflang.runtime.lifecycle import StatusHook, notify
from wflang.runtime.limits import DEFAULT as DEFAULT_LIMITS
from wflang.runtime.limits import Limits
from wflang.runtime.outcome import Handler, TaskCall, call_handler, pending, returned
from wflang.store import inbox
from wflang.store.records import Advanced, ClaimedTask, Creation, Deployed, TaskResult
from wflang.store.sql import Store
from wflang.store.status import StatusRows

log = logging.getLogger("wflang.worker")

#: The bounds of a worker's settings (inclusive), checked by ``Worker`` and ``wf worker``.
#: The lease: the heartbeat renews it every third of it, and a renewal is a transaction,
#: which a loaded machine or database cannot promise in much less than a tenth of a
#: second; a lease that expires before its renewal lands makes every call run again and
#: again (a livelock). At most a day: the calls of a worker that died wait that long.
#: The poll: at most an hour (a NOTIFY may be lost; polling is what is relied on).
SETTINGS: dict[str, tuple[int, int]] = {
    "concurrency": (1, 10_000),
    "lease_ms": (100, 86_400_000),
    "batch": (1, 10_000),
    "poll_ms": (1, 3_600_000),
}


def settings_problems(**settings: object) -> list[str]:
    """What is wrong with worker settings (named as in ``SETTINGS``), in words."""
    problems = []
    for name, value in settings.items():
        low, high = SETTINGS[name]
        if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
            problems.append(
                f"{name} must be a whole number from {low:,} to {high:,}, not {value!r}"
            )
    return problems


#: The most announced instances a worker keeps to read first (``Worker._hinted``).
_HINTS_KEPT = 1024


@define
class Counters:
    """What a worker did, for metrics and for the tests."""

    transitions: int = 0
    results: int = 0
    stale: int = 0
    claimed: int = 0
    finished: int = 0
    outcomes: dict[tuple[str, str], int] = field(factory=dict)  # (service, ok|error) -> n
    lost_leases: int = 0
    listen_reconnects: int = 0  # notification connections opened again after a loss


@functools.cache
def _freeze_startup_objects() -> None:
    """Move what exists when the first worker starts (modules, compiled tables, the
    codec's converters) out of the collector's reach, once per process.

    A worker allocates many short-lived objects per step, and every full collection
    would walk those long-lived ones again: on a chain of steps this is 10-20% of the
    worker's time.
    """
    gc.freeze()


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def run_handler(fn: Handler, task: ClaimedTask) -> TaskResult:
    """Call a handler for a claimed task; its outcome (``wflang.runtime.outcome``) as
    a result to commit. The store checks it against the declared result when it
    commits it (it has the instance's table)."""
    call = TaskCall(task.instance_id, task.node, task.attempt, task.key)
    faults.hit("handler.before", task.service)
    outcome = call_handler(fn, task.args, call, task.service)
    if outcome is None:  # pending() is the test kit's: here it is no object
        outcome = returned(task.key, task.service, pending())
    faults.hit("handler.after", task.service)
    return TaskResult(task.key, task.epoch, outcome, task.instance_id)


class Worker:
    """Runs workflows from a store with Python handlers registered by service name."""

    def __init__(
        self,
        store: Store,
        handlers: Mapping[str, Handler] | str | Path | ModuleType,
        *,
        concurrency: int = 4,
        lease_ms: int = 30_000,
        batch: int = 32,
        poll_ms: int = 500,
        group_commit: bool = True,
        at_most_once: frozenset[str] = frozenset(),
        worker_id: str | None = None,
        on_advance: Callable[[Advanced], None] | None = None,
        limits: Limits = DEFAULT_LIMITS,
        allow_missing_handlers: bool = False,
        allow_unused_handlers: bool = False,
        lifecycle_outbox: StatusRows = StatusRows.INSTANCES,
        history: HistoryPolicy | None = DEFAULT_HISTORY,
    ) -> None:
        """``handlers``: a ``Registry``, a module of ``@handler`` functions (by name, by
        file, or the module), or a plain mapping of functions by service (called as they
        are): checked against every deployed workflow before anything is claimed
        (``wflang.handlers.verify``: ``HandlersRefused``), a mapping as a registry of its
        functions is, with the file and line of each. ``lifecycle_outbox``: which status
        changes are also outbox rows (``StatusRows``: the instances' by default, ``all``
        for the tasks' too); the ``on_status`` hooks get every one either way.
        ``history``: how much history each instance it steps keeps
        (``wflang.store.compaction``; None: all)."""
        problems = settings_problems(
            concurrency=concurrency, lease_ms=lease_ms, batch=batch, poll_ms=poll_ms
        )
        if problems:
            raise ValueError("; ".join(problems))
        if isinstance(handlers, str | Path | ModuleType):
            handlers = load([handlers])
        verify(
            store.tables(),
            Registry.of(handlers),
            allow_missing=allow_missing_handlers,
            allow_unused=allow_unused_handlers,
        )
        if isinstance(handlers, Registry):
            at_most_once = at_most_once | handlers.at_most_once()
        self.store = store
        self.handlers = dict(handlers)
        self.concurrency = concurrency
        self.lease_ms = lease_ms
        self.batch = batch
        self.poll_ms = poll_ms
        self.group_commit = group_commit
        self.at_most_once = at_most_once
        self.id = worker_id or new_worker_id()
        self.counters = Counters()
        self.on_advance = on_advance
        self.status_hooks: list[StatusHook] = []
        self.limits = limits  # of the values the instances compute
        self.lifecycle_outbox = StatusRows(lifecycle_outbox)
        self.history = history
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        self._results: queue.SimpleQueue[TaskResult] = queue.SimpleQueue()
        #: Instances announced with work by a delivery (LISTEN/NOTIFY's payload), with
        #: the inbox row announced if the payload carries it (``inbox.announced``): their
        #: inboxes are read with the next advance's first reads (or, a lone row, taken
        #: as announced: ``wflang.store.carried``). The oldest are let go when many come
        #: at once: the advance finds those by itself, one read later.
        self._hinted: collections.deque[tuple[str, inbox.Announced | None]] = collections.deque(
            maxlen=_HINTS_KEPT
        )
        self._running: dict[str, tuple[int, Future[None]]] = {}
        self._services: dict[str, str] = {}  # task key -> service, for the outcome counters
        _freeze_startup_objects()

    # -- one transaction -----------------------------------------------------------

    def _advance(
        self,
        results: list[TaskResult],
        claim: int,
        instances: int,
        hinted: Sequence[str] = (),
        delivered: Sequence[inbox.Announced] = (),
        create: Creation | None = None,
    ) -> Advanced:
        adv = self.store.advance(
            self.id,
            results=results,
            instances=instances,
            claim=claim,
            services=self.handlers,
            at_most_once=self.at_most_once,
            lease_ms=self.lease_ms,
            limits=self.limits,
            status_rows=self.lifecycle_outbox,
            history=self.history,
            hinted=hinted,
            delivered=delivered,
            create=create,
        )
        if adv.transitions:
            faults.hit("transition.after-commit")
        c = self.counters
        c.transitions += adv.transitions
        c.results += adv.results
        c.stale += adv.stale
        c.claimed += len(adv.claimed)
        c.finished += len(adv.finished)
        for r in results:
            outcome = "ok" if isinstance(r.event, rt.TaskCompleted) else "error"
            service = self._services.pop(r.key, "")
            c.outcomes[service, outcome] = c.outcomes.get((service, outcome), 0) + 1
        for task in adv.claimed:
            self._services[task.key] = task.service
        if adv.transitions or adv.claimed or adv.stale:
            log.debug(
                "advanced",
                extra={
                    "transitions": adv.transitions,
                    "results": adv.results,
                    "stale": adv.stale,
                    "claimed": len(adv.claimed),
                    "finished": len(adv.finished),
                },
            )
        if self.status_hooks and adv.statuses:  # committed: each hook, never in the way
            notify(self.status_hooks, adv.statuses)
        if self.on_advance is not None:
            self.on_advance(adv)
        return adv

    # -- synchronous: tests, the demo, `wf worker --once` --------------------------------

    def on_status(self, hook: StatusHook) -> StatusHook:
        """Call ``hook`` with every status change of an instance and of its tasks that
        this worker's transactions commit (``lifecycle.StatusEvent``; each is also an
        outbox row), after the commit; a hook that raises is logged. Returns the hook."""
        self.status_hooks.append(hook)
        return hook

    def run_until_idle(self, max_rounds: int = 1_000_000) -> int:
        """Do everything that is due now, handlers inline, until nothing is left.

        The store's clock decides what is due (a virtual clock in tests); the
        number of transitions committed is returned. The heartbeat thread of the
        process (``heartbeats``) renews the lease of the call running inline, so a
        call longer than its lease keeps it.
        """
        return self._inline(max_rounds, None)

    def run_new(
        self,
        deployed: Deployed,
        input: Mapping[str, Value],
        instance_id: str,
        *,
        actor: str | None = None,
        reason: str | None = None,
        max_rounds: int = 1_000_000,
    ) -> int:
        """Start an instance and ``run_until_idle``: the embedded way to start a
        workflow and run it here. The same as ``Client.start`` (its id and input checked
        and fitted first, ``InvalidValue``; an id that exists with this workflow and
        input is not created again, with another it is refused: ``IllegalAction``) then
        ``run_until_idle``, with a commit fewer: where its start can be carried
        (``wflang.store.carried``) the instance is created in the transaction that
        starts it, at that step's time (on PostgreSQL the database's clock as this
        worker last read it, as a carried step's time is)."""
        check_id(instance_id)
        fitted = start_input(deployed, input)
        creation = Creation(deployed, fitted, instance_id, actor, reason)
        return self._inline(max_rounds, creation)

    def _inline(self, max_rounds: int, create: Creation | None) -> int:
        total = 0
        pending: list[TaskResult] = []
        current: list[tuple[str, int]] = []  # the lease of the call running, if any
        renew = functools.partial(self._renew_inline, current)
        with HEARTBEATS.renewing(renew, self.lease_ms / 3000):
            for _ in range(max_rounds):
                if self.group_commit or not pending:
                    batch, pending = pending, []
                else:
                    batch, pending = pending[:1], pending[1:]
                adv = self._advance(batch, self.concurrency, self.batch, create=create)
                create = None
                total += adv.transitions
                for task in adv.claimed:
                    current[:] = [(task.key, task.epoch)]
                    pending.append(run_handler(self.handlers[task.service], task))
                    current.clear()
                # Nothing left: it did nothing, or took all there was (``Advanced.more``).
                done = not adv.transitions or not adv.more
                if done and not pending and not adv.claimed and not adv.stale:
                    return total
        raise RuntimeError(f"still busy after {max_rounds} rounds")

    def _renew_inline(self, current: list[tuple[str, int]]) -> None:
        """Renew the lease of the call ``run_until_idle`` runs (in the heartbeat thread)."""
        leases = list(current)
        if leases and self.store.heartbeat(self.id, leases, self.lease_ms):
            self.counters.lost_leases += 1

    # -- the process loop --------------------------------------------------------------

    def stop(self) -> None:
        """Drain: claim nothing new, let running calls finish and commit, then return."""
        self.stop_event.set()
        self.wake.set()

    def run(self) -> None:
        """Work until ``stop``; returns once drained."""
        log.info("worker started", extra={"worker": self.id, "concurrency": self.concurrency})
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="wf-handler")
        next_beat = time.monotonic() + self.lease_ms / 3000
        kept: list[TaskResult] = []  # results whose transaction failed: committed next time
        failures = 0
        try:
            while True:
                stopping = self.stop_event.is_set()
                if stopping and not self._running and not kept:
                    break
                results = kept + self._take_results()
                free = 0 if stopping else self.concurrency - len(self._running)
                hinted, delivered = self._take_hints()
                try:
                    adv = self._advance(
                        results, free, 0 if stopping else self.batch, hinted, delivered
                    )
                except Exception:  # the database is down or refused: keep going
                    failures += 1
                    pause = min(0.05 * 2**failures, 10.0)
                    log.exception(
                        "store unavailable; retrying",
                        extra={"retry_in_s": pause, "results_kept": len(results)},
                    )
                    kept = results
                    threading.Event().wait(pause)  # back off (not woken by new results)
                    continue
                kept, failures = [], 0
                for task in adv.claimed:
                    self._running[task.key] = (task.epoch, pool.submit(self._call, task))
                if time.monotonic() >= next_beat:
                    self._heartbeat()
                    next_beat = time.monotonic() + self.lease_ms / 3000
                # An advance that took all the work there was (``Advanced.more``) is not
                # followed by another at once: the worker waits for a result, a
                # notification or its poll. The handler it has just started then runs
                # at once, not after the next advance's CPU (they share the GIL).
                busy = adv.more and (adv.transitions or adv.claimed or results)
                if not busy:
                    wait = self.poll_ms / 1000
                    if self._running:  # a long poll must not hold up the heartbeat
                        wait = min(wait, max(0.0, next_beat - time.monotonic()))
                    self.wake.wait(wait)
                    self.wake.clear()
        finally:
            pool.shutdown(wait=True)
            log.info("worker stopped", extra={"worker": self.id, **self._summary()})

    @contextlib.contextmanager
    def woken_by_notify(self) -> Iterator[None]:
        """While the block runs, wake the loop when the store announces new work
        (PostgreSQL LISTEN/NOTIFY; on SQLite, the commits of this process). A hint
        beside polling: if the listening connection drops (a restart,
        ``pg_terminate_backend``), it is opened again, with a growing pause while that
        fails; meanwhile, and for what was announced while it was down (or, on SQLite,
        by another process), the worker finds everything within ``poll_ms``."""
        woken = getattr(self.store.backend, "woken", None)
        if woken is not None:  # SQLite: the commits of this process wake it
            with woken(self.wake):
                yield
            return
        listen = getattr(self.store.backend, "listen", None)
        if listen is None:
            yield
            return
        name = f"wflang listen {self.id}"  # what pg_stat_activity shows for it
        first = listen(name)
        stopped = threading.Event()

        def loop() -> None:
            conn, pause = first, 0.0
            while not stopped.is_set():
                try:
                    if conn is None:
                        conn = listen(name)
                        self.counters.listen_reconnects += 1
                        log.info("notifications restored", extra={"worker": self.id})
                        pause = 0.0
                    for note in conn.notifies(timeout=0.5):
                        if note.payload:  # an instance, with its inbox row if announced
                            self._hinted.append(inbox.announced(note.payload))
                        self.wake.set()
                except Exception:  # the connection is gone: open another one
                    if pause == 0.0:
                        log.warning("notifications lost; listening again", exc_info=True)
                    with contextlib.suppress(Exception):
                        if conn is not None:
                            conn.close()
                    conn, pause = None, min(max(pause * 2, 0.1), 5.0)
                    stopped.wait(pause)  # back off while the database is away
            if conn is not None:
                conn.close()

        thread = threading.Thread(target=loop, name="wf-listen", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stopped.set()
            thread.join(timeout=5)

    def _call(self, task: ClaimedTask) -> None:
        started = time.monotonic()
        try:
            result = run_handler(self.handlers[task.service], task)
        except BaseException:  # never lose the slot, whatever happens
            log.exception("handler crashed the worker thread", extra={"task": task.key})
            result = TaskResult(task.key, task.epoch, rt.TaskFailed(task.key, WORKER_ERROR))
        log.debug(
            "task ran",
            extra={
                "task": task.key,
                "service": task.service,
                "ms": round((time.monotonic() - started) * 1000, 2),
            },
        )
        self._results.put(result)
        self.wake.set()

    def _take_results(self) -> list[TaskResult]:
        results: list[TaskResult] = []
        limit = None if self.group_commit else 1
        while limit is None or len(results) < limit:
            try:
                r = self._results.get_nowait()
            except queue.Empty:
                break
            results.append(r)
        for r in results:
            self._running.pop(r.key, None)
        return results

    def _take_hints(self) -> tuple[list[str], list[inbox.Announced]]:
        """The instances announced (up to a batch) and the inbox rows announced with them."""
        hinted: list[str] = []
        delivered: list[inbox.Announced] = []
        while self._hinted and len(hinted) < self.batch:
            iid, row = self._hinted.popleft()  # atomic: the listening thread appends
            hinted.append(iid)
            if row is not None:
                delivered.append(row)
        return hinted, delivered

    def _heartbeat(self) -> None:
        leases = [(key, epoch) for key, (epoch, _) in self._running.items()]
        try:
            lost = self.store.heartbeat(self.id, leases, self.lease_ms)
        except Exception:  # renewed next time; a lease lost meanwhile refuses the result
            log.exception("heartbeat failed")
            return
        if lost:
            self.counters.lost_leases += len(lost)
            log.warning("leases lost", extra={"tasks": lost})

    def _summary(self) -> dict[str, int]:
        c = self.counters
        return {
            "transitions": c.transitions,
            "results": c.results,
            "stale": c.stale,
            "claimed": c.claimed,
            "finished": c.finished,
        }
