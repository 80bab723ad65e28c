"""Finding stuck instances (issue 15, item 7): ``wf list --stuck AGE`` lists the
unfinished instances that have not moved for that long, the longest still first, with
what they wait on and since when; ``--waiting-on WAIT`` those that wait on WAIT. The
test kit (``WorkflowEnv.stuck``) and both stores find the same ones, by the virtual
clock."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.runtime.instance import Status
from wflang.runtime.ir import Value
from wflang.store import Store, open_store
from wflang.store.status import ACTIVE, IS_ACTIVE
from wflang.testing import HOUR, MINUTE, WorkflowEnv

from .kit import Durable, VirtualClock, compile_text, example

TWO_WAITS = compile_text(
    (Path(__file__).resolve().parents[1] / "data" / "two_waits.wf").read_text()
)


def invoice(n: int) -> dict[str, Value]:
    return {"invoice_id": f"i-{n}", "amount": Decimal(n)}


def tax(amount: Decimal) -> dict[str, Value]:
    return {"total": amount}


class Both:
    """The test kit and a store, driven alike on one virtual clock."""

    def __init__(self, store: Store, clock: VirtualClock) -> None:
        tables = [example("invoice_approval"), TWO_WAITS]
        self.clock = clock
        self.env = WorkflowEnv(tables, {"tax.add": tax}, now=clock())
        self.d = Durable(store, clock, {"tax.add": tax}, *tables)

    def start(self, workflow: str, input: dict[str, Value], iid: str) -> None:
        self.env.start(workflow, input, instance_id=iid)
        self.d.start(workflow, input, iid)

    def advance(self, ms: int) -> None:
        self.env.advance(ms=ms)
        self.clock.advance(ms)
        self.d.run()

    def signal(self, iid: str, name: str, payload: dict[str, Value]) -> None:
        self.env.signal(iid, name, payload)
        self.d.signal(iid, name, payload)

    def stuck(self, still_for: int | None = None, waiting_on: str | None = None) -> list[str]:
        """What both find (asserted equal)."""
        kit = self.env.stuck(still_for=still_for or 0, waiting_on=waiting_on)
        stored = self.d.store.instances(waiting_on=waiting_on, still_for=still_for)
        if still_for is None:  # the store lists by age then; the kit by how long still
            assert sorted(i.id for i in stored) == sorted(kit)
        else:
            assert [i.id for i in stored] == kit
        return kit


def test_stuck_instances_are_found_alike_by_the_test_kit_and_the_stores(
    store: Store, clock: VirtualClock
) -> None:
    both = Both(store, clock)
    both.start("invoice_approval", invoice(1), "i-1")
    both.advance(30 * MINUTE)
    both.start("invoice_approval", invoice(2), "i-2")
    both.start("two_waits", {}, "t-1")
    assert both.stuck(HOUR) == []
    both.advance(45 * MINUTE)
    assert both.stuck(HOUR) == ["i-1"]  # waiting 75 minutes; the others 45
    assert both.stuck(waiting_on="signal:approval") == ["i-1", "i-2"]
    # the parallel waits on a signal in one branch and a sleep in the other
    assert both.stuck(waiting_on="signal:a") == ["t-1"]
    assert both.stuck(waiting_on="timer") == ["t-1"]
    assert both.d.store.instance("t-1").waiting_on == ("signal:a", "timer")
    both.advance(30 * MINUTE)  # the sleep ends: t-1 moved, and now waits on both signals
    assert both.stuck(HOUR) == ["i-1", "i-2"]  # the longest still first
    assert both.stuck(waiting_on="timer") == []
    assert both.stuck(waiting_on="signal:b") == ["t-1"]
    both.signal("i-1", "approval", {"by": "ada", "at": "2026-12-01T10:00:00Z"})
    assert both.stuck(HOUR) == ["i-2"]  # i-1 finished
    assert both.stuck(waiting_on="signal:approval") == ["i-2"]
    assert both.d.store.instance("i-1").waiting_on == ()


def test_wf_list_stuck_shows_where_and_since_when(
    store: Store, clock: VirtualClock, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    both = Both(store, clock)
    both.start("invoice_approval", invoice(1), "i-1")
    since = clock()
    both.advance(2 * HOUR)
    # (the command reads the database clock: an instance that has not moved since the
    # virtual start is hours still by it)
    assert main(["list", "--stuck", "1h", "--store", url]) == 0
    out = capsys.readouterr().out
    assert out.startswith("i-1  invoice_approval v1  waiting        on signal:approval  since ")
    assert main(["list", "--waiting-on", "signal:approval", "--json", "--store", url]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert (doc["waiting_on"], doc["updated_at"]) == (["signal:approval"], since)
    assert main(["list", "--waiting-on", "message:paid", "--store", url]) == 0
    assert capsys.readouterr().out == "no instances\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--waiting-on", "approval"], "--waiting-on: 'approval' is not something an instance "
         "waits on: use signal:NAME, message:NAME, timer, person, task, retry, child"),
        (["--stuck", "soon"], "--stuck: 'soon' is not a duration"),
    ],
)  # fmt: skip
def test_wf_list_refuses_what_it_cannot_look_for(
    args: list[str], message: str, url: str, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", *args, "--store", url]) == 2
    assert message in capsys.readouterr().err


def test_the_test_kit_names_the_waits_it_knows() -> None:
    env = WorkflowEnv([TWO_WAITS], {})
    with pytest.raises(ValueError, match="'signal' is not something an instance waits on"):
        env.stuck(waiting_on="signal")


def test_every_unfinished_status_may_be_stuck() -> None:
    assert set(ACTIVE) == {"pending", *(s.value for s in Status if not s.finished)}


def test_sqlite_finds_stuck_and_waiting_instances_through_their_indexes(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}", create=True)
    store.migrate()
    with store.backend.read() as tx:
        stuck = tx.query(
            "EXPLAIN QUERY PLAN SELECT id FROM wf_instance "
            f"WHERE {IS_ACTIVE} AND updated_at <= ? ORDER BY updated_at",
            (0,),
        )
        waiting = tx.query(
            "EXPLAIN QUERY PLAN SELECT id FROM wf_instance WHERE waiting_on IS NOT NULL "
            "AND (waiting_on = ? OR ' ' || waiting_on || ' ' LIKE ?)",
            ("timer", "% timer %"),
        )
    # an index (which one, and in what order: ``test_browse``'s walk of wf_instance_still)
    assert "SEARCH wf_instance USING INDEX" in str(stuck)
    assert "wf_instance_waiting_on" in str(waiting)
    store.close()
