"""Times for people in ``wf history --changes`` (issue 15): a timestamp prints as
ISO-8601 in UTC (``2026-12-01T10:00:00Z``) and a duration in the language's form
(``1h30m``), wherever it sits (an optional, a list, a map, a record), while JSON output
keeps the integers its documents are typed with. The table knows which fields of the
context and the output hold times (``Table.time_types``); it changes nothing of how the
table runs. The command's own session: tests/test_records.py."""

from __future__ import annotations

from pathlib import Path

from attrs import evolve
from hypothesis import given
from hypothesis import strategies as st

from wflang.cli.changes import change_lines, shown
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse, parse_file
from wflang.runtime import table as tb
from wflang.runtime.ir import Value
from wflang.runtime.times import duration_ms, duration_text, timestamp_ms, timestamp_text

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
APPROVED_AT = 1_796_119_200_000  # 2026-12-01T10:00:00Z
#: The instants ISO-8601 can write (years 1 to 9999).
FIRST, LAST = -62_135_596_800_000, 253_402_300_799_999

TIMES = """\
workflow times version 1

type Stop { at: timestamp, dwell: duration, note: string }

context {
    due: timestamp?,
    waited: duration = 0s,
    stops: list[Stop] = [],
    laps: map[string, duration]?,
    count: int = 0,
    label: string = "",
}

output { due: timestamp?, count: int }

start done

end done: completed {
    output { due: context.due, count: context.count }
}
"""


def table_of(text: str) -> tb.Table:
    table = compile_workflow(parse(text, "w.wf")).table
    assert table is not None
    return table


def test_timestamps_print_as_iso_8601_in_utc() -> None:
    assert timestamp_text(APPROVED_AT) == "2026-12-01T10:00:00Z"
    assert timestamp_text(APPROVED_AT + 250) == "2026-12-01T10:00:00.250Z"
    assert timestamp_text(0) == "1970-01-01T00:00:00Z"
    assert timestamp_text(-1) == "1969-12-31T23:59:59.999Z"
    assert timestamp_text(LAST + 1) is None  # past year 9999: no ISO-8601 text


def test_durations_print_in_the_language_s_form() -> None:
    assert duration_text(5_400_000) == "1h30m"
    assert duration_text(250) == "250ms"
    assert duration_text(3 * 86_400_000 + 1_000) == "3d1s"
    assert duration_text(0) == "0s"
    assert duration_text(-90_000) == "-1m30s"


@given(st.integers(FIRST, LAST))
def test_a_timestamp_s_text_reads_back_as_its_milliseconds(ms: int) -> None:
    text = timestamp_text(ms)
    assert text is not None and text.endswith("Z") and timestamp_ms(text) == ms


@given(st.integers(0, 2**63 - 1))
def test_a_duration_s_text_reads_back_as_its_milliseconds(ms: int) -> None:
    assert duration_ms(duration_text(ms)) == ms


def test_the_table_knows_the_fields_that_hold_times() -> None:
    table = table_of(TIMES)
    assert table.time_types == (
        ("context.due", "timestamp?"),
        ("context.laps", "map[string, duration]?"),
        ("context.stops", "list[Stop]"),  # a record with times in it
        ("context.waited", "duration"),
        ("output.due", "timestamp?"),
    )
    invoice = compile_workflow(parse_file(EXAMPLES / "invoice_approval.wf")).table
    assert invoice is not None
    assert invoice.time_types == (
        ("context.approved_at", "timestamp?"),
        ("output.approved_at", "timestamp?"),
    )


def test_what_the_table_knows_of_times_changes_nothing_of_how_it_runs() -> None:
    """A version deployed before the table knew it stands for the recompiled source:
    redeploying it is a no-op (``same_behaviour``), and its times print as integers."""
    table = table_of(TIMES)
    older = evolve(table, time_types=())
    assert tb.table_hash(older) != tb.table_hash(table)
    assert tb.same_behaviour(older, table)
    assert tb.loads(tb.dumps(table)) == table
    assert '"time_types"' not in tb.dumps(table_of(TIMES.replace("timestamp", "string")
                                                   .replace("duration", "int")
                                                   .replace("0s", "0")))  # fmt: skip


def test_changes_print_times_for_people_wherever_they_sit() -> None:
    table = table_of(TIMES)
    stop: dict[str, Value] = {"at": APPROVED_AT, "dwell": 600_000, "note": "12:00"}
    changes: list[dict[str, Value]] = [
        {"op": "replace", "path": "/due", "value": APPROVED_AT, "old": None},
        {"op": "replace", "path": "/waited", "value": 5_400_000, "old": 0},
        {"op": "replace", "path": "/stops", "value": [stop], "old": []},
        {"op": "add", "path": "/laps", "value": {"a": 250, "b": 60_000}},
        {"op": "replace", "path": "/count", "value": 3, "old": 2},  # an int stays one
        {"op": "remove", "path": "/label", "old": "x"},
    ]
    assert list(change_lines(changes, table)) == [
        "~ due: null -> 2026-12-01T10:00:00Z",
        "~ waited: 0s -> 1h30m",
        '~ stops: [] -> [{"at":2026-12-01T10:00:00Z,"dwell":10m,"note":"12:00"}]',
        '+ laps = {"a":250ms,"b":1m}',
        "~ count: 2 -> 3",
        '- label (was "x")',
    ]
    # Without a table (or one compiled before it knew its times): the integers.
    assert list(change_lines(changes[:1], None)) == ["~ due: null -> 1796119200000"]


def test_a_value_that_is_not_what_its_type_says_prints_as_it_is() -> None:
    """A value of an older version's shape, or past year 9999, is never refused or
    mangled for being printed: it prints as compact JSON."""
    records: dict[str, tuple[tb.FieldType, ...]] = {}
    assert shown("soon", "timestamp", records) == '"soon"'
    assert shown(LAST + 1, "timestamp", records) == str(LAST + 1)
    assert shown(True, "duration", records) == "true"
    assert shown({"x": 1}, "list[timestamp]", records) == '{"x":1}'
