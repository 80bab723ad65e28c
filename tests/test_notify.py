"""LISTEN/NOTIFY (PostgreSQL): an idle worker polling once a minute still takes a new
instance and a signal at once, because the store announces them at commit."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime.ir import Value
from wflang.store import Store, open_store

DSN = os.environ.get("WFLANG_TEST_PG_DSN")
DATA = Path(__file__).parent / "data" / "worker_process"
pytestmark = pytest.mark.skipif(not DSN, reason="WFLANG_TEST_PG_DSN is not set")


@pytest.fixture
def store() -> Iterator[Store]:
    assert DSN is not None
    schema = f"wf_notify_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        sep = "&" if "?" in DSN else "?"
        s = open_store(f"{DSN}{sep}options=-csearch_path%3D{schema}", pool=4)
        try:
            s.migrate()
            yield s
        finally:
            s.close()
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_an_idle_worker_is_woken_by_new_work(store: Store) -> None:
    table = compile_workflow(parse_file(str(DATA / "blocking.wf"))).table
    assert table is not None
    client = Client(store, actor="test")
    client.deploy(table)
    called = threading.Event()

    def call(id: str) -> dict[str, Value]:
        called.set()
        return {"done": True}

    looked = threading.Event()
    worker = Worker(
        store,
        {"slow.call": call},
        poll_ms=60_000,  # polling alone would take a minute
        on_advance=lambda _: looked.set(),
    )
    with worker.woken_by_notify():
        thread = threading.Thread(target=worker.run)
        thread.start()
        try:
            assert looked.wait(timeout=20)  # its first pass found nothing: now it waits
            client.start("blocking", {"id": "n-1"}, instance_id="n-1")
            assert called.wait(timeout=20), "the NOTIFY at commit did not wake the worker"
        finally:
            worker.stop()
            thread.join(timeout=30)
    assert not thread.is_alive()
    assert store.instance("n-1").status == "completed"
