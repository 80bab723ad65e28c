"""Malformed inputs: each reports the exact message, line, column and hint."""

from __future__ import annotations

import sys

import pytest

from wflang.dsl import parse
from wflang.dsl.diagnostics import Severity
from wflang.dsl.parser import MAX_SYNTAX_ERRORS

H = "workflow w version 1\n"

# (name, source, line, column, message, hint) of the first diagnostic.
CASES = [
    (
        "misspelt_timeout",
        H + "task a: service s.x {\n    timout 30s -> b\n    next b\n}\n",
        3,
        5,
        "unexpected name 'timout'; expected 'args', 'compensate', 'error', 'every', 'form', 'heartbeat', 'next', 'on', 'output', 'raises', 'renamed', 'retry', 'timeout' or '}'",
        "did you mean 'timeout'?",
    ),
    (
        "assign_for_compare",
        H + "choice c {\n    when input.x = 3 -> a\n}\n",
        3,
        18,
        "unexpected '='; expected '->' or an operator",
        "use '==' to compare; '=' only gives a field its default value",
    ),
    (
        "missing_next_sleep",
        H + "sleep s 10m done\n",
        2,
        13,
        "unexpected name 'done'; expected 'next' or '{'",
        "a transition is written 'next done'",
    ),
    (
        "missing_arrow_when",
        H + "choice c {\n    when input.ok done\n}\n",
        3,
        19,
        "unexpected name 'done'; expected '->'",
        None,
    ),
    (
        "missing_close_brace_eof",
        H + "task a: script {\n    next b\n",
        4,
        1,
        "unexpected end of file; expected 'args', 'compensate', 'error', 'every', 'form', 'heartbeat', 'next', 'on', 'output', 'raises', 'renamed', 'retry', 'timeout' or '}'",
        "the file ended inside a block: is a '}' missing?",
    ),
    (
        "missing_target",
        H + "task a: script {\n    next\n}\n",
        4,
        1,
        "unexpected '}'; expected a name",
        "a name is missing before the '}'",
    ),
    (
        "misspelt_node_keyword",
        H + "tsak a: script {\n    next b\n}\n",
        2,
        1,
        "unexpected name 'tsak'; expected 'call', 'choice', 'context', 'end', 'enum', 'error', 'first', 'import', 'input', 'map', 'message', 'output', 'parallel', 'service', 'signal', 'sleep', 'start', 'task', 'type', 'wait' or end of file",
        "did you mean 'task'?",
    ),
    (
        "unknown_char",
        H + "start a $\n",
        2,
        9,
        "unexpected character '$'; expected 'call', 'choice', 'context', 'end', 'enum', 'error', 'first', 'import', 'input', 'map', 'message', 'output', 'parallel', 'service', 'signal', 'sleep', 'start', 'task', 'type' or 'wait'",
        None,
    ),
    (
        "single_quote_string",
        H + "task a: script {\n    output { x: 'hi' }\n}\n",
        3,
        17,
        "unexpected character '''; expected '(', '+' or '-', '[', a decimal number, a duration, a name, a string, a timestamp or an integer",
        'strings are written in double quotes: "text"',
    ),
    (
        "double_ampersand",
        H + "choice c {\n    when input.a && input.b -> d\n}\n",
        3,
        18,
        "unexpected character '&'; expected ')', ',', '->', ']', 'non-interrupting', '{', '}', a name or an operator",
        "use 'and' / 'or'",
    ),
    (
        "missing_colon_task",
        H + "task a service s.x {\n    next b\n}\n",
        2,
        8,
        "unexpected 'service'; expected ':'",
        None,
    ),
    (
        "bad_end_kind",
        H + "end done: complete\n",
        2,
        11,
        "unexpected name 'complete'; expected 'completed', 'failed', 'cancelled' or 'compensated'",
        "did you mean 'completed'?",
    ),
    (
        "chained_comparison",
        H + "choice c {\n    when 1 < input.x < 3 -> d\n}\n",
        3,
        22,
        "unexpected '<'; expected '->' or an operator",
        None,
    ),
    (
        "missing_version_number",
        "workflow w version\nstart a\n",
        2,
        1,
        "unexpected 'start'; expected an integer",
        None,
    ),
    (
        "version_not_int",
        "workflow w version one\n",
        1,
        20,
        "unexpected name 'one'; expected an integer",
        None,
    ),
    (
        "unclosed_string",
        H + 'task a: user "ops {\n    next b\n}\n',
        2,
        14,
        "unexpected character '\"'; expected '(', '+' or '-', '[', '{', a decimal number, "
        "a duration, a name, a string, a timestamp or an integer",  # an assignee is an expression
        'a string must end with " on the same line',
    ),
    (
        "trailing_operator",
        H + "choice c {\n    when input.x + -> d\n}\n",
        3,
        21,
        "unexpected '>'; expected '(', '+' or '-', '[', 'false', 'null', 'true', a decimal number, a duration, a name, a string, a timestamp or an integer",
        None,
    ),
    (
        "unbalanced_paren",
        H + "choice c {\n    when (input.x > 1 -> d\n}\n",
        3,
        23,
        "unexpected '->'; expected ')'",
        None,
    ),
    (
        "retry_unknown_setting",
        H + "task a: script {\n    retry { attemps: 3 }\n}\n",
        3,
        13,
        "unexpected name 'attemps'; expected 'attempts', 'backoff', 'factor', 'jitter', 'non_retryable' or '}'",
        "did you mean 'attempts'?",
    ),
    (
        "mapping_equals",
        H + "task a: script {\n    args { x = 1 }\n}\n",
        3,
        14,
        "unexpected '='; expected '.' or ':'",  # (``local.x: …`` writes a map item's variable)
        "mappings and fields use ':' as in 'name: value'",
    ),
    (
        "semicolon",
        H + "start a;\n",
        2,
        8,
        "unexpected character ';'; expected 'call', 'choice', 'context', 'end', 'enum', 'error', 'first', 'import', 'input', 'map', 'message', 'output', 'parallel', 'service', 'signal', 'sleep', 'start', 'task', 'type' or 'wait'",
        "statements need no ';'",
    ),
    (
        "hash_comment",
        H + "# comment\nstart a\n",
        2,
        1,
        "unexpected character '#'; expected 'call', 'choice', 'context', 'end', 'enum', 'error', 'first', 'import', 'input', 'map', 'message', 'output', 'parallel', 'service', 'signal', 'sleep', 'start', 'task', 'type' or 'wait'",
        "comments start with '//'",
    ),
    (
        "choice_with_colon",
        H + "choice c: {\n    else -> d\n}\n",
        2,
        9,
        "unexpected ':'; expected '{'",
        "only task, wait, call and end nodes take ': kind' after their name",
    ),
    (
        "join_without_policy",
        H + "parallel p {\n    join -> d\n}\n",
        3,
        10,
        "unexpected '->'; expected 'all', 'any' or an integer",
        None,
    ),
    (
        "on_without_error",
        H + "task a: script {\n    on -> d\n}\n",
        3,
        8,
        "unexpected '->'; expected 'any', 'message', 'signal' or a name",
        None,
    ),
    (
        "bad_type_bracket",
        H + "input { xs: list[int }\n",
        2,
        22,
        "unexpected '}'; expected ',' or ']'",
        None,
    ),
    (
        "field_missing_type",
        H + "input { x: }\n",
        2,
        12,
        "unexpected '}'; expected a name",
        "a name is missing before the '}'",
    ),
    (
        "duplicate_arrow",
        H + "choice c {\n    else -> -> d\n}\n",
        3,
        13,
        "unexpected '->'; expected a name",
        None,
    ),
    (
        "keyword_typo_wait",
        H + "wiat w: signal s {\n    next d\n}\n",
        2,
        1,
        "unexpected name 'wiat'; expected 'call', 'choice', 'context', 'end', 'enum', 'error', 'first', 'import', 'input', 'map', 'message', 'output', 'parallel', 'service', 'signal', 'sleep', 'start', 'task', 'type', 'wait' or end of file",
        "did you mean 'wait'?",
    ),
    (
        "map_missing_as",
        H + "map m over input.xs {\n    next d\n}\n",
        2,
        21,
        "unexpected '{'; expected 'as'",
        None,
    ),
    (
        "timeout_missing_target",
        H + "task a: script {\n    timeout 30s\n    next d\n}\n",
        4,
        5,
        "unexpected 'next'; expected '->' or 'non-interrupting'",
        None,
    ),
    (
        "bad_duration_unit",
        H + "sleep s 10x next d\n",
        2,
        11,
        "unexpected name 'x'; expected 'next' or '{'",
        "durations are written like 500ms, 90s, 15m, 2h, 3d, 1w or P1DT2H",
    ),
]


@pytest.mark.parametrize(("name", "source", "line", "column", "message", "hint"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_malformed_input_reports_exact_error(
    name: str, source: str, line: int, column: int, message: str, hint: str | None
) -> None:
    result = parse(source, "t.wf")
    assert result.spec is None
    first = result.diagnostics[0]
    assert (first.code, first.span.line, first.span.column) == ("WF001", line, column)
    assert first.message == message
    assert first.hint == hint


def test_there_are_at_least_25_cases() -> None:
    assert len(CASES) >= 25


def test_one_run_reports_every_error_in_the_file() -> None:
    source = H + (
        "task a: service s.x {\n"
        "    timout 30s -> b\n"  # misspelt keyword
        "    next b\n"
        "}\n"
        "choice b {\n"
        "    when input.x = 3 -> c\n"  # '=' for '=='
        "    else -> c\n"
        "}\n"
        "sleep s 10m c\n"  # missing next
        "end c: complete\n"  # misspelt outcome
    )
    found = [(d.span.line, d.span.column) for d in parse(source, "t.wf").diagnostics]
    assert found == [(3, 5), (7, 18), (10, 13), (11, 8)]


def _calls(source: str) -> int:
    """How many Python function calls parsing takes: an operation count, not a time."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event == "call"

    parse(H)  # the grammar is built once, outside the count
    sys.setprofile(profile)
    try:
        parse(source, "t.wf")
    finally:
        sys.setprofile(None)
    return count


def _workflow(nodes: int) -> str:
    steps = "".join(
        f'task t{i}: service s.x {{\n    args {{ n: {i}, s: "x" }}\n    next t{i + 1}\n}}\n'
        for i in range(nodes)
    )
    return H + "start t0\n" + steps + f"end t{nodes}: completed\n"


@pytest.mark.parametrize("junk", [")", "$", "tsak", "}", "-> x"])
def test_recovery_costs_the_same_after_a_short_or_a_long_file(junk: str) -> None:
    # Each junk token once cost time in proportion to everything parsed before it
    # (1,600 ')' after an example took 33 s).
    extra = {}
    for nodes in (10, 200):
        valid = _workflow(nodes)
        extra[nodes] = _calls(valid + f"{junk}\n" * 40) - _calls(valid)
    assert extra[200] < 2 * extra[10], extra


def test_the_parser_stops_after_50_errors_with_a_note() -> None:
    result = parse(H + "tsak a: script {}\n" * 60, "t.wf")
    *errors, note = result.diagnostics
    assert len(errors) == MAX_SYNTAX_ERRORS == 50
    assert {(d.code, d.severity) for d in errors} == {("WF001", Severity.ERROR)}
    assert (note.code, note.severity, note.span.line) == ("WF001", Severity.INFO, 52)
    assert note.message == "stopped after 50 syntax errors; the rest of the file is not checked"


def _unclosed(source: str) -> list[tuple[int, int, tuple[tuple[int, int, str], ...], str | None]]:
    return [
        (
            d.span.line,
            d.span.column,
            tuple((r.span.line, r.span.column, r.message) for r in d.related),
            d.hint,
        )
        for d in parse(source, "t.wf").diagnostics
    ]


def test_a_missing_brace_mid_file_points_at_the_block_left_open() -> None:
    source = H + "start a\ntask a: script {\n    next b\n\ntask b: script {\n    next e\n}\n"
    source += "end e: completed\n"
    assert _unclosed(source) == [
        (6, 1, ((3, 16, "unclosed '{'"),), "is a '}' missing? The '{' on line 3 is not closed")
    ]


def test_a_missing_brace_points_at_the_innermost_open_block() -> None:
    source = H + (
        "parallel p {\n"
        "    branch one {\n"
        "        task a: script {\n"
        "            retry { attempts: 2\n"  # never closed
        "            next e\n"
        "        }\n"
        "        end e: completed\n"
        "    }\n"
        "}\n"
    )
    ((line, column, related, _),) = _unclosed(source)
    assert (line, column, related) == (6, 13, ((5, 19, "unclosed '{'"),))
    at_end = _unclosed(H + "task a: script {\n    next b\n")
    assert at_end == [
        (4, 1, ((2, 16, "unclosed '{'"),), "the file ended inside a block: is a '}' missing?")
    ]


def test_other_errors_in_a_block_name_no_open_brace() -> None:
    (d,) = parse(H + "task a: script {\n    timout 30s -> b\n    next b\n}\n", "t.wf").diagnostics
    assert d.related == ()


def test_recovery_over_a_long_run_of_blanks_is_fast() -> None:
    """Found by the fuzz long run (issue 20): the trivia pattern backtracked
    exponentially, so 40 blanks between a skipped token and the next error hung the
    parse (the recovery asks whether only blanks and comments lie between them)."""
    for between in (" " * 5000 + "start ", " \n// c\n/* d */ " * 1000 + "start "):
        first = parse(H + ") " + between + ")\n", "t.wf").diagnostics[0]
        assert first.message.startswith("unexpected ')'") and first.span.line == 2
