"""The durable `wf` commands end to end on a SQLite store in tmp_path (issue 5).

Each call goes through ``wflang.cli.main``: refused requests (unknown ids, values of
the wrong type, illegal actions) exit 1 with the reason on stderr and change nothing;
usage problems (bad JSON) exit 2. The worker runs with ``--once`` and the handlers
of ``tests/data/cli_durable/wf_cli_handlers.py``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wflang.cli import main

PG_DSN = os.environ.get("WFLANG_TEST_PG_DSN", "")

DATA = Path(__file__).parent / "data" / "cli_durable"
FLOW = str(DATA / "opsflow.wf")
SETTLE = str(DATA.parent / "settle.wf")  # waits for messages published by correlation
SAGA = str(DATA.parent / "durable" / "saga_ops.wf")  # three compensable steps


class Wf:
    """Runs `wf` commands against one store and keeps what they printed."""

    def __init__(self, url: str, capsys: pytest.CaptureFixture[str]) -> None:
        self.url, self.capsys = url, capsys
        self.out = self.err = ""

    def __call__(self, *argv: str, store: bool = True) -> int:
        args = list(argv)
        if store:
            args += ["--store", self.url]
        code = main(args)
        captured = self.capsys.readouterr()
        self.out, self.err = captured.out, captured.err
        return code

    def ok(self, *argv: str) -> str:
        code = self(*argv)
        assert code == 0, (argv, self.out, self.err)
        return self.out

    # The values inside are whatever the JSON holds (json.loads's Any): the tests say which.
    def json(self, *argv: str) -> dict[str, Any]:
        """The --json document of a command that prints one object."""
        doc = json.loads(self.ok(*argv, "--json"))
        assert isinstance(doc, dict), doc
        return doc

    def rows(self, *argv: str) -> list[dict[str, Any]]:
        """The --json document of a command that prints a list of objects."""
        doc = json.loads(self.ok(*argv, "--json"))
        assert isinstance(doc, list) and all(isinstance(row, dict) for row in doc), doc
        return doc

    def work(self, *options: str) -> str:
        """A worker's round; the handlers serve more workflows than a test deploys."""
        return self.ok(
            "worker", "--once", "--handlers", "wf_cli_handlers", "--allow-unused-handlers",
            "--log-level", "error", *options,
        )  # fmt: skip


@pytest.fixture
def wf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Wf]:
    monkeypatch.syspath_prepend(str(DATA))
    monkeypatch.setenv("WF_ACTOR", "cli-tester")
    sys.modules.pop("wf_cli_handlers", None)
    yield Wf(f"sqlite:///{tmp_path / 'state.db'}", capsys)
    sys.modules.pop("wf_cli_handlers", None)


@pytest.fixture
def ready(wf: Wf) -> Wf:
    """A migrated store with opsflow v1 deployed."""
    wf.ok("store", "migrate")
    wf.ok("deploy", FLOW)
    return wf


def _start(wf: Wf, iid: str, amount: int = 2) -> None:
    out = wf.ok("start", "opsflow", "--input", json.dumps({"id": iid, "amount": amount}),
                "--id", iid)  # fmt: skip
    assert out.strip() == iid


def _history(wf: Wf, iid: str) -> dict[str, Any]:
    return wf.json("history", iid)


def test_happy_path(wf: Wf) -> None:
    out = wf.ok("store", "migrate")
    assert f"migrated {wf.url} to schema version 9 (applied [1, 2, 3, 4, 5, 6, 7, 8, 9])" in out
    assert "schema version 9: nothing to do" in wf.ok("store", "migrate")
    out = wf.ok("deploy", FLOW)
    assert out.startswith("opsflow v1 deployed: sha256:")
    assert "opsflow v1 already deployed (the same table)" in wf.ok("deploy", FLOW)
    _start(wf, "c-1")
    assert "schema version: 9" in wf.ok("store", "info")
    assert "instances: pending 1" in wf.out

    out = wf.work()
    assert "nothing more is due" in out and "transitions" in out
    out = wf.ok("status", "c-1")
    assert "status:   waiting" in out and "at:       approve (waiting for human)" in out
    status = wf.json("status", "c-1")
    assert (status["status"], status["current"], status["version"]) == ("waiting", ["approve"], 1)

    tasks = wf.rows("tasks", "list")
    assert len(tasks) == 1
    key = tasks[0]["key"]
    assert (tasks[0]["node"], tasks[0]["instance_id"]) == ("approve", "c-1")
    assert key in wf.ok("tasks", "list") and "form: ok" in wf.out
    assert wf.ok("tasks", "complete", key, "--output", '{"ok": true}') == f"task {key} completed\n"
    assert "no open human tasks" in wf.ok("tasks", "list")
    wf.work()

    assert wf.ok("signal", "c-1", "go", "--payload", '{"by": "ada"}', "--key", "k-1") == (
        "signal go sent to c-1\n"
    )
    out = wf.ok("signal", "c-1", "go", "--payload", '{"by": "bob"}', "--key", "k-1")
    assert out == "signal go with key 'k-1' was already sent: ignored\n"
    wf.work()

    out = wf.ok("status", "c-1")
    assert "status:   completed" in out
    assert 'output:   {"a":20,"b":21,"ok":true,"by":"ada"}' in out
    out = wf.ok("history", "c-1")
    lines = out.splitlines()
    assert lines[0].startswith("#1 ") and lines[0].endswith("start  by cli-tester")
    assert "       enter approve" in lines
    assert "SignalReceived  by cli-tester" in out and "TaskCompleted  by cli-tester" in out
    assert "status: completed" in lines
    doc = _history(wf, "c-1")
    assert doc["format"] == "wflang.history/1" and doc["status"] == "completed"
    entries = doc["entries"]
    assert isinstance(entries, list)
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    compact = wf.ok("history", "c-1", "--json", "--compact")
    assert compact.count("\n") == 1 and json.loads(compact)["entries"] == entries

    assert "c-1" in wf.ok("list") and "completed" in wf.out
    listed = wf.rows("list", "--status", "completed", "--workflow", "opsflow")
    assert [r["instance"] for r in listed] == ["c-1"]
    assert wf.rows("list", "--status", "running") == wf.rows("list", "--status", "waiting") == []
    out = wf.ok("versions", "opsflow")
    row = out.splitlines()[1].split()
    assert row[:5] == ["opsflow", "1", "0", "1", "latest"]
    versions = wf.rows("versions")
    assert [(v["name"], v["running"], v["finished"]) for v in versions] == [("opsflow", 0, 1)]


def test_an_early_signal_through_the_cli_is_taken_later(ready: Wf) -> None:
    _start(ready, "e-1")
    ready.work()
    ready.ok("signal", "e-1", "go", "--payload", '{"by": "early"}')
    ready.work()
    key = ready.rows("tasks", "list", "--instance", "e-1")[0]["key"]
    ready.ok("tasks", "complete", key, "--output", '{"ok": false}')
    ready.work()
    status = ready.json("status", "e-1")
    assert status["status"] == "completed" and status["output"]["by"] == "early"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["start", "opsflow", "--input", '{"id": 5}'], "'id' must be string, not int"),
        (["start", "opsflow", "--input", '{"id": "x", "zz": 1}'], "unknown input field 'zz'"),
        (["start", "nope", "--input", "{}"], "no deployed workflow 'nope'"),
        (["start", "opsflow", "--input", '{"id": "x"}', "--version", "9"], "no deployed version 9"),
        (["signal", "s-1", "go", "--payload", '{"by": 1}'], "'by' must be string, not int"),
        (["signal", "s-1", "stop"], "opsflow declares no signal 'stop' (signals: go)"),
        (["signal", "ghost", "go", "--payload", '{"by": "a"}'], "no instance 'ghost'"),
        (["status", "ghost"], "no instance 'ghost'"),
        (["history", "ghost"], "no instance 'ghost'"),
        (["tasks", "complete", "nope", "--output", "{}"], "no task 'nope'"),
        (["ops", "retry", "ghost"], "no instance 'ghost'"),
        (["ops", "cancel", "ghost"], "no instance 'ghost'"),
        (["ops", "replay", "ghost", "--from", "a"], "no instance 'ghost'"),
        (["ops", "force-complete", "ghost", "a", "--output", "{}"], "no instance 'ghost'"),
        (["ops", "retry", "s-1"], "is waiting; only dead-lettered instances"),
        (["ops", "replay", "s-1", "--from", "a"], "is waiting; only dead-lettered instances"),
        (["ops", "force-complete", "s-1", "zz"], "opsflow v1 has no step 'zz'"),
        (["ops", "force-complete", "s-1", "a", "--output", '{"a": 1}'], "nothing waits at 'a'"),
        (["ops", "force-complete", "s-1", "approve", "--output", '{"ok": 1}'], "must be bool"),
    ],
)
def test_refused_requests_exit_1_and_change_nothing(
    ready: Wf, argv: list[str], message: str
) -> None:
    _start(ready, "s-1")
    ready.work()
    before = (_history(ready, "s-1"), ready.rows("list"), ready.rows("tasks", "list"))
    assert ready(*argv) == 1
    assert message in ready.err and ready.err.startswith("wf: error: ")
    assert ready.out == ""
    ready.work()
    assert (_history(ready, "s-1"), ready.rows("list"), ready.rows("tasks", "list")) == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["start", "opsflow", "--input", "{bad"], "--input is not JSON"),
        (["start", "opsflow", "--input", "[1]"], "--input must be a JSON object, not list"),
        (["signal", "x", "go", "--payload", "{"], "--payload is not JSON"),
        (["tasks", "complete", "k", "--output", "nope"], "--output is not JSON"),
        (["ops", "force-complete", "x", "a", "--output", "1"], "must be a JSON object"),
        (["ops", "replay", "x", "--from", "a", "--input", "{"], "--input is not JSON"),
        (["start", "opsflow", "--input", "@/nonexistent/in.json"], "cannot read"),
        (["worker", "--once", "--handlers", "no_such_module_xyz"], "cannot import handlers"),
        (["ops", "purge", "--older-than", "30 days"], "'30 days' is not a duration"),
        (["ops", "purge", "--older-than", "d"], "write a number and a unit"),
    ],
)
def test_usage_problems_exit_2(ready: Wf, argv: list[str], message: str) -> None:
    assert ready(*argv) == 2
    assert message in ready.err
    assert ready.rows("list") == []


def test_an_unmigrated_store_is_refused_with_what_to_run(wf: Wf) -> None:
    assert wf("status", "x") == 2  # no file: nothing is created (issue 20 item 9)
    assert "no store at" in wf.err and "wf store migrate --store" in wf.err
    path = Path(wf.url.removeprefix("sqlite:///"))
    assert not path.exists()
    path.touch()  # a file without the schema
    assert wf("status", "x") == 1
    assert "schema version 0" in wf.err and "wf store migrate --store" in wf.err


def test_a_change_of_comments_alone_redeploys_as_the_same_version(
    ready: Wf, tmp_path: Path
) -> None:
    """The compiled tables are compared, not the text (issue 12)."""
    first = ready.ok("deploy", FLOW).split("sha256:")[1]
    commented = tmp_path / "opsflow.wf"
    text = Path(FLOW).read_text()
    commented.write_text("// reviewed: nothing changes\n" + text.replace("\n\n", "\n\n\n", 1))
    out = ready.ok("deploy", str(commented))
    assert out == f"opsflow v1 already deployed (the same table): sha256:{first}"
    assert [v["hash"][:16] for v in ready.rows("versions")] == [first.strip()]


def test_deploying_changed_content_under_the_same_version_is_refused(
    ready: Wf, tmp_path: Path
) -> None:
    changed = tmp_path / "opsflow.wf"
    changed.write_text(Path(FLOW).read_text().replace("end done", "end finished").replace(
        "next done", "next finished"))  # fmt: skip
    assert ready("deploy", str(changed)) == 1
    assert "opsflow version 1 is already deployed with different content" in ready.err
    # Several files deploy all or none: the good one is not deployed beside the conflict.
    assert ready("deploy", SETTLE, str(changed)) == 1
    assert [v["name"] for v in ready.rows("versions")] == ["opsflow"]


def test_deploying_a_version_out_of_range_is_refused_by_the_check(
    ready: Wf, tmp_path: Path
) -> None:
    huge = tmp_path / "opsflow.wf"
    huge.write_text(Path(FLOW).read_text().replace("version 1", "version 3000000000"))
    assert ready("deploy", str(huge)) == 1
    assert "version 3000000000 is out of range: a version is 1 to 2147483647" in ready.out
    assert [v["version"] for v in ready.rows("versions")] == [1]


def test_ops_actions(ready: Wf) -> None:
    _start(ready, "f-1", amount=0)  # svc.b refuses a = 0: dead-lettered
    _start(ready, "g-1")
    ready.work()
    out = ready.ok("ops", "dead-letters")
    assert "f-1" in out and "ZeroAmount" in out and "g-1" not in out
    dead = ready.rows("ops", "dead-letters", "--workflow", "opsflow")
    assert [(d["instance"], d["error"] is not None) for d in dead] == [("f-1", True)]
    # Where it is stuck: the step ops retry or force-complete (it was empty).
    status = ready.json("status", "f-1")
    assert (status["status"], status["current"]) == ("dead_lettered", ["b"])
    assert _history(ready, "f-1")["current"] == ["b"]

    out = ready.ok("ops", "retry", "f-1", "--reason", "try again", "--actor", "alice")
    assert "f-1: retry requested" in out
    assert ready("ops", "retry", "f-1", "--actor", "bob") == 1  # the first still waits
    assert "already has a retry (or replay) waiting for a worker (asked by alice)" in ready.err
    ready.work()  # svc.b refuses again: dead-lettered again
    assert "by alice: try again" in ready.ok("history", "f-1")
    assert ready.json("status", "f-1")["status"] == "dead_lettered"

    out = ready.ok("ops", "replay", "f-1", "--from", "a", "--input", '{"amount": 3}',
                   "--reason", "fixed the amount")  # fmt: skip
    assert "f-1: replay from a requested" in out
    ready.work()
    status = ready.json("status", "f-1")
    assert (status["status"], status["current"]) == ("waiting", ["approve"])
    assert "by cli-tester: fixed the amount" in ready.ok("history", "f-1")

    out = ready.ok("ops", "force-complete", "f-1", "approve", "--output", '{"ok": true}',
                   "--reason", "approved by phone")  # fmt: skip
    assert "f-1: approve will be completed" in out
    ready.work()
    assert ready.json("status", "f-1")["current"] == ["wait_go"]

    out = ready.ok("ops", "cancel", "f-1", "--reason", "customer left")
    assert "cancel requested (without compensation)" in out
    out = ready.ok("ops", "cancel", "g-1", "--compensate", "--reason", "fraud")
    assert "cancel requested (with compensation)" in out
    ready.work()
    for iid, reason in (("f-1", "customer left"), ("g-1", "fraud")):
        assert ready.json("status", iid)["status"] == "cancelled"
        assert f"CancelRequested  by cli-tester: {reason}" in ready.ok("history", iid)
    assert ready("ops", "cancel", "f-1") == 1
    assert "instance 'f-1' is cancelled: it cannot be cancelled any more" in ready.err
    assert "no dead-lettered instances" in ready.ok("ops", "dead-letters")


def test_ops_skip_a_failed_compensation(ready: Wf) -> None:
    ready.ok("deploy", SAGA)
    ready.ok("start", "saga_ops", "--input", '{"id": "fail-1"}', "--id", "s-1")
    ready.work()  # c is rejected; undo_b fails for good: dead-lettered, undo_a waits
    out = ready.ok("status", "s-1")
    assert "status:   dead_lettered" in out
    assert "at:       undo_b (compensation: retry, force-complete or skip it)" in out
    assert ready.json("status", "s-1")["current"] == ["undo_b"]
    assert "then:     undo_a (the compensations still to run, in this order)" in out
    assert "error:    compensation 'undo_b' failed: Gone the charge is gone" in out
    assert "compensation 'undo_b' failed" in ready.ok("ops", "dead-letters")
    assert ready("ops", "skip", "s-1", "undo_b") == 1
    assert "skipping a compensation needs a reason (--reason)" in ready.err
    out = ready.ok("ops", "skip", "s-1", "undo_b", "--reason", "refunded by phone")
    assert "s-1: compensation undo_b will be skipped; the rest then run" in out
    ready.work()
    assert "status:   compensated" in ready.ok("status", "s-1")
    history = ready.ok("history", "s-1")
    assert "SkipCompensation  by cli-tester: refunded by phone" in history
    assert "compensate with undo_a" in history
    events = ready.rows("outbox", *ENDS)
    assert [e["kind"] for e in events if e["instance_id"] == "s-1"] == [
        "instance.dead_lettered",
        "instance.finished",
    ]


DURABLE_COMMANDS = [
    ["store"],
    ["store", "migrate"],
    ["store", "info"],
    ["deploy"],
    ["start"],
    ["versions"],
    ["worker"],
    ["signal"],
    ["tasks"],
    ["tasks", "list"],
    ["tasks", "complete"],
    ["status"],
    ["history"],
    ["list"],
    ["ops"],
    ["ops", "dead-letters"],
    ["ops", "retry"],
    ["ops", "replay"],
    ["ops", "force-complete"],
    ["ops", "cancel"],
    ["ops", "skip"],
    ["ops", "purge"],
    ["outbox"],
    ["publish"],
]


@pytest.mark.parametrize("argv", DURABLE_COMMANDS, ids=" ".join)
def test_every_durable_command_has_help(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: wf {' '.join(argv)}")
    if argv not in (["store"], ["tasks"], ["ops"]):
        assert "--store" in out


def _finish(wf: Wf, iid: str) -> None:
    _start(wf, iid)
    wf.work()
    (task,) = [t["key"] for t in wf.rows("tasks", "list") if t["instance_id"] == iid]
    wf.ok("tasks", "complete", task, "--output", '{"ok": true}')
    wf.ok("signal", iid, "go", "--payload", '{"by": "ada"}')
    wf.work()
    assert "status:   completed" in wf.ok("status", iid)


#: ``wf outbox`` options for the events of instances' ends (not their status changes).
ENDS = ("--kind", "instance.finished", "--kind", "instance.dead_lettered")


def test_outbox_and_purge(ready: Wf) -> None:
    assert ready.ok("outbox") == "no unpublished events\n"
    _finish(ready, "p-1")
    _finish(ready, "p-2")
    _start(ready, "p-3")  # still running
    ready.work("--lifecycle-outbox", "all")  # its tasks' status changes too

    events = ready.rows("outbox", *ENDS)
    assert [(e["instance_id"], e["kind"]) for e in events] == [
        ("p-1", "instance.finished"),
        ("p-2", "instance.finished"),
    ]
    assert events[0]["payload"]["status"] == "completed"
    # every status change of the instances is an event too, and of p-3's tasks
    assert ("instance", "started") in [
        ("instance", e["payload"]["status"])
        for e in ready.rows("outbox", "--kind", "instance.status")
        if e["instance_id"] == "p-3"
    ]
    assert {e["kind"] for e in ready.rows("outbox", "--limit", "1000")} == {
        "instance.finished", "instance.status", "task.status"
    }  # fmt: skip
    out = ready.ok("outbox", "--limit", "1", "--ack", *ENDS)
    assert "p-1" in out and "p-2" not in out and "acknowledged 1 event(s)" in ready.err
    assert [e["instance_id"] for e in ready.rows("outbox", *ENDS)] == ["p-2"]

    # Nothing ended more than a day ago (the store runs on the real clock here).
    assert "deleted 0 instance(s)" in ready.ok("ops", "purge", "--older-than", "1d")
    out = ready.ok("ops", "purge", "--older-than", "0s", "--dry-run", "--reason", "try")
    assert out.startswith("would delete 2 instance(s) that ended more than 0s ago (")
    assert out.rstrip().endswith("; by cli-tester: try")
    assert "history" in out
    assert len(ready.rows("list")) == 3  # the dry run deleted nothing
    assert ready.rows("outbox", "--after", str(10**20)) == []  # past any id: nothing
    report = ready.json("ops", "purge", "--older-than", "0s", "--reason", "retention")
    assert sorted(report["instances"]) == ["p-1", "p-2"]
    assert report["rows"]["wf_outbox"] == 1  # p-1's, acknowledged; p-2's stays
    assert [r["instance"] for r in ready.rows("list")] == ["p-3"]
    assert ready("status", "p-1") == 1 and "no instance 'p-1'" in ready.err
    assert [e["instance_id"] for e in ready.rows("outbox", *ENDS)] == ["p-2"]
    with pytest.raises(SystemExit) as exit_:
        ready("ops", "purge", "--older-than", "0s", "--status", "running")
    assert exit_.value.code == 2
    assert "invalid choice: 'running'" in ready.capsys.readouterr().err


def test_publish_by_correlation(ready: Wf) -> None:
    ready.ok("deploy", SETTLE)
    for iid, order in (("s-1", "o-1"), ("s-2", "o-2")):
        ready.ok("start", "settle", "--input", json.dumps({"order_id": order, "customer_no": 7}),
                 "--id", iid)  # fmt: skip
    ready.work()
    assert "waiting for message:paid:o-1" in ready.ok("status", "s-1")

    payload = '{"order_id": "o-1", "amount": 9.5}'
    out = ready.ok("publish", "paid", "--correlation", "o-1", "--payload", payload, "--key", "p1",
                   "--reason", "bank said so")  # fmt: skip
    assert out == "message paid (correlation 'o-1') delivered to 1 instance(s): s-1\n"
    out = ready.ok("publish", "paid", "--correlation", "o-1", "--payload", payload, "--key", "p1")
    assert out == "message paid (correlation 'o-1') with key 'p1' was already published: ignored\n"
    ready.work()
    assert "waiting for message:refunded:7" in ready.ok("status", "s-1")
    out = ready.ok("publish", "refunded", "--correlation", "007", "--int",
                   "--payload", '{"customer_no": 7}')  # fmt: skip
    assert "(correlation '7') delivered to 1 instance(s): s-1" in out
    ready.work()
    assert "status:   completed" in ready.ok("status", "s-1")
    history = ready.ok("history", "s-1")
    assert "by_order received message paid" in history and "by cli-tester" in history
    assert "bank said so" in history

    out = ready.ok("publish", "paid", "--correlation", "o-9", "--payload", payload)
    assert "no instance waits for it now" in out and "not kept (give --ttl" in out
    out = ready.ok("publish", "paid", "--correlation", "o-9", "--payload", payload, "--ttl", "2h")
    assert "kept for instances that start waiting for it until" in out

    assert ready("publish", "pay", "--correlation", "o-1") == 1
    assert "no deployed workflow declares a message 'pay'" in ready.err
    assert ready("publish", "paid", "--correlation", "o-2", "--payload", '{"amount": 1}') == 1
    assert "message 'paid' does not fit" in ready.err
    assert ready("publish", "refunded", "--correlation", "x", "--int") == 2
    assert "'x' is not an integer" in ready.err
    assert ready("publish", "paid", "--correlation", "o-2", "--ttl", "soon") == 2
    assert "--ttl: 'soon' is not a duration" in ready.err
    assert ready("publish", "paid", "--correlation", "o-2", "--ttl", "999999999999d") == 2
    assert "longer than 100 years" in ready.err
    assert ready("publish", "refunded", "--correlation", "1_000", "--int") == 2
    assert "'1_000' is not an integer" in ready.err
    assert "waiting for message:paid:o-2" in ready.ok("status", "s-2")  # untouched


def test_who_and_why_are_recorded_for_start_signal_and_task(ready: Wf) -> None:
    ready.ok("start", "opsflow", "--input", '{"id": "w-1"}', "--id", "w-1",
             "--actor", "carol", "--reason", "ticket 42")  # fmt: skip
    ready.work()
    (task,) = [t["key"] for t in ready.rows("tasks", "list")]
    ready.ok("tasks", "complete", task, "--output", '{"ok": true}', "--actor", "bob",
             "--reason", "looks good")  # fmt: skip
    ready.work()
    ready.ok("signal", "w-1", "go", "--payload", '{"by": "al"}', "--actor", "alice",
             "--reason", "looks fishy")  # fmt: skip
    ready.work()
    entries = _history(ready, "w-1")["entries"]
    assert isinstance(entries, list)
    said = [(e.get("actor"), e.get("reason")) for e in entries if e.get("actor")]
    assert said == [("carol", "ticket 42"), ("bob", "looks good"), ("alice", "looks fishy")]
    text = ready.ok("history", "w-1")
    assert "by carol" in text and "ticket 42" in text


DURABLE = Path(__file__).parent / "data" / "durable"


def test_deploying_a_caller_without_its_callee_is_refused(ready: Wf) -> None:
    assert ready("deploy", str(DURABLE / "parent.wf")) == 1
    assert "not deployed: parent v1 calls kid v1" in ready.err
    assert [v["name"] for v in ready.rows("versions")] == ["opsflow"]  # nothing deployed
    out = ready.ok("deploy", str(DURABLE / "kid.wf"), str(DURABLE / "parent.wf"))
    assert "kid v1 deployed" in out and "parent v1 deployed" in out


def test_a_worker_needs_no_handlers_for_flows_without_service_calls(ready: Wf) -> None:
    ready.ok("deploy", str(DURABLE / "kid.wf"))
    ready.ok("start", "kid", "--input", '{"id": "k"}', "--id", "k-1")
    # no --handlers: opsflow's services are allowed to be missing (kid.wf calls none)
    assert ready.ok("worker", "--once", "--allow-missing-handlers", "--log-level", "error")
    ready.ok("signal", "k-1", "go", "--payload", '{"by": "ann"}')
    ready.ok("worker", "--once", "--allow-missing-handlers", "--log-level", "error")
    assert "status:   completed" in ready.ok("status", "k-1")


def test_store_urls_are_shown_without_their_password() -> None:
    from wflang.store.backend import redact_url

    url = "postgresql://app:s3cret@db.example:5432/wf?sslmode=require"
    assert redact_url(url) == "postgresql://app:***@db.example:5432/wf?sslmode=require"
    assert redact_url("postgresql://app@db/wf") == "postgresql://app@db/wf"
    if PG_DSN:  # trust authentication ignores the password: the store opens
        from wflang.store import open_store

        secret = PG_DSN.replace("postgres@", "postgres:s3cret@", 1)
        store = open_store(secret, pool=1)
        try:
            assert "s3cret" not in store.url and ":***@" in store.url
        finally:
            store.close()


def test_an_ending_that_is_not_a_failure_prints_its_reason_not_an_error() -> None:
    from wflang.cli.values import outcome_label

    assert [outcome_label(s) for s in ("failed", "dead_lettered")] == ["error", "error"]
    assert [outcome_label(s) for s in ("compensated", "cancelled")] == ["reason", "reason"]


def test_fire_timers_takes_the_timer_as_status_prints_it(ready: Wf) -> None:
    """`wf status` prints `timer:    boundary:0 at … (id …)`; `--timer boundary:0` (or
    the id) fires it (issue 12: only the internal id was accepted, and not printed)."""
    ready.ok("deploy", str(DATA / "tick.wf"))
    ready.ok("start", "tick", "--input", '{"id": "t"}', "--id", "t-1")
    ready.work()
    status = ready.ok("status", "t-1")
    shown = status.split("timer:    ")[1].split(" at ")[0]
    assert shown == "boundary:0", status
    assert "(id t-1:w:" in status
    assert ready("ops", "fire-timers", "t-1", "--timer", "sleep") == 1
    assert "has no pending timer 'sleep' (pending: t-1:w:" in ready.err
    assert "firing t-1:w:" in ready.ok("ops", "fire-timers", "t-1", "--timer", shown)
    ready.work()
    assert 'output:   {"how":"timeout"}' in ready.ok("status", "t-1")


def test_tasks_complete_raises_a_declared_error_with_a_payload(wf: Wf) -> None:
    """``wf tasks complete KEY --error E --payload JSON`` (issue 14 item 8): a person
    raises an error the user task declares; a mistake is refused, nothing stored."""
    sys.modules.pop("wf_expense_handlers", None)
    wf.ok("store", "migrate")
    wf.ok("deploy", str(Path(__file__).parent.parent / "examples" / "expense_approval.wf"))
    claim = {"claim_id": "x-1", "employee": "ada", "team": "research", "amount": 120}
    wf.ok("start", "expense_approval", "--input", json.dumps(claim), "--id", "x-1")
    wf.ok("worker", "--once", "--handlers", "wf_expense_handlers", "--log-level", "error")
    (task,) = wf.rows("tasks", "list")
    key = task["key"]
    before = wf.json("status", "x-1")
    for argv, said in [
        (["--error", "Rejectd", "--payload", '{"reason": "x"}'], "did you mean 'Rejected'?"),
        (["--error", "Rejected", "--payload", '{"reason": 1}'], "'reason' must be string, not int"),
        (["--error", "Rejected", "--output", "{}"], "give the form (--output) or an error"),
        (["--payload", '{"reason": "x"}'], "--payload and --message go with --error"),
    ]:
        assert wf("tasks", "complete", key, *argv) != 0
        assert said in wf.err, (argv, wf.err)
        assert wf.json("status", "x-1") == before
        assert [t["key"] for t in wf.rows("tasks", "list")] == [key]
    out = wf.ok("tasks", "complete", key, "--error", "Rejected", "--payload", '{"reason": "no"}')
    assert out == f"task {key} raised Rejected\n"
    wf.ok("worker", "--once", "--handlers", "wf_expense_handlers", "--log-level", "error")
    status = wf.json("status", "x-1")
    assert (status["status"], status["output"]["status"]) == ("failed", "overrun rejected: no")
    sys.modules.pop("wf_expense_handlers", None)
