"""A field with a default is never read as null: the defaults of an input's records,
at any depth, and of a signal's or a message's payload (and its records) are filled,
on the engine, the test kit, SQLite and PostgreSQL. They used to be filled for the
input's own fields only, so an instance completed with ``tier: null`` for a
non-optional ``Tier``."""

from __future__ import annotations

from decimal import Decimal

import pytest

from wflang.runtime.engine import Engine
from wflang.runtime.instance import Status
from wflang.runtime.ir import Value
from wflang.runtime.validate import InvalidValue
from wflang.store import Store
from wflang.testing import WorkflowEnv

from .kit import Durable, VirtualClock, compile_text, replays_exactly

FLOW = """
workflow dflt version 1

enum Tier { bronze, gold }

type Note { text: string = "none", tags: list[string] = [] }

type Buyer { name: string, tier: Tier = Tier.bronze, note: Note? }

input { buyer: Buyer, others: list[Buyer] = [], count: int = 3 }

signal go { who: Buyer, level: int = 7 }

message paid { order: string, amount: decimal = 0.00 }

context { got: Buyer?, level: int = 0, amount: decimal = 1.00 }

output {
    tier: Tier, text: string, first_other: Tier?, count: int,
    got_tier: Tier?, got_text: string?, level: int, amount: decimal
}

start wait_go

wait wait_go: signal go {
    output { got: signal.who, level: signal.level }
    next wait_paid
}

wait wait_paid: message paid correlate input.buyer.name {
    output { amount: message.amount }
    next done
}

end done: completed {
    output {
        tier: input.buyer.tier,
        text: input.buyer.note.text,
        first_other: input.others[0].tier,
        count: input.count,
        got_tier: context.got.tier,
        got_text: context.got.note.text,
        level: context.level,
        amount: context.amount,
    }
}
"""

INPUT: dict[str, Value] = {"buyer": {"name": "ada", "note": {}}, "others": [{"name": "bob"}]}
SIGNAL: dict[str, Value] = {"who": {"name": "cy", "note": {"tags": ["x"]}}}
MESSAGE: dict[str, Value] = {"order": "o-1"}
WANTED: dict[str, Value] = {
    "tier": "bronze",
    "text": "none",
    "first_other": "bronze",
    "count": 3,
    "got_tier": "bronze",
    "got_text": "none",
    "level": 7,
    "amount": Decimal("0.00"),
}


def test_defaults_are_filled_at_every_depth_on_the_engine() -> None:
    engine = Engine([compile_text(FLOW)])
    iid = engine.start("dflt", INPUT)
    engine.signal(iid, "go", SIGNAL)
    engine.publish("paid", "ada", MESSAGE)
    got = engine.instance(iid)
    assert got.status is Status.COMPLETED and got.output == WANTED


def test_defaults_are_filled_at_every_depth_in_the_test_kit() -> None:
    env = WorkflowEnv([compile_text(FLOW)])
    iid = env.start("dflt", INPUT)
    env.signal(iid, "go", SIGNAL)
    env.publish("paid", "ada", MESSAGE)
    got = env.instance(iid)
    assert got.status is Status.COMPLETED and got.output == WANTED


def test_defaults_are_filled_at_every_depth_on_a_store(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {}, compile_text(FLOW))
    iid = d.start("dflt", INPUT, "d-1")
    d.signal(iid, "go", SIGNAL)
    d.client.publish("paid", "ada", MESSAGE)
    d.run()
    got = d.instance(iid)
    assert got.status is Status.COMPLETED and got.output == WANTED
    assert got.input["buyer"] == {
        "name": "ada",
        "tier": "bronze",
        "note": {"text": "none", "tags": []},
    }
    replays_exactly(store, iid)


FORM = """
workflow formy version 1

context { rate: decimal = 0.0, approved: bool = false }

output { rate: decimal, approved: bool }

start underwrite

task underwrite: user "underwriters" {
    form { approve: bool, rate: decimal = 5.5 }
    output { approved: result.approve, rate: result.rate }
    next done
}

end done: completed {
    output { rate: context.rate, approved: context.approved }
}
"""


def test_a_form_left_short_gets_its_defaults_on_the_engine_and_the_test_kit() -> None:
    env = WorkflowEnv([compile_text(FORM)])
    iid = env.start("formy", {})
    (task,) = env.engine.human_tasks()
    env.complete(task.key, {"approve": True})
    got = env.instance(iid)
    assert got.status is Status.COMPLETED
    assert got.output == {"rate": Decimal("5.5"), "approved": True}


def test_a_form_left_short_gets_its_defaults_on_a_store(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {}, compile_text(FORM))
    iid = d.start("formy", {}, "f-1")
    d.complete("underwrite", {"approve": True}, iid)
    got = d.instance(iid)
    assert got.status is Status.COMPLETED
    assert got.output == {"rate": Decimal("5.5"), "approved": True}
    replays_exactly(store, iid)


def test_the_engine_refuses_a_form_that_does_not_fit_and_keeps_the_task_open() -> None:
    engine = Engine([compile_text(FORM)])
    iid = engine.start("formy", {})
    (task,) = engine.human_tasks()
    with pytest.raises(InvalidValue, match="'approve' must be bool, not str"):
        engine.complete_task(task.key, {"approve": "yes"})
    assert [t.key for t in engine.human_tasks()] == [task.key]
    assert engine.instance(iid).status is Status.WAITING
    engine.complete_task(task.key, {"approve": False})
    assert engine.instance(iid).output == {"rate": Decimal("5.5"), "approved": False}


def test_the_engine_refuses_a_signal_that_does_not_fit_and_nothing_changes() -> None:
    engine = Engine([compile_text(FLOW)])
    iid = engine.start("dflt", INPUT)
    before = engine.instance(iid)
    with pytest.raises(InvalidValue, match=r"the signal 'go' does not fit: .*level"):
        engine.signal(iid, "go", {"who": {"name": "cy"}, "level": "high"})
    assert engine.instance(iid) == before
    with pytest.raises(InvalidValue, match="declares no signal 'stop'"):
        engine.signal(iid, "stop", {})
    assert engine.instance(iid) == before


def test_the_engine_refuses_a_forced_output_that_does_not_fit() -> None:
    engine = Engine([compile_text(FLOW)])
    iid = engine.start("dflt", INPUT)
    before = engine.instance(iid)
    with pytest.raises(InvalidValue, match="the output of wait_go does not fit"):
        engine.complete_step(iid, "wait_go", {"who": {"name": 5}})
    assert engine.instance(iid) == before
    engine.complete_step(iid, "wait_go", {"who": {"name": "dee"}})
    assert engine.instance(iid).context["got"] == {"name": "dee", "tier": "bronze"}
