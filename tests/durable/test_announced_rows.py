"""A delivery announced with its inbox row, stepped without reading it first (issue 18).

On PostgreSQL the statement that writes a signal's inbox row also notifies the workers,
and the notification carries the row (``inbox.announcing``). A worker that stepped the
instance last and is woken by it steps the row as announced (``wflang.store.carried``):
one round trip, where the general path reads the inbox first (two). Its guard checks
that the row is there as announced, unconsumed and the only one due, and that nothing
else moved; if anything did, the transaction rolls back and the general path steps the
instance as it always did. Each way it can differ has a test here, each showing the
general path's result; a forged notification cannot change what an instance does.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings

from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.table import Table
from wflang.store import Store, carried, inbox, postgres
from wflang.store.backend import Named
from wflang.store.records import Advanced

from ..store.kit import PG_DSN, Durable, VirtualClock
from ..store.test_carried import agree, outcome, table_of, two_stores
from ..store.test_differential import Handler, actions, scripts, with_values
from ..test_step_properties import workflows
from .helpers import fixture_table
from .test_round_trips import counted

BOUND_S = 60  # a bound against a hang, never reached when the code works


def ping_table() -> Table:
    """A wait for the signal ``go``, then a call of ``svc.op``."""
    return fixture_table("signal_then_call")


def op(**kw: Any) -> dict[str, Any]:
    return {"value": 1}


class Spy:
    """The carried steps tried (``deliveries``: those of an announced row) and those
    whose transaction rolled back for the general path (``moved``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.deliveries = self.others = self.moved = 0
        guard, moved = carried.send_guard, carried.moved

        def counted_guard(tx: Any, d: Any, c: carried.Carry, *rest: Any) -> list[Named]:
            if c.delivery is not None:
                self.deliveries += 1
            else:
                self.others += 1
            return guard(tx, d, c, *rest)

        def counted_moved(err: BaseException) -> bool:
            self.moved += 1
            return moved(err)

        monkeypatch.setattr(carried, "send_guard", counted_guard)
        monkeypatch.setattr(carried, "moved", counted_moved)


class Notes:
    """The notifications of the channel ``wflang`` on a connection of its own, by the
    instance they announce (other tests share the channel: theirs are let be)."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        postgres.listen_on(self.conn)  # the channel of the URL's schema
        self.seen: dict[str, list[inbox.Announced | None]] = {}

    def row(self, iid: str) -> inbox.Announced:
        """The next row announced for ``iid`` (its notifications by id alone let be)."""
        while (found := self.next(iid)) is None:
            pass
        return found

    def next(self, iid: str) -> inbox.Announced | None:
        """The row announced with the next notification about ``iid`` (None: its id)."""
        end = time.monotonic() + BOUND_S
        while not self.seen.get(iid) and time.monotonic() < end:
            # Read to the generator's end: leaving it early loses what came in the same
            # packet as the one it stopped at.
            for note in self.conn.notifies(timeout=BOUND_S, stop_after=1):
                found, row = inbox.announced(note.payload)
                self.seen.setdefault(found, []).append(row)
        assert self.seen.get(iid), f"no notification about {iid} within {BOUND_S} s"
        return self.seen[iid].pop(0)


@pytest.fixture
def notes(pg_url: str) -> Iterator[Notes]:
    found = Notes(pg_url)
    yield found
    found.conn.close()


def waiting(store: Store, *ids: str) -> Worker:
    """Instances of ``PING`` at their wait, stepped by the worker returned (its store's
    cache holds them as it committed them), which has also read the database's clock."""
    store.deploy(ping_table())
    for iid in ids:
        store.create(store.deployed("ping"), {}, iid)
    worker = Worker(store, {"svc.op": op}, worker_id="w")
    worker.run_until_idle()
    assert all(store.instance(iid).waiting_on == ("signal:go",) for iid in ids)
    return worker


def unique(*names: str) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"{n}-{tag}" for n in names]


def stepped(store: Store, iid: str, delivered: list[inbox.Announced]) -> int:
    """One advance of ``iid``'s worker, woken for it (with the rows ``delivered``)."""
    adv = store.advance(
        "w", instances=16, claim=1, services=["svc.op"], hinted=[iid], delivered=delivered
    )
    return adv.transitions


def context(store: Store, iid: str) -> dict[str, Any]:
    found = store.instance(iid).instance
    assert found is not None
    return dict(found.context)


def entries(store: Store, iid: str) -> list[tuple[str, Any, str | None]]:
    """``iid``'s history as events, decisions and actors (no times, no ids)."""
    return [
        (type(r.entry.event).__name__, codec.unstructure_entry(r.entry)["decisions"], r.actor)
        for r in store.history(iid)
    ]


def test_a_signal_is_announced_with_its_inbox_row_on_both_paths(
    pg_url: str, make_store: Callable[..., Store], notes: Notes
) -> None:
    a, b = unique("a", "b")
    waiting(make_store(pg_url), a, b)
    client = Client(make_store(pg_url), actor="ada")  # its own store: no table read yet
    assert client.signal(a, "go", {"n": 5}, reason="first")  # the general path
    assert client.signal(b, "go", {"n": 6})  # one statement (``ops.deliver_at_once``)
    for iid, n, reason in ((a, 5, "first"), (b, 6, None)):
        row = notes.next(iid)
        assert row is not None
        rid, of, event, actor, why, at = row
        assert (of, actor, why) == (iid, "ada", reason)
        assert codec.load_event(event) == rt.SignalReceived("go", {"n": n})
        with psycopg.connect(pg_url) as conn:
            stored = conn.execute(
                "SELECT id, event, available_at FROM wf_inbox WHERE instance_id = %s", (iid,)
            ).fetchall()
        assert stored == [(rid, event, at)]


def test_a_row_too_long_for_a_notification_is_announced_by_its_instance_alone(
    pg_url: str, make_store: Callable[..., Store], notes: Notes
) -> None:
    (a,) = unique("a")
    store = make_store(pg_url)
    waiting(store, a)
    client = Client(store)
    assert client.signal(a, "go", {"n": 1, "note": "x" * 9_000})  # PostgreSQL's limit: 8,000
    assert notes.next(a) is None
    assert [e.event for e in store.pending(a)] == [
        rt.SignalReceived("go", {"n": 1, "note": "x" * 9_000})
    ]


def test_a_notification_s_payload_is_read_strictly() -> None:
    row = '\x1e[7, "i-1", "{}", null, "why", 1700000000000]'
    assert inbox.announced(row) == ("i-1", (7, "i-1", "{}", None, "why", 1700000000000))
    assert inbox.announced("i-1") == ("i-1", None)  # an instance's id alone
    for bad in (
        "\x1e[7, i-1]",  # not JSON
        '\x1e[true, "i-1", "{}", null, null, 1]',  # a bool is not an id
        '\x1e[7, "i-1", "{}", null, null]',  # a column short
        '\x1e[7, "i-1", {}, null, null, 1]',  # the event not as text
        '\x1e{"id": 7}',
        "\x1e" + "[" * 100_000,  # nested past the parser's recursion limit
        '\x1e[7, "i-1", "{}", "a\\u0000", null, 1]',  # NUL: no statement takes it
        '\x1e[7, "i-\\u0000", "{}", null, null, 1]',
    ):
        assert inbox.announced(bad) == (bad, None)


def test_an_announced_row_is_stepped_in_one_round_trip_as_the_general_path_steps_it(
    pg_url: str,
    make_store: Callable[..., Store],
    notes: Notes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(postgres, "_FRESH_S", 3600.0)  # no check of an idle connection
    spy = Spy(monkeypatch)
    a, b = unique("a", "b")
    with counted(pg_url) as (url, proxy):
        store = make_store(url)
        waiting(store, a, b)
        client = Client(make_store(pg_url), actor="ada")
        for iid in (a, b):
            assert client.signal(iid, "go", {"n": 5})
        row = notes.next(a)
        assert row is not None and notes.next(b) is not None
        before, carried_before = proxy.turns, spy.deliveries
        assert stepped(store, a, [row]) == 1  # as announced
        one = proxy.turns - before
        before = proxy.turns
        assert stepped(store, b, []) == 1  # the general path: its inbox read first
        general = proxy.turns - before
    assert (one, general) == (1, 2)
    assert (spy.deliveries - carried_before, spy.moved) == (1, 0)
    assert entries(store, a) == entries(store, b)
    for iid in (a, b):
        assert context(store, iid) == {"n": 5}
        assert store.pending(iid) == []


@pytest.mark.parametrize("differs", ["event", "actor", "reason", "instance", "id", "available_at"])
def test_a_row_not_as_announced_goes_the_general_way(
    pg_url: str,
    make_store: Callable[..., Store],
    notes: Notes,
    monkeypatch: pytest.MonkeyPatch,
    differs: str,
) -> None:
    """A notification that does not match the row (forged, or of another row): the
    guard rolls the step back, and the general path steps the row as stored."""
    spy = Spy(monkeypatch)
    a, b = unique("a", "b")
    store = make_store(pg_url)
    waiting(store, a, b)
    assert Client(store, actor="ada").signal(a, "go", {"n": 5}, reason="why")
    found = notes.next(a)
    assert found is not None
    rid, iid, event, actor, reason, at = found
    forged = {
        "event": (rid, iid, codec.dump_event(rt.SignalReceived("go", {"n": 6})), actor,
                  reason, at),
        "actor": (rid, iid, event, "eve", reason, at),
        "reason": (rid, iid, event, actor, None, at),
        "instance": (rid, b, event, actor, reason, at),  # another waiting instance
        "id": (rid + 1000, iid, event, actor, reason, at),
        "available_at": (rid, iid, event, actor, reason, at - 1),
    }[differs]  # fmt: skip
    # the general path steps a (its row is due) whichever instance was announced
    assert stepped(store, forged[1], [forged]) == 1
    assert (spy.deliveries, spy.moved) == (1, 1)
    assert context(store, a) == {"n": 5}  # the row as stored
    assert store.pending(a) == []
    assert store.instance(b).waiting_on == ("signal:go",)  # nothing for b
    assert [r.actor for r in store.history(a)][-1] == "ada"


def test_an_announced_row_with_another_due_beside_it_goes_the_general_way(
    pg_url: str,
    make_store: Callable[..., Store],
    notes: Notes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spy = Spy(monkeypatch)
    a, b = unique("a", "b")
    store = make_store(pg_url)
    waiting(store, a, b)
    client = Client(store, actor="ada")
    for iid, delivered in ((a, True), (b, False)):  # the first taken, the second buffered
        assert client.signal(iid, "go", {"n": 5})
        assert client.signal(iid, "go", {"n": 7})
        first = notes.next(iid)
        assert first is not None
        assert stepped(store, iid, [first] if delivered else []) == 2
    assert (spy.deliveries, spy.moved) == (1, 1)
    assert entries(store, a) == entries(store, b)


def test_an_instance_stepped_elsewhere_meanwhile_is_not_stepped_again(
    pg_url: str,
    make_store: Callable[..., Store],
    notes: Notes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spy = Spy(monkeypatch)
    (a,) = unique("a")
    store, other = make_store(pg_url), make_store(pg_url)
    waiting(store, a)
    assert Client(store).signal(a, "go", {"n": 5})
    row = notes.next(a)
    assert row is not None
    other.advance("w-other", instances=16)  # takes the signal (not the call it leads to)
    assert store.instance(a).waiting_on != ("signal:go",)
    assert stepped(store, a, [row]) == 0  # the row consumed elsewhere: nothing to step
    assert (spy.deliveries, spy.moved) == (1, 1)
    events = [type(r.entry.event).__name__ for r in store.history(a)]
    assert events.count("SignalReceived") == 1
    assert [r.worker for r in store.history(a)][-1] == "w-other"


def test_on_sqlite_an_announced_row_goes_the_general_way(
    tmp_path: Any, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite announces no rows; one given anyway is checked, and stepped the general way."""
    spy = Spy(monkeypatch)
    store = make_store(f"sqlite:///{tmp_path / 'state.db'}")
    waiting(store, "a")
    assert Client(store, actor="ada").signal("a", "go", {"n": 5})
    row = _sqlite_row(store, "a")
    assert stepped(store, "a", [row]) == 1
    assert (spy.deliveries, spy.moved) == (1, 1)
    assert context(store, "a") == {"n": 5}


def _sqlite_row(store: Store, iid: str) -> inbox.Announced:
    import sqlite3

    path = store.url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        rid, event, actor, reason, at = conn.execute(
            "SELECT id, event, actor, reason, available_at FROM wf_inbox WHERE instance_id = ?",
            (iid,),
        ).fetchone()
    return (rid, iid, event, actor, reason, at)


def test_an_idle_worker_woken_by_a_signal_steps_it_as_announced(
    pg_url: str, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole path, as ``wf worker`` runs it: woken by the notification (its poll an
    hour away), the worker steps the row as announced and runs the call it leads to."""
    spy = Spy(monkeypatch)
    (a,) = unique("a")
    started = threading.Event()

    def handler(**kw: Any) -> dict[str, Any]:
        started.set()
        return {"value": 1}

    store = make_store(pg_url)
    store.deploy(ping_table())
    store.create(store.deployed("ping"), {}, a)
    worker = Worker(store, {"svc.op": handler}, worker_id="w", poll_ms=3_600_000)
    worker.run_until_idle()
    assert store.instance(a).waiting_on == ("signal:go",)

    with worker.woken_by_notify():  # listening once entered
        thread = threading.Thread(target=worker.run)
        thread.start()
        try:
            assert Client(make_store(pg_url)).signal(a, "go", {"n": 5})
            assert started.wait(BOUND_S)
        finally:
            worker.stop()
            thread.join(BOUND_S)
    assert spy.deliveries == 1 and spy.moved == 0
    assert context(store, a) == {"n": 6}


def test_after_a_delivery_the_worker_looks_for_other_work_only_if_some_is_due(
    pg_url: str, make_store: Callable[..., Store], notes: Notes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step of an announced row leases the call it leads to and asks, in its
    statement, whether anything else is due (``Advanced.more``): an idle worker woken
    by a signal then waits for its call's result, or goes on to the work there is."""
    spy = Spy(monkeypatch)
    a, b, c = unique("a", "b", "c")
    store = make_store(pg_url)
    waiting(store, a, b, c)
    client = Client(store)

    def delivered(iid: str) -> Advanced:
        assert client.signal(iid, "go", {"n": 1})
        row = notes.next(iid)
        assert row is not None
        return store.advance(
            "w", instances=16, claim=4, services=["svc.op"], hinted=[iid], delivered=[row]
        )

    alone = delivered(a)
    assert (len(alone.claimed), alone.more) == (1, False)
    assert client.signal(b, "go", {"n": 2})  # due, and not announced to this worker
    beside = delivered(c)
    assert (len(beside.claimed), beside.more) == (1, True)
    assert (spy.deliveries, spy.moved) == (2, 0)


_names = itertools.count()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(workflows(), scripts, actions)
def test_announced_deliveries_and_the_general_path_write_identical_histories(
    tmp_path: Path,
    source: str,
    script: dict[str, list[tuple[Any, ...]]],
    steps: list[tuple[Any, ...]],
) -> None:
    """Random workflows driven by random signals and clock moves, on two stores: one
    whose worker, after each signal, steps the row as announced (carried where it can
    be), one that steps it the general way. Their histories, instances and calls agree."""
    if not PG_DSN:
        pytest.skip("WFLANG_TEST_PG_DSN is not set")
    name = f"deliver{next(_names)}"
    text = with_values(source).replace("workflow prop version 1", f"workflow {name} version 1")
    table = table_of(text)
    clock = VirtualClock()
    got = []
    with two_stores("postgresql", tmp_path, name, clock) as stores:
        start = clock.ms
        # The same id on both (the same seed: retries' jitter), of this example only
        # (other tests' notifications are let be); the stores run one after the other.
        iid = f"{name}-{uuid.uuid4().hex[:8]}"
        for store in stores:
            notes = Notes(store.url)  # the channel of the store's schema
            try:
                handler = Handler(script, iid)
                durable = Durable(store, clock, {"s.work": handler}, table)
                clock.ms = start
                durable.start(name, {}, iid)
                for n, action in enumerate(steps):
                    if action[0] == "advance":
                        durable.advance(action[1])
                    elif not durable.instance(iid).status.finished:
                        key = f"k{n}" if action[2] else None
                        if durable.client.signal(iid, "go", {"v": action[1]}, key=key):
                            row = notes.row(iid)  # what the woken worker is told
                            delivered = [row] if store.carries else []
                            store.advance("w-test", instances=16, services=["s.work"],
                                          hinted=[iid], delivered=delivered)  # fmt: skip
                        durable.run()
                got.append(outcome(durable, iid, handler))
            finally:
                notes.conn.close()
    agree(*got)


def test_a_carried_delivery_takes_its_instance_before_its_inbox_row(
    pg_url: str, make_store: Callable[..., Store], notes: Notes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every path locks an instance's row before its inbox rows: a carried delivery whose
    instance another transaction holds waits for it without having taken the row, so a
    general worker there can consume the row (no deadlock, no retry)."""
    spy = Spy(monkeypatch)
    (a,) = unique("a")
    store = make_store(pg_url)
    waiting(store, a)
    assert Client(make_store(pg_url)).signal(a, "go", {"n": 5})
    row = notes.next(a)
    assert row is not None
    done: list[int] = []
    with psycopg.connect(pg_url) as holder:
        holder.execute("SELECT 1 FROM wf_instance WHERE id = %s FOR UPDATE", (a,))
        thread = threading.Thread(target=lambda: done.append(stepped(store, a, [row])))
        thread.start()
        with psycopg.connect(pg_url, autocommit=True) as watch:
            pid, end = holder.info.backend_pid, time.monotonic() + BOUND_S
            blocked = "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
            while watch.execute(blocked, (pid,)).fetchone() != (1,):  # the step waits
                assert time.monotonic() < end, "the carried step never waited"
        # what a general worker holding the instance does next: its inbox row is free
        locked = holder.execute(
            "SELECT id FROM wf_inbox WHERE id = %s FOR UPDATE NOWAIT", (row[0],)
        ).fetchall()
        assert locked == [(row[0],)]
        holder.rollback()
        thread.join(BOUND_S)
    assert done == [1]
    assert (spy.deliveries, spy.moved) == (1, 0)
    assert context(store, a) == {"n": 5}


def test_a_store_s_workers_hear_only_their_own_schema(tmp_path: Path) -> None:
    """Each schema has a channel of its own (``postgres.CHANNEL``): a signal in one store
    wakes nobody listening to another in the same database. Deterministic: a signal to
    the first store, then one to the second; the second's listener hears the second's
    first (it would hear the first's first if it heard it at all: commit order)."""
    if not PG_DSN:
        pytest.skip("WFLANG_TEST_PG_DSN is not set")
    with two_stores("postgresql", tmp_path, "ping", VirtualClock()) as (a, b):
        hears = [Notes(store.url) for store in (a, b)]
        try:
            for store in (a, b):
                waiting(store, "x")
            assert Client(a).signal("x", "go", {"n": 1})
            assert Client(b).signal("x", "go", {"n": 2})
            rows = [notes.row("x") for notes in hears]
            assert [codec.load_event(r[2]) for r in rows] == [
                rt.SignalReceived("go", {"n": 1}),
                rt.SignalReceived("go", {"n": 2}),
            ]
            assert all(not n.seen.get("x") for n in hears)  # one notification each
        finally:
            for notes in hears:
                notes.conn.close()
