"""Lifecycle events (issue 15, item 5): every status change of an instance and of its
tasks reaches the hooks registered on the engine, the test kit and the worker
(``on_status``), and on a store is an outbox row written in the step's transaction; a
hook that raises is logged and never breaks the step. The stores' side:
``tests/store/test_lifecycle.py``."""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path

import attrs
import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse, parse_file
from wflang.runtime.ir import Value
from wflang.runtime.lifecycle import StatusEvent
from wflang.runtime.outcome import TaskError
from wflang.runtime.table import Table
from wflang.testing import WorkflowEnv, by_attempt, delay, succeed, transient

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
APPROVAL = {"by": "ada", "at": "2026-12-01T10:00:00Z"}

FLAKY = """\
workflow flaky version 1
error Broken
service s.op() -> { v: int } raises Broken
start t
task t: service s.op {
    retry { attempts: 3, backoff: 1s, non_retryable: [Broken] }
    next done
}
end done: completed
"""


def table_of(text: str) -> Table:
    table = compile_workflow(parse(text, "flaky.wf")).table
    assert table is not None
    return table


def invoice_table() -> Table:
    table = compile_workflow(parse_file(str(EXAMPLES / "invoice_approval.wf"))).table
    assert table is not None
    return table


def brief(events: list[StatusEvent]) -> list[tuple[int, str, str, str | None, int | None]]:
    return [(e.seq, e.subject, e.status, e.node, e.attempt) for e in events]


def test_every_status_change_reaches_the_test_kits_hooks() -> None:
    env = WorkflowEnv([invoice_table()], {"tax.add": succeed({"total": Decimal("1.2")})})
    seen: list[StatusEvent] = []
    env.on_status(seen.append)
    iid = env.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("1")})
    env.signal(iid, "approval", APPROVAL)
    assert brief(seen) == [
        (1, "instance", "started", None, None),
        (1, "task", "started", "price", 1),
        (2, "instance", "waiting", None, None),
        (2, "task", "completed", "price", 1),
        (3, "instance", "completed", None, None),
    ]
    assert {(e.instance_id, e.workflow, e.version) for e in seen} == {(iid, "invoice_approval", 1)}
    assert seen[1].key == "invoice_approval-1:price:1:0:1"


def test_a_retried_task_fails_then_retries_and_a_dead_letter_resumes() -> None:
    env = WorkflowEnv([table_of(FLAKY)], {"s.op": by_attempt(transient(), succeed({"v": 1}))})
    seen: list[StatusEvent] = []
    env.on_status(seen.append)
    iid = env.start("flaky", {})
    env.advance(seconds=1)
    assert env.status(iid) == "completed"
    assert brief(seen)[1:] == [
        (1, "task", "started", "t", 1),
        (2, "task", "failed", "t", 1),
        (3, "task", "retrying", "t", 2),
        (4, "instance", "completed", None, None),
        (4, "task", "completed", "t", 2),
    ]
    assert seen[2].error == "Unavailable"
    calls: list[int] = []

    def once_broken() -> dict[str, Value]:
        calls.append(1)
        if len(calls) == 1:
            raise TaskError("Broken", "broken once", transient=False)
        return {"v": 1}

    broken = WorkflowEnv([table_of(FLAKY)], {"s.op": once_broken})
    seen.clear()
    broken.on_status(seen.append)
    iid = broken.start("flaky", {})
    assert broken.status(iid) == "dead_lettered"
    assert brief(seen)[-2:] == [(2, "instance", "dead_lettered", None, None),
                                (2, "task", "failed", "t", 1)]  # fmt: skip
    seen.clear()
    broken.retry(iid)  # an operator's retry: the instance resumes, the task starts anew
    assert broken.status(iid) == "completed"
    assert brief(seen) == [
        (3, "instance", "resumed", None, None),
        (3, "task", "started", "t", 1),
        (4, "instance", "completed", None, None),
        (4, "task", "completed", "t", 1),
    ]


def test_a_cancelled_instance_cancels_its_task() -> None:
    env = WorkflowEnv([invoice_table()], {"tax.add": by_attempt(delay())})
    seen: list[StatusEvent] = []
    env.on_status(seen.append)
    iid = env.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("1")})
    env.cancel(iid)
    assert brief(seen)[-2:] == [(2, "instance", "cancelled", None, None),
                                (2, "task", "cancelled", "price", 1)]  # fmt: skip


def test_a_hook_that_raises_is_logged_and_the_step_stands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = WorkflowEnv([invoice_table()], {"tax.add": succeed({"total": Decimal("1.2")})})
    seen: list[StatusEvent] = []

    def broken(event: StatusEvent) -> None:
        raise RuntimeError("the hook's own bug")

    env.on_status(broken)
    env.on_status(seen.append)  # a later hook still hears every event
    with caplog.at_level(logging.ERROR, logger="wflang.lifecycle"):
        iid = env.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("1")})
    assert env.status(iid) == "waiting" and len(env.history(iid)) == 2
    assert len(seen) == 4
    assert "a status hook raised on instance started of invoice_approval-1" in caplog.text
    assert "the hook's own bug" in caplog.text


def test_the_events_made_fast_are_the_constructors() -> None:
    env = WorkflowEnv([invoice_table()], {"tax.add": succeed({"total": Decimal("1.2")})})
    seen: list[StatusEvent] = []
    env.on_status(seen.append)
    env.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("1")})
    for event in seen:
        made = StatusEvent(**{f.name: getattr(event, f.name) for f in attrs.fields(StatusEvent)})
        assert made == event and vars(made) == vars(event)
