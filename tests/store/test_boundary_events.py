"""Boundary signals and messages (issue 15 item 1) on both stores: each scenario runs on
the store and on the engine with the same instance ids, and the histories agree step
for step (the decisions, the commands, the context changes); a message published by
correlation reaches the instance through the subscription of the node's boundary
event, and none is left once the node is done."""

from __future__ import annotations

from pathlib import Path

import pytest
from attrs import frozen

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.runtime import codec
from wflang.runtime.ir import Value
from wflang.runtime.outcome import TaskError
from wflang.runtime.table import Table
from wflang.store import Store
from wflang.testing import WorkflowEnv, transient

from ..literals import same
from .kit import MINUTE, T0, Durable, VirtualClock, replays_exactly

DATA = Path(__file__).resolve().parents[1] / "data" / "boundary"


def _table(name: str) -> Table:
    table = compile_workflow(parse_file(str(DATA / f"{name}.wf"))).table
    assert table is not None, name
    return table


EVENTS, CHILD = _table("events"), _table("events_child")


def unavailable(**_: Value) -> None:
    """The service task's handler fails as the test kit's ``transient()`` does: the task
    waits for its retry while the boundary events arrive."""
    raise TaskError("Unavailable", "", transient=True)


HANDLERS = {"s.work": unavailable}


@frozen
class Signal:
    name: str
    payload: dict[str, Value]


@frozen
class Publish:
    message: str
    correlation: str
    payload: dict[str, Value]


@frozen
class Advance:
    ms: int


Act = Signal | Publish | Advance
LINES: list[Value] = [{"sku": "a"}, {"sku": "b"}, {"sku": "c"}]

#: Each scenario: the input, then what the world does (on both sides alike).
SCENARIOS: dict[str, tuple[dict[str, Value], list[Act]]] = {
    "task-retrying": (
        {"id": "a"},
        [Publish("scanned", "a", {"tracking": "TRK1"}), Advance(MINUTE // 2),
         Signal("nudge", {}), Signal("cancel", {"reason": "stop"})],
    ),
    "user-task": (
        {"id": "user"},
        [Signal("nudge", {"by": "ops"}), Signal("cancel", {"reason": "gone"})],
    ),
    "call": ({"id": "call"}, [Signal("cancel", {"reason": "no child"})]),
    "parallel": (
        {"id": "parallel"},
        [Signal("nudge", {}), Signal("cancel", {"reason": "both"})],
    ),
    "map": (
        {"id": "map", "lines": LINES},
        [Publish("scanned", "map", {"tracking": "all gone"})],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_boundary_event_runs_on_a_store_as_in_memory(
    store: Store, clock: VirtualClock, name: str
) -> None:
    given, world = SCENARIOS[name]
    d = Durable(store, clock, HANDLERS, EVENTS, CHILD)
    env = WorkflowEnv([EVENTS, CHILD], {"s.work": [transient()] * 3}, now=T0)
    iid = f"ev-{name}"
    d.start("events", given, iid)
    env.start("events", given, instance_id=iid)
    for act in world:
        if isinstance(act, Signal):
            d.signal(iid, act.name, act.payload)
            env.signal(iid, act.name, act.payload)
        elif isinstance(act, Publish):
            got = d.client.publish(act.message, act.correlation, act.payload)
            d.run()
            assert got.delivered == (iid,)
            assert env.publish(act.message, act.correlation, act.payload) == [iid]
        else:
            d.advance(act.ms)
            env.advance(ms=act.ms)
    assert d.status(iid) == env.status(iid) == "cancelled"
    assert d.instance(iid).output == env.instance(iid).output
    assert d.instance(iid).context == env.context(iid)
    want = [codec.unstructure_entry(e) for e in env.history(iid)]
    got_history = [codec.unstructure_entry(r.entry) for r in store.history(iid)]
    assert same(want, got_history)
    replays_exactly(store, iid)


def test_a_boundary_message_subscribes_while_the_node_is_active(
    store: Store, clock: VirtualClock
) -> None:
    d = Durable(store, clock, HANDLERS, EVENTS, CHILD)
    d.start("events", {"id": "a"}, "ev-1")
    d.start("events", {"id": "b"}, "ev-2")
    # Only the instance whose node catches 'scanned' for "a" is reached.
    assert d.client.publish("scanned", "a", {"tracking": "T"}).delivered == ("ev-1",)
    d.run()
    assert d.instance("ev-1").context["tracking"] == "T"
    assert d.instance("ev-2").context["tracking"] == ""
    d.signal("ev-1", "cancel", {"reason": "r"})
    assert d.status("ev-1") == "cancelled"
    # The node is gone: the subscription with it.
    assert d.client.publish("scanned", "a", {"tracking": "T2"}).delivered == ()
    assert d.client.publish("scanned", "b", {"tracking": "T3"}).delivered == ("ev-2",)


def test_wf_list_waiting_on_finds_a_node_that_catches_a_signal(
    store: Store, clock: VirtualClock
) -> None:
    d = Durable(store, clock, HANDLERS, EVENTS, CHILD)
    d.start("events", {"id": "user"}, "ev-user")
    d.start("events", {"id": "call"}, "ev-call")
    found = {i.id for i in store.instances(waiting_on="signal:cancel")}
    assert found == {"ev-user", "ev-call"}
    assert {i.id for i in store.instances(waiting_on="signal:nudge")} == {"ev-user"}
    d.signal("ev-user", "cancel", {"reason": "r"})
    assert {i.id for i in store.instances(waiting_on="signal:cancel")} == {"ev-call"}
