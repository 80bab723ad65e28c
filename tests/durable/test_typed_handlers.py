"""Typed handlers on a durable worker (issue 17), on SQLite and PostgreSQL: a module of
handlers given by its file runs with the generated classes, and handlers that do not
fit the deployed workflows are refused, by ``Worker`` and by ``wf worker``, before
anything is claimed."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.test_handlers import FLOW, INPUT, TYPED, WRONG
from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.worker import Worker
from wflang.handlers.verify import HandlersRefused
from wflang.store import Store


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "pay.wf").write_text(FLOW)
    assert main(["gen", "python", str(tmp_path / "pay.wf"), "-o", str(tmp_path / "gen")]) == 0
    (tmp_path / "pay_handlers.py").write_text(TYPED)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith(("gen", "pay_handlers", "wrong_"))]:
        del sys.modules[name]


def _started(store: Store, project: Path) -> None:
    compiled = compile_workflow(parse_file(str(project / "pay.wf")))
    assert compiled.table is not None
    store.deploy(compiled.table)
    store.create(store.deployed("pay"), INPUT, "p-1")


def test_a_worker_runs_the_typed_handlers_of_a_file(
    store_url: str, make_store: Callable[..., Store], project: Path
) -> None:
    store = make_store(store_url)
    _started(store, project)
    Worker(store, str(project / "pay_handlers.py")).run_until_idle()
    info = store.instance("p-1")
    assert info.status == "completed" and info.instance is not None
    assert info.instance.output == {"charge": "ch-p-1"}
    assert info.instance.context["fee"] == INPUT["amount"] / 100  # type: ignore[operator]


def _state(store: Store) -> tuple[object, ...]:
    """What a refused worker must leave as it was: the instance, its history, its tasks."""
    history = [(r.entry.seq, r.idempotency_key) for r in store.history("p-1")]
    tasks = [(t.key, t.status, t.claims) for t in store.tasks()]
    return store.instance("p-1").status, history, tasks


@pytest.mark.parametrize("case", list(WRONG))
def test_a_worker_refuses_handlers_that_do_not_fit_and_claims_nothing(
    store_url: str,
    make_store: Callable[..., Store],
    project: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    body, said = WRONG[case]
    path = project / f"wrong_{case}.py"
    path.write_text("from wflang.handlers import handler\n\n" + body)
    said = [s.format(file=path) for s in said]
    store = make_store(store_url)
    _started(store, project)
    before = _state(store)
    with pytest.raises(HandlersRefused) as refused:
        Worker(store, str(path))
    assert refused.value.problems == said
    assert _state(store) == before
    code = main(["worker", "--once", "--handlers", str(path), "--store", store_url])
    err = capsys.readouterr().err
    assert code == 1
    assert err == "".join(f"wf: error: {s}\n" for s in said)
    assert _state(store) == before
