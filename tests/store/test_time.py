"""``now()`` on SQLite and PostgreSQL (issue 14, item 4): the time of the event each
step processes (the store's virtual clock here), the same values of the same types as
on the engine and the test kit (tests/test_time.py), and a replay of the stored history
gives the stored instance although the clock has moved on."""

from __future__ import annotations

from wflang.store import Store

from ..test_time import T0, expected, note, stamps
from .kit import MINUTE, Durable, VirtualClock, replays_exactly


def test_now_is_the_steps_clock_on_a_store(store: Store, clock: VirtualClock) -> None:
    assert clock.ms == T0
    durable = Durable(store, clock, {"clock.note": note}, stamps())
    opens_at = T0 - 30 * MINUTE
    durable.start("stamps", {"opens_at": opens_at}, "s1")
    durable.advance(5 * MINUTE)
    assert durable.status("s1") == "completed", durable.instance("s1").error
    inst = durable.instance("s1")
    assert inst.output == expected(opens_at)
    assert type(inst.output["deadline"]) is int and inst.context["noted"] == T0
    durable.advance(3 * 60 * MINUTE)
    replays_exactly(store, "s1")
