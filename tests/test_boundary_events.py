"""Boundary signals and messages (issue 15 item 1) in memory: on a task (service and
user), a call, a parallel and a map, interrupting (the node is cancelled, the flow goes
on at the route) and non-interrupting (a side path starts at the route, the node goes
on), each route's ``output`` reading the payload; a message caught by correlation."""

from __future__ import annotations

from pathlib import Path

from wflang.compiler.check import check
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse, parse_file
from wflang.runtime import instance as rt
from wflang.runtime.correlation import awaited_messages
from wflang.runtime.ir import Value
from wflang.testing import MINUTE, WorkflowEnv, delay, succeed

DATA = Path(__file__).resolve().parent / "data" / "boundary"


def env(**handlers: object) -> WorkflowEnv:
    scripts = {"s.work": delay(), **handlers}
    return WorkflowEnv.from_files(
        DATA / "events.wf",
        DATA / "events_child.wf",
        handlers=scripts,  # type: ignore[arg-type]
    )


def test_the_spec_keeps_each_boundary_event_and_formats_back() -> None:
    parsed = parse_file(DATA / "events.wf")
    assert parsed.spec is not None and not parsed.diagnostics
    (work,) = [n for n in parsed.spec.nodes if n.name.text == "work"]
    assert isinstance(work, sp.TaskNode)
    assert [(e.kind, e.name.text, e.interrupting, e.target.text) for e in work.events] == [
        ("signal", "cancel", True, "cancelled"),
        ("signal", "nudge", False, "remind"),
        ("message", "scanned", False, "seen"),
    ]
    assert [x.name.text for x in work.events[0].output] == ["reason"]
    text = (DATA / "events.wf").read_text()
    assert format_spec(parsed.spec, text) == text


def test_an_interrupting_signal_cancels_the_task_and_reads_the_payload() -> None:
    e = env()
    iid = e.start("events", {"id": "a"})
    assert len(e.open_tasks(iid)) == 1
    e.signal(iid, "cancel", {"reason": "customer asked"})
    assert e.status(iid) == "cancelled"
    assert e.instance(iid).output == {"reason": "customer asked"}
    commands = [c for h in e.history(iid) for c in h.commands]
    assert any(isinstance(c, rt.CancelTask) for c in commands)
    assert "work caught signal cancel" in e.decisions(iid)


def test_a_non_interrupting_signal_starts_a_side_path_and_the_task_goes_on() -> None:
    e = env()
    iid = e.start("events", {"id": "a"})
    e.signal(iid, "nudge", {})
    e.signal(iid, "nudge", {"by": "ops"})
    assert e.context(iid)["nudges"] == 2  # each nudge ran the side path to its end
    assert e.status(iid) == "running"  # the task still waits for its handler
    (key,) = e.open_tasks(iid)
    e.complete(key, {"ok": True})
    assert e.status(iid) == "completed"
    assert "work caught signal nudge (non-interrupting)" in e.decisions(iid)


def test_a_message_by_correlation_is_caught_while_the_task_runs() -> None:
    e = env()
    iid = e.start("events", {"id": "a"})
    other = e.start("events", {"id": "b"})
    assert sorted(awaited_messages(e.instance(iid)).values()) == [("scanned", "a")]
    assert e.publish("scanned", "a", {"tracking": "TRK1"}) == [iid]
    assert e.context(iid)["tracking"] == "TRK1"
    assert e.context(other)["tracking"] == ""
    for key in [*e.open_tasks(iid), *e.open_tasks(other)]:
        e.complete(key, {"ok": True})
    assert e.status(iid) == e.status(other) == "completed"
    # Its node done, the instance listens no more: a message then reaches nobody.
    assert e.publish("scanned", "a", {"tracking": "TRK2"}) == []


def test_a_signal_after_the_node_is_done_is_not_caught() -> None:
    e = env()
    iid = e.start("events", {"id": "a"})
    (key,) = e.open_tasks(iid)
    e.complete(key, {"ok": True})
    assert e.status(iid) == "completed"
    e.signal(iid, "cancel", {"reason": "late"})
    assert e.instance(iid).output == {"reason": ""}


def test_a_retry_keeps_listening() -> None:
    from wflang.testing import transient

    e = env(**{"s.work": [transient(), delay()]})
    iid = e.start("events", {"id": "a"})
    assert e.instance(iid).tokens[0].waiting == "retry"
    e.signal(iid, "cancel", {"reason": "while retrying"})
    assert e.status(iid) == "cancelled"
    assert e.instance(iid).timers == ()  # the retry's timer went with the task


def test_a_user_task_is_cancelled_by_a_signal() -> None:
    e = env()
    iid = e.start("events", {"id": "user"})
    assert len(e.open_tasks(iid)) == 1
    e.signal(iid, "nudge", {})
    assert len(e.open_tasks(iid)) == 1
    e.signal(iid, "cancel", {"reason": "no longer needed"})
    assert e.status(iid) == "cancelled"
    assert e.open_tasks(iid) == []


def test_a_call_is_cancelled_with_its_child() -> None:
    e = env()
    iid = e.start("events", {"id": "call"})
    children = [i for i in e.engine.records if i != iid]
    assert len(children) == 1
    e.signal(iid, "cancel", {"reason": "stop"})
    assert e.status(iid) == "cancelled"
    assert e.status(children[0]) == "cancelled"


def test_a_parallel_is_cancelled_with_all_its_branches() -> None:
    e = env()
    iid = e.start("events", {"id": "parallel"})
    assert len(e.open_tasks(iid)) == 2
    e.signal(iid, "nudge", {})
    assert e.context(iid)["nudges"] == 1
    e.signal(iid, "cancel", {"reason": "all of it"})
    assert e.status(iid) == "cancelled"
    cancelled = [c for h in e.history(iid) for c in h.commands if isinstance(c, rt.CancelTask)]
    assert len(cancelled) == 2


def test_a_map_is_cancelled_with_all_its_items_by_a_message() -> None:
    e = env()
    lines: list[Value] = [{"sku": "a"}, {"sku": "b"}, {"sku": "c"}]
    iid = e.start("events", {"id": "map", "lines": lines})
    assert len(e.open_tasks(iid)) == 2  # concurrency 2
    assert e.publish("scanned", "map", {"tracking": "gone"}) == [iid]
    assert e.status(iid) == "cancelled"
    assert e.instance(iid).output == {"reason": "gone"}
    cancelled = [c for h in e.history(iid) for c in h.commands if isinstance(c, rt.CancelTask)]
    assert len(cancelled) == 2


def test_stuck_lists_what_a_boundary_event_waits_on() -> None:
    e = env()
    iid = e.start("events", {"id": "user"})
    e.advance(ms=MINUTE)
    assert iid in e.stuck(waiting_on="signal:cancel")
    assert iid not in e.stuck(waiting_on="signal:other")


def test_a_completed_task_is_not_taken_on_the_common_path_while_listening() -> None:
    e = env(**{"s.work": succeed({"ok": True})})
    iid = e.start("events", {"id": "a"})
    assert e.status(iid) == "completed"
    assert all(not t.catching for t in e.instance(iid).tokens)


# ------------------------------------------------------------------ the checker

FLOW = """\
workflow ev version 1
input {{ id: string }}
context {{ reason: string }}
output {{ reason: string }}
signal cancel {{ reason: string }}
message paid {{ amount: decimal }}
start work
task work: user "x" {{
    form {{ ok: bool }}
    {route}
    next done
}}
end cancelled: cancelled {{ output {{ reason: context.reason }} }}
end done: completed {{ output {{ reason: "" }} }}
"""


def findings(route: str) -> list[tuple[str, str]]:
    parsed = parse(FLOW.format(route=route), "ev.wf")
    if parsed.spec is None or parsed.diagnostics:
        return [(d.code, d.message) for d in parsed.diagnostics]
    return [(d.code, d.message) for d in check([parsed]).diagnostics if d.code != "WF304"]


def test_a_route_s_output_is_typed_by_the_payload_and_counts_as_written() -> None:
    good = "on signal cancel -> cancelled { output { reason: signal.reason } }"
    assert findings(good) == []  # context.reason is written on the route (no WF303)
    assert findings("on signal cancel -> cancelled { output { reason: signal.why } }") == [
        ("WF310", "payload of cancel has no field 'why'")
    ]
    assert ("WF301", "'reason' must be string, not decimal") in findings(
        "on message paid correlate input.id -> cancelled { output { reason: message.amount } }"
    )
    assert findings("on signal cancelled -> cancelled { output { reason: signal.reason } }") == [
        ("WF104", "unknown signal 'cancelled'")
    ]


def test_a_route_takes_only_an_output_of_the_context() -> None:
    got = findings("on signal cancel -> cancelled { retry { attempts: 2 } }")
    assert got == [("WF003", "a boundary signal does not take 'retry'")]
    got = findings("on signal cancel -> cancelled { output { local.x: 1 } }")
    assert got == [("WF003", "a boundary signal writes the context, not 'local.x'")]


def test_a_wait_and_a_send_take_no_boundary_event() -> None:
    text = (
        "workflow w version 1\nsignal s\nstart a\n"
        "wait a: signal s { on signal s -> b next b }\nend b: completed\n"
    )
    parsed = parse(text, "w.wf")
    assert [(d.code, d.message) for d in parsed.diagnostics] == [
        ("WF003", "a wait node does not take 'on signal'")
    ]


# ------------------------------------------------------------------ the diagram


def test_boundary_events_are_drawn_as_routes_leaving_the_node_s_border() -> None:
    from wflang.render.build import build
    from wflang.render.dot import to_dot

    result = check([parse_file(DATA / "events.wf")])
    diagram = build(result.models[str(DATA / "events.wf")])
    edges = {e.key: e for e in diagram.edges}
    cancel = edges["both/on signal cancel"]
    assert (cancel.kind, cancel.label, cancel.head) == ("event", "△ cancel", "cancelled")
    assert cancel.boundary == "both"  # it leaves the parallel's border
    nudge = edges["work/on signal nudge"]
    assert (nudge.kind, nudge.label) == ("event-side", "△ nudge non-interrupting")
    scanned = edges["pick_all/on message scanned"]
    assert (scanned.kind, scanned.label, scanned.boundary) == ("event", "✉ scanned", "pick_all")
    dot = to_dot(diagram)
    assert "△ nudge" in dot and '"#1565c0"' in dot  # drawn in the boundary events' colour


SAGA = """\
workflow pay version 1
input { id: string }
signal cancel { reason: string }
service pay.charge(id: string) -> { ok: bool }
service pay.refund(id: string)
start charge
task charge: service pay.charge {
    args { id: input.id }
    compensate refund
    on signal cancel -> undone
    next done
}
task refund: service pay.refund { args { id: input.id } }
end undone: compensated
end done: completed
"""


def test_a_call_stopped_in_flight_by_a_signal_is_compensated_as_by_a_timer() -> None:
    from wflang.compiler.compile import compile_workflow
    from wflang.testing import succeed

    table = compile_workflow(parse(SAGA, "pay.wf")).table
    assert table is not None
    e = WorkflowEnv([table], {"pay.charge": delay(), "pay.refund": succeed()})
    iid = e.start("pay", {"id": "p-1"})
    e.signal(iid, "cancel", {"reason": "changed my mind"})
    assert e.status(iid) == "compensated"
    assert e.services_called() == ["pay.charge", "pay.refund"]
    assert "registered compensation refund (charge: outcome unknown)" in e.decisions(iid)
