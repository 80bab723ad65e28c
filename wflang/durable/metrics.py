"""Prometheus metrics of a worker: its own counters and the queue as the store sees it.

Queue depth, lag and instance counts are read from the database at scrape time
(one collector, no shared state between processes), so every worker's endpoint
reports the same queue; step and task outcomes are this worker's counters.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from wflang.durable.worker import Worker
from wflang.store import Store
from wflang.store.records import Stats


class WorkerCollector(Collector):
    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def collect(self) -> Iterator[Metric]:
        c = self.worker.counters
        yield _counter("wf_transitions", "Transitions committed by this worker", c.transitions)
        yield _counter("wf_task_results", "Handler results committed", c.results)
        yield _counter("wf_stale_results", "Handler results refused: lease lost", c.stale)
        yield _counter("wf_tasks_claimed", "Tasks claimed under a lease", c.claimed)
        yield _counter("wf_instances_finished", "Instances this worker finished", c.finished)
        yield _counter("wf_leases_lost", "Leases found lost at heartbeat", c.lost_leases)
        yield _counter(
            "wf_listen_reconnects", "Notification connections opened again", c.listen_reconnects
        )
        outcomes = CounterMetricFamily(
            "wf_task_outcomes",
            "Handler calls by service and outcome",
            labels=["service", "outcome"],
        )
        for (service, outcome), n in sorted(c.outcomes.items()):
            outcomes.add_metric([service, outcome], n)
        yield outcomes
        yield from queue_metrics(self.worker.store.stats())


class StoreCollector(Collector):
    """The queue as the store sees it, with no worker's counters: what the console's
    ``/metrics`` serves."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        yield from queue_metrics(self.store.stats())


def queue_metrics(stats: Stats) -> Iterator[Metric]:
    """Queue depth, lag and instance counts, read from the database at scrape time."""
    yield _gauge("wf_queue_ready_tasks", "Service calls due and not claimed", stats.ready_tasks)
    yield _gauge("wf_queue_running_tasks", "Service calls under a lease", stats.running_tasks)
    yield _gauge("wf_queue_lag_seconds", "Age of the oldest due call", stats.oldest_ready_ms / 1000)
    yield _gauge("wf_human_tasks_open", "Human tasks waiting for a person", stats.open_human_tasks)
    yield _gauge("wf_timers_due", "Timers due and not fired yet", stats.due_timers)
    yield _gauge("wf_inbox_pending", "Signals and events not taken yet", stats.pending_events)
    instances = GaugeMetricFamily("wf_instances", "Instances by status", labels=["status"])
    for status, n in sorted(stats.instances.items()):
        instances.add_metric([status], n)
    yield instances


def _counter(name: str, doc: str, value: float) -> Metric:
    return CounterMetricFamily(name, doc, value=value)


def _gauge(name: str, doc: str, value: float) -> Metric:
    return GaugeMetricFamily(name, doc, value=value)


def serve(worker: Worker, port: int, addr: str = "0.0.0.0") -> CollectorRegistry:
    """Serve ``/metrics`` for this worker on ``port``, in a daemon thread."""
    registry = CollectorRegistry()
    registry.register(WorkerCollector(worker))
    start_http_server(port, addr=addr, registry=registry)
    return registry
