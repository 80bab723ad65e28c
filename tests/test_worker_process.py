"""`wf worker` as a process: SIGTERM drains (the running call finishes and commits,
nothing new is claimed), metrics and JSON logs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.client import Client
from wflang.durable.metrics import WorkerCollector
from wflang.durable.worker import Worker
from wflang.store import open_store

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
