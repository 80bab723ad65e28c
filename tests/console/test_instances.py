"""The instances page (issue 19, item 1): every filter, the searches, keyset paging,
and filters that make no sense refused with a message; on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from wflang.store import Store

from ..store.kit import MINUTE, OPS_HANDLERS, T0, Durable, VirtualClock, opsflow
from .kit import Elements, row_ids


@pytest.fixture
def d(store: Store, clock: VirtualClock) -> Durable:
    d = Durable(store, clock, OPS_HANDLERS, opsflow(1), opsflow(2, end="fin"))
    for n in range(60):
        d.client.start("opsflow", {"id": f"cust-{n}", "amount": n}, instance_id=f"i-{n:02}",
                       version=1 + n % 2)  # fmt: skip
        clock.advance(MINUTE)
    return d


def test_the_first_page_lists_the_newest_fifty_then_the_next(web: TestClient, d: Durable) -> None:
    first = web.get("/instances")
    assert first.status_code == 200
    assert row_ids(first.text) == [f"i-{n:02}" for n in range(59, 9, -1)]
    link = Elements(first.text).by_id("next-page")
    assert link is not None
    second = web.get(link["href"])
    assert row_ids(second.text) == [f"i-{n:02}" for n in range(9, -1, -1)]
    assert Elements(second.text).by_id("next-page") is None
    assert Elements(second.text).by_id("first-page") is not None
    assert web.get("/", follow_redirects=False).headers["location"] == "/instances"


def test_filters_and_searches(web: TestClient, d: Durable, clock: VirtualClock) -> None:
    def listed(**params: str) -> list[str]:
        answer = web.get("/instances", params=params)
        assert answer.status_code == 200, answer.text
        return row_ids(answer.text)

    assert len(listed(version="1")) == 30
    assert listed(workflow="opsflow", version="2", id="i-5") == [
        "i-59",
        "i-57",
        "i-55",
        "i-53",
        "i-51",
    ]
    assert listed(status="pending", id="i-0") == [f"i-0{n}" for n in range(9, -1, -1)]
    assert listed(field="id", value="cust-7") == ["i-07"]
    assert listed(field="amount", value="12") == ["i-12"]
    assert listed(started_from="2026-03-02T09:00", started_to="2026-03-02T09:03") == [
        "i-02",
        "i-01",
        "i-00",
    ]
    assert T0 == 1_772_442_000_000  # 2026-03-02T09:00Z: the times above
    d.run()
    assert len(listed(waiting_on="person")) == 50  # a page
    clock.advance(90 * MINUTE)
    d.complete("approve", {"ok": True}, "i-30")
    stuck = listed(stuck="1h")
    assert "i-30" not in stuck and stuck[:2] == ["i-00", "i-01"]  # the longest still first
    assert listed(waiting_on="signal:go") == ["i-30"]
    page = web.get("/instances", params={"status": "waiting"}).text
    assert 'data-status="waiting"' in page and 'data-status="pending"' not in page


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"version": "two"}, "version: &#39;two&#39; is not a version number"),
        ({"status": "asleep"}, "status: &#39;asleep&#39; is none of pending"),
        ({"waiting_on": "godot"}, "is not something an instance waits on"),
        ({"stuck": "forever"}, "is not a duration"),
        ({"started_from": "yesterday"}, "started from: &#39;yesterday&#39; is not a date"),
        ({"field": "a b", "value": "1"}, "not an input field"),
        ({"after": "nowhere"}, "not a page key"),
    ],
)
def test_a_filter_that_makes_no_sense_is_refused_with_a_message(
    web: TestClient, d: Durable, params: dict[str, str], message: str
) -> None:
    answer = web.get("/instances", params=params)
    assert answer.status_code == 400
    assert message in answer.text
    assert row_ids(answer.text) == []
    # the form keeps what was typed, to correct it
    assert (
        Elements(answer.text).by_id("f-" + next(iter(params)).replace("_", "-")) is not None
        or "after" in params
    )
