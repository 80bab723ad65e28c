"""Assignee expressions on SQLite and PostgreSQL (issue 14, item 7): each human task is
stored with the assignee its expression gave when the task was entered, the same as
on the engine and the test kit (tests/test_assignees.py), and a person's or a group's
inbox (``Client.open_tasks(assignee=)``, ``wf tasks list --assignee``) lists its tasks."""

from __future__ import annotations

import json

import pytest

from wflang.cli import main
from wflang.runtime.ir import Value
from wflang.store import Store

from ..test_assignees import people, run_people
from .kit import Durable, VirtualClock, replays_exactly


def test_each_task_is_stored_with_its_evaluated_assignee(store: Store, clock: VirtualClock) -> None:
    durable = Durable(store, clock, {}, people())
    durable.start("people", {"manager": "Ann", "amount": 10, "backup": None}, "p1")
    durable.start("people", {"manager": "Bo", "amount": 20, "backup": "Cy"}, "p2")
    inbox = durable.client.open_tasks(assignee="Ann")
    assert [(t.instance_id, t.node) for t in inbox] == [("p1", "review")]
    assert [t.instance_id for t in durable.client.open_tasks(assignee="Bo")] == ["p2"]
    seen: dict[tuple[str, str], str | None] = {}
    for iid, approver in (("p1", "Dee"), ("p2", None)):
        outputs: tuple[dict[str, Value], ...] = (
            {"approver": approver, "ok": True},
            {"approved": True},
            {},
        )
        for node, output in zip(("review", "approve", "file"), outputs, strict=True):
            (task,) = [t for t in durable.client.open_tasks(iid) if t.node == node]
            seen[iid, node] = task.assignee
            durable.complete(node, output, iid)
        assert durable.status(iid) == "completed", durable.instance(iid).error
        replays_exactly(store, iid)
    on_engine = run_people("engine", None, "Dee")
    assert [(n, seen["p1", n]) for n, _ in on_engine] == on_engine
    assert [seen["p2", n] for n in ("review", "approve", "file")] == ["Bo", "Cy", "records-bo"]


def test_wf_tasks_list_by_assignee(
    store: Store, clock: VirtualClock, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    durable = Durable(store, clock, {}, people())
    durable.start("people", {"manager": "Ann", "amount": 10}, "p1")
    durable.start("people", {"manager": "Bo", "amount": 20}, "p2")
    capsys.readouterr()
    assert main(["tasks", "list", "--assignee", "Bo", "--json", "--store", url]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["instance_id"], r["node"], r["assignee"]) for r in rows] == [("p2", "review", "Bo")]
    assert main(["tasks", "list", "--assignee", "nobody", "--store", url]) == 0
    assert "no open human tasks" in capsys.readouterr().out
