"""The versions page (issue 19, item 5): deployed versions with their draining state,
each version's diagram, and the `wf diff` report between two versions; on SQLite and
PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.store import Store

from ..store.kit import OPS_HANDLERS, OPSFLOW, Durable, VirtualClock, opsflow
from .kit import Elements


def deploy_two(store: Store, clock: VirtualClock, folder: Path) -> Durable:
    d = Durable(store, clock, OPS_HANDLERS)
    for version, end in ((1, "done"), (2, "fin")):
        path = folder / f"opsflow{version}.wf"
        path.write_text(OPSFLOW.format(version=version, end=end))
        table = compile_workflow(parse_file(path)).table
        assert table is not None
        d.client.deploy(table, str(path))
        if version == 1:
            d.start("opsflow", {"id": "old"}, "on-v1")
    return d


def test_versions_with_their_state_and_diagram(
    web: TestClient, store: Store, clock: VirtualClock, tmp_path: Path
) -> None:
    deploy_two(store, clock, tmp_path)
    rows = Elements(web.get("/versions").text).with_attr("data-state")
    assert [(r["data-version"], r["data-state"], r["data-running"]) for r in rows] == [
        ("1", "draining", "1"), ("2", "latest", "0"),
    ]  # fmt: skip
    page = web.get("/versions/version", params={"name": "opsflow", "version": "2"})
    assert page.status_code == 200 and Elements(page.text).by_id("diagram") is not None
    assert "<svg" in page.text
    assert (
        web.get("/versions/version", params={"name": "opsflow", "version": "9"}).status_code == 404
    )
    assert (
        web.get("/versions/version", params={"name": "opsflow", "version": "x"}).status_code == 400
    )


def test_the_diff_report_between_two_versions(
    web: TestClient, store: Store, clock: VirtualClock, tmp_path: Path
) -> None:
    d = deploy_two(store, clock, tmp_path)
    page = web.get("/versions/diff", params={"name": "opsflow", "old": "1", "new": "2"})
    assert page.status_code == 200
    summary = Elements(page.text).by_id("diff-summary")
    assert summary is not None and int(summary["data-breaking"]) >= 1
    assert "done" in page.text and "fin" in page.text  # the end renamed
    d.client.deploy(opsflow(3))  # no source kept
    bare = web.get("/versions/diff", params={"name": "opsflow", "old": "2", "new": "3"})
    assert "opsflow v3: its source was not kept" in bare.text
