"""The operator's actions in the console (issue 19, item 4): retry, replay from a step,
force-complete with a typed output, cancel, fire timers, send a signal and publish a
message, each with a reason, recorded with the operator's name, through the durable
client as `wf ops` does; refusals show the client's message and change nothing; an
action without a sign-in or a CSRF token is refused. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from wflang.runtime import instance as rt
from wflang.runtime.engine import TaskError
from wflang.runtime.ir import Value
from wflang.store import Store

from ..store.kit import OPS_HANDLERS, Durable, VirtualClock, opsflow, snapshot
from ..store.test_ops import dead_at_b
from .kit import HOSTILE, Elements, csrf_of, post, sign_in

PAGE = "/instance?id=dl-1"


def ops_rows(store: Store, iid: str) -> list[tuple[str, str | None, str | None]]:
    kinds = (rt.RetryFrom, rt.CompleteStep, rt.CancelRequested, rt.TimerFired, rt.SignalReceived)
    return [
        (type(r.entry.event).__name__, r.actor, r.reason)
        for r in store.history(iid)
        if isinstance(r.entry.event, kinds)
    ]


def test_retry_a_dead_letter_and_see_it_finish(
    web: TestClient, store: Store, clock: VirtualClock
) -> None:
    d, iid = dead_at_b(store, clock)
    listed = web.get("/dead-letters").text
    assert [a["data-instance-id"] for a in Elements(listed).with_attr("data-instance-id")] == [iid]
    sign_in(web, "ann")
    done = post(web, "/instance/retry", {"id": iid, "reason": "the bank is back"}, page=PAGE)
    assert done.status_code == 303 and done.headers["location"] == f"{PAGE}&done=retry"
    assert "Retry requested" in web.get(done.headers["location"]).text
    d.run()
    assert d.status(iid) == "waiting"  # past b, at the human task
    assert ops_rows(store, iid) == [("RetryFrom", "ann", "the bank is back")]
    page = web.get(PAGE).text
    assert '<span class="actor">ann</span>: <span class="reason">the bank is back</span>' in page


def test_force_complete_with_a_typed_output_and_a_reason(
    web: TestClient, store: Store, clock: VirtualClock
) -> None:
    d, iid = dead_at_b(store, clock)
    sign_in(web, "bob")
    before = snapshot(store, iid)
    wrong = post(web, "/instance/force-complete",
                 {"id": iid, "step": "b", "output": '{"b": "seven"}', "reason": "manual"},
                 page=PAGE)  # fmt: skip
    assert wrong.status_code == 400 and "nothing was changed" in wrong.text
    assert "the output of b does not fit" in wrong.text
    assert snapshot(store, iid) == before
    done = post(web, "/instance/force-complete",
                {"id": iid, "step": "b", "output": '{"b": 7}', "reason": "paid by hand"},
                page=PAGE)  # fmt: skip
    assert done.status_code == 303
    d.run()
    assert d.instance(iid).context["b"] == 7
    assert ops_rows(store, iid) == [("CompleteStep", "bob", "paid by hand")]


def test_replay_from_a_step_with_changed_input(
    web: TestClient, store: Store, clock: VirtualClock
) -> None:
    d, iid = dead_at_b(store, clock)
    sign_in(web)
    refused = post(web, "/instance/replay",
                   {"id": iid, "step": "nowhere", "input": "", "reason": "again"}, page=PAGE)  # fmt: skip
    assert refused.status_code == 409 and "has no step &#39;nowhere&#39;" in refused.text
    bad = post(web, "/instance/replay",
               {"id": iid, "step": "a", "input": "@/etc/passwd", "reason": "again"}, page=PAGE)  # fmt: skip
    assert bad.status_code == 400 and "a form cannot name a file" in bad.text
    done = post(web, "/instance/replay",
                {"id": iid, "step": "a", "input": '{"amount": 5}', "reason": "again"}, page=PAGE)  # fmt: skip
    assert done.status_code == 303
    d.run()
    assert d.instance(iid).context["a"] == 50


def test_cancel_signal_and_fire_timers_on_a_running_instance(
    web: TestClient, store: Store, clock: VirtualClock
) -> None:
    calls = []

    def flaky(amount: int, **_: Value) -> dict[str, Value]:
        calls.append(amount)
        if len(calls) == 1:
            raise TaskError("Busy", "try again", transient=True)
        return {"a": amount}

    d = Durable(store, clock, {**OPS_HANDLERS, "svc.a": flaky}, opsflow())
    iid = d.start("opsflow", {"id": "x"}, "r-1")
    page = f"/instance?id={iid}"
    sign_in(web, "cy")
    assert Elements(web.get(page).text).by_id("fire-form") is not None  # a retry backoff
    assert post(web, "/instance/fire-timers", {"id": iid, "timer": "", "reason": "skip the wait"},
                page=page).status_code == 303  # fmt: skip
    d.run()
    assert d.status(iid) == "waiting"
    d.complete("approve", {"ok": True}, iid)
    wrong = post(web, "/instance/signal",
                 {"id": iid, "name": "go", "payload": '{"by": 1}', "reason": "r"}, page=page)  # fmt: skip
    assert wrong.status_code == 400 and "does not fit" in wrong.text
    sent = post(web, "/instance/signal",
                {"id": iid, "name": "go", "payload": f'{{"by": "{HOSTILE.replace(chr(34), "")}"}}',
                 "reason": "by hand"}, page=page)  # fmt: skip
    assert sent.status_code == 303
    d.run()
    assert d.status(iid) == "completed"
    late = post(web, "/instance/cancel", {"id": iid, "reason": "too late"}, page=page)
    assert late.status_code == 409 and "it cannot be cancelled any more" in late.text
    assert [(k, a) for k, a, _ in ops_rows(store, iid)] == [
        ("TimerFired", "cy"),
        ("SignalReceived", "cy"),
    ]
    d2 = d.start("opsflow", {"id": "y"}, "r-2")
    assert post(web, "/instance/cancel", {"id": d2, "reason": "not needed", "compensate": "on"},
                page=page).status_code == 303  # fmt: skip
    d.run()
    assert d.status(d2) == "cancelled"


@pytest.mark.parametrize("path", ["/instance/retry", "/instance/cancel", "/publish"])
def test_an_action_without_sign_in_csrf_or_reason_is_refused_and_changes_nothing(
    web: TestClient, store: Store, clock: VirtualClock, path: str
) -> None:
    _, iid = dead_at_b(store, clock)
    before = snapshot(store, iid)
    form = {"id": iid, "reason": "why", "message": "m", "correlation": "1"}
    anonymous = post(web, path, form, page="/signin")  # a valid token, but nobody signed in
    assert anonymous.status_code == 403 and "Sign in to act" in anonymous.text
    sign_in(web)
    no_csrf = web.post(path, data=form)
    assert no_csrf.status_code == 403 and "CSRF token is missing or wrong" in no_csrf.text
    forged = web.post(path, data={**form, "csrf": "f" * 64})
    assert forged.status_code == 403
    no_reason = post(web, path, {**form, "reason": "  "}, page=PAGE)
    assert no_reason.status_code == 400 and "Say why" in no_reason.text
    as_json = web.post(path, json={**form, "csrf": csrf_of(web.get(PAGE).text)})
    assert as_json.status_code == 415
    assert snapshot(store, iid) == before


def test_actions_are_disabled_and_say_why_without_a_token(
    read_only: TestClient, store: Store, clock: VirtualClock
) -> None:
    dead_at_b(store, clock)
    page = read_only.get(PAGE).text
    disabled = Elements(page).by_id("actions-disabled")
    assert disabled is not None and "No operator token is configured" in page
    assert Elements(page).by_id("retry-form") is None and "csrf" not in page


def test_publish_a_message(web: TestClient, store: Store, clock: VirtualClock) -> None:
    from ..store.kit import example

    Durable(store, clock, {}, example("shipment_events"))

    def kept() -> int:
        with store.backend.read() as tx:
            return int(str(tx.query("SELECT count(*) FROM wf_message")[0][0]))

    sign_in(web, "dee")
    listed = Elements(web.get("/dead-letters").text)
    assert listed.by_id("publish-form") is not None
    form = {"message": "scanned", "correlation": "T-1", "ttl": "10m", "reason": "by hand",
            "payload": '{"tracking": "T-1", "signed_by": 5}'}  # fmt: skip
    wrong = post(web, "/publish", form)
    assert wrong.status_code == 400 and "the message &#39;scanned&#39; does not fit" in wrong.text
    assert post(web, "/publish", {**form, "ttl": "forever"}).status_code == 400
    unknown = post(web, "/publish", {**form, "message": "nothing_declares_this"})
    assert unknown.status_code == 404 and "no deployed workflow declares a message" in unknown.text
    assert kept() == 0
    good = {**form, "payload": '{"tracking": "T-1", "signed_by": "ann"}'}
    done = post(web, "/publish", good)
    assert done.status_code == 303 and done.headers["location"] == "/dead-letters?done=publish"
    assert kept() == 1
