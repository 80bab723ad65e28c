"""At-most-once calls (issue 5) in one process with a virtual clock: a call whose worker
vanished after claiming it is marked interrupted instead of run again, the instance
takes its error path, and the vanished worker's late result is refused."""

from __future__ import annotations

from collections.abc import Callable

from wflang.durable.worker import Worker
from wflang.runtime import instance as rt
from wflang.runtime.engine import Handler, TaskCall
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.store.records import ClaimedTask, TaskResult

from .helpers import VirtualClock, fixture_table, history_gaps

LEASE_MS = 1_000
AUDIT = "fx.audit"


def _saga_handlers(calls: list[str]) -> dict[str, Handler]:
    def record(service: str, result: dict[str, Value] | None = None) -> Handler:
        def fn(task: TaskCall, **args: Value) -> dict[str, Value] | None:
            calls.append(f"{service} {task.idempotency_key}")
            return result

        return fn

    return {
        "fx.reserve": record("fx.reserve", {"r": "r-1"}),
        "fx.release": record("fx.release"),
        "fx.charge": record("fx.charge", {"c": "c-1"}),
        "fx.refund": record("fx.refund"),
        "fx.ship": record("fx.ship", {"s": "s-1"}),
        AUDIT: record(AUDIT),
    }


def _at_the_audit(store: Store, calls: list[str]) -> None:
    """One saga instance run up to its audit call, which is then ready."""
    store.deploy(fixture_table("crash_saga"))
    store.create(store.deployed("crash_saga"), {"id": "x"}, "x")
    others = {k: v for k, v in _saga_handlers(calls).items() if k != AUDIT}
    Worker(store, others, worker_id="before", allow_missing_handlers=True).run_until_idle()
    assert [t.node for t in store.tasks(status="ready")] == ["audit"]


def _claim_audit(store: Store, worker: str, once: tuple[str, ...]) -> tuple[ClaimedTask, ...]:
    return store.advance(
        worker, claim=1, services=[AUDIT], at_most_once=once, lease_ms=LEASE_MS
    ).claimed


def test_a_vanished_at_most_once_call_is_interrupted_not_rerun(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(store_url, clock=clock)
    calls: list[str] = []
    _at_the_audit(store, calls)
    (a,) = _claim_audit(store, "A", (AUDIT,))  # A "starts" the call, then vanishes
    assert store.task(a.key).claims == 1

    clock.advance(LEASE_MS + 1)
    assert _claim_audit(store, "B", (AUDIT,)) == ()  # interrupted, not handed out again
    assert store.task(a.key).status == "interrupted"
    calls.clear()
    Worker(store, _saga_handlers(calls), at_most_once=frozenset({AUDIT})).run_until_idle()
    assert store.instance("x").status == "compensated"  # on any -> undo
    assert [c.split()[0] for c in calls] == ["fx.refund", "fx.release"]
    failed = [r.entry.event for r in store.history("x") if isinstance(r.entry.event, rt.TaskFailed)]
    assert [(e.key, e.error, e.transient) for e in failed] == [(a.key, "Interrupted", False)]

    before = [(r.entry.seq, r.idempotency_key) for r in store.history("x")]
    late = TaskResult(a.key, a.epoch, rt.TaskCompleted(a.key, {}))
    adv = store.advance("A", results=[late], lease_ms=LEASE_MS)
    assert (adv.stale, adv.results, adv.transitions) == (1, 0, 0)
    assert [(r.entry.seq, r.idempotency_key) for r in store.history("x")] == before
    assert not history_gaps(store, "x")


def test_an_at_most_once_call_is_not_rerun_by_a_worker_without_the_setting(
    store_url: str, make_store: Callable[..., Store], clock: VirtualClock
) -> None:
    store = make_store(store_url, clock=clock)
    _at_the_audit(store, [])
    (a,) = _claim_audit(store, "A", (AUDIT,))
    clock.advance(LEASE_MS + 1)
    reclaimed = _claim_audit(store, "B", ())  # B was not told the service is at-most-once
    assert reclaimed == ()
    assert store.task(a.key).status == "interrupted"
