"""One poisonous instance never stops the others (issue 20 item 1).

Whatever goes wrong while an instance is stepped or stored (a handler result that
cannot be stored, an arithmetic error, a row the database refuses, a bug) dead-letters
that instance with the reason; every other instance of the same batch commits, and
the worker goes on. Each poison is mixed into one batch with healthy instances.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime import step as st
from wflang.runtime.engine import Handler, TaskCall
from wflang.runtime.table import Table
from wflang.store import Store
from wflang.store.effects import StoreEffects
from wflang.store.records import Advanced

from .kit import VirtualClock, compile_text, seq_problems

TWO_STEP = """\
workflow twostep version 1

input { id: string }

context { v: int = 0 }

output { v: int }

service step.one(id: string) -> { v: int }

service step.two(id: string, v: int) -> { v: int }

start one

task one: service step.one {
    args { id: input.id }
    output { v: result.v }
    next two
}

task two: service step.two {
    args { id: input.id, v: context.v }
    output { v: result.v }
    next done
}

end done: completed {
    output { v: context.v }
}
"""

#: What step.one returns for each poisonous instance: fields beside the declared one
#: that no store can keep (the declared ``v`` is right, so the result check lets them by).
POISONS: dict[str, dict[str, object]] = {
    "p-datetime": {"v": 1, "at": datetime.datetime(2026, 1, 1)},
    "p-set": {"v": 1, "tags": {1, 2}},
    "p-bytes": {"v": 1, "raw": b"\x00\x01"},
    "p-huge-int": {"v": 1, "n": 10**5000},
    "p-huge-declared-int": {"v": 10**5000},
}
HEALTHY = [f"ok-{i}" for i in range(6)]


def _one(id: str, task: TaskCall) -> Mapping[str, Any]:
    return POISONS.get(id, {"v": 1})


def _two(id: str, v: int, task: TaskCall) -> Mapping[str, Any]:
    return {"v": v + 1}


HANDLERS: dict[str, Handler] = {"step.one": _one, "step.two": _two}


def _start(store: Store, ids: list[str]) -> Client:
    client = Client(store, actor="tester")
    client.deploy(compile_text(TWO_STEP))
    for iid in ids:
        client.start("twostep", {"id": iid}, instance_id=iid)
    return client


def _worker(store: Store, advances: list[Advanced], **kw: Any) -> Worker:
    # Room for every call at once: all results come back in one group commit.
    return Worker(store, HANDLERS, concurrency=64, batch=64, on_advance=advances.append, **kw)


def _error(store: Store, iid: str) -> str:
    info = store.instance(iid)
    assert info.instance is not None
    return str(info.instance.error)


def _assert_healthy_done(store: Store, ids: list[str]) -> None:
    for iid in ids:
        info = store.instance(iid)
        assert info.status == "completed", (iid, info.status, info.instance)
        assert info.instance is not None and info.instance.output == {"v": 2}
        assert not seq_problems(store, iid)


def test_unstorable_handler_results_dead_letter_only_their_instances(store: Store) -> None:
    """A handler result no store can keep is an invalid result (its attempt fails for
    good) in the same batch as the healthy results, which commit."""
    ids = sorted([*HEALTHY, *POISONS])
    _start(store, ids)
    advances: list[Advanced] = []
    _worker(store, advances).run_until_idle()

    # One transaction took every result back: the poisons were in the healthy ones' batch.
    batch = next(a for a in advances if a.results)
    assert batch.results == len(ids)
    _assert_healthy_done(store, HEALTHY)
    expected = {
        "p-datetime": "'at' is a datetime, not a JSON value",
        "p-set": "'tags' is a set, not a JSON value",
        "p-bytes": "'raw' is a bytes, not a JSON value",
        "p-huge-int": "'n' is a whole number beyond 64 bits",
        "p-huge-declared-int": "'v' is a whole number beyond 64 bits",
    }
    for iid, words in expected.items():
        info = store.instance(iid)
        assert info.status == "dead_lettered", (iid, info.status)
        assert words in _error(store, iid), _error(store, iid)
        assert not seq_problems(store, iid)
        # The result that cannot be stored fails its attempt for good, as a result that
        # does not fit does: the workflow's own error routes would see it.
        event = store.history(iid)[-1].entry.event
        assert isinstance(event, rt.TaskFailed), event
        assert (event.error, event.transient) == ("InvalidResult", False)
        assert words in event.message
    assert store.stats().instances == {"completed": len(HEALTHY), "dead_lettered": len(POISONS)}
    tasks = store.tasks(limit=1000)
    assert {t.status for t in tasks} == {"done"}, [(t.key, t.status) for t in tasks]


def test_a_poisoned_instance_can_be_cancelled_and_retried(store: Store) -> None:
    """An operator can act on a poisoned instance: cancel it, or retry it once its
    handler is fixed (the call runs again from the step that failed)."""
    client = _start(store, ["p-datetime", "p-set", "ok-0"])
    _worker(store, []).run_until_idle()
    assert store.instance("p-datetime").status == "dead_lettered"

    client.cancel("p-set", compensate=False, reason="poisoned")
    client.retry("p-datetime", reason="handler fixed")
    fixed: dict[str, Handler] = {**HANDLERS, "step.one": lambda id, task: {"v": 1}}
    Worker(store, fixed).run_until_idle()
    assert store.instance("p-set").status == "cancelled"
    assert store.instance("p-datetime").status == "completed"
    assert store.instance("ok-0").status == "completed"
    for iid in ("p-set", "p-datetime", "ok-0"):
        assert not seq_problems(store, iid)


def test_an_exception_escaping_the_step_stops_only_its_instance(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception the step function lets out (as ``decimal.InvalidOperation`` from
    ``round(1e30, 2)`` did, before numbers were bounded): only that instance is
    dead-lettered, with the reason, in the batch that starts all of them."""
    real = st.start

    def start(table: Table, instance_id: str, *args: Any, **kw: Any) -> st.Step:
        if instance_id == "bad":
            raise decimal.InvalidOperation([decimal.InvalidOperation])
        return real(table, instance_id, *args, **kw)

    monkeypatch.setattr(st, "start", start)
    ids = sorted([*HEALTHY, "bad"])
    _start(store, ids)
    advances: list[Advanced] = []
    _worker(store, advances).run_until_idle()
    assert advances[0].transitions == len(ids)  # one batch started all of them
    _assert_healthy_done(store, HEALTHY)
    assert store.instance("bad").status == "dead_lettered"
    assert _error(store, "bad").startswith("InvalidOperation: ")
    assert [r.idempotency_key for r in store.history("bad")] == ["start"]
    assert not seq_problems(store, "bad")


@pytest.fixture
def failing_encoder(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Storing the state of ``bad`` fails (a bug), unless it is being dead-lettered."""
    real = codec.dump_instance

    def dump(inst: rt.Instance) -> str:
        if inst.id == "bad" and inst.status is not rt.Status.DEAD_LETTERED:
            raise RuntimeError("the encoder broke")
        return real(inst)

    monkeypatch.setattr(codec, "dump_instance", dump)
    yield


@pytest.mark.usefixtures("failing_encoder")
def test_any_failure_while_storing_an_instance_is_contained(store: Store) -> None:
    ids = sorted([*HEALTHY, "bad"])
    _start(store, ids)
    _worker(store, []).run_until_idle()
    _assert_healthy_done(store, HEALTHY)
    info = store.instance("bad")
    assert info.status == "dead_lettered"
    assert _error(store, "bad") == "RuntimeError: the encoder broke"
    # Its start could not be stored: the start itself is the dead-lettering transition.
    assert [r.idempotency_key for r in store.history("bad")] == ["start"]
    assert not seq_problems(store, "bad")


@pytest.fixture
def refused_row(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The database refuses a row that scheduling ``db-bad``'s call writes (a NOT NULL
    violation): on PostgreSQL this aborts the transaction, not only the statement."""
    real = StoreEffects.schedule_task

    def schedule(self: StoreEffects, c: rt.ScheduleTask) -> None:
        if self.instance_id == "db-bad":
            self.tx.execute("INSERT INTO wf_timer (instance_id, timer_id, due_at) "
                            "VALUES (?, ?, ?)", (self.instance_id, "t", None))  # fmt: skip
        real(self, c)

    monkeypatch.setattr(StoreEffects, "schedule_task", schedule)
    yield


@pytest.mark.usefixtures("refused_row")
def test_a_row_the_database_refuses_stops_only_its_instance(store: Store) -> None:
    ids = sorted([*HEALTHY, "db-bad"])
    _start(store, ids)
    advances: list[Advanced] = []
    _worker(store, advances).run_until_idle()
    _assert_healthy_done(store, HEALTHY)
    assert store.instance("db-bad").status == "dead_lettered"
    assert "due_at" in _error(store, "db-bad") or "NOT NULL" in _error(store, "db-bad").upper()
    assert not seq_problems(store, "db-bad")
    # The first transaction started all of them: the refused row was in their batch.
    assert advances[0].transitions == len(ids)


def test_the_worker_loop_goes_on_past_a_poison(store: Store) -> None:
    """``Worker.run`` (the process loop) finishes the healthy instances: it never gets
    stuck retrying a transaction that a poisonous instance makes fail."""
    import threading

    ids = sorted([*HEALTHY, *POISONS])
    _start(store, ids)
    worker = Worker(store, HANDLERS, concurrency=8, poll_ms=10)
    done = threading.Event()

    def watch(adv: Advanced) -> None:
        counts = store.stats().instances
        if counts.get("completed", 0) + counts.get("dead_lettered", 0) == len(ids):
            done.set()

    worker.on_advance = watch
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        assert done.wait(60), store.stats().instances  # a bound, not a margin: it hung
    finally:
        worker.stop()
        thread.join(30)
    assert not thread.is_alive(), "the worker did not drain"
    _assert_healthy_done(store, HEALTHY)
    assert store.stats().instances == {"completed": len(HEALTHY), "dead_lettered": len(POISONS)}


def test_the_engine_fails_an_unstorable_result_as_the_stores_do() -> None:
    """The in-memory engine (and so the test kit) refuses what a store cannot keep, as
    the stores do."""
    from wflang.runtime.engine import Engine

    engine = Engine([compile_text(TWO_STEP)], HANDLERS)
    for iid in ("ok-0", *POISONS):
        engine.start("twostep", {"id": iid}, instance_id=iid)
    assert engine.instance("ok-0").status is rt.Status.COMPLETED
    for iid in POISONS:
        inst = engine.instance(iid)
        assert inst.status is rt.Status.DEAD_LETTERED, iid
        assert "not a JSON value" in str(inst.error) or "beyond 64 bits" in str(inst.error)


TIMED = """\
workflow timed version 1

input { id: string }

output { ok: bool }

error Boom

service s.a(id: string) raises Boom

start a

task a: service s.a {
    args { id: input.id }
    timeout 1m -> late
    next done
}

end late: completed {
    output { ok: false }
}

end done: completed {
    output { ok: true }
}
"""


def _boom(id: str) -> None:
    from wflang.runtime.engine import TaskError

    raise TaskError("Boom", "no", transient=False)


def test_a_dead_lettered_instance_timer_fires_once_not_forever(
    store: Store, clock: VirtualClock
) -> None:
    """The boundary timer of a dead-lettered instance falls due: it is taken once,
    ignored, and gone; no worker steps the instance again and again."""
    client = Client(store, actor="tester")
    client.deploy(compile_text(TIMED))
    client.start("timed", {"id": "x"}, instance_id="x")
    worker = Worker(store, {"s.a": _boom})
    worker.run_until_idle()
    assert store.instance("x").status == "dead_lettered"
    clock.advance(120_000)
    assert worker.run_until_idle(max_rounds=10) == 1  # raised "still busy" before
    info = store.instance("x")
    assert (info.status, info.wake_at) == ("dead_lettered", None)
    assert info.instance is not None and info.instance.timers == ()
    assert not seq_problems(store, "x")


def test_the_engine_drops_a_dead_lettered_instance_timer_as_the_stores_do() -> None:
    from wflang.runtime.engine import Engine

    engine = Engine([compile_text(TIMED)], {"s.a": _boom})
    engine.start("timed", {"id": "x"}, instance_id="x")
    engine.advance(120_000)
    inst = engine.instance("x")
    assert inst.status is rt.Status.DEAD_LETTERED and inst.timers == ()
