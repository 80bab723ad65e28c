"""`wf worker` as a process: SIGTERM drains (the running call finishes and commits,
nothing new is claimed), metrics and JSON logs."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.client import Client
from wflang.durable.metrics import WorkerCollector
from wflang.durable.worker import Worker
from wflang.runtime.ir import Value
from wflang.store import open_store
from wflang.store.records import Advanced

DATA = Path(__file__).parent / "data" / "worker_process"


def _store_with_instances(url: str, ids: list[str]) -> None:
    store = open_store(url)
    store.migrate()
    table = compile_workflow(parse_file(str(DATA / "blocking.wf"))).table
    assert table is not None
    client = Client(store, actor="test")
    client.deploy(table)
    for iid in ids:
        client.start("blocking", {"id": iid}, instance_id=iid)
    store.close()


def test_sigterm_drains_the_running_call_and_claims_nothing_new(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    _store_with_instances(url, ["one", "two"])
    started, release = tmp_path / "started", tmp_path / "release"
    os.mkfifo(started)
    os.mkfifo(release)
    env = {
        **os.environ,
        "PYTHONPATH": f"{DATA}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "WF_TEST_STARTED": str(started),
        "WF_TEST_RELEASE": str(release),
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "wflang.cli", "worker", "--store", url, "--handlers",
         "blocking_handlers", "--concurrency", "1", "--poll", "50", "--log-format", "json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        with open(started) as f:  # blocks until the handler runs
            first = f.readline().strip()
        worker.send_signal(signal.SIGTERM)  # drain while the call is running
        with open(release, "w") as f:
            f.write("go\n")
        _out, err = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 0, err
    store = open_store(url)
    statuses = {i.id: i.status for i in store.instances()}
    other = "two" if first == "one" else "one"
    assert statuses[first] == "completed"  # its call finished and was committed
    assert statuses[other] == "running"  # started, but its call was never claimed
    (task,) = store.tasks(instance_id=other)
    assert task.status == "ready" and task.claims == 0
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert events[0]["event"] == "worker started"
    assert events[-1]["event"] == "worker stopped" and events[-1]["transitions"] >= 2


def test_metrics_report_queue_and_outcomes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    _store_with_instances(url, ["a", "b", "c"])
    store = open_store(url)
    worker = Worker(store, {"slow.call": lambda id: {"done": True}})
    registry = CollectorRegistry()
    registry.register(WorkerCollector(worker))
    before = generate_latest(registry).decode()
    assert 'wf_instances{status="pending"} 3.0' in before
    worker.run_until_idle()
    after = generate_latest(registry).decode()
    assert 'wf_instances{status="completed"} 3.0' in after
    assert 'wf_task_outcomes_total{outcome="ok",service="slow.call"} 3.0' in after
    assert "wf_transitions_total 6.0" in after
    assert "wf_queue_ready_tasks 0.0" in after and "wf_queue_lag_seconds 0.0" in after


def test_a_worker_survives_a_store_outage_and_keeps_its_results(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    _store_with_instances(url, ["x"])
    store = open_store(url)
    real = store.advance
    failures = {"left": 2}

    def flaky(*args: Any, **kwargs: Any) -> Advanced:
        if kwargs.get("results") and failures["left"]:  # committing the result fails twice
            failures["left"] -= 1
            raise sqlite3.OperationalError("disk I/O error")
        return real(*args, **kwargs)

    store.advance = flaky  # type: ignore[method-assign]  # a store that fails on cue
    ran: list[str] = []

    def call(id: str) -> dict[str, Value]:
        ran.append(id)
        return {"done": True}

    def finished(adv: Advanced) -> None:
        if adv.finished:
            worker.stop()

    worker = Worker(store, {"slow.call": call}, poll_ms=20, on_advance=finished)
    with caplog.at_level(logging.ERROR, logger="wflang.worker"):
        worker.run()  # returns once the instance finished and the worker drained
    assert store.instance("x").status == "completed"
    assert ran == ["x"]  # the result was kept and committed, not run again
    assert failures["left"] == 0
    assert caplog.text.count("store unavailable; retrying") == 2
