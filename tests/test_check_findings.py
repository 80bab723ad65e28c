"""What the rules say and where: messages, spans and related locations that the
fixture tests (codes and lines only) do not pin down."""

from __future__ import annotations

import pytest

from wflang.compiler.check import check
from wflang.compiler.config import Config
from wflang.compiler.registry import Preset
from wflang.dsl.diagnostics import Diagnostic
from wflang.dsl.parser import parse


def diagnostics(source: str, code: str | None = None) -> list[Diagnostic]:
    """The findings of one source under the ``all`` preset (of one code, if given)."""
    result = check([parse(source, "w.wf")], Config(Preset.ALL))
    return [d for d in result.diagnostics if code is None or d.code == code]


def messages(source: str, code: str) -> list[str]:
    return [d.message for d in diagnostics(source, code)]


def test_a_choice_missing_enum_members_names_them() -> None:
    source = """workflow w version 1
enum Color { red, green, blue }
input { c: Color, d: Color? }
start one
choice one { when input.c == Color.red -> two when input.c == Color.green -> two }
choice two { when input.c == Color.red -> three }
choice three {
    when input.d == Color.red -> done
    when input.d == Color.green -> done
    when input.d == Color.blue -> done
}
end done: completed
"""
    assert messages(source, "WF211") == [
        "choice 'one' has no 'else' and Color.blue is not covered",
        "choice 'two' has no 'else' and Color.green and Color.blue are not covered",
        "choice 'three' has no 'else' and null is not covered",
    ]


def test_a_compensation_with_nothing_to_undo_is_reported_at_the_registering_step() -> None:
    source = """workflow w version 1
service pay.refund()
start total
task total: script {
    compensate refund
    next done
}
task refund: service pay.refund {}
end done: completed
"""
    [found] = diagnostics(source, "WF403")
    assert found.message == "'total' has no external effect for 'refund' to undo"
    assert (found.span.line, found.span.column) == (4, 6)  # the step, not its clause
    [related] = found.related
    assert (related.span.line, related.span.column) == (8, 6)  # the handler
    assert related.message == "the compensation it registers"


def test_a_broken_name_hides_no_finding_of_the_flow_elsewhere() -> None:
    """A branch jumping out of its parallel is reported, and so is what it causes (the
    branch never reaches its end, so the join never fires); a typo in another
    branch leaves only that branch unjudged, and the top-level flow is still judged."""
    source = """workflow w version 1
start p
parallel p {
    branch a {
        task jump: script { next done }
    }
    branch b {
        task typo: script { next b_dnoe }
        end b_done: completed
    }
    join all -> loop
}
task loop: script { next loop }
end done: completed
"""
    found = [(d.code, d.span.line) for d in diagnostics(source)]
    assert found == [
        ("WF202", 3),  # the workflow cannot finish: it is stuck in the loop
        ("WF202", 5),  # branch a reaches no end, so the join never fires
        ("WF107", 5),  # the jump out of branch a
        ("WF102", 8),  # the typo
        ("WF204", 13),  # the loop it falls into
        ("WF201", 14),  # 'done' is never reached
    ]


def test_an_arm_whose_values_earlier_arms_take_names_them() -> None:
    source = """workflow w version 1
enum Color { red, green, blue }
input { amount: decimal, n: int, c: Color }
start a
choice a {
    when input.amount >= 100 -> done
    when input.amount >= 1000 -> done
    when input.n < 10 -> done
    when input.n >= 10 -> done
    when input.n == 3 or input.n > 20 -> done
    when input.c == Color.red -> done
    when input.c != Color.blue and input.c != Color.green -> done
    else -> done
}
end done: completed
"""
    found = diagnostics(source, "WF210")
    assert [(d.span.line, d.message) for d in found] == [
        (
            7,
            "this arm is never taken: 'when input.amount >= 100' already matches every value it does",
        ),
        (10, "this arm is never taken: the arms before it already match every value it does"),
        (
            12,
            "this arm is never taken: 'when input.c == Color.red' already matches every value it does",
        ),
        (
            13,
            "'else' is never taken: 'when input.n < 10' and 'when input.n >= 10'"
            " take every value of input.n",
        ),
    ]
    assert [r.span.line for r in found[0].related] == [6]
    assert [r.span.line for r in found[1].related] == [8, 9]
    assert [r.span.line for r in found[3].related] == [8, 9]


@pytest.mark.parametrize(
    ("arms", "covering"),
    [
        (["input.c == Color.red", "input.c != Color.red"], [6, 7]),
        (
            [
                "input.c == Color.red",
                "input.n > 3",
                "input.c == Color.green or input.c == Color.blue",
            ],
            [6, 8],
        ),
        (["input.flag", "not input.flag"], [6, 7]),
        (["input.flag == true", "input.flag == false"], [6, 7]),
        (["input.amount < 10", "input.amount >= 10"], [6, 7]),
        (["input.amount < 10", "input.amount > 10"], None),  # 10 is left for else
        (["input.opt == Color.red", "input.opt != Color.red"], [6, 7]),  # null != red
        (["input.opt == Color.red", "input.opt == Color.green or input.opt == Color.blue"], None),
        (["input.flag", "input.n > 3"], None),
    ],
)
def test_an_else_after_arms_that_take_every_value_names_them(
    arms: list[str], covering: list[int] | None
) -> None:
    whens = "\n".join(f"    when {g} -> done" for g in arms)
    source = f"""workflow w version 1
enum Color {{ red, green, blue }}
input {{ amount: decimal, n: int, c: Color, flag: bool, opt: Color? }}
start a
choice a {{
{whens}
    else -> done
}}
end done: completed
"""
    found = [d for d in diagnostics(source, "WF210") if d.message.startswith("'else'")]
    if covering is None:
        assert found == []
        return
    (finding,) = found
    assert finding.span.line == 6 + len(arms)
    assert [r.span.line for r in finding.related] == covering


def test_a_node_with_only_error_and_timeout_routes_has_no_successor() -> None:
    source = """workflow w version 1
error Declined
service pay.charge() raises Declined
signal paid
start charge
task charge: service pay.charge {
    on Declined -> payment
    timeout 1h -> done
}
wait payment: signal paid {
    timeout 1h -> done
}
end done: completed
"""
    assert [(d.span.line, d.message) for d in diagnostics(source)] == [
        (6, "'charge' has no successor (its error and timeout routes are not a 'next')"),
        (10, "'payment' has no successor (its error and timeout routes are not a 'next')"),
    ]


def test_an_unknown_name_where_nothing_can_be_read_says_so() -> None:
    """A default is a constant: its hint said 'names here: ' with no names."""
    source = """workflow w version 1
input { n: int }
context { left: int = input.n }
output { k: int }
start done
end done: completed { output { k: context.left } }
"""
    [found] = diagnostics(source, "WF310")
    assert found.message == "unknown name 'input'"
    assert found.hint == "nothing can be read here: a default is a constant"
