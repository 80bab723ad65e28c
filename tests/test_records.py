"""What each step changed (issue 15, item 6): every history entry records the context
fields its step changed, old and new value, as JSON Patch operations, computed once by
the step function; an instance that waits for the world is ``waiting``, not ``running``.
The stores' side: ``tests/store/test_records.py``."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.render.history import HistoryError, parse_history
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.changes import Change, context_changes
from wflang.runtime.ir import Value
from wflang.runtime.step import start, step
from wflang.testing import DAY, WorkflowEnv

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
APPROVAL = {"by": "ada", "at": "2026-12-01T10:00:00Z"}
APPROVED_AT = 1_796_119_200_000  # 2026-12-01T10:00:00Z


def invoice_env() -> WorkflowEnv:
    table = compile_workflow(parse_file(str(EXAMPLES / "invoice_approval.wf"))).table
    assert table is not None
    return WorkflowEnv([table], {"tax.add": lambda amount: {"total": amount * Decimal("1.20")}})


def test_each_entry_records_the_fields_its_step_changed_with_their_old_values() -> None:
    env = invoice_env()
    iid = env.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("100.50")})
    assert env.status(iid) == "waiting"  # for the approval: not running
    env.signal(iid, "approval", APPROVAL)
    assert env.status(iid) == "completed"
    changes = [entry.changes for entry in env.history(iid)]
    assert changes == [
        (  # the start: each field added with its default
            Change("add", "/total", 0),
            Change("add", "/approved_by", None),
            Change("add", "/approved_at", None),
        ),
        (Change("replace", "/total", Decimal("120.6000"), 0),),
        (
            Change("replace", "/approved_by", "ada", None),
            Change("replace", "/approved_at", APPROVED_AT, None),  # a timestamp: its ms
        ),
    ]
    total = changes[1][0].value
    assert type(total) is Decimal and total.as_tuple() == Decimal("120.6000").as_tuple()


def test_a_step_that_writes_nothing_new_records_no_change() -> None:
    old: dict[str, Value] = {"n": 1, "flag": True, "d": Decimal("1.0"), "xs": [1, 2]}
    assert context_changes(old, old) == ()
    assert context_changes(old, dict(old)) == ()
    assert context_changes(old, {**old, "xs": [1, 2]}) == ()
    # strictly: true is not 1, and 1.00 is not 1.0
    assert context_changes({"n": 1}, {"n": True}) == (Change("replace", "/n", True, 1),)
    assert context_changes({"d": Decimal("1.0")}, {"d": Decimal("1.00")}) == (
        Change("replace", "/d", Decimal("1.00"), Decimal("1.0")),
    )
    assert context_changes({"a": 1, "b": 2}, {"b": 2}) == (Change("remove", "/a", None, 1),)


def test_the_changes_survive_the_codec_with_their_types() -> None:
    env = invoice_env()
    iid = env.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("100.50")})
    env.signal(iid, "approval", APPROVAL)
    entries = env.history(iid)
    text = codec.dumps([codec.unstructure_entry(e) for e in entries])
    back = [codec.structure_entry(e) for e in codec.loads(text)]
    assert [e.changes for e in back] == [e.changes for e in entries]
    assert type(back[1].changes[0].value) is Decimal
    # as RFC 6902 writes them, with the value each replaced
    assert codec.unstructure_entry(entries[1])["changes"] == [
        {"op": "replace", "path": "/total", "value": Decimal("120.6000"), "old": 0}
    ]
    assert codec.unstructure_entry(entries[0])["changes"][0] == {
        "op": "add", "path": "/total", "value": 0
    }  # fmt: skip


def test_the_changes_fold_into_the_context_at_every_step() -> None:
    env = invoice_env()
    iid = env.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("100.50")})
    env.signal(iid, "approval", APPROVAL)
    inst = env.engine.instance(iid)
    table = env.engine.records[iid].table
    doc = codec.dumps(codec.history_document(table, "h", inst, env.history(iid)))
    assert dict(parse_history(doc, at=3).values) == {
        "total": "120.6000", "approved_by": '"ada"', "approved_at": str(APPROVED_AT)
    }  # fmt: skip
    assert dict(parse_history(doc, at=2).values)["approved_by"] == "null"
    with pytest.raises(HistoryError, match="there is no step 9 in the history"):
        parse_history(doc, at=9)


def test_an_instance_waits_while_every_token_waits_for_the_world() -> None:
    env = invoice_env()
    iid = env.start("invoice_approval", {"invoice_id": "i-1", "amount": Decimal("1")})
    assert env.status(iid) == "waiting"
    env.advance(days=7)  # the approval's timeout
    assert env.status(iid) == "failed"
    # On the step function: a waiting instance takes its events as a running one does.
    table = env.engine.records[iid].table
    first = start(table, "x", {"invoice_id": "x", "amount": 1}, 0)
    assert first.instance.status is rt.Status.RUNNING  # its call is under way
    task = first.commands[0]
    assert isinstance(task, rt.ScheduleTask)
    waiting = step(table, first.instance, rt.TaskCompleted(task.key, {"total": 2}), 1)
    assert waiting.instance.status is rt.Status.WAITING
    timer = waiting.instance.timers[0].id
    assert step(table, waiting.instance, rt.TimerFired(timer), DAY).instance.status.value == (
        "failed"
    )


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 0
    return capsys.readouterr().out


def test_wf_history_changes_prints_each_change_with_its_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setenv("WF_ACTOR", "clerk")
    handlers = str(EXAMPLES / "invoice_handlers.py")
    run_cli(["store", "migrate", "--store", store], capsys)
    run_cli(["deploy", str(EXAMPLES / "invoice_approval.wf"), "--store", store], capsys)
    input = json.dumps({"invoice_id": "i-1", "amount": 100.50})
    run_cli(["start", "invoice_approval", "--id", "i-1", "--input", input, "--store", store],
            capsys)  # fmt: skip
    run_cli(["worker", "--once", "--handlers", handlers, "--store", store], capsys)
    assert "waiting" in run_cli(["list", "--status", "waiting", "--store", store], capsys)
    payload = json.dumps(APPROVAL)
    run_cli(["signal", "i-1", "approval", "--payload", payload, "--store", store], capsys)
    run_cli(["worker", "--once", "--handlers", handlers, "--store", store], capsys)
    out = run_cli(["history", "i-1", "--changes", "--store", store], capsys)
    lines = [
        line.split("Z  ", 1)[-1] if line.startswith("#") else line for line in out.splitlines()
    ]
    assert lines[:11] == [
        "start  by clerk",
        "       + total = 0",
        "       + approved_by = null",
        "       + approved_at = null",
        "TaskCompleted i-1:price:1:0:1",
        "       ~ total: 0 -> 120.600",  # 100.5 * 1.20, exactly
        "SignalReceived approval  by clerk",
        '       ~ approved_by: null -> "ada"',
        "       ~ approved_at: null -> 2026-12-01T10:00:00Z",  # a timestamp, for people
        "status: completed",
        'output: {"invoice_id":"i-1","total":120.600,"approved_by":"ada",'
        '"approved_at":2026-12-01T10:00:00Z}',
    ]
    # The JSON document keeps the typed integers it documents.
    document = json.loads(run_cli(["history", "i-1", "--json", "--store", store], capsys))
    assert document["output"]["approved_at"] == APPROVED_AT
    assert document["entries"][2]["changes"][1] == {
        "op": "replace", "path": "/approved_at", "value": APPROVED_AT, "old": None,
    }  # fmt: skip
    doc = tmp_path / "h.json"
    doc.write_text(run_cli(["history", "i-1", "--json", "--store", store], capsys))
    wf = str(EXAMPLES / "invoice_approval.wf")
    dot = run_cli(["render", wf, "--history", str(doc), "--at", "2"], capsys)
    assert "history of i-1 after step 2" in dot and "total = 120.600" in dot
    assert "approved_by = null" in dot
    assert main(["render", wf, "--history", str(doc), "--at", "7"]) == 2
    assert "there is no step 7 in the history (it has steps 1 to 3)" in capsys.readouterr().err
    assert main(["render", wf, "--at", "1"]) == 2
    assert "--at N needs --history" in capsys.readouterr().err


def test_the_changes_made_fast_are_the_constructors() -> None:
    made = context_changes({"a": 1, "b": 2}, {"a": 3, "c": 4})
    assert made == (
        Change("replace", "/a", 3, 1), Change("add", "/c", 4), Change("remove", "/b", None, 2)
    )  # fmt: skip
    assert [vars(c) for c in made] == [vars(Change(c.op, c.path, c.value, c.old)) for c in made]
