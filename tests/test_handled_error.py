"""The error being handled (issue 14 item 3) on the engine and the test kit: the node
an ``on`` route leads to reads ``error`` (name, message, typed payload), which stays
on the token until it enters another node; a payload is checked against its error's
fields (defaults filled in, exact decimals) and one that does not fit, or is given
for an error declared without one, is the runtime's invalid result. The stores:
tests/store/test_handled_error.py."""

from __future__ import annotations

from decimal import Decimal

import pytest

from wflang.compiler.compile import compile_workflow
from wflang.compiler.diff import diff_specs
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse
from wflang.runtime import instance as rt
from wflang.runtime.ir import HANDLED_ERROR, Value
from wflang.runtime.table import Table
from wflang.runtime.validate import InvalidValue
from wflang.testing import WorkflowEnv, by_attempt, delay, permanent, succeed, transient

FLOW = """\
workflow debit version 1

error InsufficientFunds { missing: decimal, note: string = "none" }

error Frozen

input { amount: decimal }

context { seen: list[string] = [] }

output { seen: list[string] }

service bank.debit(amount: decimal) -> { id: string } raises InsufficientFunds, Frozen

service bank.topup(missing: decimal, why: string)

start debit

task debit: service bank.debit {
    args { amount: input.amount }
    on InsufficientFunds -> topup
    on Frozen -> frozen
    next done
}

task topup: service bank.topup {
    args { missing: error.payload.missing, why: error.message + "/" + error.payload.note }
    retry { attempts: 2, backoff: 1s }
    output { seen: context.seen + [error.name] }
    on any -> again
    next after
}

task again: script {
    output { seen: context.seen + [error.name + ":" + error.message] }
    next done
}

task frozen: script {
    output { seen: context.seen + [error.name] }
    next after
}

task after: script {
    output { seen: context.seen + ["after"] }
    next done
}

end done: completed { output { seen: context.seen } }
"""


def _table(text: str = FLOW) -> Table:
    compiled = compile_workflow(parse(text))
    assert compiled.table is not None, compiled.check.diagnostics
    return compiled.table


# a JSON float, as a handler may give one: checked, it becomes the decimal it reads as
SHORT = permanent("InsufficientFunds", "short by 5", {"missing": 5.1})  # type: ignore[dict-item]


def test_the_route_reads_the_payload_with_its_defaults_and_forgets_it_after() -> None:
    env = WorkflowEnv([_table()], {"bank.debit": SHORT, "bank.topup": delay()})
    iid = env.start("debit", {"amount": Decimal("10")})
    (token,) = env.instance(iid).tokens
    assert dict(token.locals)[HANDLED_ERROR] == {
        "name": "InsufficientFunds",
        "message": "short by 5",
        "payload": {"missing": Decimal("5.1"), "note": "none"},
    }
    assert [a for s, a, _ in env.calls if s == "bank.topup"] == [
        {"missing": Decimal("5.1"), "why": "short by 5/none"}
    ]
    (key,) = env.open_tasks(iid)
    env.complete(key)
    assert env.status(iid) == "completed"
    assert env.instance(iid).output == {"seen": ["InsufficientFunds", "after"]}
    assert "enter after" in env.decisions(iid)
    assert env.replay(iid).ok


def test_the_error_stays_through_a_retry_and_a_second_error_replaces_it() -> None:
    topup = by_attempt(transient("Busy"), permanent("Closed", "bank closed"))
    env = WorkflowEnv([_table()], {"bank.debit": SHORT, "bank.topup": topup})
    iid = env.start("debit", {"amount": Decimal("10")})
    env.advance(seconds=5)
    topups = [a for s, a, _ in env.calls if s == "bank.topup"]
    assert topups == [{"missing": Decimal("5.1"), "why": "short by 5/none"}] * 2
    assert env.status(iid) == "completed"
    assert env.instance(iid).output == {"seen": ["Closed:bank closed"]}


def test_an_error_declared_without_a_payload_reads_name_and_message() -> None:
    env = WorkflowEnv(
        [_table()], {"bank.debit": permanent("Frozen", "by compliance")}, allow_missing=True
    )
    iid = env.start("debit", {"amount": Decimal("10")})
    assert env.instance(iid).output == {"seen": ["Frozen", "after"]}
    assert env.instance(iid).tokens == ()


def test_a_payload_for_an_error_declared_without_one_is_an_invalid_result() -> None:
    frozen = permanent("Frozen", "", {"by": "compliance"})
    env = WorkflowEnv([_table()], {"bank.debit": frozen}, allow_missing=True)
    iid = env.start("debit", {"amount": Decimal("10")})
    assert env.status(iid) == "dead_lettered"
    assert env.instance(iid).error == (
        "debit: InvalidResult Frozen declares no payload, but one was given: by"
    )


def test_a_missing_or_unknown_payload_field_is_an_invalid_result() -> None:
    for payload, problem in [
        (None, "missing field 'missing' (decimal) in payload of InsufficientFunds"),
        (
            {"missing": 1, "extra": True},
            "unknown field 'extra' in payload of InsufficientFunds (fields: missing, note)",
        ),
    ]:
        env = WorkflowEnv(
            [_table()],
            {"bank.debit": permanent("InsufficientFunds", "", payload)},
            allow_missing=True,
        )
        iid = env.start("debit", {"amount": Decimal("10")})
        assert env.instance(iid).error == f"debit: InvalidResult {problem}"


def test_a_delayed_call_failed_by_hand_is_checked_too() -> None:
    env = WorkflowEnv([_table()], {"bank.debit": delay(), "bank.topup": succeed()})
    iid = env.start("debit", {"amount": Decimal("10")})
    (key,) = env.open_tasks(iid)
    env.fail(key, "InsufficientFunds", message="late", payload={"missing": "2.50"})
    assert env.instance(iid).error == (
        "debit: InvalidResult 'missing' must be decimal, not str in the payload of InsufficientFunds"
    )
    env = WorkflowEnv([_table()], {"bank.debit": delay(), "bank.topup": succeed()})
    iid = env.start("debit", {"amount": Decimal("10")})
    (key,) = env.open_tasks(iid)
    env.fail(key, "InsufficientFunds", message="late", payload={"missing": Decimal("2.50")})
    assert env.instance(iid).output == {"seen": ["InsufficientFunds", "after"]}
    assert next(a for s, a, _ in env.calls if s == "bank.topup")["missing"] == Decimal("2.50")


def test_an_error_payload_declaration_parses_and_formats_back() -> None:
    text = "error Short { missing: decimal, at: timestamp? }\n\nerror A, B\n"
    spec = parse(text).spec
    assert spec is not None
    short, pair = spec.declarations
    assert isinstance(short, sp.ErrorDecl) and isinstance(pair, sp.ErrorDecl)
    assert [n.text for n in short.names] == ["Short"]
    fields = short.payload("Short")
    assert fields is not None and [f.name.text for f in fields] == ["missing", "at"]
    assert pair.payloads == () and pair.payload("A") is None
    assert format_spec(spec, text) == text


def test_a_payload_is_declared_on_an_error_alone() -> None:
    result = parse("error A { x: int }, B\n")
    assert [d.code for d in result.diagnostics] == ["WF001"]


def test_the_table_keeps_the_payloads() -> None:
    (shape,) = _table().types.errors
    assert shape.name == "InsufficientFunds"
    assert [(f.name, f.type, f.has_default) for f in shape.fields] == [
        ("missing", "decimal", False),
        ("note", "string", True),
    ]


def test_a_lambda_parameter_called_error_does_not_hide_the_handled_error() -> None:
    """The handled error lives under a name no file can write: a lambda parameter
    called ``error`` outside a route's node reads its item, not a handled error."""
    text = FLOW.replace(
        'output { seen: context.seen + ["after"] }',
        'output { seen: map(context.seen + ["after"], error => error + "!") }',
    )
    env = WorkflowEnv([_table(text)], {"bank.debit": permanent("Frozen", "x")}, allow_missing=True)
    iid = env.start("debit", {"amount": Decimal("10")})
    out: dict[str, Value] | None = env.instance(iid).output
    assert out == {"seen": ["Frozen!", "after!"]}


DIFF_OLD = """\
workflow pay version 1

error Short { missing: decimal, note: string? }

error Gone

input { a: int }

output { a: int }

service s.x() raises Short, Gone

start t

task t: service s.x { on Short -> e next e }

end e: completed { output { a: input.a } }
"""


def test_a_change_of_an_error_payload_follows_the_record_field_rules() -> None:
    new = DIFF_OLD.replace(
        "error Short { missing: decimal, note: string? }",
        "error Short { missing: int, since: timestamp, extra: int = 0 }",
    ).replace("error Gone", "error Gone { why: string? }")
    old_spec, new_spec = parse(DIFF_OLD, "old.wf").spec, parse(new, "new.wf").spec
    assert old_spec is not None and new_spec is not None
    got = sorted(
        (c.diagnostic.code, c.diagnostic.message.split(":")[0])
        for c in diff_specs(old_spec, new_spec).changes
    )
    assert got == [
        ("WF601", "error Short field 'since' was added without a default"),
        ("WF603", "error Short field 'missing' type narrowed from decimal to int"),
        ("WF605", "error Short field 'note' was removed"),
        ("WF606", "error Gone field 'why' was added (optional)"),
        ("WF606", "error Short field 'extra' was added (optional)"),
        ("WF690", "2 breaking changes but the version is still 1"),
    ]


PERSON = """\
workflow exp version 1

error Rejected { reason: string }

error Withdrawn

input { id: string }

context { why: string? }

output { status: string }

start approve

task approve: user "managers" {
    form { ok: bool }
    raises Rejected, Withdrawn
    on Rejected -> rejected
    on Withdrawn -> done
    next done
}

task rejected: script {
    output { why: error.payload.reason }
    next done
}

end done: completed {
    output { status: coalesce(context.why, "ok") }
}
"""


def test_a_user_task_declares_the_errors_a_person_raises() -> None:
    spec = parse(PERSON).spec
    assert spec is not None
    (task,) = [n for n in spec.nodes if n.name.text == "approve"]
    assert isinstance(task, sp.TaskNode)
    assert [e.text for e in task.raises] == ["Rejected", "Withdrawn"]
    assert format_spec(spec, PERSON) == PERSON
    entry = _table(PERSON).states[_table(PERSON).state_id("approve")].entry
    assert getattr(entry, "raises", None) == ("Rejected", "Withdrawn")


def test_a_person_raises_a_declared_error_on_the_test_kit() -> None:
    env = WorkflowEnv([_table(PERSON)])
    iid = env.start("exp", {"id": "1"})
    (key,) = env.open_tasks(iid)
    env.fail(key, "Rejected", payload={"reason": "late"})
    assert env.instance(iid).output == {"status": "late"}


def test_raises_on_a_service_task_or_an_undeclared_error_is_refused() -> None:
    service = PERSON.replace(
        'task approve: user "managers" {\n    form { ok: bool }\n',
        "service s.x()\n\ntask approve: service s.x {\n",
    )
    assert [d.code for d in parse(service).diagnostics] == ["WF003"]
    unknown = PERSON.replace("raises Rejected, Withdrawn", "raises Rejected, Withdrawnn")
    found = compile_workflow(parse(unknown)).check.diagnostics
    assert [(d.code, d.message) for d in found if d.message.startswith("unknown error")] == [
        ("WF104", "unknown error 'Withdrawnn'")
    ]


def test_a_person_may_write_a_payload_time_as_iso_8601_text() -> None:
    """As in a form (issue 14 item 4): a timestamp or duration field of a person's
    error payload may be ISO-8601 text, read as milliseconds before validation."""
    text = PERSON.replace(
        "error Rejected { reason: string }",
        "error Rejected { reason: string, until: timestamp, grace: duration = 0s }",
    )
    env = WorkflowEnv([_table(text)])
    iid = env.start("exp", {"id": "1"})
    (key,) = env.open_tasks(iid)
    before = env.instance(iid)
    with pytest.raises(InvalidValue):  # text that is no time is still refused
        env.fail(key, "Rejected", payload={"reason": "x", "until": "soon"})
    assert env.instance(iid) == before
    payload: dict[str, Value] = {"reason": "x", "until": "1970-01-01T00:00:01Z", "grace": "PT1M"}
    env.fail(key, "Rejected", payload=payload)
    assert env.instance(iid).output == {"status": "x"}
    (failed,) = [e.event for e in env.history(iid) if isinstance(e.event, rt.TaskFailed)]
    assert failed.payload == {"reason": "x", "until": 1000, "grace": 60_000}
