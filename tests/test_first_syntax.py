"""The syntax of the event-based choice (issue 15 item 1): ``first NAME { … }`` parses
into a ``FirstNode`` of typed arms, formats canonically (comments kept, an arm's block
only when it has an ``output``), refuses a clause an arm does not take (WF003) and an
``after`` arm with a block (a syntax error), reports a message arm twice however its
correlation is written (WF366), and is drawn as BPMN's event-based gateway
with each arm's event on its edge."""

from __future__ import annotations

import pytest

from wflang.compiler.check import check
from wflang.dsl import expr as ex
from wflang.dsl import parse
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec

HEAD = (
    "workflow w version 1\n"
    "input { id: string }\n"
    "signal go { by: string }\n"
    "message paid { amount: decimal }\n"
    'context { by: string = "" }\n'
    "start f\n"
)


def fmt(source: str) -> str:
    result = parse(source, "f.wf")
    assert result.spec is not None, result.diagnostics
    return format_spec(result.spec, source)


def test_a_first_parses_into_typed_arms() -> None:
    source = HEAD + (
        "first f {\n"
        "    on signal go -> e { output { by: signal.by } }\n"
        "    on message paid correlate input.id -> e\n"
        "    after 2d -> e\n"
        "}\n"
        "end e: completed\n"
    )
    result = parse(source, "f.wf")
    assert result.diagnostics == ()
    assert result.spec is not None
    first = result.spec.nodes[0]
    assert isinstance(first, sp.FirstNode)
    go, paid, after = first.arms
    assert isinstance(go.trigger, sp.SignalTrigger) and go.trigger.signal.text == "go"
    assert [e.name.text for e in go.output] == ["by"]
    assert isinstance(paid.trigger, sp.MessageTrigger) and paid.output == ()
    assert isinstance(after.trigger, sp.AfterTrigger)
    assert isinstance(after.trigger.after, ex.DurationLit)
    assert [a.target.text for a in first.arms] == ["e", "e", "e"]
    assert first.output == go.output  # what the analyses read: every arm's
    assert check([result]).diagnostics == ()


def test_the_formatter_writes_it_canonically_and_keeps_comments() -> None:
    messy = HEAD + (
        "first f{on signal go->e{output{by:signal.by}}\n"
        "  // the payment\n"
        "  on message paid correlate input.id->e {}\n"
        "after 2d->e renamed from old}\n"
        "end e: completed\n"
    )
    assert fmt(messy) == HEAD + (
        "first f {\n"
        "    on signal go -> e {\n"
        "        output { by: signal.by }\n"
        "    }\n"
        "    // the payment\n"
        "    on message paid correlate input.id -> e\n"
        "    after 2d -> e\n"
        "    renamed from old\n"
        "}\n"
        "end e: completed\n"
    )
    once = fmt(messy)
    assert fmt(once) == once
    assert parse(once, "f.wf").spec == parse(messy, "f.wf").spec


def test_an_arm_takes_only_an_output() -> None:
    source = HEAD + (
        "first f {\n"
        "    on signal go -> e {\n"
        "        next e\n"
        "    }\n"
        "    after 2d -> e\n"
        "}\n"
        "end e: completed\n"
    )
    result = parse(source, "f.wf")
    assert [(d.code, d.message, d.span.line) for d in result.diagnostics] == [
        ("WF003", "a signal or message arm does not take 'next'", 9),
    ]
    timer = source.replace("        next e\n", "").replace("after 2d -> e", "after 2d -> e { }")
    assert {d.code for d in parse(timer, "f.wf").diagnostics} == {"WF001"}  # no payload


def test_a_first_is_drawn_as_an_event_based_gateway() -> None:
    from wflang.render.build import build  # (the renderer, for this test only)

    source = HEAD + (
        "first f {\n"
        "    on signal go -> e\n"
        "    on message paid correlate input.id -> e\n"
        "    after 2d -> e\n"
        "}\n"
        "end e: completed\n"
    )
    result = parse(source, "f.wf")
    models = check([result]).models
    diagram = build(next(iter(models.values())))
    (node,) = [n for n in diagram.nodes if n.key == "f"]
    assert node.kind == "first"
    labels = sorted(e.label for e in diagram.edges if e.tail == "f")
    assert labels == ["△ go", "◷ 2d", "✉ paid"]


def test_a_removed_arm_is_drawn_as_an_arm_in_a_diff() -> None:
    """``wf render --diff``: the arm WF667 reports removed is a ghost edge of the arm's own
    style (a plain arrow), not a boundary event's dotted one."""
    from pathlib import Path

    from wflang.render.command import Request, render  # (the renderer, for this test only)

    fixture = Path(__file__).resolve().parent / "data" / "diff" / "WF667"
    diff = (str(fixture / "old.wf"), str(fixture / "new.wf"))
    mermaid = render(Request(None, "mermaid", diff=diff)).decode("utf-8")
    assert 'n_outcome -->|"on signal reject"| n_refused' in mermaid


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("input.id", "(input.id)"),
        ('input.id + "/" + input.id', '(input.id + "/") + input.id'),
        ("input.id + string(1d)", "input.id + string(24h)"),
        ("string(2026-01-01T00:00:00Z)", "string(2026-01-01T01:00:00+01:00)"),
    ],
)
def test_a_message_arm_twice_with_its_correlation_written_otherwise_is_wf366(
    one: str, other: str
) -> None:
    """WF366 compares correlations by their parsed form, as ``wf diff`` does (WF666,
    WF667): the same correlation written otherwise waits for the same message; another
    correlation is another arm."""

    def duplicates(correlation: str) -> list[str]:
        source = HEAD + (
            "first f {\n"
            f"    on message paid correlate {one} -> e\n"
            f"    on message paid correlate {correlation} -> e\n"
            "    after 2d -> e\n"
            "}\n"
            "end e: completed\n"
        )
        result = parse(source, "f.wf")
        assert result.diagnostics == ()
        return [d.message for d in check([result]).diagnostics if d.code == "WF366"]

    assert duplicates(other) == [
        "first 'f' waits for message paid twice: only one of the arms could win"
    ]
    assert duplicates(f"{other} + {other}") == []
