"""The runtime's JSON: instances, events, commands and histories round-trip exactly."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.replay import replay
from wflang.testing import HOUR, WorkflowEnv, succeed, transient

EXAMPLES = Path(__file__).parent.parent / "examples"

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(values)
def test_values_round_trip_with_exact_decimals(value: object) -> None:
    back = codec.loads(codec.dumps(value))
    assert back == value
    assert codec.dumps(back) == codec.dumps(value)


def test_a_string_that_looks_like_a_marked_decimal_stays_a_string() -> None:
    value = {"a": "\x1fdeadbeefdeadbeef:1.5", "b": Decimal("4.95"), "c": Decimal("5")}
    text = codec.dumps(value)
    assert '"b":4.95' in text and '"c":5' in text
    assert codec.loads(text) == value
    assert isinstance(codec.loads(text)["a"], str)


def _order_env() -> tuple[WorkflowEnv, str]:
    env = WorkflowEnv.from_files(
        EXAMPLES / "order_saga.wf",
        handlers={
            "inventory.reserve": succeed({"reservation_id": "r-1"}),
            "inventory.release": succeed(),
            "payments.charge": [transient("GatewayTimeout"), succeed({"charge_id": "c-1"})],
            "payments.refund": succeed(),
            "shipping.create": succeed({"shipment_id": "s-1"}),
            "shipping.cancel": succeed(),
            "notify.send": succeed({"message_id": "m-1"}),
        },
    )
    data = codec.loads((EXAMPLES / "order_input.json").read_text())
    iid = env.start("order_saga", data)
    env.advance(ms=48 * HOUR)
    return env, iid


def test_an_instance_and_its_history_round_trip() -> None:
    env, iid = _order_env()
    inst = env.instance(iid)
    assert codec.load_instance(codec.dump_instance(inst)) == inst
    for entry in env.history(iid):
        assert (
            codec.structure_entry(codec.loads(codec.dumps(codec.unstructure_entry(entry)))) == entry
        )


def test_history_document_replays_to_the_same_instance() -> None:
    env, iid = _order_env()
    table = env.engine.records[iid].table
    doc = codec.history_document(table, "h", env.instance(iid), env.history(iid))
    assert doc["format"] == codec.HISTORY_FORMAT
    assert doc["status"] == env.status(iid)
    text = codec.dumps(doc)
    entries = codec.load_history(codec.loads(text))
    replayed = replay(table, iid, entries, seed=env.instance(iid).seed)
    assert replayed.ok and replayed.instance == env.instance(iid)


def test_every_event_kind_round_trips() -> None:
    events: list[rt.Event] = [
        rt.TaskCompleted("k", {"x": Decimal("1.10")}),
        rt.TaskFailed("k", "E", False, "m"),
        rt.TimerFired("t"),
        rt.SignalReceived("s", {"a": [1, "b"]}, "key", "message"),
        rt.ChildCompleted("c", {}),
        rt.ChildFailed("c", "E"),
        rt.CancelRequested(True, "why"),
        rt.RetryFrom("step"),
        rt.ForceComplete({"o": None}),
    ]
    for event in events:
        assert codec.load_event(codec.dump_event(event)) == event
