"""The rest of the instance page and its actions (issue 19): events delivered and not
taken yet, the diagram as it was after a step (`wf render --at N`), skipping a failed
compensation, and raising a declared error on a human task instead of its form; on
SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from wflang.store import Store

from ..store.kit import OPS_HANDLERS, Durable, VirtualClock, opsflow, snapshot
from ..store.test_handled_error import _at_the_manager
from ..store.test_saga_ops import dead_in_undo_b
from .flows import written
from .kit import Elements, post, sign_in


def test_a_signal_sent_before_its_wait_is_shown_as_delivered(
    web: TestClient, store: Store, clock: VirtualClock
) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    d.start("opsflow", {"id": "x"}, "early")  # waits at its human task
    d.client.signal("early", "go", {"by": "bo"}, reason="sent early")
    page = web.get("/instance", params={"id": "early"}).text
    pending = Elements(page).with_attr("data-event")
    assert [p["data-event"] for p in pending if "pending-event" in p.get("class", "")] == [
        "SignalReceived go"
    ]
    assert "sent early" in page


def test_the_diagram_as_it_was_after_a_step(
    web: TestClient, store: Store, clock: VirtualClock, tmp_path: Path
) -> None:
    d = Durable(store, clock, OPS_HANDLERS)
    d.client.deploy(*written(tmp_path)["opsflow"])
    d.start("opsflow", {"id": "x"}, "o-at")
    now = Elements(web.get("/instance", params={"id": "o-at"}).text)
    links = [a["href"] for a in now.with_attr("href") if "at=" in a["href"]]
    assert len(links) == 3  # one per step of the history
    then = web.get("/instance", params={"id": "o-at", "at": "1"})
    diagram = Elements(then.text).by_id("diagram")
    assert diagram is not None and diagram["data-at"] == "1"
    assert Elements(then.text).by_id("drawn-at") is not None
    assert web.get("/instance", params={"id": "o-at", "at": "x"}).status_code == 400
    beyond = web.get("/instance", params={"id": "o-at", "at": "99"}).text
    assert Elements(beyond).by_id("diagram-problem") is not None


def test_skip_a_failed_compensation(web: TestClient, store: Store, clock: VirtualClock) -> None:
    d, iid, _ = dead_in_undo_b(store, clock)
    sign_in(web, "eve")
    page = f"/instance?id={iid}"
    assert Elements(web.get(page).text).by_id("skip-form") is not None
    before = snapshot(store, iid)
    wrong = post(web, "/instance/skip", {"id": iid, "step": "undo_a", "reason": "no"}, page=page)
    assert wrong.status_code == 409 and "no compensation waits at &#39;undo_a&#39;" in wrong.text
    assert snapshot(store, iid) == before
    done = post(web, "/instance/skip", {"id": iid, "step": "undo_b", "reason": "refunded by phone"},
                page=page)  # fmt: skip
    assert done.status_code == 303
    d.run()
    assert d.status(iid) == "compensated"
    assert [(r.actor, r.reason) for r in store.history(iid) if r.actor == "eve"] == [
        ("eve", "refunded by phone")
    ]


def test_raise_a_declared_error_on_a_human_task(
    web: TestClient, store: Store, clock: VirtualClock
) -> None:
    d, key = _at_the_manager(store, clock, "ex-1")
    sign_in(web, "max")
    form_page = f"/tasks/task?key={key}"
    assert Elements(web.get(form_page).text).by_id("raise-form") is not None
    wrong = post(web, "/tasks/raise", {"key": key, "error": "Rejected", "payload": '{"reason": 5}'},
                 page=form_page)  # fmt: skip
    assert wrong.status_code == 400 and "does not fit" in wrong.text
    assert store.task(key).status == "open"
    done = post(web, "/tasks/raise",
                {"key": key, "error": "Rejected", "payload": '{"reason": "too much"}',
                 "message": "no", "reason": "over budget"}, page=form_page)  # fmt: skip
    assert done.status_code == 303, done.text
    d.run()
    assert d.status("ex-1") == "failed"
