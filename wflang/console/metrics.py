"""The metrics: ``/metrics``, the queue's Prometheus metrics as every worker serves them
(``durable.metrics.queue_metrics``), and a page with the current queue and, over the
last hour, throughput, run time and queue depth by five minutes
(``Store.activity``), drawn as bars with no script."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wflang.console.web import Console, page
from wflang.store.activity import Interval

HOUR_MS = 3_600_000
INTERVAL_MS = 300_000
#: The height of a chart's tallest bar, in the SVG's units.
BAR = 60


def chart(intervals: tuple[Interval, ...], value: str) -> list[dict[str, Any]]:
    """Each interval's value of one series and its bar's height."""
    values = [getattr(i, value) or 0 for i in intervals]
    top = max(values) or 1
    return [
        {"start": i.start, "value": getattr(i, value), "height": round(BAR * v / top)}
        for i, v in zip(intervals, values, strict=True)
    ]


def metrics_page(console: Console, request: Request) -> Response:
    intervals = console.store.activity(window_ms=HOUR_MS, interval_ms=INTERVAL_MS)
    context = {
        "stats": console.store.stats(),
        "intervals": intervals,
        "bar": BAR,
        "charts": [
            ("started", "Instances started", chart(intervals, "started")),
            ("finished", "Instances finished", chart(intervals, "finished")),
            ("p50", "Median run time of those finished (ms)", chart(intervals, "p50_ms")),
            ("p95", "95th percentile run time (ms)", chart(intervals, "p95_ms")),
            ("queue", "Open service calls (queue depth)", chart(intervals, "queue")),
        ],
    }
    return page(console, request, "metrics.html", context)


def prometheus(console: Console) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.registry import CollectorRegistry

    from wflang.durable.metrics import StoreCollector

    registry = CollectorRegistry()
    registry.register(StoreCollector(console.store))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def routes(console: Console) -> list[Route]:
    return [
        Route("/metrics", lambda _: prometheus(console), name="prometheus"),
        Route("/metrics-page", lambda r: metrics_page(console, r), name="metrics"),
    ]
