"""One instance's page (issue 19, item 2): its diagram with the history overlay and
where it is now (inline SVG, sanitised), the timeline with each step's context
changes and who asked, pending timers and tasks, children and parent; hostile values
shown as text; on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from wflang.console.svg import UnsafeSvg, sanitise
from wflang.store import Store

from ..store.kit import OPS_HANDLERS, Durable, VirtualClock
from .flows import written
from .kit import HOSTILE, Elements


@pytest.fixture
def d(store: Store, clock: VirtualClock, tmp_path: Path) -> Durable:
    d = Durable(store, clock, OPS_HANDLERS)
    flows = written(tmp_path)
    d.client.deploy_all([flows["child_flow"], flows["parent_flow"], flows["opsflow"]])
    return d


def test_a_waiting_instance_on_its_diagram_with_its_history(web: TestClient, d: Durable) -> None:
    d.start("opsflow", {"id": "c-1", "amount": 2}, "o-1")
    page = web.get("/instance", params={"id": "o-1"})
    assert page.status_code == 200
    html = page.text
    found = Elements(html)
    diagram = found.by_id("diagram")
    assert diagram is not None and diagram["data-current"] == "approve"
    assert "<svg" in html and Elements(html).scripts == 0
    assert [a["data-node"] for a in found.with_attr("data-node")] == ["approve"]
    tasks = found.with_attr("data-task-key")
    assert sorted(t["data-task-status"] for t in tasks) == ["done", "done", "open"]
    entries = found.with_attr("data-seq")
    assert [e["data-event"] for e in entries][:2] == ["start", "TaskCompleted"]
    assert "~ a: 0 -&gt; 20" in html  # the context change of the step that took a's result
    assert "by tester" not in html and ">tester<" in html  # the start's actor


def test_children_and_parent_link_each_other(web: TestClient, d: Durable) -> None:
    d.start("parent_flow", {}, "p-1")
    children = Elements(web.get("/instance", params={"id": "p-1"}).text)
    child_ids = [c["data-instance-id"] for c in children.with_attr("data-instance-id")][1:]
    assert len(child_ids) == 1
    child = web.get("/instance", params={"id": child_ids[0]}).text
    parent = Elements(child).by_id("parent")
    assert parent is not None and "p-1" in child
    assert 'data-node="bottom"' in child and 'data-waiting="signal:go"' in child


def test_hostile_history_values_are_shown_as_text(web: TestClient, d: Durable) -> None:
    d.start("opsflow", {"id": HOSTILE}, f"o-{HOSTILE}")
    d.complete("approve", {"ok": True}, f"o-{HOSTILE}")
    d.signal(f"o-{HOSTILE}", "go", {"by": HOSTILE}, reason=HOSTILE)
    page = web.get("/instance", params={"id": f"o-{HOSTILE}"})
    assert page.status_code == 200
    assert "<script>" not in page.text and Elements(page.text).scripts == 0
    assert page.text.count("&lt;script&gt;") >= 5  # id, input, payload, change, reason


def test_an_unknown_instance_is_a_404_saying_so(web: TestClient, d: Durable) -> None:
    answer = web.get("/instance", params={"id": HOSTILE})
    assert answer.status_code == 404
    assert "no instance &#39;&lt;script&gt;" in answer.text and "<script>" not in answer.text


def test_a_version_deployed_without_its_source_says_why_it_has_no_diagram(
    web: TestClient, store: Store, clock: VirtualClock
) -> None:
    from ..store.kit import opsflow

    d = Durable(store, clock, OPS_HANDLERS, opsflow(3))  # no file: no source kept
    d.start("opsflow", {"id": "x"}, "bare")
    page = web.get("/instance", params={"id": "bare"}).text
    assert Elements(page).by_id("diagram") is None
    assert "its source was not kept when it was deployed" in page


def test_the_svg_keeps_the_drawing_and_drops_anything_else() -> None:
    hostile = (
        b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        b'width="10pt" onload="alert(1)"><script>alert(2)</script>'
        b'<g id="node1" class="node"><title>a&lt;b</title>'
        b'<a xlink:href="javascript:alert(3)"><text x="1" y="2" fill="url(javascript:x)">t</text></a>'
        b"<foreignObject><div>x</div></foreignObject>"
        b'<polygon fill="#ffffff" stroke="black" points="0,0 1,1"/></g></svg>'
    )
    clean = sanitise(hostile)
    for gone in ("onload", "script", "javascript", "foreignObject", "xlink:href", "url("):
        assert gone not in clean, gone
    assert "a&lt;b" in clean and 'points="0,0 1,1"' in clean and 'fill="#ffffff"' in clean
    assert clean.startswith("<svg")
    with pytest.raises(UnsafeSvg):
        sanitise(
            b'<!DOCTYPE svg [<!ENTITY x "y">]><svg xmlns="http://www.w3.org/2000/svg">&x;</svg>'
        )
    with pytest.raises(UnsafeSvg):
        sanitise(b"<html><script>alert(1)</script></html>")


def test_the_timeline_prints_times_as_wf_history_does(
    web: TestClient, store: Store, clock: VirtualClock
) -> None:
    """A timestamp written into the context reads as ISO-8601 in the timeline, as in
    ``wf history --changes``, not as the milliseconds it is stored as."""
    from decimal import Decimal

    from wflang.runtime.ir import Value

    from ..store.kit import example

    def tax(amount: Decimal) -> dict[str, Value]:
        return {"total": amount * Decimal("1.20")}

    d = Durable(store, clock, {"tax.add": tax}, example("invoice_approval"))
    d.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("100.50")}, "i-1")
    d.signal("i-1", "approval", {"by": "ada", "at": "2026-03-03T09:00:00Z"})
    html = web.get("/instance", params={"id": "i-1"}).text
    assert "~ approved_at: null -&gt; 2026-03-03T09:00:00Z" in html
    assert "approved_at: null -&gt; 1772528400000" not in html
