"""Migrations, deployed versions and starting instances, on both stores."""

from __future__ import annotations

import threading
from pathlib import Path

import attrs
import pytest
from attrs import evolve

from wflang.durable.client import Client, InvalidValue
from wflang.runtime.table import table_hash
from wflang.store import Store, open_store
from wflang.store.records import (
    IllegalAction,
    StoreError,
    UnknownWorkflow,
    VersionConflict,
)
from wflang.store.schema import LATEST

from .kit import MINUTE, OPS_HANDLERS, Durable, Factory, VirtualClock, data_table, opsflow

# ------------------------------------------------------------------ migrations


def _schema_rows(store: Store) -> list[tuple[object, ...]]:
    with store.backend.read() as tx:
        return tx.query("SELECT version, name FROM wf_schema ORDER BY version")


def test_migrate_twice_applies_nothing_the_second_time(opener: Factory) -> None:
    store = opener()
    assert store.schema_version() == 0
    assert store.migrate() == list(range(1, LATEST + 1))
    assert store.migrate() == []
    assert store.schema_version() == LATEST == 9
    assert [int(str(v)) for v, _ in _schema_rows(store)] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    store.check_schema()  # no error once migrated


def test_a_store_at_an_older_version_is_refused_then_upgraded_in_place(
    store: Store, clock: VirtualClock
) -> None:
    """A store made by an earlier wflang (schema 1, before message correlation and change
    records) keeps its instances through `wf store migrate`; its history rows recorded no
    changes, the steps after the migration do."""
    d = Durable(store, clock, OPS_HANDLERS, opsflow())
    iid = d.start("opsflow", {"id": "x"}, "old-1")
    with store.backend.transaction() as tx:  # back to schema 1
        tx.execute("DROP TABLE wf_checkpoint")
        tx.execute("DROP TABLE wf_history_archive")
        tx.execute("DROP TABLE wf_subscription")
        tx.execute("DROP TABLE wf_message")
        tx.execute("ALTER TABLE wf_instance DROP COLUMN created_by")
        tx.execute("ALTER TABLE wf_instance DROP COLUMN created_reason")
        tx.execute("ALTER TABLE wf_history DROP COLUMN changes")
        tx.execute("DROP INDEX wf_instance_waiting_on")
        tx.execute("DROP INDEX wf_instance_ended")
        tx.execute("CREATE INDEX wf_task_instance ON wf_task (instance_id)")
        tx.execute("ALTER TABLE wf_instance DROP COLUMN waiting_on")
        for index in ("wf_instance_created", "wf_instance_flow_created",
                      "wf_instance_status_created", "wf_instance_parent", "wf_instance_still"):  # fmt: skip
            tx.execute(f"DROP INDEX {index}")
        tx.execute("ALTER TABLE wf_workflow DROP COLUMN source_text")
        if store.dialect.moved:
            tx.execute("DROP FUNCTION wf_moved()")
        tx.execute("DELETE FROM wf_schema WHERE version >= 2")
    with pytest.raises(StoreError, match=r"schema version 1.*needs 9"):
        store.check_schema()
    assert store.migrate() == [2, 3, 4, 5, 6, 7, 8, 9]
    store.check_schema()
    before = len(store.history(iid))
    d.complete("approve", {"ok": True}, iid)
    d.signal(iid, "go", {"by": "ann"})
    assert d.status(iid) == "completed"
    changes = [row.entry.changes for row in store.history(iid)]
    assert changes[:before] == [()] * before and any(changes[before:])


def _migrate_together(stores: list[Store]) -> tuple[list[list[int]], list[BaseException]]:
    barrier = threading.Barrier(len(stores))
    applied: list[list[int]] = []
    errors: list[BaseException] = []

    def run(store: Store) -> None:
        try:
            barrier.wait()
            applied.append(store.migrate())
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return applied, errors


def test_migrate_from_two_threads_at_once(opener: Factory, url: str, tmp_path: Path) -> None:
    """Two stores (two connections, as two processes would have) migrate at once: no error,
    each version applied exactly once. SQLite runs 25 rounds, each on a fresh file."""
    if url.startswith("sqlite"):
        rounds = [f"sqlite:///{tmp_path / f'round-{n}.db'}" for n in range(25)]
    else:
        rounds = [url]
    for n, round_url in enumerate(rounds):
        stores = [open_store(round_url, pool=2), open_store(round_url, pool=2)]
        try:
            applied, errors = _migrate_together(stores)
            assert errors == [], f"round {n}: {errors!r}"
            # Each version applied once, by one or the other (they may share the work).
            assert sorted(v for a in applied for v in a) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
            assert [int(str(v)) for v, _ in _schema_rows(stores[0])] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
            assert stores[1].schema_version() == 9
        finally:
            for s in stores:
                s.close()


def test_check_schema_on_an_unmigrated_store_says_what_to_run(opener: Factory) -> None:
    store = opener()
    with pytest.raises(StoreError) as err:
        store.check_schema()
    message = str(err.value)
    assert "schema version 0" in message and "needs 9" in message
    assert f"wf store migrate --store {store.url}" in message


# -------------------------------------------------------------------- versions


def test_deploying_the_same_version_twice_is_a_no_op(store: Store) -> None:
    client = Client(store, actor="t")
    first = client.deploy(opsflow())
    again = client.deploy(opsflow())
    assert first.new and not again.new
    assert first.hash == again.hash == table_hash(opsflow())
    assert [(v.name, v.version) for v in store.versions()] == [("opsflow", 1)]


def test_a_version_compiled_from_other_comments_is_the_same_version(store: Store) -> None:
    """Only the hash of the source text differs: the tables are compared (issue 12)."""
    client = Client(store, actor="t")
    first = client.deploy(opsflow())
    recompiled = evolve(opsflow(), source_hash="0" * 64)  # a comment added, say
    again = client.deploy(recompiled)
    assert first.new and not again.new and again.hash == first.hash
    assert client.deploy_all([(recompiled, None)])[0].hash == first.hash
    assert [(v.name, v.hash) for v in store.versions()] == [("opsflow", first.hash)]


def test_same_name_and_version_with_other_content_is_refused(store: Store) -> None:
    client = Client(store, actor="t")
    client.deploy(opsflow(1))
    changed = opsflow(1, end="finished")
    with pytest.raises(VersionConflict) as err:
        client.deploy(changed)
    message = str(err.value)
    assert "opsflow version 1 is already deployed with different content" in message
    assert table_hash(opsflow(1))[:12] in message and table_hash(changed)[:12] in message
    assert "new version number" in message
    assert store.deployed("opsflow").hash == table_hash(opsflow(1))  # unchanged


@pytest.mark.parametrize("version", [0, 2**31, 3_000_000_000])
def test_a_version_out_of_range_is_refused_and_nothing_stored(store: Store, version: int) -> None:
    """Every store refuses what PostgreSQL's version column cannot hold, the same way."""
    client = Client(store, actor="t")
    out_of_range = attrs.evolve(opsflow(1), version=version)
    with pytest.raises(StoreError) as err:
        client.deploy(out_of_range)
    assert str(err.value) == (
        f"opsflow version {version} is out of range: a version is 1 to 2147483647"
    )
    with pytest.raises(UnknownWorkflow):
        store.deployed("opsflow")
    client.deploy(attrs.evolve(opsflow(1), version=2**31 - 1))  # the highest one fits
    assert store.deployed("opsflow").version == 2**31 - 1


def test_instances_finish_on_the_version_they_started_on(store: Store, clock: VirtualClock) -> None:
    v1, v2 = opsflow(1), opsflow(2, end="finished")
    d = Durable(store, clock, OPS_HANDLERS, v1)
    old = d.start("opsflow", {"id": "old"}, "old")
    assert d.status(old) == "waiting"

    d.client.deploy(v2)
    new = d.start("opsflow", {"id": "new"}, "new")
    pinned = d.start("opsflow", {"id": "pinned"}, "pinned", version=1)
    assert [store.instance(i).version for i in (old, new, pinned)] == [1, 2, 1]
    drain = {v.version: (v.running, v.finished, v.latest) for v in store.versions("opsflow")}
    assert drain == {1: (2, 0, False), 2: (1, 0, True)}

    for iid in (old, new, pinned):
        d.complete("approve", {"ok": True}, iid)
        d.signal(iid, "go", {"by": "ada"})
    assert {store.instance(i).status for i in (old, new, pinned)} == {"completed"}
    for iid, table, end in ((old, v1, "done"), (new, v2, "finished"), (pinned, v1, "done")):
        info = store.instance(iid)
        assert info.table_hash == table_hash(table)
        decisions = [x for r in store.history(iid) for x in r.entry.decisions]
        assert f"enter {end}" in decisions
    drain = {v.version: (v.running, v.finished, v.latest) for v in store.versions("opsflow")}
    assert drain == {1: (0, 2, False), 2: (0, 1, True)}


def test_versions_of_every_workflow_and_drain_counts(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, OPS_HANDLERS, opsflow(1), data_table("nap"))
    d.start("nap", {"n": 1}, "nap-1")
    d.start("nap", {"n": 2}, "nap-2")
    d.advance(MINUTE)
    d.start("nap", {"n": 3}, "nap-3")
    rows = {(v.name, v.version): (v.running, v.finished, v.latest) for v in store.versions()}
    assert rows == {("nap", 1): (1, 2, True), ("opsflow", 1): (0, 0, True)}


def test_unknown_workflow_and_version_are_refused(store: Store) -> None:
    client = Client(store, actor="t")
    with pytest.raises(UnknownWorkflow, match="no deployed workflow 'opsflow'"):
        client.start("opsflow", {"id": "x"})
    client.deploy(opsflow(1))
    with pytest.raises(UnknownWorkflow, match=r"no deployed workflow 'nope' \(deployed: opsflow\)"):
        client.start("nope", {"id": "x"})
    with pytest.raises(UnknownWorkflow, match="workflow 'opsflow' has no deployed version 7"):
        client.start("opsflow", {"id": "x"}, version=7)
    with pytest.raises(UnknownWorkflow, match="no deployed workflow 'nope'"):
        store.versions("nope")
    assert store.instances() == []


# ----------------------------------------------------------------------- start


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"id": 5}, "'id' must be string, not int"),
        ({"id": "x", "amount": "many"}, "'amount' must be int, not str"),
        ({"id": "x", "amount": True}, "'amount' must be int, not bool"),
        ({}, "missing input field 'id' (string)"),
        ({"id": "x", "colour": "red"}, "unknown input field 'colour' (fields: id, amount)"),
        ({"id": None}, "'id' is null but its type string is not optional"),
    ],
)
def test_start_input_is_validated_and_nothing_is_written(
    store: Store, data: dict[str, object], problem: str
) -> None:
    client = Client(store, actor="t")
    client.deploy(opsflow(1))
    with pytest.raises(InvalidValue) as err:
        client.start("opsflow", data, instance_id="bad")  # type: ignore[arg-type]  # the bad input under test
    assert problem in err.value.problems
    assert str(err.value).startswith("the input of opsflow v1 does not fit: ")
    assert store.instances() == []
    assert store.stats().instances == {}


def test_start_validates_nested_records_of_an_example(store: Store) -> None:
    from .kit import example

    client = Client(store, actor="t")
    client.deploy(example("kyc_check"))
    with pytest.raises(InvalidValue) as err:
        client.start(
            "kyc_check",
            {"customer_id": "c", "full_name": "A", "country": "NL", "document_ids": ["p", 3]},
        )
    assert err.value.problems == ("'document_ids[1]' must be string, not int",)
    assert store.instances() == []


def test_start_is_idempotent_by_id(store: Store, clock: VirtualClock) -> None:
    client = Client(store, actor="t")
    client.deploy(opsflow(1))
    first = client.start("opsflow", {"id": "x"}, instance_id="same")
    clock.advance(5)
    again = client.start("opsflow", {"id": "x"}, instance_id="same")
    assert again == first  # the same instance, not a second one
    with pytest.raises(IllegalAction, match="instance 'same' already exists"):
        client.start("opsflow", {"id": "y"}, instance_id="same")
    assert [i.id for i in store.instances()] == ["same"]
    assert store.instance("same").input == {"id": "x"}


def test_start_on_the_latest_or_a_given_version(store: Store) -> None:
    client = Client(store, actor="t")
    client.deploy(opsflow(1))
    client.deploy(opsflow(2, end="finished"))
    latest = client.start("opsflow", {"id": "a"})
    given = client.start("opsflow", {"id": "b"}, version=1)
    assert (latest.version, latest.table_hash) == (2, table_hash(opsflow(2, end="finished")))
    assert (given.version, given.table_hash) == (1, table_hash(opsflow(1)))
    assert latest.id.startswith("opsflow-") and latest.status == "pending"


def test_a_repeated_start_is_idempotent_across_a_deploy(store: Store) -> None:
    client = Client(store, actor="t")
    client.deploy(opsflow(1))
    first = client.start("opsflow", {"id": "x"}, instance_id="same")
    client.deploy(opsflow(2, end="finished"))  # a deploy between the start and its retry
    again = client.start("opsflow", {"id": "x"}, instance_id="same")
    assert again == first and again.version == 1
