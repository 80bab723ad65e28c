"""``now()`` on SQLite and PostgreSQL (issue 14, item 4): the time of the event each
step processes (the store's virtual clock here), the same values of the same types as
on the engine and the test kit (tests/test_time.py), and a replay of the stored history
gives the stored instance although the clock has moved on. A start input and a signal's
payload may write times as ISO-8601 text; the store keeps the milliseconds."""

from __future__ import annotations

import pytest

from wflang.runtime.validate import InvalidValue
from wflang.store import Store

from ..test_time import (
    ENDS_AT,
    FORM,
    T0,
    WINDOW_INPUT,
    WINDOW_OUTPUT,
    WINDOW_SIGNAL,
    expected,
    meeting,
    note,
    stamps,
    window,
)
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


def test_input_and_signals_take_iso_8601_text_on_a_store(store: Store, clock: VirtualClock) -> None:
    durable = Durable(store, clock, {}, window())
    durable.start("window", WINDOW_INPUT, "w1")
    stored_input = durable.instance("w1").input
    assert stored_input["opens_at"] == WINDOW_OUTPUT["opens_at"]
    assert type(stored_input["grace"]) is int
    assert store.history("w1")[0].entry.input == stored_input
    durable.signal("w1", "moved", WINDOW_SIGNAL)
    assert durable.status("w1") == "completed", durable.instance("w1").error
    assert durable.instance("w1").output == WINDOW_OUTPUT
    replays_exactly(store, "w1")


def test_time_text_that_is_no_time_is_refused_and_nothing_is_stored(
    store: Store, clock: VirtualClock
) -> None:
    durable = Durable(store, clock, {}, window())
    with pytest.raises(InvalidValue) as refused:
        durable.start("window", {**WINDOW_INPUT, "grace": "ten minutes"}, "w2")
    assert refused.value.problems == (
        "'grace' must be duration (integer milliseconds or text such as PT10M or 10m), "
        "not 'ten minutes'",
    )
    assert store.instances() == []
    durable.start("window", WINDOW_INPUT, "w3")
    with pytest.raises(InvalidValue, match="'to' must be timestamp"):
        durable.signal("w3", "moved", {"to": "tomorrow"})
    assert durable.status("w3") == "waiting" and len(store.history("w3")) == 1


def test_a_form_takes_iso_8601_text_on_a_store(store: Store, clock: VirtualClock) -> None:
    durable = Durable(store, clock, {}, meeting())
    durable.start("meeting", {}, "m1")
    with pytest.raises(InvalidValue, match="'starts_at' must be timestamp"):
        durable.complete("book", {**FORM, "starts_at": "10 o'clock"}, "m1")
    assert durable.status("m1") == "waiting" and len(durable.client.open_tasks("m1")) == 1
    durable.complete("book", FORM, "m1")
    assert durable.instance("m1").output == {"ends_at": ENDS_AT}
    replays_exactly(store, "m1")
