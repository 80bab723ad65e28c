"""Carried steps (``wflang.store.carried``, issue 18): a sequential step without first
reads, behind a guard that sends it to the general path whenever something moved.

Each way something can move while a call runs has a test that makes it move, inside the
handler, and shows that the guard caught it (the carried transaction rolled back) and
that the general path then committed what it always did. A property test runs the
engine-vs-store workflows on two stores, one carrying steps and one not, and compares
their histories row by row, times included.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.engine import TaskCall
from wflang.runtime.ir import Value
from wflang.store import Store, carried, open_store
from wflang.store.backend import Named
from wflang.store.records import TaskResult

from ..literals import same
from ..test_step_properties import LENIENT, workflows
from .kit import PG_DSN, SECOND, Durable, Factory, VirtualClock, with_search_path
from .test_differential import Handler, actions, difference, scripts, with_values


def table_of(text: str) -> Any:
    compiled = compile_workflow(parse(text, "t.wf"), LENIENT)
    assert compiled.table is not None, [d.message for d in compiled.check.diagnostics]
    return compiled.table


CHAIN = table_of(
    """workflow chain version 1
context { n: int = 0 }
service s.op() -> { v: int }
start a
task a: service s.op { output { n: context.n + result.v } next b }
task b: service s.op { output { n: context.n + result.v } next c }
task c: service s.op { output { n: context.n + result.v } next d }
task d: service s.op { output { n: context.n + result.v } next done }
end done: completed
"""
)

#: Two tasks, then a wait for the signal ``go`` (buffered if it comes while b runs).
THEN_WAIT = table_of(
    """workflow then_wait version 1
context { n: int = 0 }
signal go { v: int }
service s.op() -> { v: int }
start a
task a: service s.op { output { n: result.v } next b }
task b: service s.op { output { n: context.n + result.v } next w }
wait w: signal go { output { n: context.n + signal.v } next done }
end done: completed
"""
)


class Spy:
    """Counts the carried steps tried (guards made) and those that rolled back for the
    general path to run (``moved``: the guard raised, or a write failed before it did:
    a statement's parts run in no set order, and any error rolls all of them back)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.guards = self.moved = 0
        guard, moved = carried.send_guard, carried.moved

        def counted_guard(*args: Any, **kw: Any) -> list[Named]:
            self.guards += 1
            return guard(*args, **kw)

        def counted_moved(err: BaseException) -> bool:
            self.moved += 1  # asked of every carried transaction that failed
            return moved(err)

        monkeypatch.setattr(carried, "send_guard", counted_guard)
        monkeypatch.setattr(carried, "moved", counted_moved)


def ok(**kw: Value) -> dict[str, Value]:
    return {"v": 1}


def test_a_chain_s_steps_are_carried_and_write_what_the_general_path_writes(
    opener: Factory, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    histories = []
    for carries in (True, False):
        store = opener()
        store.migrate()
        store.carries = carries
        durable = Durable(store, clock, {"s.op": ok}, CHAIN)
        durable.start("chain", {}, f"c-{carries}")
        assert durable.instance(f"c-{carries}").context == {"n": 4}
        rows = [
            (r.idempotency_key, r.worker, codec.unstructure_entry(r.entry))
            for r in store.history(f"c-{carries}")
        ]
        histories.append(renamed(rows, f"c-{carries}"))
        if carries:
            # every result but none of the start: 4 carried steps, none moved
            assert (spy.guards, spy.moved) == (4, 0)
    assert spy.guards == 4  # the store that does not carry sent no guard
    assert same(histories[0], histories[1])


def test_a_signal_that_came_while_the_call_ran_sends_the_step_to_the_general_path(
    store: Store, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    client = Client(store)

    def signalling(task: TaskCall, **kw: Value) -> dict[str, Value]:
        if task.node == "b":
            assert client.signal(task.instance, "go", {"v": 10})
        return {"v": 1}

    durable = Durable(store, clock, {"s.op": signalling}, THEN_WAIT)
    durable.start("then_wait", {}, "i1")
    inst = durable.instance("i1")
    assert (inst.status, inst.context) == (rt.Status.COMPLETED, {"n": 12})
    # a's result carried; b's found the signal's inbox row due: moved, then the general
    # path stepped the signal (buffered) and the result, in time order, in one go
    assert (spy.guards, spy.moved) == (2, 1)
    events = [type(r.entry.event).__name__ for r in store.history("i1")]
    assert events == ["NoneType", "TaskCompleted", "SignalReceived", "TaskCompleted"]


def test_an_instance_stepped_by_another_worker_meanwhile_is_not_carried_over(
    opener: Factory, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    store, other = opener(), opener()
    store.migrate()
    other.carries = False  # the spy counts this store's guards only
    client = Client(other)

    def signalled_and_stepped_elsewhere(task: TaskCall, **kw: Value) -> dict[str, Value]:
        if task.node == "b":
            assert client.signal(task.instance, "go", {"v": 10})
            elsewhere = Worker(other, {"s.op": ok}, worker_id="w-other")
            assert elsewhere.run_until_idle() == 1  # the signal, buffered: seq + 1
        return {"v": 1}

    durable = Durable(store, clock, {"s.op": signalled_and_stepped_elsewhere}, THEN_WAIT)
    durable.start("then_wait", {}, "i1")
    inst = durable.instance("i1")
    assert (inst.status, inst.context) == (rt.Status.COMPLETED, {"n": 12})
    # b's step: no inbox row was due any more, its lease held, but the instance's seq
    # had moved (its cached copy is stale): the guard sent it to the general path
    assert (spy.guards, spy.moved) == (2, 1)
    assert [r.worker for r in store.history("i1")] == ["w-test", "w-test", "w-other", "w-test"]


def test_a_start_another_worker_made_is_not_carried_again(
    opener: Factory, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start of an instance this store created is carried unless someone started it
    meanwhile: then the guard sends it to the general path, and the store forgets that
    it created it (it tries no more)."""
    spy = Spy(monkeypatch)
    store, other = opener(), opener()
    store.migrate()
    other.carries = False  # the spy counts this store's guards only
    store.deploy(CHAIN)
    assert store.advance("w", claim=1).transitions == 0  # carrying allowed from here
    store.create(store.deployed("chain"), {}, "i1")
    started = other.advance("w-other", claim=0)  # started elsewhere, its call left ready
    assert started.transitions == 1
    # this store's start of it moved (the instance's seq did); the general path then
    # finds its first call due and claims it
    adv = store.advance("w", claim=1)
    assert (adv.transitions, [t.key.split(":")[1] for t in adv.claimed]) == (0, ["a"])
    assert (spy.guards, spy.moved) == (1, 1)
    assert store.advance("w", claim=1).transitions == 0
    assert spy.guards == 1  # not tried again
    assert [r.worker for r in store.history("i1")] == ["w-other"]


def test_a_result_whose_lease_was_lost_is_refused_as_on_the_general_path(
    opener: Factory, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    # the clock moves past the lease: a store that carried steps a moment before still
    # does (CARRY_MS is about real workers' others; the guard is what this test is about)
    monkeypatch.setattr(carried, "CARRY_MS", 3_600_000)
    store, other = opener(), opener()
    store.migrate()
    other.carries = False  # the spy counts this store's guards only
    calls: list[str] = []

    def slow(task: TaskCall, **kw: Value) -> dict[str, Value]:
        calls.append(task.node)
        if task.node == "b" and len(calls) == 2:
            clock.advance(31 * SECOND)  # past the lease: the other worker takes the call
            Worker(other, {"s.op": ok}, worker_id="w-other").run_until_idle()
        return {"v": 1}

    durable = Durable(store, clock, {"s.op": slow}, CHAIN)
    durable.start("chain", {}, "i1")
    assert durable.instance("i1").context == {"n": 4}
    # b ran twice (here, then elsewhere under a new epoch, which committed it and went on
    # to c and d); this worker's result for b was stale: the guard sent it back, the
    # general path refused it, and nothing was committed twice
    assert calls == ["a", "b"]
    assert durable.worker.counters.stale == 1
    assert (spy.guards, spy.moved) == (2, 1)
    keys = [r.idempotency_key for r in store.history("i1")]
    assert len(keys) == len(set(keys)) == 5


@contextlib.contextmanager
def on_the_database_s_clock(
    url: str, monkeypatch: pytest.MonkeyPatch, table: Any
) -> Iterator[tuple[Store, Spy]]:
    """A migrated PostgreSQL store on the database's clock (no virtual one), ``table``
    deployed, with a ``Spy``; carrying is not ended by time (``CARRY_MS``: an estimate
    made wrong on purpose, or a loaded machine, would end it), the guard is tested."""
    if not url.startswith("postgresql"):
        pytest.skip("SQLite's clock is this machine's: nothing to estimate")
    spy = Spy(monkeypatch)
    monkeypatch.setattr(carried, "CARRY_MS", 3_600_000)
    store = open_store(url, pool=2)
    try:
        store.migrate()
        store.deploy(table)
        yield store, spy
    finally:
        store.close()


def test_a_carried_step_s_time_is_checked_against_the_database_s_clock(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the database's clock (no virtual one), a carried step's time is this
    machine's clock plus the offset the last general advance measured; the guard refuses
    one that is after the database's time or more than a second before it."""
    with on_the_database_s_clock(url, monkeypatch, CHAIN) as (store, spy):
        worker = Worker(store, {"s.op": ok}, concurrency=1)
        skewed: list[Any] = []

        def skewing(adv: Any) -> None:
            if len(skewed) == 1:  # after a's carried step: an estimate 5 s ahead
                assert store.carrying.offset is not None
                store.carrying.offset += 5 * SECOND
            skewed.append(adv)

        worker.on_advance = skewing
        store.create(store.deployed("chain"), {}, "i1")
        worker.run_until_idle()
        assert store.instance("i1").status == "completed"
        # a carried; b moved (its time after the database's), the general path measured
        # the offset again; c and d carried
        assert (spy.guards, spy.moved) == (4, 1)
        ats = [r.entry.at for r in store.history("i1")]
        assert ats == sorted(ats)


STOPPABLE = table_of(
    """workflow stoppable version 1
signal stop
service s.op() -> { v: int }
start a
task a: service s.op { on signal stop -> stopped next b }
task b: service s.op { next done }
end done: completed
end stopped: cancelled
"""
)


def test_a_signal_due_by_the_database_s_clock_is_not_missed(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A carried step's time is an estimate behind the database's clock. A signal the
    handler sent just before it answered is due by the database's clock though not by
    the estimate: the guard must send the step to the general path, which takes the
    signal first (here it stops the task it interrupts). Was: the guard compared the
    inbox row with the estimate, the result was committed first, and the boundary
    signal was missed (the instance completed)."""
    with on_the_database_s_clock(url, monkeypatch, STOPPABLE) as (store, spy):
        client = Client(store)

        def stopping(task: TaskCall, **kw: Value) -> dict[str, Value]:
            if task.node == "a":
                assert client.signal(task.instance, "stop", {})
            return {"v": 1}

        worker = Worker(store, {"s.op": stopping}, concurrency=1)
        lagging: list[Any] = []

        def lag(adv: Any) -> None:
            if not lagging:  # after the start (general): an estimate 500 ms behind
                assert store.carrying.offset is not None
                store.carrying.offset -= 500
            lagging.append(adv)

        worker.on_advance = lag
        store.create(store.deployed("stoppable"), {}, "i1")
        worker.run_until_idle()
        assert store.instance("i1").status == "cancelled"
        assert (spy.guards, spy.moved) == (1, 1)  # a's result: moved, then general


def test_carried_steps_on_the_database_s_clock_are_not_ahead_of_it(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offset a general advance measures is the database's clock rounded to the
    millisecond against this machine's floored: taken as it is, about one carried step in
    thirty was a millisecond ahead of the database and failed its guard (a wasted round
    trip, then the general path). Kept back by ``ROUNDING_MS``, none is."""
    with on_the_database_s_clock(url, monkeypatch, CHAIN) as (store, spy):
        worker = Worker(store, {"s.op": ok}, concurrency=1)
        for i in range(40):
            store.create(store.deployed("chain"), {}, f"i{i}")
            worker.run_until_idle()
        # each instance's start (this store created it) and its 4 results carried, but
        # the first start (no general advance had measured the clock yet) and one step
        # after each CARRY_STEPS (64) carried in a row (nothing else is general: a
        # carried step that ends its instance asks whether anything else is due): 200
        # steps, 196 carried, none moved
        assert (spy.guards, spy.moved) == (196, 0)


def test_a_carried_step_is_only_tried_where_it_can_be(store: Store) -> None:
    """One result only, of an instance this process committed last, not announced, and
    not of an asynchronous call (handed off to its client): the general path's cases."""
    durable = Durable(store, VirtualClock(), {"s.op": ok}, CHAIN)
    durable.client.start("chain", {}, instance_id="i1")
    adv = store.advance("w", claim=1)
    (call,) = adv.claimed
    result = TaskResult(call.key, call.epoch, rt.TaskCompleted(call.key, {"v": 1}), "i1")
    assert carried.carry(store.cache, store.catalog, [result], ()) is not None
    assert carried.carry(store.cache, store.catalog, [result], ("i1",)) is None  # announced
    assert carried.carry(store.cache, store.catalog, [result, result], ()) is None
    unknown = TaskResult(call.key, call.epoch, result.event, None)
    assert carried.carry(store.cache, store.catalog, [unknown], ()) is None
    store.cache.forget(["i1"])
    assert carried.carry(store.cache, store.catalog, [result], ()) is None


def test_a_store_carries_steps_for_a_short_while_after_a_general_advance() -> None:
    c = carried.Carrying()
    assert not c.allows(0)  # never advanced in general: nothing to carry from
    c.general(1_000, None)
    assert c.allows(1_000 + carried.CARRY_MS)
    assert not c.allows(1_001 + carried.CARRY_MS)  # others' due work waits no longer
    for _ in range(carried.CARRY_STEPS):
        assert c.allows(1_000)
        c.carried()
    assert not c.allows(1_000)  # a clock that stands still does not carry for ever
    c.general(1_000, 7)  # kept back by the rounding of the two clocks it compares
    assert c.allows(1_000) and c.offset == 7 - carried.ROUNDING_MS


_names = iter(range(1_000_000))


@contextlib.contextmanager
def two_stores(url: str, tmp_path: Path, name: str, clock: VirtualClock) -> Iterator[list[Store]]:
    """Two fresh stores of the test's kind on one clock (PostgreSQL: a schema each), the
    second not carrying steps."""
    import psycopg

    stores: list[Store] = []
    schemas: list[str] = []
    try:
        for carries in (True, False):
            if url.startswith("sqlite"):
                where = f"sqlite:///{tmp_path / f'{name}-{carries}'}.db"
            else:
                schemas.append(f"wf_t_{uuid.uuid4().hex[:12]}")
                with psycopg.connect(PG_DSN, autocommit=True) as conn:
                    conn.execute(f"CREATE SCHEMA {schemas[-1]}")
                where = with_search_path(PG_DSN, schemas[-1])
            store = open_store(where, clock=clock, pool=2)
            stores.append(store)
            store.migrate()
            store.carries = carries
        yield stores
    finally:
        for store in stores:
            store.close()
        for schema in schemas:
            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(workflows(), scripts, actions)
def test_carried_and_general_steps_write_identical_histories(
    url: str,
    tmp_path: Path,
    source: str,
    script: dict[str, list[tuple[Any, ...]]],
    steps: list[tuple[Any, ...]],
) -> None:
    name = f"carry{next(_names)}"
    text = with_values(source).replace("workflow prop version 1", f"workflow {name} version 1")
    table = table_of(text)
    clock = VirtualClock()
    with two_stores(url, tmp_path, name, clock) as stores:
        runs = []
        for store in stores:
            iid = name  # the same id: the same seed (retries' jitter)
            handler = Handler(script, iid)
            runs.append((Durable(store, clock, {"s.work": handler}, table), iid, handler))
        start = clock.ms
        for durable, iid, _ in runs:
            clock.ms = start
            durable.start(name, {}, iid)
            for n, action in enumerate(steps):
                if action[0] == "advance":
                    durable.advance(action[1])
                elif not durable.instance(iid).status.finished:
                    durable.signal(iid, "go", {"v": action[1]}, key=f"k{n}" if action[2] else None)
        got = [outcome(durable, iid, handler) for durable, iid, handler in runs]
    agree(*got)


def outcome(durable: Durable, iid: str, handler: Handler) -> tuple[Any, ...]:
    """What a run left: the instance's history rows and state, and its calls."""
    rows = [
        (r.idempotency_key, r.worker, codec.unstructure_entry(r.entry))
        for r in durable.store.history(iid)
    ]
    return rows, codec.unstructure_instance(durable.instance(iid)), handler.calls


def agree(first: tuple[Any, ...], second: tuple[Any, ...]) -> None:
    """Two runs' ``outcome``s are the same, or where they first differ is said."""
    for label, a, b in zip(("history", "instance", "calls"), first, second, strict=True):
        if not same(a, b):
            raise AssertionError(difference(label, a, b))


def renamed(value: Any, iid: str) -> Any:
    """``value`` with the instance id in its texts replaced (the two runs' ids differ)."""
    return codec.loads(codec.dumps(value).replace(iid, "IID")) if value is not None else None


def test_an_instance_row_deleted_meanwhile_gets_nothing_written(
    store: Store, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard runs even when the instance row is gone (deleted by hand while its
    call ran): no history row and no next call are written for an instance that is
    not there; the general path then refuses the result."""
    spy = Spy(monkeypatch)

    def deleting(task: TaskCall, **kw: Value) -> dict[str, Value]:
        if task.node == "b":
            with store.backend.transaction() as tx:
                tx.execute("DELETE FROM wf_instance WHERE id = ?", (task.instance,))
        return {"v": 1}

    durable = Durable(store, clock, {"s.op": deleting}, CHAIN)
    durable.start("chain", {}, "i1")
    assert (spy.guards, spy.moved) == (2, 1)
    assert [r.idempotency_key.split(":")[2] for r in store.history("i1")[1:]] == ["a"]
    with store.backend.read() as tx:
        nodes = [str(n) for (n,) in tx.query("SELECT node FROM wf_task ORDER BY node")]
    assert nodes == ["a", "b"]  # no call of c


def test_the_cache_keeps_the_last_two_instances_created_and_offers_only_a_lone_one() -> None:
    """A client that creates many instances (a row holds the input) keeps two at most;
    a start is carried only when one alone waits (of two, the general path starts both)."""
    from wflang.store.instance_cache import InstanceCache
    from wflang.store.rows import Locked

    def row(iid: str) -> Locked:
        return Locked(iid, "h", -1, None, "{}", 1, None, None, None, None, "pending", 5, None, 5)

    cache = InstanceCache()
    assert cache.fresh() is None
    for iid in ("a", "b", "c"):
        cache.created(row(iid))
    assert cache.fresh() is None  # b and c wait (a was let go)
    cache.forget(["b"])
    fresh = cache.fresh()
    assert fresh is not None and fresh.id == "c"
    cache.forget(["c"])
    assert cache.fresh() is None
