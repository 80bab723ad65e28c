"""An instance whose stored state cannot be decoded never stops the others.

A state column that is no instance document (corrupt JSON, or a document of another
shape: a hand edit, a bad restore) made every transaction that locked the instance
fail, so a worker retried its whole batch forever and no instance moved. Now the
instance is dead-lettered with the reason, its row (state included) kept as it is for
a person to repair or purge, and the other instances of the same batch go on.
"""

from __future__ import annotations

import json

import pytest

from wflang.cli import main
from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime.lifecycle import StatusEvent
from wflang.store import Store
from wflang.store.records import Advanced, IllegalAction
from wflang.store.sql import UNREADABLE

from .kit import MINUTE, Factory, VirtualClock, compile_text, seq_problems

NAPPER = """\
workflow napper version 1
input { id: string }
context { v: int = 0 }
output { v: int }
signal go { v: int }
start w
wait w: signal go {
    output { v: signal.v }
    timeout 1m -> done
    next done
}
end done: completed {
    output { v: context.v }
}
"""

#: What is written into the state column of each bad instance.
BAD = {
    "bad-json": '{"id": "bad-json", "seq": ',  # cut short
    "bad-shape": '{"format": "something else", "items": [1, 2]}',
    "bad-null": "null",
}
HEALTHY = [f"ok-{i}" for i in range(4)]


def _corrupt(store: Store, iid: str, text: str) -> None:
    with store.backend.transaction() as tx:
        assert tx.execute("UPDATE wf_instance SET state = ? WHERE id = ?", (text, iid)) == 1


def _state(store: Store, iid: str) -> object:
    with store.backend.read() as tx:
        return tx.query("SELECT state FROM wf_instance WHERE id = ?", (iid,))[0][0]


def test_an_undecodable_state_dead_letters_only_its_instance(
    opener: Factory, clock: VirtualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    first = opener()
    first.migrate()
    client = Client(first, actor="tester")
    client.deploy(compile_text(NAPPER))
    ids = sorted([*HEALTHY, *BAD])
    for iid in ids:
        client.start("napper", {"id": iid}, instance_id=iid)
    Worker(first, {}).run_until_idle()  # all wait for `go`, or for their timeout
    for iid, text in BAD.items():
        _corrupt(first, iid, text)
    # Another process (this one remembers the instances it committed, as they were).
    store = opener()
    client = Client(store, actor="tester")
    # The signals wake half of them (bad-shape among them), the clock the others.
    for iid in ("ok-0", "ok-1", "bad-shape"):
        client.signal(iid, "go", {"v": 5})
    clock.advance(MINUTE)
    advances: list[Advanced] = []
    Worker(store, {}, batch=64, on_advance=advances.append).run_until_idle()

    # One transaction moved every healthy instance, with the bad ones in its batch.
    assert sorted(advances[0].finished) == HEALTHY
    for iid in HEALTHY:
        info = store.instance(iid)
        assert info.status == "completed" and info.instance is not None, iid
        assert info.instance.output == {"v": 5 if iid in ("ok-0", "ok-1") else 0}
        assert not seq_problems(store, iid)
    for iid, text in BAD.items():
        info = store.instance(iid)  # readable as a row, with the reason
        assert (info.status, info.instance, info.wake_at) == ("dead_lettered", None, None)
        assert info.unreadable is not None and info.unreadable.startswith(UNREADABLE), info
        assert _state(store, iid) == text  # kept as it was, for a person to repair
    assert "JSONDecodeError" in str(store.instance("bad-json").unreadable)
    assert {i.id for i in client.dead_letters()} == set(BAD)
    events = [e for e in store.outbox(limit=100) if e.kind == "instance.dead_lettered"]
    assert sorted(e.instance_id for e in events) == sorted(BAD)
    assert all(str(e.payload["error"]).startswith(UNREADABLE) for e in events)
    # The signal that reached bad-shape is not lost: it waits for the repair.
    assert store.stats().pending_events == 1

    # Set aside once: later rounds neither fail nor dead-letter it again.
    assert Worker(store, {}).run_until_idle() == 0
    again = [e for e in store.outbox(limit=100) if e.kind == "instance.dead_lettered"]
    assert len(again) == len(BAD)
    with pytest.raises(IllegalAction, match="repair its stored state, or purge it"):
        client.retry("bad-json", reason="try")

    assert main(["status", "bad-json", "--store", store.backend.url, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["status"], status["current"]) == ("dead_lettered", [])
    assert status["error"].startswith(UNREADABLE)


def test_an_undecodable_state_is_a_dead_lettered_status_change(
    opener: Factory, clock: VirtualClock
) -> None:
    """Dead-lettered for its unreadable state, the instance changes status as any
    dead-lettered one does: an ``instance.status`` outbox row in the same transaction and
    the worker's ``on_status`` hooks, with the reason; once only."""
    store = opener()
    store.migrate()
    client = Client(store, actor="tester")
    client.deploy(compile_text(NAPPER))
    client.start("napper", {"id": "bad"}, instance_id="bad")
    Worker(store, {}).run_until_idle()
    info = store.instance("bad")
    assert info.instance is not None
    seq = info.instance.seq
    _corrupt(store, "bad", BAD["bad-json"])
    store = opener()  # another process: nothing of the instance remembered
    heard: list[StatusEvent] = []
    worker = Worker(store, {})
    worker.on_status(heard.append)
    clock.advance(MINUTE)
    worker.run_until_idle()
    (event,) = heard
    assert (event.instance_id, event.subject, event.status, event.seq) == (
        "bad", "instance", "dead_lettered", seq,
    )  # fmt: skip
    assert (event.workflow, event.version) == ("napper", 1)
    assert event.error is not None and event.error.startswith(UNREADABLE)
    (row,) = store.outbox(limit=100, kinds=("instance.status",))[-1:]
    assert (row.instance_id, row.seq) == ("bad", seq)
    assert row.payload == {"workflow": "napper", "version": 1, "status": "dead_lettered",
                           "error": event.error}  # fmt: skip
    statuses = [e for e in store.outbox(limit=100) if e.kind == "instance.status"]
    Worker(store, {}).run_until_idle()  # set aside once: no second status change
    assert [e for e in store.outbox(limit=100) if e.kind == "instance.status"] == statuses
