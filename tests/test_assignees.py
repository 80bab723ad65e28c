"""The assignee of a user or manual task as an expression (issue 14, item 7): parsed,
printed back, typed as a string (WF340 otherwise), drawn, lowered, and evaluated when
the task is entered, so that the task is stored with it. On the engine and the test kit
here; on SQLite and PostgreSQL (with ``wf tasks list --assignee``) in
tests/store/test_assignees.py."""

from __future__ import annotations

from functools import cache

import attrs
import pytest

from wflang.compiler.check import check
from wflang.compiler.compile import compile_workflow
from wflang.compiler.diff import diff_specs
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse
from wflang.render.build import node_for
from wflang.runtime import ir
from wflang.runtime import table as tb
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value
from wflang.testing import WorkflowEnv

PEOPLE = """\
workflow people version 1

input { manager: string, amount: decimal, backup: string? }

context { approver: string? }

output { approved: bool }

start review

task review: user input.manager {
    form { approver: string?, ok: bool }
    output { approver: result.approver }
    next approve
}

task approve: user coalesce(context.approver, input.backup, "finance-team") {
    form { approved: bool }
    next file
}

task file: manual "records" + "-" + lower(input.manager) {
    next done
}

end done: completed {
    output { approved: true }
}
"""


@cache
def people() -> tb.Table:
    result = compile_workflow(parse(PEOPLE, "people.wf"))
    assert result.table is not None, [d.message for d in result.check.diagnostics]
    return result.table


def test_an_assignee_expression_prints_back_as_written() -> None:
    spec = parse(PEOPLE, "people.wf").spec
    assert spec is not None
    assert format_spec(spec, PEOPLE) == PEOPLE


def test_a_literal_assignee_keeps_its_table_form() -> None:
    """A string literal stays ``TaskEntry.assignee`` (a deployed table's hash is kept);
    any other expression is ``assignee_from``."""
    entries = {s.name: s.entry for s in people().states if isinstance(s.entry, tb.TaskEntry)}
    assert entries["review"].assignee is None and entries["review"].assignee_from is not None
    literal = compile_workflow(parse(PEOPLE.replace("user input.manager", 'user "ops"'), "p.wf"))
    assert literal.table is not None
    review = next(s.entry for s in literal.table.states if s.name == "review")
    assert isinstance(review, tb.TaskEntry)
    assert (review.assignee, review.assignee_from) == ("ops", None)


def test_the_diagram_shows_the_assignee_as_written() -> None:
    spec = parse(PEOPLE, "people.wf").spec
    assert spec is not None
    drawn = {n.name.text: node_for(n, None) for n in spec.nodes}
    assert drawn["review"].detail == ("☺ user · input.manager",)
    assert drawn["file"].detail == ('☝ manual · "records" + "-" + lower(input.manager)',)


def run_people(env_start: str, backup: Value, approver: Value) -> list[tuple[str, str | None]]:
    """The (node, assignee) of each human task, in order, on the engine or the kit."""
    seen: list[tuple[str, str | None]] = []
    data: dict[str, Value] = {"manager": "Ann", "amount": 10, "backup": backup}
    if env_start == "engine":
        engine = Engine([people()], {})
        iid = engine.start("people", data)
        for output in ({"approver": approver, "ok": True}, {"approved": True}, {}):
            (task,) = engine.human_tasks()
            seen.append((task.node, task.assignee))
            engine.complete_task(task.key, output)
        assert engine.instance(iid).status.value == "completed"
        return seen
    kit = WorkflowEnv([people()])
    iid = kit.start("people", data)
    for output in ({"approver": approver, "ok": True}, {"approved": True}, {}):
        (task,) = kit.engine.human_tasks()
        seen.append((task.node, task.assignee))
        kit.complete(task.key, output)
    assert kit.status(iid) == "completed"
    assert kit.replay(iid).reproduces(kit.instance(iid))
    return seen


@pytest.mark.parametrize("where", ["engine", "kit"])
@pytest.mark.parametrize(
    ("backup", "approver", "second"),
    [(None, "Bob", "Bob"), ("Cy", None, "Cy"), (None, None, "finance-team")],
)
def test_the_assignee_is_evaluated_when_the_task_is_entered(
    where: str, backup: Value, approver: Value, second: str
) -> None:
    assert run_people(where, backup, approver) == [
        ("review", "Ann"),
        ("approve", second),
        ("file", "records-ann"),
    ]


BAD = """\
workflow bad version 1

input { manager_id: int, manager: string? }

start a

task a: user input.manager_id { next b }

task b: manual input.manager { next done }

end done: completed
"""


def test_an_assignee_that_is_no_string_is_a_finding() -> None:
    result = check([parse(BAD, "bad.wf")])
    found = sorted((d.code, d.span.line, d.message) for d in result.diagnostics)
    assert found == [
        ("WF302", 9, "the assignee may be null (string?)"),
        ("WF340", 7, "the assignee must be a string, not int"),
    ]
    assert compile_workflow(parse(BAD, "bad.wf")).table is None


def test_a_changed_assignee_is_no_breaking_change() -> None:
    """Tasks already open keep the assignee they were entered with; new ones take the
    new expression: nothing a caller, a consumer or a running instance relies on."""
    old = parse(PEOPLE, "people.wf").spec
    new = parse(
        PEOPLE.replace("version 1", "version 2").replace(
            "user input.manager {", 'user coalesce(input.backup, "managers") {'
        ),
        "people.wf",
    ).spec
    assert old is not None and new is not None
    assert [c.diagnostic.code for c in diff_specs(old, new).changes] == []


def test_an_assignee_that_is_no_string_at_run_time_is_a_workflow_error() -> None:
    """A table from elsewhere whose assignee gives a number: the step refuses to create
    the task (a workflow error naming the task), on the engine as on every store."""
    table = people()
    expressions = (*table.expressions, ir.Get(ir.Load("input"), "amount"))
    amount = len(expressions) - 1
    states = tuple(
        attrs.evolve(s, entry=attrs.evolve(s.entry, assignee_from=amount))
        if s.name == "review" and isinstance(s.entry, tb.TaskEntry)
        else s
        for s in table.states
    )
    engine = Engine([attrs.evolve(table, states=states, expressions=expressions)], {})
    iid = engine.start("people", {"manager": "Ann", "amount": 10})
    inst = engine.instance(iid)
    assert inst.status.value == "dead_lettered"
    assert inst.error == "workflow error: the assignee of 'review' is 10, not a string"
    assert engine.human_tasks() == []
