"""Time text at every entry point of a durable store, on SQLite and PostgreSQL (issue 14,
item 4; the engine and the test kit in tests/test_time_entry_points.py): a worker's
handler result and error payload, a published message (delivered at once, or kept with a
TTL and handed to a later subscriber), a signal, a form, an operator's forced output and
a replay's new input may write times as ISO-8601 text; the store keeps the milliseconds
(the published message itself is kept as given: each version reads it by its own
declaration). Text that is no time is refused with the field's path, and nothing is
stored. Through `wf` too."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.runtime.outcome import TaskError
from wflang.runtime.validate import InvalidValue
from wflang.store import Store, open_store

from ..test_time_entry_points import (
    AFTER,
    AGENDA,
    BAD,
    BOOKED,
    DEC_1,
    FORM,
    HOUR,
    LATE,
    MOVED,
    PLAN,
    PLANNED,
    agenda,
    context,
)
from .kit import Durable, VirtualClock, replays_exactly, snapshot


def plan(**_: Value) -> dict[str, Value]:
    return dict(PLAN)


def broken(**_: Value) -> None:
    raise TaskError("Broken", "down")


def finish(durable: Durable, iid: str) -> None:
    """The message, the signal and the form, each with its times as text."""
    published = durable.client.publish("booked", "a1", BOOKED)
    assert published.delivered == (iid,)
    durable.run()
    durable.signal(iid, "moved", MOVED)
    durable.complete("decide", FORM, iid)


def test_every_entry_point_of_a_store_takes_time_text(store: Store, clock: VirtualClock) -> None:
    durable = Durable(store, clock, {"cal.plan": plan}, agenda())
    iid = durable.start("agenda", {"id": "a1", "since": "2026-12-01T10:00:00Z"}, "a1")
    assert store.instance(iid).input == {"id": "a1", "since": DEC_1}
    assert context(durable.instance(iid)) == PLANNED  # the worker's result, checked at commit
    finish(durable, iid)
    assert durable.status(iid) == "completed", durable.instance(iid).error
    assert context(durable.instance(iid)) == {**PLANNED, **AFTER}
    events = [r.entry.event for r in store.history(iid)]
    completed = [e for e in events if isinstance(e, rt.TaskCompleted)]
    assert completed[0].result["due"] == DEC_1 and completed[1].result == {
        "at": DEC_1 - HOUR,
        "extra": 5 * 60_000,
    }
    received = [e for e in events if isinstance(e, rt.SignalReceived)]
    assert received[0].payload["at"] == AFTER["booked"] and received[1].payload == {
        "to": DEC_1 + 48 * HOUR
    }
    replays_exactly(store, iid)


def test_a_message_kept_with_a_ttl_takes_time_text(store: Store, clock: VirtualClock) -> None:
    durable = Durable(store, clock, {"cal.plan": plan}, agenda())
    kept = durable.client.publish("booked", "a1", BOOKED, ttl_ms=HOUR)
    assert kept.delivered == () and kept.kept_until is not None
    iid = durable.start("agenda", {"id": "a1"}, "a1")
    durable.run()
    ctx = context(durable.instance(iid))
    assert (ctx["booked"], ctx["slots"]) == (AFTER["booked"], AFTER["slots"])
    replays_exactly(store, iid)


def test_an_error_payload_from_a_worker_takes_time_text(store: Store, clock: VirtualClock) -> None:
    def late(**_: Value) -> None:
        raise TaskError("Late", "late", payload=LATE)

    durable = Durable(store, clock, {"cal.plan": late}, agenda())
    iid = durable.start("agenda", {"id": "a1"}, "a1")
    assert context(durable.instance(iid)) == {"late": 90 * 60_000}
    (failed,) = [
        r.entry.event for r in store.history(iid) if isinstance(r.entry.event, rt.TaskFailed)
    ]
    assert failed.payload == {"by": 90 * 60_000, "until": DEC_1}


def test_forced_outputs_and_a_replays_input_take_time_text(
    store: Store, clock: VirtualClock
) -> None:
    durable = Durable(store, clock, {"cal.plan": broken}, agenda())
    iid = durable.start("agenda", {"id": "a1"}, "a1")
    assert durable.status(iid) == "dead_lettered"
    durable.client.replay_from(iid, "plan", input={"since": "2026-12-01T10:00:00Z"},
                               reason="moved")  # fmt: skip
    durable.run()
    assert durable.instance(iid).input["since"] == DEC_1
    assert durable.status(iid) == "dead_lettered"
    durable.client.force_complete(iid, "plan", PLAN, reason="by hand")
    durable.run()
    assert context(durable.instance(iid)) == PLANNED
    durable.client.force_complete(iid, "book", BOOKED, reason="by hand")
    durable.run()
    durable.signal(iid, "moved", MOVED)
    durable.client.force_complete(iid, "decide", FORM, reason="by hand")
    durable.run()
    assert durable.status(iid) == "completed"
    assert context(durable.instance(iid)) == {**PLANNED, **AFTER}
    events = [r.entry.event for r in store.history(iid)]
    forced = [e.output for e in events if isinstance(e, rt.CompleteStep)]
    assert forced == [
        {"due": DEC_1, "span": 10 * 60_000, "slot": {"at": DEC_1}},  # defaults: the step's
        {"at": AFTER["booked"], "slots": [{"at": DEC_1, "length": 25 * HOUR}, {"at": DEC_1}]},
        {"at": DEC_1 - HOUR},
    ]
    replays_exactly(store, iid)


@pytest.mark.parametrize("bad", BAD)
def test_text_that_is_no_time_is_refused_with_its_path_and_nothing_is_stored(
    store: Store, clock: VirtualClock, bad: str
) -> None:
    durable = Durable(store, clock, {"cal.plan": broken}, agenda())
    iid = durable.start("agenda", {"id": "a1"}, "a1")
    before = snapshot(store, iid)
    refusals: dict[str, Callable[[], object]] = {
        "'slots[1].at'": lambda: durable.client.publish(
            "booked", "a1", {"at": DEC_1, "slots": [{"at": DEC_1}, {"at": bad}]}, key="k"
        ),
        "'span'": lambda: durable.client.force_complete(
            iid, "plan", {**PLAN, "span": bad}, reason=None
        ),
        "'since'": lambda: durable.client.replay_from(
            iid, "plan", input={"since": bad}, reason=None
        ),
    }
    for path, act in refusals.items():
        with pytest.raises(
            InvalidValue, match=rf"{re.escape(path)} must be (timestamp|duration) "
        ) as refused:
            act()
        assert len(refused.value.problems) == 1, refused.value.problems
        assert refused.value.problems[0].endswith(f"), not {bad!r}")
        assert snapshot(store, iid) == before
    # nothing was kept of the refused publication: its key is still free
    assert durable.client.publish("booked", "a1", {"at": DEC_1}, key="k").duplicate is False


@pytest.mark.parametrize("bad", BAD)
def test_a_worker_result_with_text_that_is_no_time_is_an_invalid_result(
    store: Store, clock: VirtualClock, bad: str
) -> None:
    def wrong(**_: Value) -> dict[str, Value]:
        return {**PLAN, "slot": {"at": bad}}

    durable = Durable(store, clock, {"cal.plan": wrong}, agenda())
    iid = durable.start("agenda", {"id": "a1"}, "a1")
    assert durable.status(iid) == "dead_lettered"
    (failed,) = [
        r.entry.event for r in store.history(iid) if isinstance(r.entry.event, rt.TaskFailed)
    ]
    assert failed.error == "InvalidResult"
    assert failed.message.startswith("'slot.at' must be timestamp (epoch milliseconds or ISO")
    assert context(durable.instance(iid)) == {}


HANDLERS = """\
from wflang.runtime.engine import TaskError, handler


@handler("cal.plan")
def plan(id):
    if id.startswith("broken"):
        raise TaskError("Broken", "down")
    return {PLAN!r}
"""


@pytest.fixture
def wf(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[tuple[str, ...]]:
    """Runs `wf` on the test's store (SQLite and PostgreSQL) with agenda deployed."""
    (tmp_path / "wf_time_handlers.py").write_text(HANDLERS.format(PLAN=PLAN))
    (tmp_path / "agenda.wf").write_text(AGENDA)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("wf_time_handlers", None)
    assert main(["store", "migrate", "--store", url]) == 0
    assert main(["deploy", str(tmp_path / "agenda.wf"), "--store", url]) == 0
    capsys.readouterr()
    yield ("--store", url)
    sys.modules.pop("wf_time_handlers", None)


def _wf(store: tuple[str, ...], capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main([*argv, *store])
    out, err = capsys.readouterr()
    assert code == 0, (argv, out, err)
    return out


def test_the_cli_takes_time_text_at_every_entry_point(
    wf: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    def run(*argv: str) -> str:
        return _wf(wf, capsys, *argv)

    def work() -> None:
        run("worker", "--once", "--handlers", "wf_time_handlers", "--log-level", "error")

    for iid in ("a1", "broken-1"):
        run("start", "agenda", "--input", json.dumps({"id": iid}), "--id", iid)
    work()
    # a1: the worker's result, a published message, a signal, a form
    out = run("publish", "booked", "--correlation", "a1", "--payload", json.dumps(BOOKED))
    assert "delivered to 1 instance(s): a1" in out
    work()
    run("signal", "a1", "moved", "--payload", json.dumps(MOVED))
    work()
    tasks = json.loads(run("tasks", "list", "--json"))
    (key,) = [t["key"] for t in tasks if t["instance_id"] == "a1"]
    run("tasks", "complete", key, "--output", json.dumps(FORM))
    work()
    # broken-1: a replay's new input and an operator's forced outputs
    run(
        "ops",
        "replay",
        "broken-1",
        "--from",
        "plan",
        "--input",
        '{"since": "2026-12-01T10:00:00Z"}',
    )
    work()
    for step, output in (("plan", PLAN), ("book", BOOKED), ("move", MOVED), ("decide", FORM)):
        run("ops", "force-complete", "broken-1", step, "--output", json.dumps(output))
        work()
    store = open_store(wf[1])
    try:
        for iid in ("a1", "broken-1"):
            info = store.instance(iid)
            assert info.status == "completed" and info.instance is not None, info
            assert context(info.instance) == {**PLANNED, **AFTER}, iid
        assert store.instance("broken-1").instance.input["since"] == DEC_1  # type: ignore[union-attr]
    finally:
        store.close()


@pytest.mark.parametrize("bad", BAD)
def test_the_cli_refuses_text_that_is_no_time_naming_its_path(
    wf: tuple[str, ...], capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    _wf(wf, capsys, "start", "agenda", "--input", '{"id": "a1"}', "--id", "a1")
    _wf(wf, capsys, "worker", "--once", "--handlers", "wf_time_handlers", "--log-level", "error")
    before = _wf(wf, capsys, "status", "a1", "--json")
    for argv, path in (
        (["start", "agenda", "--input", json.dumps({"id": "a2", "since": bad})], "since"),
        (["publish", "booked", "--correlation", "a1", "--payload", json.dumps({"at": bad})], "at"),
        (["ops", "force-complete", "a1", "book", "--output", json.dumps({"at": bad})], "at"),
    ):
        assert main([*argv, *wf]) == 1, argv
        err = capsys.readouterr().err
        assert f"'{path}' must be timestamp (" in err and f"not {bad!r}" in err, err
    assert _wf(wf, capsys, "status", "a1", "--json") == before
    assert [i["instance"] for i in json.loads(_wf(wf, capsys, "list", "--json"))] == ["a1"]
