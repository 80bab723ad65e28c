"""Signal-to-handler latency with an idle worker (bench/durable.py's ``pg-signal``, issue 18).

A workflow waits for the signal ``go``, then calls ``svc.op``. ``--signals`` instances
are created and run to their wait by one ``Worker.run()`` inside
``Worker.woken_by_notify()``, as ``wf worker`` runs it (in a thread of this process, with
its default ``poll_ms``); then, one at a time and each after
the worker has been idle for ``IDLE_S``, the benchmark sends ``go`` through
``Client.signal`` on a store of its own (what ``wf signal`` does) and times from just
before that call to the start of the handler the signal leads to (both on
``time.perf_counter``). The figure is a latency, not a rate: p50, p99 and max in ms.
The worker is woken by the store's notification (LISTEN/NOTIFY on PostgreSQL) or, failing
that, by its poll: a p50 near ``poll_ms`` / 2 means the notification did not wake it.
Beside the total, the p50 of each phase of the path (``PHASES``).
"""

from __future__ import annotations

import queue
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime.table import Table
from wflang.store import open_store

SOURCE = """workflow ping version 1

context { n: int = 0 }

output { n: int }

signal go { n: int }

service svc.op(n: int) -> { value: int }

start gate

wait gate: signal go {
    output { n: signal.n }
    next call
}

task call: service svc.op {
    args { n: context.n }
    output { n: context.n + result.value }
    next done
}

end done: completed {
    output { n: context.n }
}
"""
#: The phases of each signal's path, in ms (their p50s are reported beside the total):
#: the client's call (wall, then its thread's CPU time), from the call to the start of
#: the worker's advance that steps the signal, that advance (wall, then the worker
#: thread's CPU time in it), and from its end to the handler's start. CPU times and
#: round trips move less with the machine's load than wall times.
PHASES = ("client", "client_cpu", "to_advance", "advance", "advance_cpu", "to_handler")
#: How long the worker is left idle before each signal (it must be asleep, not busy).
IDLE_S = 0.05


def compile_ping(folder: Path) -> Table:
    path = folder / "ping.wf"
    path.write_text(SOURCE, encoding="utf-8")
    compiled = compile_workflow(parse(SOURCE, str(path)))
    if compiled.table is None:
        raise SystemExit(f"the ping workflow does not compile: {compiled.check.diagnostics}")
    return compiled.table


def _wait_for(what: str, check: Any, limit_s: float = 120.0) -> None:
    end = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > end:
            raise SystemExit(f"signal latency: {what} not reached within {limit_s:g} s")
        time.sleep(0.005)


class _TimedWorker(Worker):
    """A worker that notes when each of its advances started and ended, and the CPU time
    of its thread in it, for the phases of a signal's path."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.advances: queue.Queue[tuple[float, float, float]] = queue.Queue()

    def _advance(self, *args: Any, **kw: Any) -> Any:
        start, cpu = time.perf_counter(), time.thread_time()
        adv = super()._advance(*args, **kw)
        if adv.claimed:  # the step the signal led to, and the claim of its call
            self.advances.put((start, time.perf_counter(), time.thread_time() - cpu))
        return adv


def _listening(worker: Worker) -> None:
    """The loop as ``wf worker`` runs it: woken by the store's notifications."""
    with worker.woken_by_notify():
        worker.run()


def signal_latency(url: str, table: Table, signals: int) -> dict[str, Any]:
    """``signals`` signals, one at a time, to instances waiting on an idle worker."""
    started: queue.Queue[float] = queue.Queue()

    def handler(**kw: Any) -> dict[str, Any]:
        started.put(time.perf_counter())
        return {"value": 1}

    store, sender = open_store(url, pool=2), open_store(url, pool=2)
    worker = None
    thread = None
    try:
        store.migrate()
        store.deploy(table)
        deployed = store.deployed("ping")
        ids = [f"s{i:05d}" for i in range(signals)]
        for iid in ids:
            store.create(deployed, {}, iid)
        worker = _TimedWorker(store, {"svc.op": handler})
        thread = threading.Thread(target=_listening, args=(worker,), name="wf-signal-worker")
        thread.start()
        _wait_for(
            "every instance waiting",
            lambda: len(store.instances(status="waiting", limit=signals + 1)) == signals,
        )
        client = Client(sender)
        lat: list[float] = []
        phases: dict[str, list[float]] = {k: [] for k in PHASES}
        for iid in ids:
            time.sleep(IDLE_S)
            t0, cpu = time.perf_counter(), time.thread_time()
            client.signal(iid, "go", {"n": 1})
            returned, client_cpu = time.perf_counter(), time.thread_time() - cpu
            handled = started.get(timeout=60)
            lat.append(handled - t0)
            begun, ended, advance_cpu = worker.advances.get(timeout=60)
            for name, ms in zip(
                PHASES,
                (returned - t0, client_cpu, begun - t0, ended - begun, advance_cpu,
                 handled - ended),
                strict=True,
            ):  # fmt: skip
                phases[name].append(ms * 1000)
        _wait_for(
            "every instance completed",
            lambda: len(store.instances(status="completed", limit=signals + 1)) == signals,
        )
    finally:
        if worker is not None and thread is not None:
            worker.stop()
            thread.join(60)
        sender.close()
        store.close()
    lat.sort()

    def pct(q: int) -> float:
        return lat[min(len(lat) - 1, len(lat) * q // 100)] * 1000

    return {
        "signals": signals,
        "poll_ms": worker.poll_ms,
        "p50_ms": pct(50),
        "p99_ms": pct(99),
        "max_ms": lat[-1] * 1000,
        "phases_p50_ms": {k: statistics.median(v) for k, v in phases.items()},
        "mean_ms": sum(lat) / len(lat) * 1000,
        # A rate for the report's machinery: signals handled per second of latency.
        "rate": len(lat) / sum(lat),
        "seconds": sum(lat),
        "steps": signals,
    }
