"""Signal and message keys have namespaces of their own (issue 20 item 4).

A message published with key ``k1`` after a signal with key ``k1`` was dropped as a
duplicate by the step while ``wf publish`` reported it delivered, and the instance
waited forever. A key is now unique per kind and name (``signal:NAME:KEY``,
``message:NAME:KEY``, ``wflang.runtime.keys.delivery_key``), the same in the step, the
inbox and the engine; and a publication an instance would drop (it took that message
with that key already, sent to it by id) is not reported as delivered to it.
"""

from __future__ import annotations

from wflang.durable.client import Client
from wflang.durable.worker import Worker
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine
from wflang.store import Store

from .kit import compile_text, seq_problems

KEYED = """\
workflow keyed version 1

input { id: string }

context { got: string = "" }

output { got: string }

signal go { v: string }

signal other { v: string }

message paid { v: string }

start first

wait first: signal go {
    output { got: signal.v }
    next second
}

wait second: signal other {
    output { got: context.got + signal.v }
    next third
}

wait third: message paid correlate input.id {
    output { got: context.got + message.v }
    next fourth
}

wait fourth: message paid correlate input.id {
    output { got: context.got + message.v }
    next done
}

end done: completed {
    output { got: context.got }
}
"""


def test_keys_of_signals_and_messages_do_not_collide_in_a_store(store: Store) -> None:
    client = Client(store, actor="tester")
    client.deploy(compile_text(KEYED))
    client.start("keyed", {"id": "x"}, instance_id="x")
    worker = Worker(store, {})
    worker.run_until_idle()

    assert client.signal("x", "go", {"v": "a"}, key="k1")
    worker.run_until_idle()
    # Another signal's key, another namespace: taken (was dropped by the step).
    assert client.signal("x", "other", {"v": "b"}, key="k1")
    worker.run_until_idle()
    # A message with the same key: delivered and taken (was reported delivered, dropped).
    published = client.publish("paid", "x", {"v": "c"}, key="k1")
    assert published.delivered == ("x",) and not published.duplicate
    worker.run_until_idle()
    info = store.instance("x")
    assert info.instance is not None and info.instance.context["got"] == "abc"

    # The same message with the same key, sent by id and then published: the second is
    # not delivered (the instance would drop it), and the instance still waits.
    assert not client.signal("x", "paid", {"v": "d"}, key="k1", kind="message")
    published = client.publish("paid", "x", {"v": "e"}, key="k2")
    assert published.delivered == ("x",)
    worker.run_until_idle()
    assert store.instance("x").status == "completed"
    inst = store.instance("x").instance
    assert inst is not None and inst.output == {"got": "abce"}
    taken = [
        r.entry.event for r in store.history("x") if isinstance(r.entry.event, rt.SignalReceived)
    ]
    assert [(e.kind, e.name, e.key) for e in taken] == [
        ("signal", "go", "k1"),
        ("signal", "other", "k1"),
        ("message", "paid", "k1"),
        ("message", "paid", "k2"),
    ]
    assert not any("duplicate" in d for r in store.history("x") for d in r.entry.decisions)
    assert not seq_problems(store, "x")


def test_a_message_sent_by_id_then_published_with_its_key_is_not_reported_delivered(
    store: Store,
) -> None:
    client = Client(store, actor="tester")
    client.deploy(compile_text(KEYED))
    client.start("keyed", {"id": "y"}, instance_id="y")
    worker = Worker(store, {})
    client.signal("y", "go", {"v": "a"})
    client.signal("y", "other", {"v": "b"})
    worker.run_until_idle()
    assert client.signal("y", "paid", {"v": "c"}, key="once", kind="message")
    worker.run_until_idle()
    published = client.publish("paid", "y", {"v": "d"}, key="once")
    assert published.delivered == ()  # the instance took "once" already: it would drop it
    worker.run_until_idle()
    info = store.instance("y")
    assert info.status == "waiting"  # still waiting at `fourth`
    assert info.instance is not None and info.instance.context["got"] == "abc"


def test_keys_of_signals_and_messages_do_not_collide_in_memory() -> None:
    engine = Engine([compile_text(KEYED)], {})
    engine.start("keyed", {"id": "x"}, instance_id="x")
    engine.signal("x", "go", {"v": "a"}, key="k1")
    engine.signal("x", "other", {"v": "b"}, key="k1")
    assert engine.publish("paid", "x", {"v": "c"}, key="k1") == ["x"]
    assert engine.instance("x").context["got"] == "abc"
    engine.send("x", rt.SignalReceived("paid", {"v": "d"}, "k3", "message"))
    assert engine.instance("x").status is rt.Status.COMPLETED
    assert engine.instance("x").output == {"got": "abcd"}


def test_a_publication_the_engine_would_drop_is_not_reported() -> None:
    engine = Engine([compile_text(KEYED)], {})
    engine.start("keyed", {"id": "y"}, instance_id="y")
    engine.signal("y", "go", {"v": "a"})
    engine.signal("y", "other", {"v": "b"})
    engine.send("y", rt.SignalReceived("paid", {"v": "c"}, "once", "message"))
    assert engine.publish("paid", "y", {"v": "d"}, key="once") == []
    assert engine.instance("y").context["got"] == "abc"
