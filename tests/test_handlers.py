"""Typed handlers (issue 17): ``@handler`` and ``Registry``, loading a module's handlers
by name or file, the generated classes converted at the boundary, and the checks made
before any work starts (``wf run``, the test kit; the worker in tests/store)."""

from __future__ import annotations

import datetime
import decimal
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.handlers import Registry, handler
from wflang.handlers.load import HandlersError, handlers_of, import_source, load
from wflang.handlers.verify import HandlersRefused
from wflang.runtime.ir import Value
from wflang.testing import WorkflowEnv, succeed

FLOW = """workflow pay version 1
type Card { number: string, expires: timestamp }
input { id: string, amount: decimal, card: Card }
context { charge: string = "", fee: decimal = 0 }
output { charge: string }
enum Speed { normal, express }
service payments.charge(id: string, amount: decimal, card: Card, speed: Speed, within: duration) -> {
    charge_id: string,
    fee: decimal,
}
start charge
task charge: service payments.charge {
    args {
        id: input.id,
        amount: input.amount,
        card: input.card,
        speed: Speed.express,
        within: 90s,
    }
    output { charge: result.charge_id, fee: result.fee }
    next done
}
end done: completed {
    output { charge: context.charge }
}
"""

#: Handlers written against the generated module: each argument arrives as its class.
TYPED = """
from __future__ import annotations

import datetime
import decimal

from gen import pay
from wflang.handlers import handler

SEEN: list[object] = []


@handler("payments.charge")
def charge(
    id: str,
    amount: decimal.Decimal,
    card: pay.Card,
    speed: pay.Speed,
    within: datetime.timedelta,
) -> pay.PaymentsChargeResult:
    SEEN.extend([amount, card, speed, within])
    return pay.PaymentsChargeResult(charge_id=f"ch-{id}", fee=amount / 100)
"""

CARD: dict[str, Value] = {"number": "4242", "expires": 1_800_000_000_000}
INPUT: dict[str, Value] = {"id": "p-1", "amount": decimal.Decimal("12.50"), "card": CARD}
RUN_INPUT = '{"id": "p", "amount": 1, "card": {"number": "1", "expires": 0}}'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``pay.wf``, its generated package ``gen/`` and ``pay_handlers.py`` beside them."""
    (tmp_path / "pay.wf").write_text(FLOW)
    assert main(["gen", "python", str(tmp_path / "pay.wf"), "-o", str(tmp_path / "gen")]) == 0
    (tmp_path / "pay_handlers.py").write_text(TYPED)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m in ("gen", "pay_handlers") or m.startswith("gen.")]:
        del sys.modules[name]


def test_a_registry_remembers_where_each_handler_is_written() -> None:
    registry = Registry()

    @registry.handler("a.b", at_most_once=True)
    def ab(x: int) -> None:
        return None

    entry = registry.entries["a.b"]
    assert (entry.file, entry.line) == (__file__, ab.__code__.co_firstlineno)
    assert entry.where == f"{os.path.relpath(__file__)}:{entry.line}"  # inside the folder
    assert entry.fn is ab and list(registry) == ["a.b"] and registry.at_most_once() == {"a.b"}


def test_a_module_gives_its_own_handlers_by_name_file_or_module(project: Path) -> None:
    other = project / "other_handlers.py"
    other.write_text(
        "from wflang.handlers import handler\n\n"
        '@handler("other.thing")\ndef thing() -> None:\n    return None\n'
    )
    by_file = load([str(other)])  # imported first: its handler is no one else's
    by_name = load(["pay_handlers"])
    assert list(by_file) == ["other.thing"] and list(by_name) == ["payments.charge"]
    module = import_source("pay_handlers")
    assert list(handlers_of(module)) == ["payments.charge"]
    assert list(load([module])) == ["payments.charge"]
    assert by_name.entries["payments.charge"].where.endswith("pay_handlers.py:13")
    with pytest.raises(HandlersError, match="cannot import handlers 'no_such_xyz'"):
        load(["no_such_xyz"])
    sys.modules.pop("other_handlers", None)


def test_a_registry_a_module_defines_is_its_handlers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "reg_handlers.py").write_text(
        "from wflang.handlers import Registry\n\nregistry = Registry()\n\n"
        '@registry.handler("x.y")\ndef xy() -> None:\n    return None\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert list(load(["reg_handlers"])) == ["x.y"]
    finally:
        sys.modules.pop("reg_handlers", None)


def test_typed_handlers_take_and_return_the_generated_classes(project: Path) -> None:
    env = WorkflowEnv.from_files(project / "pay.wf", handlers="pay_handlers")
    iid = env.start("pay", INPUT)
    assert env.status(iid) == "completed"
    assert env.context(iid)["fee"] == decimal.Decimal("0.125")
    assert type(env.context(iid)["fee"]) is decimal.Decimal
    amount, card, speed, within = sys.modules["pay_handlers"].SEEN
    gen = sys.modules["gen.pay"]
    assert amount == decimal.Decimal("12.50") and type(amount) is decimal.Decimal
    assert card == gen.Card(
        number="4242", expires=datetime.datetime(2027, 1, 15, 8, 0, tzinfo=datetime.UTC)
    )
    assert speed is gen.Speed.express
    assert within == datetime.timedelta(seconds=90)
    assert env.calls[0][1]["within"] == 90_000  # the runtime's value, as recorded


def test_plain_dict_handlers_keep_working(project: Path) -> None:
    seen = []

    def charge(**args: Value) -> dict[str, Value]:
        seen.append(args)
        return {"charge_id": "c", "fee": decimal.Decimal("1")}

    env = WorkflowEnv.from_files(project / "pay.wf", handlers={"payments.charge": charge})
    assert env.status(env.start("pay", INPUT)) == "completed"
    assert seen[0]["card"] == CARD


def test_the_generated_helpers_drive_the_test_kit(project: Path) -> None:
    import importlib

    gen = importlib.import_module("gen.pay")
    env = WorkflowEnv.from_files(project / "pay.wf", handlers="pay_handlers")
    due = datetime.datetime(2027, 1, 1, tzinfo=datetime.UTC)
    card = gen.Card(number="1", expires=due)
    iid = gen.start(env, gen.PayInput(id="p-2", amount=decimal.Decimal("3"), card=card))
    assert env.status(iid) == "completed"
    assert env.instance(iid).output == {"charge": "ch-p-2"}


# -- refused before anything runs ------------------------------------------------------

MISSING = (
    "service 'payments.charge' has no handler; pay version 1 (step charge) calls it "
    '(register one with @handler("payments.charge"), or allow missing handlers)'
)
#: A handlers file that does not fit pay.wf, and what the refusal says, problem by problem.
WRONG = {
    "missing": ("", [MISSING]),
    "misspelt": (
        '@handler("payments.chrage")\ndef charge(**_: object) -> None:\n    return None\n',
        [
            MISSING,
            "the handler at {file}:3 (charge) serves 'payments.chrage', which no workflow "
            "calls (workflows: pay v1); did you mean 'payments.charge'?",
        ],
    ),
    "signature": (
        '@handler("payments.charge")\n'
        "def charge(id: str, amount: object, card: object, speed: object, currency: str)"
        " -> None:\n    return None\n",
        [
            "the handler of 'payments.charge' at {file}:3 (charge) cannot take the arguments "
            "pay version 1 (step charge) gives it: it has no parameter 'within'; it requires "
            "'currency', which the service is not given",
        ],
    ),
}


def _wrong(project: Path, case: str) -> tuple[str, list[str]]:
    body, said = WRONG[case]
    path = project / f"wrong_{case}.py"
    path.write_text("from wflang.handlers import handler\n\n" + body)
    return str(path), [s.format(file=path) for s in said]


@pytest.mark.parametrize("case", list(WRONG))
def test_wf_run_refuses_handlers_that_do_not_fit(
    project: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    path, said = _wrong(project, case)
    argv = ["run", str(project / "pay.wf"), "--input", RUN_INPUT]
    code = main([*argv, "--handlers", path])
    out, err = capsys.readouterr()
    assert code == 1
    assert all(f"wf: error: {s}" in err for s in said), err
    assert out == ""  # nothing ran: no history, no status
    sys.modules.pop(Path(path).stem, None)


@pytest.mark.parametrize("case", list(WRONG))
def test_the_test_kit_refuses_handlers_that_do_not_fit(project: Path, case: str) -> None:
    path, said = _wrong(project, case)
    with pytest.raises(HandlersRefused) as refused:
        WorkflowEnv.from_files(project / "pay.wf", handlers=path)
    assert refused.value.problems == said
    sys.modules.pop(Path(path).stem, None)


def test_a_scripted_outcome_for_a_misspelt_service_is_refused(project: Path) -> None:
    with pytest.raises(HandlersRefused) as refused:
        WorkflowEnv.from_files(project / "pay.wf", handlers={"payments.chrage": succeed()})
    assert refused.value.problems == [
        "service 'payments.charge' has no handler; pay version 1 (step charge) calls it "
        '(register one with @handler("payments.charge"), or allow missing handlers)',
        "the handler at a scripted outcome (_takes_anything) serves 'payments.chrage', which "
        "no workflow calls (workflows: pay v1); did you mean 'payments.charge'?",
    ]


def test_missing_and_unused_handlers_may_be_allowed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = WorkflowEnv.from_files(project / "pay.wf", allow_missing=True)
    iid = env.start("pay", INPUT)
    assert env.status(iid) == "dead_lettered"  # as before: NoHandler
    WorkflowEnv.from_files(
        project / "pay.wf",
        handlers={"payments.charge": succeed(), "x.y": succeed()},
        allow_unused=True,
    )
    path, _ = _wrong(project, "misspelt")
    argv = ["run", str(project / "pay.wf"), "--input", RUN_INPUT]
    code = main([*argv, "--handlers", path, "--allow-missing-handlers", "--allow-unused-handlers"])
    assert code == 1 and "status: dead_lettered" in capsys.readouterr().out
    sys.modules.pop(Path(path).stem, None)


def test_a_handler_decorated_the_older_way_is_loaded_and_checked(project: Path) -> None:
    path = project / "older_handlers.py"
    path.write_text(
        "from wflang.runtime.engine import handler\n\n"
        '@handler("payments.charge")\ndef charge(id, amount, card, speed) -> None:\n'
        "    return None\n"
    )
    with pytest.raises(HandlersRefused, match="it has no parameter 'within'"):
        WorkflowEnv.from_files(project / "pay.wf", handlers=str(path))
    sys.modules.pop("older_handlers", None)


def test_handler_is_still_registered_for_the_engines_defaults() -> None:
    from wflang.runtime.engine import registered_handlers, unregister

    @handler("test.defaults")
    def fn() -> None:
        return None

    try:
        assert "test.defaults" in registered_handlers()
    finally:
        unregister("test.defaults")


KEYWORDS = """workflow k version 1
type Msg { class: string, lambda: int = 3 }
input { m: Msg }
service k.send(class: string, m: Msg) -> { import: string }
start s
task s: service k.send {
    args { class: input.m.class, m: input.m }
    next done
}
end done: completed
"""


def test_a_name_python_reserves_is_written_with_an_underscore_and_keeps_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wflang.handlers import from_value, to_value

    (tmp_path / "k.wf").write_text(KEYWORDS)
    assert main(["gen", "python", str(tmp_path / "k.wf"), "-o", str(tmp_path / "kgen")]) == 0
    (tmp_path / "k_handlers.py").write_text(
        "from kgen import k\nfrom wflang.handlers import handler\n\n"
        '@handler("k.send")\ndef send(class_: str, m: k.Msg) -> k.KSendResult:\n'
        "    assert m.class_ == class_ and m.lambda_ == 3\n"
        '    return k.KSendResult(import_="x")\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        env = WorkflowEnv.from_files(tmp_path / "k.wf", handlers="k_handlers")
        iid = env.start("k", {"m": {"class": "c"}})
        assert env.status(iid) == "completed"
        gen = sys.modules["kgen.k"]
        assert to_value(gen.Msg(class_="a")) == {"class": "a", "lambda": 3}
        assert from_value({"class": "b", "lambda": 1}, gen.Msg) == gen.Msg(class_="b", lambda_=1)
    finally:
        for name in [m for m in sys.modules if m.startswith(("kgen", "k_handlers"))]:
            del sys.modules[name]


def test_a_plain_result_is_returned_as_it_is_and_one_holding_times_is_converted() -> None:
    from wflang.handlers.registry import typed
    from wflang.runtime.outcome import TaskCall

    plain: dict[str, Value] = {"a": [1, "x", None, True, decimal.Decimal("1.5")], "b": {"c": 2}}
    timed = {"at": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.UTC), "n": [plain]}
    call = TaskCall("i", "n", 1, "k")
    assert typed(lambda: plain)(call) is plain  # no walk: the runtime checks it as before
    assert typed(lambda: timed)(call) == {"at": 1000, "n": [plain]}
    seen: list[dict[str, object]] = []

    def takes_task(x: int, task: TaskCall) -> None:
        seen.append({"x": x, "task": task})

    typed(takes_task)(call, x=1)
    assert seen == [{"x": 1, "task": call}]
