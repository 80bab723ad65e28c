"""A step sets only the instance columns that changed (issue 18: the CPU of a step).

An index whose columns a step's UPDATE leaves out is not touched, and on SQLite each
index page it would rewrite is one more page the commit writes: a step in a chain of
service calls changes the state, the sequence number and the time, never the status,
the wake-up time or what the instance waits on. What "changed" means is the row as the
step read it, not the state it decoded: a row set by hand (a person repairing a
dead-lettered instance) is written back whole by the next step.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from wflang.durable.worker import Worker
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.store.records import Advanced

from .helpers import fixture_table

FRAME = 24 + 4096  # a WAL frame: its header, then the page


def _op(**kw: Value) -> dict[str, Value]:
    return {"value": 1}


def _worker(store: Store, on_advance: Callable[[Advanced], None]) -> Worker:
    return Worker(
        store, {"svc.op": _op}, concurrency=1, batch=1, group_commit=False,
        lease_ms=3_600_000, on_advance=on_advance,
    )  # fmt: skip


def test_a_step_writes_back_columns_set_by_hand(
    store_url: str, make_store: Callable[..., Store]
) -> None:
    store = make_store(store_url)
    store.deploy(fixture_table("chain"))
    seen: list[tuple[str, int | None, tuple[str, ...], int]] = []

    def after(adv: Advanced) -> None:
        info = store.instance("c1")
        if not adv.transitions or info.instance is None:
            return
        seen.append((info.status, info.wake_at, info.waiting_on, info.updated_at))
        if info.instance.seq == 2:  # between two steps that change none of these
            with store.backend.transaction() as tx:
                tx.execute(
                    "UPDATE wf_instance SET status = 'dead_lettered', wake_at = NULL, "
                    "waiting_on = NULL, updated_at = 0 WHERE id = 'c1'"
                )

    worker = _worker(store, after)
    store.create(store.deployed("chain"), {}, "c1")
    worker.run_until_idle()
    assert [s[:3] for s in seen] == [("running", None, ("task",))] * 4 + [("completed", None, ())]
    assert all(s[3] > 0 for s in seen)


def _dbstat(conn: sqlite3.Connection) -> dict[int, str]:
    try:
        return {int(p): str(n) for p, n in conn.execute("SELECT pageno, name FROM dbstat")}
    except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
        pytest.skip("this SQLite has no dbstat table")


def test_a_chain_step_rewrites_no_index_of_what_it_did_not_change(
    tmp_path: Path, make_store: Callable[..., Store]
) -> None:
    """The pages of wf_instance's and wf_task's b-trees that each chain step's commit
    writes (read off the WAL, which nothing checkpoints here): the instance table and
    the index of the time it last moved, never those of its status, wake-up time or
    waits; the task table and its index of leases, no index by instance."""
    path = tmp_path / "state.db"
    store = make_store(f"sqlite:///{path}")
    store.deploy(fixture_table("chain"))
    conn = store.backend._conn()  # type: ignore[attr-defined]
    conn.execute("PRAGMA wal_autocheckpoint=0")
    wal = Path(f"{path}-wal")
    marks: list[tuple[int, int]] = []  # (where the commit's frames start, end)
    last = [0]

    def after(adv: Advanced) -> None:
        end = wal.stat().st_size
        if adv.transitions and adv.results:
            marks.append((last[0], end))
        last[0] = end

    worker = _worker(store, after)
    store.create(store.deployed("chain"), {}, "warm-up")
    worker.run_until_idle()
    store.create(store.deployed("chain"), {}, "c1")
    last[0] = wal.stat().st_size
    marks.clear()
    worker.run_until_idle()
    names, data = _dbstat(conn), wal.read_bytes()
    written = []
    for start, end in marks[:-1]:  # the last step ends the instance: its status changes
        pages = (struct.unpack(">I", data[at : at + 4])[0] for at in range(start, end, FRAME))
        written.append(
            {names[p] for p in pages if names.get(p, "").startswith(("wf_inst", "wf_task"))}
        )
    assert len(written) == 3
    for found in written:
        # the instance and the index of the time it last moved (no index by status and
        # time: the finished ones' is written once, as one ends); the call it closed and
        # the one it leased, and the index of leases (none by instance: a key's range)
        assert {"wf_instance", "wf_task"} <= found, found
        assert found <= {"wf_instance", "wf_instance_still", "wf_task", "wf_task_leased"}, found
