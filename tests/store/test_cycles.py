"""Repeating boundary timers on both stores (issue 15 item 2), on the virtual clock: each
firing is a timer row of its own (``boundary:K:N``), fired once, and the store ends where
the engine ends."""

from __future__ import annotations

from pathlib import Path

from wflang.runtime import codec
from wflang.store import Store
from wflang.testing import WorkflowEnv

from ..literals import same
from .kit import HOUR, MINUTE, T0, Durable, VirtualClock, compile_text, replays_exactly

REMINDERS = compile_text(
    (Path(__file__).resolve().parents[1] / "data" / "cycles" / "reminders.wf").read_text()
)


def fired(store: Store, iid: str) -> list[tuple[int, str]]:
    return [
        (r.entry.at - T0, d)
        for r in store.history(iid)
        for d in r.entry.decisions
        if d.startswith("timer boundary")
    ]


def test_a_cycle_fires_on_a_store_as_in_memory(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {}, REMINDERS)
    env = WorkflowEnv([REMINDERS], {}, now=T0)
    d.start("reminders", {"id": "a"}, "r-1")
    env.start("reminders", {"id": "a"}, instance_id="r-1")
    d.advance(70 * MINUTE)
    env.advance(ms=70 * MINUTE)
    d.signal("r-1", "approved", {})
    env.signal("r-1", "approved")
    d.advance(5 * HOUR)
    env.advance(hours=5)

    assert fired(store, "r-1") == [
        (10 * MINUTE, "timer boundary:0 of approval fired"),
        (20 * MINUTE, "timer boundary:0:2 of approval fired"),
        (30 * MINUTE, "timer boundary:0:3 of approval fired"),
        (HOUR, "timer boundary:1 of approval fired"),
    ]
    assert d.status("r-1") == "completed"
    assert d.instance("r-1").output == {"reminded": 3}
    want = [codec.unstructure_entry(e) for e in env.history("r-1")]
    got = [codec.unstructure_entry(r.entry) for r in store.history("r-1")]
    assert same(want, got)
    assert store.stats().due_timers == 0
    replays_exactly(store, "r-1")
