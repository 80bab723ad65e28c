"""Histories (numbering, the wflang.history/1 document, replay) and workers (two on one
store, handler exceptions retried with backoff to the millisecond), on both stores."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping

import pytest

from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.render.history import parse_history, validate
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.engine import Handler, TaskCall
from wflang.runtime.ir import Value
from wflang.runtime.replay import replay
from wflang.store import Store
from wflang.store.records import IllegalAction, UnknownInstance

from .kit import (
    OPS_HANDLERS,
    T0,
    Durable,
    Factory,
    VirtualClock,
    data_table,
    opsflow,
    seq_problems,
)

# ---------------------------------------------------------------------- history


def _finished_opsflow(d: Durable, iid: str) -> str:
    d.start("opsflow", {"id": iid, "amount": 3}, iid)
    d.signal(iid, "go", {"by": "early"}, key="k")  # buffered
    d.complete("approve", {"ok": True}, iid)
    assert d.status(iid) == "completed"
    return iid


def test_history_is_numbered_from_one_without_gaps(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    ids = [_finished_opsflow(d, f"h-{n}") for n in range(3)]
    for iid in ids:
        rows = store.history(iid)
        seqs = [r.entry.seq for r in rows]
        assert seqs == list(range(1, len(rows) + 1))
        assert len(set(seqs)) == len(seqs)
        assert rows[0].entry.event is None and rows[0].entry.input == {"id": iid, "amount": 3}
        assert rows[0].idempotency_key == "start"
        assert seq_problems(store, iid) == []
        assert d.instance(iid).seq == len(rows)
    with pytest.raises(UnknownInstance):
        store.history("ghost")


def test_history_document_validates_and_replays_exactly(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    iid = _finished_opsflow(d, "doc-1")
    doc = d.client.history_document(iid)
    text = json.dumps(json.loads(codec.dumps(doc)))  # through JSON text, as `--json` prints it
    assert doc["format"] == "wflang.history/1"
    assert (doc["instance"], doc["workflow"], doc["version"]) == (iid, "opsflow", 1)
    assert doc["status"] == "completed" and doc["current"] == [] and doc["failed"] is None
    assert doc["output"] == {"a": 30, "b": 31, "ok": True, "by": "early"}
    info = store.instance(iid)
    assert doc["table_hash"] == info.table_hash
    table = store.table_for(info.table_hash)
    parsed = parse_history(text)
    validate(parsed, "opsflow", 1, {s.name for s in table.states})
    assert parsed.entered[0] == "a" and parsed.entered[-1] == "done"
    entries = codec.load_history(json.loads(text))
    assert entries == [r.entry for r in store.history(iid)]
    assert [e.get("actor") for e in doc["entries"]][-2:] == ["tester", "tester"]
    assert info.instance is not None
    got = replay(table, iid, entries, seed=info.instance.seed)
    assert got.ok, got.divergence
    assert got.instance == info.instance


def test_history_document_of_a_pending_instance_is_refused(store: Store) -> None:
    client = Client(store, actor="t")
    client.deploy(opsflow())
    client.start("opsflow", {"id": "p"}, instance_id="p-1")
    with pytest.raises(IllegalAction, match="has not started yet"):
        client.history_document("p-1")
    with pytest.raises(UnknownInstance):
        client.history_document("ghost")


# ---------------------------------------------------------------------- workers


def test_two_workers_on_one_store_never_run_a_call_twice(
    opener: Factory, store: Store, clock: VirtualClock
) -> None:
    """Worker B runs until idle *while* A holds a claimed call (inside A's handler), and the
    two then alternate: every call runs once, by one worker, and every instance completes."""
    other = opener()  # a second store object on the same database: another process
    ran: Counter[str] = Counter()
    by: dict[str, str] = {}

    def handlers(name: str) -> dict[str, Handler]:
        def one(id: str, task: TaskCall) -> Mapping[str, Value]:
            ran[task.idempotency_key] += 1
            by[task.idempotency_key] = name
            if name == "A" and not nested:
                nested.append(True)
                b.run_until_idle()  # B works while A's call is in flight
            return {"v": 1}

        def two(id: str, v: int, task: TaskCall) -> Mapping[str, Value]:
            ran[task.idempotency_key] += 1
            by[task.idempotency_key] = name
            return {"v": v + 1}

        return {"step.one": one, "step.two": two}

    nested: list[bool] = []
    client = Client(store, actor="t")
    client.deploy(data_table("two_step"))
    a = Worker(store, handlers("A"), worker_id="A", concurrency=1, batch=1)
    b = Worker(other, handlers("B"), worker_id="B", concurrency=1, batch=1)
    ids = [f"x-{n:02d}" for n in range(16)]
    for iid in ids[:8]:
        client.start("two_step", {"id": iid}, instance_id=iid)
    a.run_until_idle()
    for iid in ids[8:]:
        client.start("two_step", {"id": iid}, instance_id=iid)
        (a if int(iid[-2:]) % 2 else b).run_until_idle()
    a.run_until_idle()
    b.run_until_idle()

    assert nested and set(by.values()) == {"A", "B"}
    assert len(ran) == 2 * len(ids) and set(ran.values()) == {1}
    assert a.counters.claimed + b.counters.claimed == 2 * len(ids)
    assert a.counters.stale == b.counters.stale == 0
    for iid in ids:
        info = store.instance(iid)
        assert info.status == "completed" and info.instance is not None
        assert info.instance.output == {"v": 2}
        assert seq_problems(store, iid) == []
        assert [t.claims for t in store.tasks(instance_id=iid)] == [1, 1]


def test_a_handler_exception_is_retried_with_backoff_to_the_ms(
    store: Store, clock: VirtualClock
) -> None:
    """opsflow's `a`: retry { attempts: 4, backoff: 1s..1m, factor: 2 } - 1 s, 2 s, 4 s."""
    seen: list[tuple[int, int]] = []

    def flaky(amount: int, task: TaskCall, **_: Value) -> Mapping[str, Value]:
        seen.append((task.attempt, clock.ms - T0))
        if task.attempt < 4:
            raise RuntimeError(f"flaky {task.attempt}")
        return {"a": amount}

    d = Durable(store, clock, {**OPS_HANDLERS, "svc.a": flaky}, opsflow())
    iid = d.start("opsflow", {"id": "f"}, "flaky-1")
    due = 0
    for attempt, delay in ((2, 1000), (3, 2000), (4, 4000)):
        due += delay
        assert store.instance(iid).wake_at == T0 + due
        clock.ms = T0 + due - 1
        d.run()
        assert len(seen) == attempt - 1, f"attempt {attempt} ran 1 ms early"
        clock.ms = T0 + due
        d.run()
        assert seen[-1] == (attempt, due)
    assert seen == [(1, 0), (2, 1000), (3, 3000), (4, 7000)]
    assert d.instance(iid).tokens[0].waiting == "human"  # a and b done: at approve
    failures = [r.entry.event for r in store.history(iid)]
    failed = [e for e in failures if isinstance(e, rt.TaskFailed)]
    assert [(e.error, e.transient, e.message) for e in failed] == [
        ("RuntimeError", True, f"flaky {n}") for n in (1, 2, 3)
    ]
    decisions = [x for r in store.history(iid) for x in r.entry.decisions]
    assert "a: RuntimeError; retry 2 in 1000 ms" in decisions
    assert "a: RuntimeError; retry 4 in 4000 ms" in decisions


def test_retries_exhausted_dead_letter_the_instance(store: Store, clock: VirtualClock) -> None:
    def broken(**_: Value) -> None:
        raise ValueError("always")

    d = Durable(store, clock, {**OPS_HANDLERS, "svc.a": broken}, opsflow())
    iid = d.start("opsflow", {"id": "b"}, "broken-1")
    d.advance(10_000)
    assert d.recorder.services() == ["svc.a"] * 4
    assert [c[2] for c in d.recorder.calls] == [1, 2, 3, 4]
    assert d.status(iid) == "dead_lettered"
    assert "ValueError" in (d.instance(iid).error or "")
    assert [i.id for i in d.client.dead_letters()] == [iid]


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ({"a": "twelve"}, "InvalidResult 'a' must be int, not str"),
        ({"b": 1}, "InvalidResult missing field 'a' (int) in result of a"),
        ({"a": 2, "extra": "ok"}, None),  # more than declared: let through
        ([1], "InvalidResult the handler of svc.a returned list, not an object"),
        ("done", "InvalidResult the handler of svc.a returned str, not an object"),
    ],
)
def test_a_result_that_does_not_fit_the_service_fails_the_attempt(
    store: Store, clock: VirtualClock, result: object, problem: str | None
) -> None:
    """A handler bug is the handler's failure, not the worker's: the attempt fails for
    good (no retry), nothing wrong reaches the context, the worker goes on."""
    # The result is deliberately not always a Mapping[str, Value]: the worker must check it.
    handlers: dict[str, Handler] = {**OPS_HANDLERS, "svc.a": lambda **_: result}  # type: ignore[dict-item]
    d = Durable(store, clock, handlers, opsflow())
    iid = d.start("opsflow", {"id": "x"}, "bad-1")
    if problem is None:
        assert d.status(iid) == "waiting" and d.instance(iid).context["a"] == 2
        return
    assert d.status(iid) == "dead_lettered"
    inst = d.instance(iid)
    assert inst.error is not None and problem in inst.error, inst.error
    assert inst.context["a"] == 0
    assert d.recorder.services() == ["svc.a"]  # not retried
    assert seq_problems(store, iid) == []
