"""Messages published by correlation on both stores: subscriptions follow the tokens,
a publication reaches exactly the instances waiting for its correlation, a TTL keeps it
for later waiters (each gets it once), a key makes it idempotent, bad requests change
nothing, and purge forgets expired messages."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path

import pytest

from wflang.durable.client import InvalidValue
from wflang.durable.worker import Worker
from wflang.runtime.ir import Value
from wflang.store import Store
from wflang.store.records import UnknownWorkflow

from .kit import (
    DAY,
    HOUR,
    MINUTE,
    Durable,
    Factory,
    VirtualClock,
    compile_text,
    replays_exactly,
    seq_problems,
)

SETTLE = (Path(__file__).resolve().parents[2] / "tests" / "data" / "settle.wf").read_text()


def subscriptions(store: Store) -> list[tuple[str, str, str]]:
    with store.backend.read() as tx:
        rows = tx.query(
            "SELECT instance_id, message, correlation FROM wf_subscription "
            "ORDER BY instance_id, message"
        )
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def kept(store: Store) -> int:
    with store.backend.read() as tx:
        return int(str(tx.query("SELECT count(*) FROM wf_message")[0][0]))


def paid(order_id: str, amount: str = "9.50") -> dict[str, Value]:
    return {"order_id": order_id, "amount": Decimal(amount)}


@pytest.fixture
def d(store: Store, clock: VirtualClock) -> Durable:
    return Durable(store, clock, {}, compile_text(SETTLE))


def test_a_publication_reaches_exactly_the_waiting_instance(d: Durable) -> None:
    one = d.start("settle", {"order_id": "o-1", "customer_no": 7}, "s-1")
    two = d.start("settle", {"order_id": "o-2", "customer_no": 8}, "s-2")
    assert subscriptions(d.store) == [(one, "paid", "o-1"), (two, "paid", "o-2")]

    done = d.client.publish("paid", "o-1", paid("o-1"))
    assert (done.delivered, done.kept_until, done.duplicate) == ((one,), None, False)
    d.run()
    assert d.instance(one).context["amount"] == Decimal("9.50")
    assert subscriptions(d.store) == [(one, "refunded", "7"), (two, "paid", "o-2")]

    assert d.client.publish("refunded", 7, {"customer_no": 7}).delivered == (one,)
    d.run()
    assert d.status(one) == "completed" and d.instance(one).output == {"amount": Decimal("9.50")}
    assert d.status(two) == "waiting"
    assert subscriptions(d.store) == [(two, "paid", "o-2")]  # none left for a finished one
    assert kept(d.store) == 0  # no TTL, no key: nothing stored
    for iid in (one, two):
        assert seq_problems(d.store, iid) == []
        replays_exactly(d.store, iid)
    rows = [r for r in d.store.history(one) if r.actor]
    assert [r.actor for r in rows] == ["tester"] * 3  # who started it, who published


def test_a_ttl_keeps_it_for_later_waiters_once_each(d: Durable, clock: VirtualClock) -> None:
    done = d.client.publish("paid", "o-1", paid("o-1", "3.00"), ttl_ms=HOUR)
    assert done.delivered == () and done.kept_until == clock.ms + HOUR
    early = d.start("settle", {"order_id": "o-1", "customer_no": 1}, "s-early")
    d.run()  # its subscription found the kept message: delivered through the inbox
    assert d.instance(early).context["amount"] == Decimal("3.00")
    clock.advance(59 * MINUTE)
    late = d.start("settle", {"order_id": "o-1", "customer_no": 2}, "s-late")
    d.run()
    assert d.instance(late).context["amount"] == Decimal("3.00")
    clock.advance(2 * MINUTE)
    too_late = d.start("settle", {"order_id": "o-1", "customer_no": 3}, "s-too-late")
    d.run()
    assert subscriptions(d.store)[-1] == (too_late, "paid", "o-1")
    taken = [r for r in d.store.history(early) if "received message paid" in str(r.entry.decisions)]
    assert len(taken) == 1


def test_a_key_makes_publishing_idempotent(d: Durable) -> None:
    iid = d.start("settle", {"order_id": "o-1", "customer_no": 7}, "s-1")
    first = d.client.publish("paid", "o-1", paid("o-1"), key="pay-1")
    again = d.client.publish("paid", "o-1", paid("o-1", "99.00"), key="pay-1")
    assert first.delivered == (iid,) and again.duplicate and again.delivered == ()
    d.run()
    assert d.instance(iid).context["amount"] == Decimal("9.50")
    assert len(d.store.history(iid)) == 2  # the start and one message


def test_bad_publications_are_refused_and_change_nothing(d: Durable) -> None:
    iid = d.start("settle", {"order_id": "o-1"}, "s-1")
    before = (d.store.history(iid), subscriptions(d.store), kept(d.store))
    with pytest.raises(InvalidValue, match="message 'paid' does not fit"):
        d.client.publish("paid", "o-1", {"order_id": "o-1", "amount": "lots"}, ttl_ms=HOUR)
    with pytest.raises(UnknownWorkflow, match="no deployed workflow declares a message 'pay'"):
        d.client.publish("pay", "o-1", {})
    with pytest.raises(InvalidValue, match="a correlation is a string or an integer, not bool"):
        d.client.publish("paid", True, paid("o-1"))
    with pytest.raises(InvalidValue, match="TTL"):
        d.client.publish("paid", "o-1", paid("o-1"), ttl_ms=-1)
    d.run()
    assert (d.store.history(iid), subscriptions(d.store), kept(d.store)) == before


def test_subscriptions_go_with_a_timeout_and_a_cancel(d: Durable, clock: VirtualClock) -> None:
    lapsing = d.start("settle", {"order_id": "o-1"}, "s-1")
    cancelled = d.start("settle", {"order_id": "o-2"}, "s-2")
    d.client.cancel(cancelled, compensate=False, reason="test")
    d.run()
    d.advance(HOUR)
    assert d.status(lapsing) == "failed" and d.status(cancelled) == "cancelled"
    assert subscriptions(d.store) == []
    assert d.client.publish("paid", "o-1", paid("o-1")).delivered == ()


def test_purge_forgets_expired_messages_and_their_keys(d: Durable, clock: VirtualClock) -> None:
    d.client.publish("paid", "o-1", paid("o-1"), key="k", ttl_ms=HOUR)
    assert kept(d.store) == 1
    clock.advance(2 * DAY)
    assert d.client.purge(DAY).rows["wf_message"] == 1
    assert kept(d.store) == 0
    assert not d.client.publish("paid", "o-1", paid("o-1"), key="k").duplicate


def test_publications_and_subscriptions_made_at_once_always_meet(
    opener: Factory, clock: VirtualClock
) -> None:
    """Instances start (and subscribe) in one thread while their messages are published,
    with a TTL, from another: whichever commits second sees the other, so every
    instance gets its message exactly once."""
    store = opener(virtual=False)
    store.migrate()
    d = Durable(store, clock, {}, compile_text(SETTLE))
    ids = [f"race-{i:02d}" for i in range(40)]
    for i, iid in enumerate(ids):
        d.client.start("settle", {"order_id": f"o-{i}", "customer_no": i}, instance_id=iid)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            barrier.wait()
            Worker(store, {}, worker_id="w-race", batch=1).run_until_idle()
        except BaseException as err:  # reported below
            errors.append(err)

    def publish() -> None:
        try:
            barrier.wait()
            for i in range(len(ids)):
                d.client.publish("paid", f"o-{i}", paid(f"o-{i}"), ttl_ms=DAY)
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=work), threading.Thread(target=publish)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    Worker(store, {}, worker_id="w-after").run_until_idle()
    for iid in ids:
        taken = [r for r in store.history(iid) if "received message paid" in str(r.entry.decisions)]
        assert len(taken) == 1, (iid, [r.entry.decisions for r in store.history(iid)])
        inst = store.instance(iid).instance
        assert inst is not None and inst.context["amount"] == Decimal("9.50")


OTHER = """\
workflow other version 1
input { id: int }
message paid { id: int }
start w
wait w: message paid correlate input.id {
    timeout 1h -> done
    next done
}
end done: completed
"""


def test_each_instance_takes_only_payloads_its_own_declaration_fits(
    store: Store, clock: VirtualClock
) -> None:
    """Two workflows declare 'paid' differently: a publication must fit one of them and
    reaches only the instances whose version's declaration it fits."""
    d = Durable(store, clock, {}, compile_text(SETTLE), compile_text(OTHER))
    settle = d.start("settle", {"order_id": "7"}, "s-7")
    other = d.start("other", {"id": 7}, "o-7")
    assert d.client.publish("paid", "7", paid("7")).delivered == (settle,)
    assert d.client.publish("paid", 7, {"id": 7}).delivered == (other,)
    with pytest.raises(InvalidValue, match="message 'paid' does not fit"):
        d.client.publish("paid", 7, {"id": "seven"})  # fits neither
    d.run()
    assert d.status(other) == "completed"
    assert d.instance(settle).context["amount"] == Decimal("9.50")
    # A kept message is taken only by later subscribers whose declaration it fits.
    d.client.publish("paid", "8", {"id": 8}, ttl_ms=HOUR)
    late = d.start("settle", {"order_id": "8"}, "s-8")
    assert [t.waiting for t in d.instance(late).tokens] == ["message:paid:8"]
