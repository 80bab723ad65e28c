"""The event-based choice (issue 15 item 1): ``first NAME { on signal S -> A  on message M
correlate C -> B  after D -> C }`` goes on with whichever arm's event comes first, on the
engine and the test kit. Each arm waits on a token of its own (so ``wf list --waiting-on``
shows each); the winner's payload is read by its own arm's ``output``; the losers are
stopped in the same step (their timer cancelled, their subscription gone); a signal for
a losing arm that comes later is buffered, as any signal no wait takes."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.waiting import waiting_on
from wflang.testing import WorkflowEnv

DATA = Path(__file__).resolve().parent / "data" / "first"
HOUR, DAY = 3_600_000, 86_400_000


def env() -> WorkflowEnv:
    return WorkflowEnv.from_files(DATA / "approval.wf")


def test_it_waits_on_every_arm_at_once() -> None:
    e = env()
    iid = e.start("approval", {"order_id": "o-1"})
    inst = e.instance(iid)
    assert e.status(iid) == "waiting"
    assert waiting_on(inst.tokens) == ("message:paid", "signal:approve", "signal:reject", "timer")
    assert [t.purpose for t in inst.timers] == ["after"]
    for label in ("signal:approve", "signal:reject", "message:paid", "timer"):
        assert e.stuck(waiting_on=label) == [iid]


def test_a_signal_wins_and_its_payload_is_read_by_its_arm() -> None:
    e = env()
    iid = e.start("approval", {"order_id": "o-1"})
    e.signal(iid, "approve", {"by": "ann"})
    inst = e.instance(iid)
    # The losers went in the same step: one token left (the sleep's), the 2d timer cancelled.
    assert [e.engine.records[iid].table.states[t.state].name for t in inst.tokens] == ["cool_off"]
    assert [t.purpose for t in inst.timers] == ["sleep"]
    step = e.history(iid)[-1]
    assert any(isinstance(c, rt.CancelTimer) for c in step.commands)
    assert "outcome: arm 1 came first" in step.decisions
    e.advance(hours=1)
    assert e.status(iid) == "completed"
    assert e.instance(iid).output == {
        "approver": "ann",
        "paid": Decimal("0.0"),
        "route": "approved",
    }


def test_a_message_by_correlation_wins() -> None:
    e = env()
    iid = e.start("approval", {"order_id": "o-1"})
    other = e.start("approval", {"order_id": "o-2"})
    assert e.publish("paid", "o-1", {"amount": Decimal("12.50")}) == [iid]
    e.advance(hours=1)
    assert e.instance(iid).output == {"approver": "", "paid": Decimal("12.50"), "route": "paid"}
    assert e.status(other) == "waiting"


def test_the_timer_wins_when_nothing_comes() -> None:
    e = env()
    iid = e.start("approval", {"order_id": "o-1"})
    e.advance(days=2)
    assert waiting_on(e.instance(iid).tokens) == ("signal:approve",)  # at 'again'
    e.signal(iid, "approve", {"by": "bob"})
    assert e.instance(iid).output == {"approver": "bob", "paid": Decimal("0.0"), "route": "late"}


def test_a_losing_arm_s_signal_that_comes_later_is_buffered() -> None:
    e = env()
    iid = e.start("approval", {"order_id": "o-1"})
    e.signal(iid, "approve", {"by": "ann"})
    e.signal(iid, "reject")  # back to back: 'approve' won, nothing waits for 'reject' now
    assert e.status(iid) == "waiting"  # on the sleep
    assert [(b.kind, b.name) for b in e.instance(iid).buffered] == [("signal", "reject")]
    e.advance(hours=1)
    assert e.status(iid) == "completed"
    # A message published for a lost arm reaches nobody: its subscription went with it.
    assert e.publish("paid", "o-1", {"amount": Decimal("1")}) == []


def test_a_signal_buffered_before_the_node_wins_as_it_enters() -> None:
    source = (DATA / "approval.wf").read_text().replace("start outcome", "start pause")
    source += "\nsleep pause 1m next outcome\n"
    table = compile_workflow(parse(source, "approval.wf")).table
    assert table is not None
    e = WorkflowEnv([table])
    iid = e.start("approval", {"order_id": "o-1"})
    e.signal(iid, "reject")
    e.advance(minutes=1)
    assert e.status(iid) == "failed"
