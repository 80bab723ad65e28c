"""The formatter: canonical, idempotent, keeps comments, and preserves the spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.dsl import parse
from wflang.dsl.formatter import format_spec

EXAMPLES = sorted(Path(__file__).parent.parent.joinpath("examples").glob("*.wf"))


def fmt(source: str) -> str:
    result = parse(source, "f.wf")
    assert result.spec is not None, result.diagnostics
    return format_spec(result.spec, source)


def test_there_are_at_least_eight_examples() -> None:
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_parse_and_are_formatted(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    result = parse(source, str(path))
    assert result.diagnostics == ()
    assert fmt(source) == source


def test_canonical_layout() -> None:
    messy = (
        "workflow   w version 1\n"
        "input{a:int,b:list[ string ]}\n"
        "start t\n"
        "task t: service s.x {args{a:input.a}   retry{attempts:3,backoff:1s..1m}\n"
        "next e}\n"
        "choice c{when(input.a>1)and not(input.b==[])->e else->e}\n"
        "end e: completed\n"
    )
    assert fmt(messy) == (
        "workflow w version 1\n"
        "input { a: int, b: list[string] }\n"
        "start t\n"
        "task t: service s.x {\n"
        "    args { a: input.a }\n"
        "    retry { attempts: 3, backoff: 1s..1m }\n"
        "    next e\n"
        "}\n"
        "choice c {\n"
        "    when input.a > 1 and not input.b == [] -> e\n"
        "    else -> e\n"
        "}\n"
        "end e: completed\n"
    )


def test_comments_are_kept_in_place() -> None:
    source = (
        "// header comment\n"
        "workflow w version 1\n"
        "\n"
        "\n"
        "/* a block\n"
        "   comment */\n"
        "start t  // trailing\n"
        "task t: script {  // on the opening line\n"
        "    // before output\n"
        "    output {\n"
        "        a: 1,  // first\n"
        "        b: 2,\n"
        "    }\n"
        "    next e\n"
        "}\n"
        "end e: completed\n"
        "// the end\n"
    )
    assert fmt(source) == source.replace("\n\n\n", "\n\n")


def test_long_mapping_breaks_one_entry_per_line() -> None:
    entries = ", ".join(f"field_{i}: input.value_{i}" for i in range(6))
    out = fmt(f"workflow w version 1\ntask t: script {{\n    output {{ {entries} }}\n}}\n")
    assert "        field_0: input.value_0,\n" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_formatting_is_idempotent_and_preserves_the_spec() -> None:
    for path in EXAMPLES:
        source = path.read_text(encoding="utf-8")
        once = fmt(source)
        assert fmt(once) == once
        assert parse(once, "f.wf").spec == parse(source, "f.wf").spec


def test_comment_text_survives_formatting() -> None:
    for path in EXAMPLES:
        source = path.read_text(encoding="utf-8")
        before = parse(source, "f.wf").spec
        after = parse(fmt(source), "f.wf").spec
        assert before is not None and after is not None
        assert [c.text.rstrip() for c in before.comments] == [c.text for c in after.comments]


def test_long_service_signature_wraps_parameters_then_result() -> None:
    params = ", ".join(f"parameter_{i}: string" for i in range(5))
    out = fmt(f"service billing.charge({params}) -> {{ charge_id: string }} raises Declined\n")
    assert out == (
        "service billing.charge(\n"
        + "".join(f"    parameter_{i}: string,\n" for i in range(5))
        + ") -> { charge_id: string } raises Declined\n"
    )
    assert fmt(out) == out
