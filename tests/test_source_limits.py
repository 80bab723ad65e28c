"""Bad input of every kind gets a clear diagnostic, never a traceback."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.dsl import parse, parse_bytes, parse_file
from wflang.dsl.build import literals
from wflang.dsl.source import MAX_SOURCE_BYTES
from wflang.runtime import numbers

H = "workflow w version 1\n"


def test_non_utf8_input_points_at_the_bad_byte() -> None:
    result = parse_bytes(b"workflow w version 1\nstart \xff\n", "bin.wf")
    (d,) = result.diagnostics
    assert d.code == "WF005"
    assert d.message == "the file is not valid UTF-8: byte 0xff at line 2, column 7"
    assert (d.span.line, d.span.column) == (2, 7)


def test_byte_order_mark_is_accepted() -> None:
    assert parse_bytes(b"\xef\xbb\xbfworkflow w version 1\n", "bom.wf").ok


def test_huge_input_is_refused_with_the_limit() -> None:
    result = parse_bytes(b" " * (MAX_SOURCE_BYTES + 1), "big.wf")
    (d,) = result.diagnostics
    assert d.code == "WF005"
    assert d.message == "the file is too large: the limit is 16,777,216 bytes"


def test_deeply_nested_expression_is_refused() -> None:
    depth = 5000
    source = H + "choice c {\n    when " + "(" * depth + "1" + ")" * depth + " + 1 > 0 -> e\n}\n"
    source += H.replace("workflow w version 1\n", "") + "end e: completed\n"
    deep = H + "choice c {\n    when " + "not " * depth + "true -> e\n}\nend e: completed\n"
    result = parse(deep, "deep.wf")
    assert result.spec is None
    (d,) = result.diagnostics
    assert d.code == "WF005"
    assert d.message == "this is nested more than 64 levels deep"
    assert parse(source, "parens.wf").ok  # parentheses alone add no depth to the spec


def test_deeply_nested_flows_are_refused() -> None:
    depth = 200
    source = H
    for i in range(depth):
        source += f"parallel p{i} {{\n branch b{i} {{\n"
    source += "end e: completed\n" + "}\n}\n" * depth
    result = parse(source, "nest.wf")
    assert result.spec is None
    assert [d.code for d in result.diagnostics] == ["WF005"]


def test_missing_file_is_a_diagnostic() -> None:
    result = parse_file("/nonexistent/x.wf")
    (d,) = result.diagnostics
    assert d.code == "WF005"
    assert d.message.startswith("cannot read the file")


def test_control_characters_are_syntax_errors() -> None:
    result = parse(H + "start a\x00\n", "nul.wf")
    (d,) = result.diagnostics
    assert d.message.startswith("unexpected character '\\u0000'")


def test_invalid_literals() -> None:
    result = parse(
        H + 'wait w: until 2026-02-30T09:00:00Z {\n    output { a: "\\q", b: P1M }\n}\n', "lit.wf"
    )
    assert [(d.code, d.span.line, d.span.column) for d in result.diagnostics] == [
        ("WF002", 2, 15),
        ("WF002", 3, 17),
        ("WF002", 3, 26),
    ]
    assert "day is out of range for month" in result.diagnostics[0].message
    assert result.diagnostics[1].message == 'invalid escape in string "\\q"'
    assert "years or months" in result.diagnostics[2].message


def test_misplaced_and_duplicate_clauses() -> None:
    result = parse(
        H + "sleep s 10s {\n    retry { attempts: 2 }\n    next a\n}\n"
        "task t: service x.y {\n    form { a: int }\n    next a\n    next b\n}\n",
        "c.wf",
    )
    messages = [(d.code, d.span.line, d.message) for d in result.diagnostics]
    assert messages == [
        ("WF003", 3, "a sleep node does not take 'retry'"),
        ("WF003", 7, "a service task does not take 'form'"),
        ("WF003", 9, "'next' is given twice in node 't'"),
    ]
    assert result.diagnostics[2].related[0].span.line == 8


def test_unknown_function_and_no_clock() -> None:
    result = parse(H + "choice c {\n    when random() > 1 and lenn(input.x) > 0 -> e\n}\n", "f.wf")
    assert [(d.code, d.message, d.hint) for d in result.diagnostics] == [
        (
            "WF004",
            "unknown function 'random'",
            "workflows are deterministic: pass the value in (now() is the step's time)",
        ),
        ("WF004", "unknown function 'lenn'", "did you mean 'len'?"),
    ]


HUGE = "9" * 5000  # past Python's 4,300-digit limit for int(str)
TOO_BIG = str(2**63)
START = H + "start e\n"
END = "end e: completed\n"
# Every place the grammar takes an integer or a duration, with {n} for the number.
INTEGER_PLACES = {
    "version": "workflow w version {n}\nstart e\n" + END,
    "call version": START + "call c: workflow other version {n} { next e }\n" + END,
    "attempts": START + "task t: script { retry { attempts: {n} } next e }\n" + END,
    "concurrency": START + "map m over [1] as x { concurrency {n}\n" + END + "next e }\n" + END,
    "tolerate": START + "map m over [1] as x { tolerate {n}%\n" + END + "next e }\n" + END,
    "join": START + "parallel p { branch b { " + END + "} join {n} of {n} -> e }\n" + END,
    "expression": START + "end e: completed { output { x: {n} + 1 } }\n",
    "duration": START + "sleep s {n}ms next e\n" + END,
    "iso duration": START + "sleep s P{n}D next e\n" + END,
    "iso time": START + "sleep s PT{n}.5S next e\n" + END,
}


@pytest.mark.parametrize("place", INTEGER_PLACES)
@pytest.mark.parametrize("number", [HUGE, TOO_BIG])
def test_integers_past_64_bits_are_invalid_literals(place: str, number: str) -> None:
    source = INTEGER_PLACES[place].replace("{n}", number)
    result = parse(source, "big.wf")  # never raises
    assert result.spec is None
    assert {d.code for d in result.diagnostics} == {"WF002"}
    d = result.diagnostics[0]
    assert d.message.endswith("is out of range")
    assert "64-bit" in (d.hint or "")
    if number == HUGE:
        assert "(5,0" in d.message  # a long literal is shown by its start and length


def test_largest_integer_and_duration_are_accepted() -> None:
    largest = str(2**63 - 1)
    assert parse(INTEGER_PLACES["expression"].replace("{n}", "000" + largest)).ok
    assert parse(INTEGER_PLACES["duration"].replace("{n}", largest)).ok
    seconds = f"{2**63 // 1000 + 1}s"  # each part fits; the sum in milliseconds does not
    result = parse(START + f"sleep s 1ms{seconds} next e\n" + END)
    assert [d.message for d in result.diagnostics] == [f"duration 1ms{seconds} is out of range"]


@pytest.mark.parametrize(
    ("literal", "digits"),
    [
        ("1." + "0" * 40 + "1", 42),
        ("12345678901234567890.123456789012345", 35),
        (HUGE + ".5", 5001),
    ],
)
def test_decimals_the_runtime_cannot_hold_are_invalid_literals(literal: str, digits: int) -> None:
    result = parse(INTEGER_PLACES["expression"].replace("{n}", literal), "big.wf")
    assert result.spec is None
    [d] = result.diagnostics
    assert d.code == "WF002"
    assert d.message.endswith(f"is out of range ({digits:,} significant digits)")
    assert "at most 34 significant digits" in (d.hint or "")


def test_decimals_the_runtime_can_hold_are_accepted() -> None:
    for literal in ("123456789012345678901234567890123.4", "0." + "0" * 6142 + "1"):
        assert parse(INTEGER_PLACES["expression"].replace("{n}", literal)).ok, literal
    tiny = "0." + "0" * 6143 + "1"
    assert not parse(INTEGER_PLACES["expression"].replace("{n}", tiny)).ok


def test_the_language_and_the_runtime_share_the_decimal_limits() -> None:
    assert (literals.DECIMAL_DIGITS, literals.DECIMAL_EMIN) == (
        numbers.DECIMAL_DIGITS,
        numbers.DECIMAL_EMIN,
    )


@pytest.mark.parametrize("command", ["check", "parse", "fmt"])
def test_cli_reports_a_huge_integer(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "big.wf"
    f.write_text(INTEGER_PLACES["version"].replace("{n}", HUGE))
    assert (
        main([command, "--color", "never", str(f)] if command == "check" else [command, str(f)])
        == 1
    )
    out, err = capsys.readouterr()
    assert "is out of range" in out + err
    assert "Traceback" not in out + err


MB = 1_000_000
BIG_TOKENS = {
    "string": '"' + "a" * MB + '"',
    "string of escapes": '"' + "\\n" * (MB // 2) + '"',
    "block comment": "0 /*" + "*a" * (MB // 2) + "*/",
    "duration": "1s" * (MB // 2),
    "iso duration": "P" + "1D" * (MB // 2),
}


@pytest.mark.parametrize("kind", BIG_TOKENS)
def test_a_megabyte_token_parses_in_memory_linear_in_its_size(kind: str) -> None:
    source = START + "end e: completed { output { x: " + BIG_TOKENS[kind] + " } }\n"
    tracemalloc.start()
    try:
        result = parse(source, "big.wf")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok
    # A regular expression that backtracks per character took ~650 bytes per byte.
    assert peak < 32 * len(source), f"{peak:,} bytes at peak"


def test_bad_byte_is_located_in_code_points_after_any_line_break() -> None:
    for newline in (b"\n", b"\r\n", b"\r"):
        result = parse_bytes(b"workflow w version 1" + newline + b"// \xc3\xa9\xff", "bin.wf")
        (d,) = result.diagnostics
        assert d.message == "the file is not valid UTF-8: byte 0xff at line 2, column 5"
