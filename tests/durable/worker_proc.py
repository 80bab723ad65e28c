"""A worker process for the crash and lease tests: ``python -m tests.durable.worker_proc``.

It opens the store, registers counting handlers for one workload and works
until every instance of the store has finished or the deadline passes. Every
handler call first appends ``(key, service, attempt, epoch, pid)`` to an effect
log (a separate SQLite file, committed before the handler returns), so the
tests can count how often each effect happened, and by which process.

A crash point is injected by the caller through ``WFLANG_FAULT`` (see
``wflang.faults``); this module knows nothing about it. Exit codes: 0 when
everything finished, 3 when the deadline passed first.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wflang.durable.worker import Worker
from wflang.runtime.engine import TaskCall, TaskError
from wflang.store import open_store
from wflang.store.records import Advanced
from wflang.store.sqlite import switch_to_wal
from wflang.store.status import FINISHED, INSTANCE_STATUSES

#: Every status of an instance that has not finished (a waiting one among them).
UNFINISHED = tuple(s for s in INSTANCE_STATUSES if s not in FINISHED)


class EffectLog:
    """An append-only log of handler effects, shared by processes through one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=60.0)
            conn.execute("PRAGMA busy_timeout=60000")
            # The journal-mode pragma can fail with "database is locked" without waiting
            # when several threads open the file at once (after a crash, while one of them
            # recovers its WAL): the store's own connections handle it the same way.
            switch_to_wal(conn)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS effect (id integer PRIMARY KEY AUTOINCREMENT, "
                "key text NOT NULL, service text NOT NULL, attempt integer NOT NULL, "
                "epoch integer NOT NULL, pid integer NOT NULL)"
            )
            self._local.conn = conn
        return conn

    def record(self, key: str, service: str, attempt: int, epoch: int) -> None:
        """Append one effect; autocommit, so it is durable before the handler returns."""
        self._conn().execute(
            "INSERT INTO effect (key, service, attempt, epoch, pid) VALUES (?, ?, ?, ?, ?)",
            (key, service, attempt, epoch, os.getpid()),
        )

    def rows(self) -> list[tuple[str, str, int, int, int]]:
        """Every effect in the order it happened: (key, service, attempt, epoch, pid)."""
        if not self.path.exists():
            return []
        rows = self._conn().execute(
            "SELECT key, service, attempt, epoch, pid FROM effect ORDER BY id"
        )
        return [(str(k), str(s), int(a), int(e), int(p)) for k, s, a, e, p in rows]


Handler = Callable[..., Any]


def saga_handlers(log: EffectLog, epochs: dict[str, int]) -> dict[str, Handler]:
    """The services of tests/data/durable/crash_saga.wf; ``fx.ship`` rejects when told to."""

    def effect(service: str, task: TaskCall) -> None:
        log.record(task.idempotency_key, service, task.attempt, epochs.get(task.idempotency_key, 0))

    def reserve(id: str, task: TaskCall) -> dict[str, Any]:
        effect("fx.reserve", task)
        return {"r": f"r-{id}"}

    def release(r: str, task: TaskCall) -> None:
        effect("fx.release", task)

    def charge(id: str, task: TaskCall) -> dict[str, Any]:
        effect("fx.charge", task)
        return {"c": f"c-{id}"}

    def refund(c: str, task: TaskCall) -> None:
        effect("fx.refund", task)

    def ship(id: str, fail: bool, task: TaskCall) -> dict[str, Any]:
        effect("fx.ship", task)
        if fail:
            raise TaskError("Rejected", f"no carrier for {id}", transient=False)
        return {"s": f"s-{id}"}

    def audit(id: str, task: TaskCall) -> None:
        effect("fx.audit", task)

    return {
        "fx.reserve": reserve,
        "fx.release": release,
        "fx.charge": charge,
        "fx.refund": refund,
        "fx.ship": ship,
        "fx.audit": audit,
    }


def two_step_handlers(log: EffectLog, epochs: dict[str, int]) -> dict[str, Handler]:
    """The services of tests/data/durable/two_step.wf; with ``WF_TEST_SLOW_S`` set, each
    ``step.one`` call pauses that long after its effect (the lease test stops it there)."""
    slow = float(os.environ.get("WF_TEST_SLOW_S", "0"))
    pause = threading.Event()  # never set: a bounded pause inside the handler

    def one(id: str, task: TaskCall) -> dict[str, Any]:
        log.record(
            task.idempotency_key, "step.one", task.attempt, epochs.get(task.idempotency_key, 0)
        )
        if slow:
            pause.wait(slow)
        return {"v": 1}

    def two(id: str, v: int, task: TaskCall) -> dict[str, Any]:
        log.record(
            task.idempotency_key, "step.two", task.attempt, epochs.get(task.idempotency_key, 0)
        )
        return {"v": v + 1}

    return {"step.one": one, "step.two": two}


def timed_handlers(log: EffectLog, epochs: dict[str, int]) -> dict[str, Handler]:
    """The service of tests/data/durable/timed.wf."""

    def after(id: str, task: TaskCall) -> None:
        log.record(
            task.idempotency_key, "fx.after", task.attempt, epochs.get(task.idempotency_key, 0)
        )

    return {"fx.after": after}


def sends_handlers(log: EffectLog, epochs: dict[str, int]) -> dict[str, Handler]:
    """The service of tests/data/durable/crash_sends.wf."""

    def book(id: str, task: TaskCall) -> dict[str, Any]:
        log.record(
            task.idempotency_key, "fx.book", task.attempt, epochs.get(task.idempotency_key, 0)
        )
        return {"carrier": f"carrier-{id}"}

    return {"fx.book": book}


def async_handlers(log: EffectLog, epochs: dict[str, int]) -> dict[str, Handler]:
    """The async service of tests/data/async/charge.wf: it records the token it is handed
    (the effect: the provider would be asked to charge) and returns; the client answers."""

    def charge(order_id: str, amount: Any, task: TaskCall) -> None:
        log.record(
            task.idempotency_key, "payments.charge", task.attempt,
            epochs.get(task.idempotency_key, 0),
        )  # fmt: skip

    return {"payments.charge": charge}


#: The store the worker process runs on: the boundary workload's handler signals its own
#: instance through a client of it.
STORE_URL: list[str] = []


def boundary_handlers(log: EffectLog, epochs: dict[str, int]) -> dict[str, Handler]:
    """The service of tests/data/durable/crash_boundary.wf: while its task is in flight
    (this handler running), its instance is nudged and told to stop through the client,
    each with a key (a handler run again sends nothing new), then it answers."""

    def slow(id: str, task: TaskCall) -> dict[str, Any]:
        from wflang.durable.client import Client

        log.record(
            task.idempotency_key, "fx.slow", task.attempt, epochs.get(task.idempotency_key, 0)
        )
        client = Client(open_store(STORE_URL[0]), actor="boundary")
        try:
            client.signal(task.instance, "nudge", {}, key=f"nudge-{id}")
            client.signal(task.instance, "stop", {"reason": f"stop {id}"}, key=f"stop-{id}")
        finally:
            client.store.close()
        return {"ok": True}

    return {"fx.slow": slow}


def chaos_handlers(log: EffectLog, epochs: dict[str, int]) -> dict[str, Handler]:
    """two_step's services for the chaos test; ``step.one`` of a ``poison-result-*``
    instance returns a field that is no JSON value (a datetime)."""
    handlers = two_step_handlers(log, epochs)
    one = handlers["step.one"]

    def poisoned_one(id: str, task: TaskCall) -> dict[str, Any]:
        result: dict[str, Any] = one(id=id, task=task)
        if id.startswith("poison-result"):
            return {**result, "at": datetime.datetime(2026, 1, 1)}
        return result

    return {**handlers, "step.one": poisoned_one}


def poison_states(prefix: str) -> None:
    """From its second step on, the state of an instance whose id starts with ``prefix``
    cannot be stored (a bug in storing it), unless it is being dead-lettered."""
    from wflang.runtime import codec
    from wflang.runtime import instance as rt

    real = codec.dump_instance

    def dump(inst: rt.Instance) -> str:
        dead = inst.status is rt.Status.DEAD_LETTERED
        if inst.id.startswith(prefix) and inst.seq >= 2 and not dead:
            raise RuntimeError(f"poison: cannot store {inst.id}")
        return real(inst)

    codec.dump_instance = dump  # type: ignore[assignment]  # the poison, in this process only


WORKLOADS = {
    "saga": saga_handlers,
    "two_step": two_step_handlers,
    "timed": timed_handlers,
    "chaos": chaos_handlers,
    "sends": sends_handlers,
    "async": async_handlers,
    "boundary": boundary_handlers,
}


def unfinished_async(store: Any) -> int:
    """The async workload is done when no call is left to run: the rest waits for the
    client (the test answers the tokens)."""
    stats = store.stats()
    return int(stats.ready_tasks + stats.running_tasks + stats.pending_events)


def unfinished(store: Any) -> int:
    counts: dict[str, int] = store.stats().instances
    return sum(counts.get(s, 0) for s in UNFINISHED)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--store", required=True)
    p.add_argument("--effects", required=True)
    p.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    p.add_argument("--lease-ms", type=int, default=30_000)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--at-most-once", action="append", default=[])
    p.add_argument("--deadline-s", type=float, default=60.0)
    p.add_argument("--mode", choices=("idle", "run"), default="idle")
    args = p.parse_args(argv)

    if args.workload == "chaos":
        poison_states("poison-state")
    store = open_store(args.store)
    STORE_URL.append(args.store)
    log = EffectLog(args.effects)
    epochs: dict[str, int] = {}  # task key -> the lease epoch this process claimed it under

    def on_advance(adv: Advanced) -> None:
        for task in adv.claimed:
            epochs[task.key] = task.epoch

    worker = Worker(
        store,
        WORKLOADS[args.workload](log, epochs),
        concurrency=args.concurrency,
        lease_ms=args.lease_ms,
        poll_ms=20,
        at_most_once=frozenset(args.at_most_once),
        worker_id=f"proc-{os.getpid()}",
        on_advance=on_advance,
        # a workload serves several workflows, of which a run deploys some
        allow_missing_handlers=True,
        allow_unused_handlers=True,
    )
    deadline = time.monotonic() + args.deadline_s
    pause = threading.Event()  # never set: its wait() is a bounded pause between polls
    done = False
    left = unfinished_async if args.workload == "async" else unfinished
    if args.mode == "idle":
        while time.monotonic() < deadline:
            worker.run_until_idle()
            if left(store) == 0:
                done = True
                break
            pause.wait(0.02)  # a dead worker's lease has yet to expire
    else:
        thread = threading.Thread(target=worker.run, name="worker")
        thread.start()
        while time.monotonic() < deadline:
            if unfinished(store) == 0:
                done = True
                break
            pause.wait(0.05)
        worker.stop()
        thread.join()
    c = worker.counters
    print(
        f"pid={os.getpid()} done={done} transitions={c.transitions} results={c.results} "
        f"stale={c.stale} claimed={c.claimed} lost_leases={c.lost_leases}",
        flush=True,
    )
    store.close()
    return 0 if done else 3


if __name__ == "__main__":
    sys.exit(main())
