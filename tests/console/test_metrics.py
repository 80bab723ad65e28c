"""The metrics (issue 19, item 6): /metrics serves the queue's Prometheus metrics, and
the metrics page shows the last hour by five minutes (started, finished, run times,
queue depth) from the rows; on SQLite and PostgreSQL, on the virtual clock."""

from __future__ import annotations

from starlette.testclient import TestClient

from wflang.store import Store

from ..store.kit import MINUTE, OPS_HANDLERS, Durable, VirtualClock, opsflow
from .kit import Elements


def test_the_last_hour_by_five_minutes(web: TestClient, store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    d.start("opsflow", {"id": "a"}, "m-1")  # 60 minutes ago: in the first interval
    clock.advance(30 * MINUTE)
    d.complete("approve", {"ok": True}, "m-1")
    d.signal("m-1", "go", {"by": "x"})  # finished 30 minutes after it started
    d.start("opsflow", {"id": "b"}, "m-2")
    clock.advance(30 * MINUTE - 1)
    intervals = store.activity(window_ms=60 * MINUTE, interval_ms=5 * MINUTE)
    assert len(intervals) == 12
    assert [i.started for i in intervals] == [1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert [i.finished for i in intervals] == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert intervals[6].p50_ms == 30 * MINUTE and intervals[6].failed == 0
    page = web.get("/metrics-page")
    assert page.status_code == 200
    rows = Elements(page.text).with_attr("data-started")
    assert [r["data-started"] for r in rows] == [str(i.started) for i in intervals]
    for key in ("started", "finished", "p50", "p95", "queue"):
        assert Elements(page.text).by_id(f"chart-{key}") is not None
    assert Elements(page.text).by_id("m-human") is not None


def test_prometheus_metrics(web: TestClient, store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    d.start("opsflow", {"id": "a"}, "m-1")
    text = web.get("/metrics").text
    assert "wf_human_tasks_open 1.0" in text
    assert 'wf_instances{status="waiting"} 1.0' in text
