"""A timer due beyond what a store can keep fails its own instance, never the others:
a workflow computing a due time out of range (here from its input) is a workflow error."""

from __future__ import annotations

from wflang.store import Store

from .kit import SECOND, Durable, VirtualClock, compile_text

NAP = """\
workflow far version 1
input { d: duration }
start s
sleep s input.d next done
end done: completed
"""


def test_a_timer_out_of_range_fails_only_its_instance(store: Store, clock: VirtualClock) -> None:
    d = Durable(store, clock, {}, compile_text(NAP))
    d.client.start("far", {"d": 2**62}, instance_id="too-far")  # fits 64 bits; its due won't
    d.client.start("far", {"d": SECOND}, instance_id="near")
    d.run()  # one transaction steps both: the far one must not sink the near one
    far = d.store.instance("too-far")
    assert far.status in ("failed", "dead_lettered")
    assert far.instance is not None and "outside 1970..9999" in (far.instance.error or "")
    assert d.status("near") == "waiting"
    d.advance(SECOND)
    assert d.status("near") == "completed"
