"""An idle worker on SQLite is woken by the commits of its own process (issue 18 item 3).

PostgreSQL wakes idle workers by LISTEN/NOTIFY (tests/test_notify.py). On SQLite there
is no server to tell them; a worker and a client in one process (an application, the
tests) share the wake-up instead: a transaction that makes work for
workers (a new instance, a signal, a message, a human task's answer) sets the wake-up
event of every worker of the process on that file, once it has committed. The tests
never sleep: the workers poll once an hour, and each wait is a bound against a hang.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.store import Store
from wflang.store.records import Advanced
from wflang.store.sqlite import SqliteBackend

from .helpers import fixture_table

BOUND_S = 60  # a bound against a hang; the worker's own poll is an hour away


def test_an_idle_worker_on_sqlite_takes_a_new_instance_at_once(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = make_store(url)
    store.deploy(fixture_table("two_step"))
    looked = threading.Semaphore(0)
    finished = threading.Event()

    def advanced(adv: Advanced) -> None:
        looked.release()
        if "w-1" in adv.finished:
            finished.set()

    worker = Worker(
        store,
        {"step.one": lambda id: {"v": 1}, "step.two": lambda id, v: {"v": v + 1}},
        poll_ms=3_600_000,
        on_advance=advanced,
    )
    # The client has a store of its own on the same file, as an application would.
    client = Client(make_store(f"sqlite:///{tmp_path}/./state.db"), actor="test")
    with worker.woken_by_notify():
        thread = threading.Thread(target=worker.run)
        thread.start()
        try:
            assert looked.acquire(timeout=BOUND_S)  # its first pass found nothing: it waits
            client.start("two_step", {"id": "w-1"}, instance_id="w-1")
            assert finished.wait(BOUND_S), "the commit did not wake the worker"
        finally:
            worker.stop()
            thread.join(timeout=BOUND_S)
    assert not thread.is_alive()
    assert store.instance("w-1").status == "completed"


def test_a_signal_wakes_the_workers_listening_and_only_while_they_listen(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(f"sqlite:///{tmp_path / 'state.db'}")
    store.deploy(fixture_table("approval"))
    client = Client(store, actor="test")
    assert isinstance(store.backend, SqliteBackend)
    woken = threading.Event()
    with store.backend.woken(woken):
        client.start("approval", {"id": "a-1"}, instance_id="a-1")
        assert woken.is_set()  # set at the commit, before start returned
        woken.clear()
        assert store.heartbeat("nobody", [("no-such-task", 1)], 30_000) == ["no-such-task"]
        assert not woken.is_set()  # a transaction that makes no work wakes no one
        client.signal("a-1", "approve", {"approved": True, "by": "ann"})
        assert woken.is_set()
    woken.clear()
    client.start("approval", {"id": "a-2"}, instance_id="a-2")
    assert not woken.is_set()  # the block has ended: the event is no longer known


def test_a_chain_never_waits_for_the_poll_between_its_steps(
    store_url: str, make_store: Callable[..., Store]
) -> None:
    """The production loop (``Worker.run``) goes from a handler's result to the next
    step and the next call at once: a two-call chain and the start of the next instance
    (announced by its commit) finish on a worker that polls once an hour, on both
    stores."""
    store = make_store(store_url)
    store.deploy(fixture_table("two_step"))
    done = threading.Semaphore(0)

    def advanced(adv: Advanced) -> None:
        for _ in adv.finished:
            done.release()

    worker = Worker(
        store,
        {"step.one": lambda id: {"v": 1}, "step.two": lambda id, v: {"v": v + 1}},
        poll_ms=3_600_000,
        on_advance=advanced,
    )
    client = Client(store, actor="test")
    client.start("two_step", {"id": "c-1"}, instance_id="c-1")  # before it runs: found
    with worker.woken_by_notify():
        thread = threading.Thread(target=worker.run)
        thread.start()
        try:
            assert done.acquire(timeout=BOUND_S), "the chain waited for the poll"
            client.start("two_step", {"id": "c-2"}, instance_id="c-2")
            assert done.acquire(timeout=BOUND_S), "the new instance waited for the poll"
        finally:
            worker.stop()
            thread.join(timeout=BOUND_S)
    assert [store.instance(i).status for i in ("c-1", "c-2")] == ["completed"] * 2
