"""Typed handlers on a durable worker (issue 17), on SQLite and PostgreSQL: a module of
handlers given by its file runs with the generated classes, and handlers that do not
fit the deployed workflows are refused, by ``Worker`` and by ``wf worker``, before
anything is claimed."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.test_handlers import FLOW, INPUT, MISSING, TYPED, WRONG
from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.worker import Worker
from wflang.handlers.verify import HandlersRefused
from wflang.runtime.ir import Value
from wflang.runtime.outcome import Handler
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


def _charge(id: str, amount: object, card: object, speed: object, currency: str) -> None:
    return None


def _charged(**_: object) -> dict[str, Value]:
    return {"charge_id": "ch", "fee": 0}


def _at(fn: Callable[..., object]) -> str:
    """Where a function of this file is written, as a refusal names it."""
    relative = os.path.relpath(__file__)
    return f"{__file__ if relative.startswith('..') else relative}:{fn.__code__.co_firstlineno}"


def test_a_worker_checks_a_plain_mapping_of_handlers_as_it_checks_a_module(
    store_url: str, make_store: Callable[..., Store], project: Path
) -> None:
    """A dict of functions by service is verified before anything is claimed, each
    problem naming the function's file and line; allowing what is missing or unused
    lets it start, as it does a registry."""
    store = make_store(store_url)
    _started(store, project)
    before = _state(store)
    cases: list[tuple[dict[str, Handler], list[str]]] = [
        ({}, [MISSING]),
        (
            {"payments.chrage": _charged},
            [
                MISSING,
                f"the handler at {_at(_charged)} (_charged) serves 'payments.chrage', which no"
                " workflow calls (workflows: pay v1); did you mean 'payments.charge'?",
            ],
        ),
        (
            {"payments.charge": _charge},
            [
                f"the handler of 'payments.charge' at {_at(_charge)} (_charge) cannot take"
                " the arguments pay version 1 (step charge) gives it: it has no parameter"
                " 'within'; it requires 'currency', which the service is not given",
            ],
        ),
    ]
    for handlers, said in cases:
        with pytest.raises(HandlersRefused) as refused:
            Worker(store, handlers)
        assert refused.value.problems == said
        assert _state(store) == before
    Worker(store, {}, allow_missing_handlers=True)
    Worker(store, {"payments.charge": _charged, "x.y": _charged}, allow_unused_handlers=True)
    Worker(store, {"payments.charge": _charged}).run_until_idle()
    assert store.instance("p-1").status == "completed"
