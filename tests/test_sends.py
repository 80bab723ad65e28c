"""Send tasks in memory (issue 15 item 3): ``send signal S to ID`` and ``send message M
correlate C`` on the engine and the test kit: a signal reaches the instance with that id,
a message the instances waiting for its correlation, each once (keyed by the task), in
the step that sends it; a target that is not there, or does not take the payload, is
not reached and the sender goes on."""

from __future__ import annotations

from pathlib import Path

from wflang.compiler.check import check
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine
from wflang.testing import WorkflowEnv, delay, succeed

DATA = Path(__file__).resolve().parent / "data" / "sends"


def env() -> WorkflowEnv:
    return WorkflowEnv.from_files(
        DATA / "shop.wf", DATA / "warehouse.wf",
        handlers={"carrier.book": succeed({"carrier": "dhl"})},
    )  # fmt: skip


def sends(e: WorkflowEnv, iid: str) -> list[rt.Send]:
    return [c for h in e.history(iid) for c in h.commands if isinstance(c, rt.Send)]


def test_a_workflow_signals_an_instance_and_publishes_a_message() -> None:
    e = env()
    shop = e.start("shop", {"order_id": "o-1"})
    other = e.start("shop", {"order_id": "o-2"})
    house = e.start("warehouse", {"order_id": "o-1", "shop": shop, "boxes": 3})

    assert e.status(house) == "completed"
    assert e.status(shop) == "completed"
    assert e.instance(shop).output == {"boxes": 3, "carrier": "dhl"}
    assert e.status(other) == "waiting"  # another id, another correlation
    sent = sends(e, house)
    assert [(s.kind, s.name, s.to) for s in sent] == [
        ("signal", "packed", shop),
        ("message", "shipped", "o-1"),
    ]
    assert sent[1].payload == {"order_id": "o-1", "carrier": "dhl"}
    # The receivers took each with the send task's key, and filled the defaults themselves.
    taken = [h.event for h in e.history(shop) if isinstance(h.event, rt.SignalReceived)]
    assert [(t.name, t.key) for t in taken] == [("packed", sent[0].key), ("shipped", sent[1].key)]
    assert taken[1].payload == {"order_id": "o-1", "carrier": "dhl"}


def test_a_signal_to_an_instance_that_is_not_there_reaches_nobody() -> None:
    e = env()
    house = e.start("warehouse", {"order_id": "o-9", "shop": "nobody"})
    assert e.status(house) == "completed"
    assert [s.to for s in sends(e, house)] == ["nobody", "o-9"]


def test_a_signal_to_a_finished_instance_or_one_that_does_not_declare_it_is_dropped() -> None:
    e = WorkflowEnv.from_files(
        DATA / "shop.wf", DATA / "warehouse.wf", DATA.parent / "settle.wf",
        handlers={"carrier.book": succeed({"carrier": "dhl"})},
    )  # fmt: skip
    shop = e.start("shop", {"order_id": "o-1"})
    e.cancel(shop)
    house = e.start("warehouse", {"order_id": "o-1", "shop": shop})
    assert e.status(house) == "completed"
    assert len(e.history(shop)) == 2  # the start and the cancel: nothing taken after
    settle = e.start("settle", {"order_id": "o-2"})  # running, and declares no 'packed'
    other = e.start("warehouse", {"order_id": "o-2", "shop": settle})
    assert e.status(other) == "completed"
    assert [s.to for s in sends(e, other)] == [settle, "o-2"]
    assert len(e.history(settle)) == 1


def test_a_signal_to_a_running_instance_not_waiting_for_it_is_buffered() -> None:
    e = WorkflowEnv.from_files(
        DATA / "shop.wf", DATA / "warehouse.wf", handlers={"carrier.book": delay()}
    )
    house = e.start("warehouse", {"order_id": "o-1", "shop": "nobody"})
    other = e.start("warehouse", {"order_id": "o-2", "shop": house, "boxes": 5})
    assert [s.to for s in sends(e, other)] == [house]
    assert [(b.name, b.payload) for b in e.instance(house).buffered] == [("packed", {"boxes": 5})]


def test_each_visit_sends_once_with_its_own_key() -> None:
    e = env()
    shop = e.start("shop", {"order_id": "o-1"})
    house = e.start("warehouse", {"order_id": "o-1", "shop": shop})
    again = e.start("warehouse", {"order_id": "o-1", "shop": shop})
    keys = [s.key for s in sends(e, house)] + [s.key for s in sends(e, again)]
    assert len(set(keys)) == 4
    # The shop took the first signal and message; the second pair found it finished.
    assert e.instance(shop).output == {"boxes": 2, "carrier": "dhl"}


def test_the_engine_delivers_in_the_order_of_the_steps() -> None:
    e = env()
    shop = e.start("shop", {"order_id": "o-1"})
    engine: Engine = e.engine
    before = len(engine.history(shop))
    e.start("warehouse", {"order_id": "o-1", "shop": shop})
    assert len(engine.history(shop)) == before + 2  # the signal, then the message


SENDER = """\
workflow sender version 1

input {{ id: string, n: int }}

signal poke {{ count: int }}

message told {{ id: string }}

start s

task s: {work} {{
    {clauses}
    next done
}}

end done: completed
"""


def findings(work: str, clauses: str) -> list[tuple[str, str]]:
    result = check([parse(SENDER.format(work=work, clauses=clauses), "sender.wf")])
    return [(d.code, d.message) for d in result.diagnostics if d.code != "WF304"]


def test_a_send_task_takes_only_args_output_next_and_renamed() -> None:
    got = findings("send signal poke to input.id", "args { count: 1 }\n    retry { attempts: 2 }")
    assert got == [("WF003", "a send task does not take 'retry'")]


def test_the_payload_and_the_target_are_typed() -> None:
    assert findings("send signal poke to input.id", "args { count: 1 }") == []
    assert findings("send signal poke to input.id", "args { count: input.id }") == [
        ("WF301", "'count' must be int, not string")
    ]
    assert findings("send signal poke to input.id", "args { }") == [
        ("WF311", "'s' does not pass 'count', which signal poke requires")
    ]
    assert findings("send signal poke to input.id", "args { count: 1, extra: 2 }") == [
        ("WF310", "signal poke has no field 'extra'")
    ]
    assert findings("send signal poke to input.n", "args { count: 1 }") == [
        ("WF301", "the id of the instance signalled must be string, not int")
    ]
    assert findings("send message told correlate input.n", "args { id: input.id }") == []
    assert findings("send message told correlate [1]", "args { id: input.id }") == [
        ("WF301", "a correlation must be string or int, not list[int]")
    ]
    assert findings("send message tld correlate input.id", "args { id: input.id }") == [
        ("WF360", "'s' sends the message 'tld', which is not declared")
    ]
