"""What one sequential durable step costs the database (issue 18 item 2), pinned.

A chain of service calls run one step per transaction (``run_until_idle`` with one
slot, as ``bench/durable.py``'s ``pg-1tx`` and ``sqlite-1tx``): each step commits the
handler's result, steps the instance and claims its next call in one transaction.

On PostgreSQL the cost is round trips: the test counts them on the wire, through a
proxy between the store and the server (a round trip is an answer from the server
after the client has sent something). A step takes one: it is carried over from the
step before it (``wflang.store.carried``), so it reads nothing first; its guard rides in
the statement that writes it, sent with the Sync that commits it. The proxy counts the
statements too (each costs the client ~45 us of CPU in psycopg, round trip or not). On
SQLite the test counts the statements the step runs (SQLite's trace callback), the
commit's fsync being the only wait.
"""

from __future__ import annotations

import selectors
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from wflang.durable.worker import Worker
from wflang.runtime.ir import Value
from wflang.store import Store, postgres
from wflang.store.records import Advanced, IllegalAction
from wflang.store.sqlite import SqliteBackend

from .helpers import fixture_table

#: The most a sequential step may cost: PostgreSQL round trips, SQLite statements
#: (BEGIN, the fence with the guard's check of the instance and its inbox, the instance,
#: its history, the next call, COMMIT; the worker's default writes no status outbox row
#: for a task).
PG_ROUND_TRIPS = 1
#: PostgreSQL statements: the next call, carrying the guard (the fence, the instance's
#: lock and the check of its inbox and of the time), the instance and its history row as
#: ``WITH`` parts; no BEGIN or COMMIT (a pipeline's implicit transaction).
PG_STATEMENTS = 1
SQLITE_STATEMENTS = 6
CHAIN = 4  # calls in tests/data/durable/chain.wf


class Statements:
    """Counts the statements a client sends to PostgreSQL: each Execute message of the
    extended protocol and each simple Query (its bytes read as they come, in any
    pieces; the first messages, the startup and the encryption requests, have no type
    byte)."""

    _REQUESTS = (80877103, 80877104)  # SSLRequest, GSSENCRequest: untyped, answered by a byte

    def __init__(self) -> None:
        self.count = 0
        self._buffer = b""
        self._started = False

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while True:
            head = 1 if self._started else 0
            if len(self._buffer) < head + 4:
                return
            length = int.from_bytes(self._buffer[head : head + 4], "big")
            if len(self._buffer) < head + length:
                return
            message, self._buffer = self._buffer[: head + length], self._buffer[head + length :]
            if not self._started:
                code = int.from_bytes(message[4:8], "big")
                self._started = code not in self._REQUESTS
            elif message[:1] in (b"E", b"Q"):
                self.count += 1


class TurnCounter:
    """A TCP proxy to PostgreSQL that counts round trips (each answer from the server
    that follows something the client sent is one) and statements (``Statements``)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.turns = 0
        self._statements: list[Statements] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(self.target)
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    @property
    def statements(self) -> int:
        with self._lock:
            return sum(s.count for s in self._statements)

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        sent = Statements()
        with self._lock:
            self._statements.append(sent)
        sel = selectors.DefaultSelector()
        sel.register(client, selectors.EVENT_READ)
        sel.register(server, selectors.EVENT_READ)
        client_spoke = False
        try:
            while True:
                for key, _ in sel.select():
                    source = key.fileobj
                    assert isinstance(source, socket.socket)
                    data = source.recv(65536)
                    if not data:
                        return
                    if source is client:
                        client_spoke = True
                        with self._lock:
                            sent.feed(data)
                    elif client_spoke:  # counted before the client can see the answer
                        client_spoke = False
                        with self._lock:
                            self.turns += 1
                    (server if source is client else client).sendall(data)
        except OSError:
            return
        finally:
            client.close()
            server.close()

    def close(self) -> None:
        self._closed.set()
        self.listener.close()


@contextmanager
def counted(pg_url: str) -> Iterator[tuple[str, TurnCounter]]:
    """``pg_url`` through a ``TurnCounter``."""
    parts = urlsplit(pg_url)
    proxy = TurnCounter(parts.hostname or "127.0.0.1", parts.port or 5432)
    user = f"{parts.username}@" if parts.username else ""
    netloc = f"{user}127.0.0.1:{proxy.port}"
    try:
        yield urlunsplit(parts._replace(netloc=netloc)), proxy
    finally:
        proxy.close()


def _op(**kw: Value) -> dict[str, Value]:
    return {"value": 1}


def step_costs(store: Store, cost: Callable[[], tuple[int, ...]]) -> list[tuple[int, ...]]:
    """What each transaction that committed one handler's result and the step it caused
    cost (``cost``'s counters read after each commit), over a chain run one step at a
    time."""
    store.deploy(fixture_table("chain"))
    costs: list[tuple[Advanced, tuple[int, ...]]] = []
    last = [cost()]

    def seen(adv: Advanced) -> None:
        now = cost()
        costs.append((adv, tuple(b - a for a, b in zip(last[0], now, strict=True))))
        last[0] = now

    worker = Worker(
        store,
        {"svc.op": _op},
        concurrency=1,
        batch=1,
        group_commit=False,
        lease_ms=3_600_000,  # no heartbeat in between
        on_advance=seen,
    )
    store.create(store.deployed("chain"), {}, "warm-up")  # statements prepared, tables read
    worker.run_until_idle()
    store.create(store.deployed("chain"), {}, "c1")
    last[0] = cost()
    costs.clear()
    worker.run_until_idle()
    assert store.instance("c1").status == "completed"
    # A chain step: one result in, one transition, the next call claimed in the same go.
    steps = [n for adv, n in costs if adv.results == 1 and adv.transitions == 1 and adv.claimed]
    assert len(steps) == CHAIN - 1, costs
    ENDS.extend(n for adv, n in costs if adv.results == 1 and adv.finished)
    return steps


#: What the step that ended the instance cost (``step_costs`` notes it here).
ENDS: list[tuple[int, ...]] = []


def test_a_sequential_step_on_postgresql_takes_one_round_trip_and_two_statements(
    pg_url: str, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pool checks a connection idle for a while (a round trip): not here, however
    # slow the machine.
    monkeypatch.setattr(postgres, "_FRESH_S", 3600.0)
    with counted(pg_url) as (url, proxy):
        store = make_store(url)
        ENDS.clear()
        steps = step_costs(store, lambda: (proxy.turns, proxy.statements))
    assert max(turns for turns, _ in steps) <= PG_ROUND_TRIPS, steps
    # The last, which ends the instance (its calls cancelled, its timers' rows deleted,
    # its end in the outbox), is one round trip too: a carried step looks for no due
    # calls for the slot it frees (the advance after it does).
    assert [turns for turns, _ in ENDS] == [1], ENDS
    # Each statement costs the client ~45 us of CPU in psycopg, pipelined or not.
    assert max(statements for _, statements in steps) <= PG_STATEMENTS, steps


def test_an_idle_poll_on_postgresql_sends_one_statement(
    pg_url: str, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an idle worker pays each poll: one statement (the ready instances, the due
    calls, ready or whose lease expired, and the database's clock), then the Sync that
    ends its transaction: two round trips."""
    monkeypatch.setattr(postgres, "_FRESH_S", 3600.0)
    with counted(pg_url) as (url, proxy):
        store = make_store(url)
        store.deploy(fixture_table("chain"))
        worker = Worker(store, {"svc.op": _op}, concurrency=1, batch=1, group_commit=False)
        worker.run_until_idle()  # statements prepared
        polls = []
        for _ in range(3):  # the least of three: the pool may open a connection meanwhile
            turns, statements = proxy.turns, proxy.statements
            assert worker.run_until_idle() == 0
            polls.append((proxy.turns - turns, proxy.statements - statements))
        assert min(polls) == (2, 1), polls


def test_a_start_on_postgresql_takes_one_round_trip(
    pg_url: str, make_store: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creating an instance is one statement (its insert announces it to the workers,
    the time is the database's, in the statement), sent with the Sync that commits it.
    A retried start finds the id taken and reads the instance after: the same start
    again, or a clash refused (nothing written either way)."""
    monkeypatch.setattr(postgres, "_FRESH_S", 3600.0)
    with counted(pg_url) as (url, proxy):
        store = make_store(url)
        store.deploy(fixture_table("chain"))
        deployed = store.deployed("chain")
        store.create(deployed, {}, "warm")  # statements prepared
        costs = []
        for i in range(3):
            turns, statements = proxy.turns, proxy.statements
            assert store.create(deployed, {}, f"i{i}")
            costs.append((proxy.turns - turns, proxy.statements - statements))
        assert min(costs) == (1, 1), costs
        assert store.create(deployed, {}, "i0") is False  # the same start again
        with pytest.raises(IllegalAction, match="already exists with another"):
            store.create(deployed, {"other": 1}, "i0")
        assert [i.id for i in store.instances(limit=10)] == ["warm", "i0", "i1", "i2"]


def test_a_sequential_step_on_sqlite_runs_six_statements(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    store = make_store(f"sqlite:///{tmp_path / 'state.db'}")
    assert isinstance(store.backend, SqliteBackend)
    statements = [0]

    def traced(conn: sqlite3.Connection) -> sqlite3.Connection:
        conn.set_trace_callback(lambda _sql: statements.__setitem__(0, statements[0] + 1))
        return conn

    backend = store.backend
    real = backend._conn
    setattr(backend, "_conn", lambda: traced(real()))  # noqa: B010 - the test's own spy
    steps = step_costs(store, lambda: (statements[0],))
    assert max(n for (n,) in steps) <= SQLITE_STATEMENTS, steps
