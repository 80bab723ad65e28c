"""Lifecycle events on both stores (issue 15, item 5): each status change of an
instance and of its tasks is an ``instance.status`` or ``task.status`` outbox row,
written in the transaction of the step that made it, the same the engine's hooks hear;
the worker hands them to its hooks once committed, and a hook that raises is logged and
stops nothing."""

from __future__ import annotations

import inspect
import logging
from decimal import Decimal

import attrs
import pytest

from tests.test_lifecycle import FLAKY, table_of
from wflang.runtime.ir import Value
from wflang.runtime.lifecycle import StatusEvent
from wflang.store import Store
from wflang.store.status import StatusRows
from wflang.testing import WorkflowEnv, by_attempt, succeed, transient

from .kit import SECOND, Durable, VirtualClock, example

INPUT: dict[str, Value] = {"invoice_id": "i-1", "amount": Decimal("1")}
APPROVAL: dict[str, Value] = {"by": "ada", "at": "2026-12-01T10:00:00Z"}


def tax(amount: Decimal) -> dict[str, Value]:
    return {"total": amount}


def brief(events: list[StatusEvent]) -> list[tuple[int, str, str, str | None, int | None]]:
    return [(e.seq, e.subject, e.status, e.node, e.attempt) for e in events]


def outboxed(store: Store, iid: str) -> list[tuple[int, str, str, str | None, int | None]]:
    kinds = {"instance.status": "instance", "task.status": "task"}
    found: list[tuple[int, str, str, str | None, int | None]] = []
    for e in store.outbox(limit=1000, kinds=tuple(kinds)):
        if e.instance_id == iid:
            node, attempt = e.payload.get("node"), e.payload.get("attempt")
            assert node is None or isinstance(node, str)
            assert attempt is None or isinstance(attempt, int)
            found.append((e.seq, kinds[e.kind], str(e.payload["status"]), node, attempt))
    return found


def test_the_outbox_and_the_workers_hooks_hear_what_the_engine_hears(
    store: Store, clock: VirtualClock
) -> None:
    table = example("invoice_approval")
    env = WorkflowEnv([table], {"tax.add": tax}, now=clock())
    kit: list[StatusEvent] = []
    env.on_status(kit.append)
    d = Durable(store, clock, {"tax.add": tax}, table, lifecycle_outbox=StatusRows.ALL)
    heard: list[StatusEvent] = []
    d.worker.on_status(heard.append)
    env.start("invoice_approval", INPUT, instance_id="i-1")
    d.start("invoice_approval", INPUT, "i-1")
    env.signal("i-1", "approval", APPROVAL)
    d.signal("i-1", "approval", APPROVAL)
    assert brief(heard) == brief(kit) == outboxed(store, "i-1")
    # the step that ended it: its status change beside its instance.finished
    last = {e.kind for e in store.outbox(limit=1000) if e.seq == 3}
    assert last == {"instance.status", "instance.finished"}
    (completed,) = [e for e in heard if e.status == "completed" and e.subject == "task"]
    assert completed.key == "i-1:price:1:0:1"


def test_a_retry_is_recorded_alike(store: Store, clock: VirtualClock) -> None:
    table = table_of(FLAKY)
    script = {"s.op": by_attempt(transient(), succeed({"v": 1}))}
    env = WorkflowEnv([table], script, now=clock())
    kit: list[StatusEvent] = []
    env.on_status(kit.append)
    env.start("flaky", {}, instance_id="f-1")
    env.advance(seconds=1)
    attempts = iter([True, False])

    def op() -> dict[str, Value]:
        if next(attempts):
            raise RuntimeError("unavailable")
        return {"v": 1}

    d = Durable(store, clock, {"s.op": op}, table, lifecycle_outbox=StatusRows.ALL)
    d.start("flaky", {}, "f-1")
    d.advance(SECOND)
    assert d.status("f-1") == "completed"
    assert outboxed(store, "f-1") == brief(kit)


def test_a_worker_hook_that_raises_is_logged_and_the_worker_goes_on(
    store: Store, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    table = example("invoice_approval")
    d = Durable(store, clock, {"tax.add": tax}, table, lifecycle_outbox=StatusRows.ALL)

    def broken(event: StatusEvent) -> None:
        raise RuntimeError("the hook's own bug")

    heard: list[StatusEvent] = []
    d.worker.on_status(broken)
    d.worker.on_status(heard.append)
    with caplog.at_level(logging.ERROR, logger="wflang.lifecycle"):
        d.start("invoice_approval", INPUT, "i-1")
    assert d.status("i-1") == "waiting"
    assert len(heard) == 4 and "the hook's own bug" in caplog.text
    assert len(outboxed(store, "i-1")) == 4  # committed whatever the hook did


@pytest.mark.parametrize(
    ("rows", "subjects"),
    [(StatusRows.INSTANCES, {"instance"}), (StatusRows.ALL, {"instance", "task"}),
     (StatusRows.NONE, set())],
)  # fmt: skip
def test_which_status_changes_are_outbox_rows_is_the_worker_s_setting(
    store: Store, clock: VirtualClock, rows: StatusRows, subjects: set[str]
) -> None:
    """By default only the instances' status changes are outbox rows (a few per
    instance; the tasks' are two a step); the hooks hear every one whatever is written,
    and ``instance.finished`` is written whatever the setting."""
    table = example("invoice_approval")
    d = Durable(store, clock, {"tax.add": tax}, table, lifecycle_outbox=rows)
    heard: list[StatusEvent] = []
    d.worker.on_status(heard.append)
    d.start("invoice_approval", INPUT, "i-1")
    d.signal("i-1", "approval", APPROVAL)
    assert d.status("i-1") == "completed"
    assert {e.subject for e in heard} == {"instance", "task"}
    written = [e for e in brief(heard) if e[1] in subjects]
    assert outboxed(store, "i-1") == written
    assert [e.kind for e in store.outbox(limit=100, kinds=("instance.finished",))] == [
        "instance.finished"
    ]


def test_the_default_is_instances_on_the_worker_and_the_command_line() -> None:
    from wflang.cli.worker import Worker as WorkerCommand
    from wflang.durable.worker import Worker

    default = inspect.signature(Worker).parameters["lifecycle_outbox"].default
    assert default is StatusRows.INSTANCES
    option = attrs.fields(WorkerCommand).lifecycle_outbox
    assert option.default == default.value
    (given,) = option.metadata.values()  # the flag's add_argument keywords
    assert given.kwargs["choices"] == tuple(r.value for r in StatusRows)
