"""The tasks inbox and typed forms (issue 19, item 3): open human tasks by assignee,
each task's form rendered from its declaration (a bool and an enum as choices, numbers
and text in a line), completed through the client behind `wf tasks complete`: a value
of the wrong type is refused with its message and nothing is stored; on SQLite and
PostgreSQL."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from wflang.store import Store

from ..store.kit import OPS_HANDLERS, Durable, VirtualClock
from .flows import written
from .kit import HOSTILE, Elements, post, sign_in


@pytest.fixture
def d(store: Store, clock: VirtualClock, tmp_path: Path) -> Durable:
    d = Durable(store, clock, OPS_HANDLERS)
    flows = written(tmp_path)
    d.client.deploy_all([flows["review_flow"], flows["opsflow"]])
    d.start("review_flow", {"id": "r"}, "rev-1")
    d.start("opsflow", {"id": "o"}, "ops-1")
    return d


def test_the_inbox_by_assignee(web: TestClient, d: Durable) -> None:
    every = Elements(web.get("/tasks").text).with_attr("data-task-key")
    assert sorted(t["data-assignee"] for t in every) == ["finance", "ops"]
    mine = Elements(web.get("/tasks", params={"assignee": "finance"}).text)
    assert [t["data-node"] for t in mine.with_attr("data-task-key")] == ["review"]
    assert Elements(web.get("/tasks", params={"assignee": "nobody"}).text).by_id("no-tasks")


def test_the_form_is_rendered_from_the_declaration(web: TestClient, d: Durable) -> None:
    key = d.task("review", "rev-1")
    sign_in(web)
    page = Elements(web.get("/tasks/task", params={"key": key}).text)
    fields = {a["data-field"]: a["data-type"] for a in page.with_attr("data-field")}
    assert fields == {"ok": "bool", "amount": "decimal", "level": "Level", "note": "string?",
                      "count": "int"}  # fmt: skip
    tags = {a.get("id"): tag for tag, a in page.found if a.get("id", "").startswith("field-")}
    assert tags == {"field-ok": "select", "field-amount": "input", "field-level": "select",
                    "field-note": "input", "field-count": "input"}  # fmt: skip
    options = [a["value"] for tag, a in page.found if tag == "option" and a.get("value")]
    assert {"true", "false", "low", "high"} <= set(options)


def test_a_wrong_type_is_refused_with_the_message_and_nothing_is_stored(
    web: TestClient, d: Durable, store: Store
) -> None:
    key = d.task("review", "rev-1")
    sign_in(web, "fin")
    form = {"key": key, "field.ok": "true", "field.amount": "lots", "field.level": "high"}
    wrong = post(web, "/tasks/complete", form, page=f"/tasks/task?key={key}")
    assert wrong.status_code == 400
    assert f"the output of task &#39;{key}&#39; does not fit" in wrong.text
    assert "amount" in wrong.text
    assert Elements(wrong.text).by_id("task-form") is not None  # to correct it
    assert 'value="lots"' in wrong.text  # what was typed is kept
    assert store.task(key).status == "open"
    missing = post(web, "/tasks/complete", {"key": key, "field.ok": "true"},
                   page=f"/tasks/task?key={key}")  # fmt: skip
    assert missing.status_code == 400 and store.task(key).status == "open"
    done = post(web, "/tasks/complete",
                {**form, "field.amount": "12.50", "field.note": HOSTILE, "reason": "checked"},
                page=f"/tasks/task?key={key}")  # fmt: skip
    assert done.status_code == 303, done.text
    d.run()
    inst = d.instance("rev-1")
    assert inst.context["amount"] == Decimal("12.50") and inst.context["level"] == "high"
    assert inst.context["ok"] is True and inst.context["note"] == HOSTILE
    assert d.status("rev-1") == "completed"
    rows = [r for r in store.history("rev-1") if r.actor == "fin"]
    assert [r.reason for r in rows] == ["checked"]
    again = post(web, "/tasks/complete", form, page="/tasks")
    assert again.status_code == 409 and "is done, not open" in again.text


def test_completing_needs_a_sign_in(web: TestClient, d: Durable, store: Store) -> None:
    key = d.task("approve", "ops-1")
    page = web.get("/tasks/task", params={"key": key}).text
    assert Elements(page).by_id("task-disabled") is not None
    refused = post(web, "/tasks/complete", {"key": key, "field.ok": "true"}, page="/signin")
    assert refused.status_code == 403 and store.task(key).status == "open"
    assert web.get("/tasks/task", params={"key": "nope"}).status_code == 404
