"""The heartbeat thread of ``run_until_idle`` (``wflang.durable.heartbeats``): one per
process, serving every run of every worker, instead of a thread started and joined by
each run (issue 18: that cost a sequential worker a tenth of its CPU)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from wflang.durable import heartbeats
from wflang.durable.heartbeats import Heartbeats
from wflang.durable.worker import Worker
from wflang.runtime.ir import Value
from wflang.store import Store

from .helpers import fixture_table

WAIT_S = 60.0  # what a loaded machine may take to run a thread: never reached otherwise


def test_a_run_is_renewed_while_it_lasts_and_forgotten_after() -> None:
    beats = Heartbeats("test-heartbeat")
    calls: list[str] = []
    enough = threading.Event()

    def renew(name: str) -> Callable[[], None]:
        def call() -> None:
            calls.append(name)
            if calls.count("a") >= 3 and "b" in calls:
                enough.set()

        return call

    with beats.renewing(renew("a"), 0.001), beats.renewing(renew("b"), 0.002):
        assert enough.wait(WAIT_S)
    assert beats.runs() == 0


def test_a_renewal_that_raises_stops_no_other() -> None:
    beats = Heartbeats("test-heartbeat")
    renewed = threading.Event()

    def broken() -> None:
        raise RuntimeError("the store is away")

    with beats.renewing(broken, 0.001), beats.renewing(renewed.set, 0.001):
        assert renewed.wait(WAIT_S)
        renewed.clear()
        assert renewed.wait(WAIT_S)  # still beating after the failures


def test_every_run_of_a_worker_shares_one_heartbeat_thread(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(f"sqlite:///{tmp_path / 'state.db'}")
    store.deploy(fixture_table("chain"))
    seen: list[threading.Thread] = []

    def op(**kw: Value) -> dict[str, Value]:
        seen.extend(t for t in threading.enumerate() if t.name == "wf-heartbeat")
        return {"value": 1}

    worker = Worker(store, {"svc.op": op}, concurrency=1, batch=1, group_commit=False)
    for n in range(3):
        store.create(store.deployed("chain"), {}, f"c{n}")
        worker.run_until_idle()
    assert len(seen) == 3 * 4 and len(set(seen)) == 1


def test_the_thread_ends_when_no_run_comes_and_starts_again_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heartbeats, "_LINGER_S", 0.001)
    beats = Heartbeats("test-heartbeat-linger")
    for _ in range(2):
        renewed = threading.Event()
        with beats.renewing(renewed.set, 0.001):
            assert renewed.wait(WAIT_S)
            (thread,) = [t for t in threading.enumerate() if t.name == beats.name]
        thread.join(WAIT_S)
        assert not thread.is_alive()
