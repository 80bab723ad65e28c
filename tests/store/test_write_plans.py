"""What SQLite does to write a step's rows: no temporary table (issue 18).

SQLite evaluates an ``IN`` list of more than two constants with a temporary b-tree,
built each time: as the condition of a partial index, at every write of a row of its
table. A step's UPDATE of its instance cost 30-60 µs with two such conditions instead of
about 6, a tenth of a sequential step. The conditions are comparisons joined by OR
(``status.one_of``), and these tests keep them so.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from wflang.store import open_store
from wflang.store.status import IS_ACTIVE, IS_FINISHED
from wflang.store.step_rows import HISTORY_INSERT, HISTORY_ROW, MOVING, update_instance

from .kit import record_queries


def _migrated(tmp_path: Path) -> sqlite3.Connection:
    path = tmp_path / "state.db"
    store = open_store(f"sqlite:///{path}", create=True)
    store.migrate()
    store.close()
    return sqlite3.connect(path)


def _temporary_tables(conn: sqlite3.Connection, sql: str) -> int:
    params = (None,) * sql.count("?")
    return sum(1 for r in conn.execute("EXPLAIN " + sql, params) if r[1] == "OpenEphemeral")


def test_no_partial_index_has_an_in_list(tmp_path: Path) -> None:
    conn = _migrated(tmp_path)
    partial = {
        str(name): str(sql)
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'"
        )
    }
    assert {"wf_instance_still", "wf_instance_ended", "wf_task_ready"} <= set(partial)
    assert [n for n, sql in partial.items() if " IN " in sql.upper().split(" WHERE ", 1)[1]] == []


def test_a_step_writes_its_instance_and_history_without_a_temporary_table(
    tmp_path: Path,
) -> None:
    conn = _migrated(tmp_path)
    for changed in itertools.product((False, True), repeat=len(MOVING)):
        assert _temporary_tables(conn, update_instance(changed)) == 0, changed
    assert _temporary_tables(conn, HISTORY_INSERT + HISTORY_ROW) == 0


def test_the_finished_instances_are_read_off_their_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``purge`` and the console's ``activity`` walk ``wf_instance_ended`` by time (named:
    without statistics SQLite would read every finished instance off the index by status
    and sort them)."""
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}", create=True)
    store.migrate()
    seen = record_queries(monkeypatch)
    store.purge(ended_before=5)
    store.activity()
    named = [(sql, params) for sql, params in seen if "wf_instance_ended" in sql]
    assert len(named) == 2, seen
    with store.backend.read() as tx:
        for sql, params in named:
            plan = " ".join(str(r) for r in tx.query("EXPLAIN QUERY PLAN " + sql, params))
            assert "USING INDEX wf_instance_ended (updated_at" in plan, plan
            assert "TEMP B-TREE" not in plan, plan
    store.close()


def test_the_queries_name_the_statuses_the_indexes_hold(tmp_path: Path) -> None:
    """The conditions of ``wf_instance_still`` and ``wf_instance_ended`` are written out
    in migration 9; the queries that use them repeat ``status.IS_ACTIVE`` and
    ``IS_FINISHED``. A status added to the runtime changes the latter: then a migration
    must rebuild the indexes, or the queries would no longer match them."""
    conn = _migrated(tmp_path)
    found = {
        str(name): " ".join(str(sql).split()).split(" WHERE ", 1)[1]
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE name IN (?, ?)",
            ("wf_instance_still", "wf_instance_ended"),
        )
    }
    assert found == {"wf_instance_still": IS_ACTIVE, "wf_instance_ended": IS_FINISHED}
