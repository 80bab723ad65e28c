"""``wf gen json-schema`` (issue 17): the schemas say what the runtime accepts at its
boundary. Differentially: for every payload of every example workflow, values made from
the declared types (good ones, and ones broken at any depth) are given to the
``jsonschema`` validator with the generated schema and to the runtime's own checks
(``runtime.validate``), as JSON gives them (through ``codec``); the two must agree on
each. What JSON Schema cannot say is listed, each tested to be what it is."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.compiler.program import load_program, read_file
from wflang.gen import json_schema
from wflang.gen.names import GenError, module_name
from wflang.runtime import codec, times
from wflang.runtime.ir import Value
from wflang.runtime.shapes import TypeRef, shapes, type_ref
from wflang.runtime.table import FieldType, Table
from wflang.runtime.validate import (
    check_error_payload,
    check_handler_result,
    fit_input,
    fit_output,
    fit_payload,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WORKFLOWS = sorted(
    p.stem for p in EXAMPLES.glob("*.wf") if "workflow " in p.read_text(encoding="utf-8")
)
INT64 = 2**63


def _schemas(path: Path) -> dict[str, dict[str, object]]:
    program = load_program([read_file(str(path))])
    prefix = module_name(str(path)) + "/"
    return {
        f.name.removeprefix(prefix): json.loads(f.text)
        for f in json_schema.generate(program)
        if f.name.startswith(prefix)
    }


def _table(path: Path) -> Table:
    compiled = compile_workflow(read_file(str(path)))
    assert compiled.table is not None
    return compiled.table


Check = Callable[[dict[str, Value]], list[str]]


def _runtime_checks(table: Table) -> dict[str, tuple[tuple[FieldType, ...], Check, bool]]:
    """Each payload's file name: its fields, the runtime's check of a value, and whether
    fields beyond the declared ones are let through."""
    found = shapes(table)

    def payload(kind: str, name: str) -> Check:
        return lambda v: fit_payload(table, kind, name, v)[1]

    def error(name: str) -> Check:
        return lambda v: check_error_payload(table, name, v)[1]

    def form(state: str) -> Check:
        return lambda v: fit_output(table, state, v, fill=True)[1]

    def result(state: str) -> Check:
        return lambda v: check_handler_result(table, state, v)[1]

    checks: dict[str, tuple[tuple[FieldType, ...], Check, bool]] = {
        "input.schema.json": (found.input.fields, lambda v: fit_input(table, v)[1], False)
    }
    for kind, declared in (("signal", found.signals), ("message", found.messages)):
        for name, d in declared.items():
            checks[f"{kind}.{name}.schema.json"] = (d.fields, payload(kind, name), False)
    for name, d in found.errors.items():
        checks[f"error.{name}.schema.json"] = (d.fields, error(name), False)
    for state in table.states:
        service = getattr(state.entry, "service", None)
        shape = found.results.get(state.name)
        if shape is None:
            continue
        if service is None:
            checks[f"form.{state.name}.schema.json"] = (shape.fields, form(state.name), False)
        else:
            checks.setdefault(
                f"result.{service}.schema.json", (shape.fields, result(state.name), True)
            )
    return checks


# -- values made from the declared types (the runtime's view of them) ----------------------

_JUNK_TEXT = st.one_of(
    st.text(max_size=6),
    st.from_regex(
        r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?(Z|[+-][0-9]{2}:[0-9]{2})\Z"
    ),
    st.from_regex(r"\AP?T?([0-9]{1,3}[WDHMS])*([0-9]{1,3}(\.[0-9]{1,4})?S)?\Z"),
    st.from_regex(r"\A([0-9]{1,4}(ms|s|m|h|d|w|x))+\n?\Z"),
)
_JUNK_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-1000, max_value=1000),
    _JUNK_TEXT,
)
_JUNK = st.recursive(
    _JUNK_SCALAR,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)
_ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=23, minutes=59))]
)


def _timestamp_text() -> st.SearchStrategy[str]:
    def text(at: datetime, form: int) -> str:
        shown = at.isoformat(timespec=["minutes", "seconds", "milliseconds", "microseconds"][form])
        return shown.replace("+00:00", "Z") if form % 2 else shown

    return st.builds(text, st.datetimes(timezones=_ZONES), st.integers(0, 3))


def _duration_text() -> st.SearchStrategy[str]:
    small = st.integers(0, 10**6)
    iso = st.builds(
        lambda d, h, m, s, ms: f"P{d}DT{h}H{m}M{s}.{ms:03d}S",
        small,
        small,
        small,
        small,
        st.integers(0, 999),
    )
    simple = st.lists(
        st.tuples(small, st.sampled_from(["ms", "s", "m", "h", "d", "w"])), min_size=1, max_size=3
    )
    return (
        iso
        | simple.map(lambda parts: "".join(f"{n}{u}" for n, u in parts))
        | st.sampled_from(["PT10M", "P1W", "PT0.5S"])
    )


_GOOD_SCALARS: dict[str, st.SearchStrategy[Value]] = {
    "string": st.text(max_size=6),
    "int": st.integers(-INT64, INT64 - 1),
    "bool": st.booleans(),
    "decimal": st.integers(-(2**70), 2**70)
    | st.decimals(
        allow_nan=False, allow_infinity=False, places=4, min_value=-(10**12), max_value=10**12
    ),
    "timestamp": st.integers(-INT64, INT64 - 1) | _timestamp_text(),
    "duration": st.integers(-INT64, INT64 - 1) | _duration_text(),
}


class _Values:
    """Strategies for one table's declared types: ``good`` values fit, ``any`` may not
    (a broken value anywhere, a missing, null or unknown field)."""

    def __init__(self, table: Table) -> None:
        self.shapes = shapes(table)

    def value(self, t: TypeRef, good: bool, depth: int) -> st.SearchStrategy[Value]:
        if t.optional and depth >= 5:  # a recursive type ends here
            return st.none()
        made = self._value(t, good, depth)
        if t.optional:
            made = st.none() | made
        return made if good else made | _JUNK

    def _value(self, t: TypeRef, good: bool, depth: int) -> st.SearchStrategy[Value]:
        if t.kind in _GOOD_SCALARS:
            return _GOOD_SCALARS[t.kind]
        if t.inner is not None:
            if depth >= 3:  # a recursive type ends here
                return st.just([] if t.kind == "list" else {})
            inner = self.value(t.inner, good, depth + 1)
            if t.kind == "list":
                return st.lists(inner, max_size=3)
            return st.dictionaries(st.text(max_size=3), inner, max_size=2)
        members = self.shapes.enums.get(t.kind)
        if members is not None:
            return st.sampled_from(members) | (st.text(max_size=8) if not good else st.nothing())
        fields = self.shapes.records.get(t.kind)
        if fields is not None and depth < 6:
            return self.record(fields, good, depth + 1)
        return st.nothing()

    def record(
        self, fields: tuple[FieldType, ...], good: bool, depth: int = 0, extra: bool = False
    ) -> st.SearchStrategy[dict[str, Value]]:
        required = {}
        optional = {}
        for f in fields:
            made = self.value(type_ref(f.type), good, depth)
            t = type_ref(f.type)
            if good and not (t.optional or f.has_default):
                required[f.name] = made
            else:
                optional[f.name] = made
        record = st.fixed_dictionaries(required, optional=optional)
        if good and not extra:
            return record
        unknown = st.dictionaries(
            st.sampled_from(["zz_extra", "zz_more"]), _JUNK_SCALAR, max_size=1
        )
        return st.builds(lambda r, u: {**u, **r}, record, unknown)


def _agree(schema: dict[str, object], check: Check, value: dict[str, Value]) -> bool:
    """Whether both accept ``value`` (they must agree)."""
    as_json = codec.loads(codec.dumps(value))  # what the runtime reads from JSON text
    by_schema = jsonschema.Draft202012Validator(schema).is_valid(as_json)
    problems = check(as_json)
    assert by_schema == (not problems), (
        f"the schema {'accepts' if by_schema else 'refuses'} {codec.dumps(as_json)}"
        f" but the runtime says {problems or 'nothing'}"
    )
    return by_schema


def _payloads(
    path: Path,
) -> Iterator[tuple[str, dict[str, object], tuple[FieldType, ...], Check, bool]]:
    schemas = _schemas(path)
    checks = _runtime_checks(_table(path))
    assert set(schemas) == set(checks), "a payload the runtime checks has no schema, or one more"
    for file, schema in sorted(schemas.items()):
        jsonschema.Draft202012Validator.check_schema(schema)
        fields, check, extra = checks[file]
        yield file, schema, fields, check, extra


def _differential(path: Path, examples: int = 40) -> None:
    """Every payload of the workflow of ``path``: good values accepted by both, broken
    ones refused by both (and enough of them refused to mean something)."""
    values = _Values(_table(path))
    refused = [0]
    for file, schema, fields, check, extra in _payloads(path):
        agree = _agreement(schema, check, refused)
        run = settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )(
            given(
                good=values.record(fields, good=True, extra=extra),
                any_=values.record(fields, good=False),
            )(agree)
        )
        try:
            run()
        except AssertionError as err:
            raise AssertionError(f"{path.stem}/{file}: {err}") from None
    assert refused[0] > 20, "the broken values were mostly accepted: they test little"


def _agreement(
    schema: dict[str, object], check: Check, refused: list[int]
) -> Callable[[dict[str, Value], dict[str, Value]], None]:
    def agree(good: dict[str, Value], any_: dict[str, Value]) -> None:
        assert _agree(schema, check, good), "a value made to fit is refused by both"
        refused[0] += not _agree(schema, check, any_)

    return agree


@pytest.mark.parametrize("name", WORKFLOWS)
def test_the_schemas_and_the_runtime_agree(name: str) -> None:
    _differential(EXAMPLES / f"{name}.wf")


LIBRARY = """\
type Point { x: int, y: int = 0, label: string? }
enum Size { small, large }
type Box { corner: Point, size: Size = Size.small, tags: list[string] = ["a", "b"] }
"""

EVERYTHING = """\
workflow everything version 3

import "lib.wf" as geo

type Line { sku: string, qty: int = 1, price: decimal, box: geo.Box? }
enum Speed { slow, fast }
type Node { kids: list[Node] }

input {
    name: string,
    count: int,
    ok: bool = true,
    amount: decimal = 4.95,
    big: decimal = 100 / 3,
    wait: duration = 90m,
    at: timestamp = 2026-12-01T10:00:00Z,
    due: timestamp?,
    speed: Speed = Speed.fast,
    lines: list[Line] = [],
    prices: map[string, decimal?],
    nested: list[list[geo.Point?]]?,
    corner: geo.Point,
    tree: Node?,
    twice: int = 2 * 60,
    spans: list[duration] = [1m, 2h],
    speeds: list[Speed] = [Speed.slow],
    maybe: int? = 1 + 1,
    later: timestamp = 2026-12-01T10:00:00Z + 1h,
}

signal poke { at: timestamp, every: duration?, boxes: map[string, geo.Box] }
signal ping
message paid { order_id: string, amount: decimal }

error Refused { reason: string, retry_in: duration = 10m }

service quote.get(sku: string) -> Line
service ship.it(corner: geo.Point) -> { tracking: string, eta: timestamp? }

start get
task get: service quote.get { args { sku: input.name } next check }
task check: user "clerks" { form { approved: bool, note: string = "", speed: Speed? } raises Refused next wait_poke }
wait wait_poke: signal poke { next wait_ping }
wait wait_ping: signal ping { next wait_paid }
wait wait_paid: message paid correlate input.name { next ship }
task ship: service ship.it { args { corner: input.corner } next done }
end done: completed
"""


def test_every_form_of_type_agrees(tmp_path: Path) -> None:
    """A workflow with every scalar, optional, list, map, nested and imported record
    (under an alias), enum and kind of default: the schemas and the runtime agree."""
    (tmp_path / "lib.wf").write_text(LIBRARY, encoding="utf-8")
    path = tmp_path / "everything.wf"
    path.write_text(EVERYTHING, encoding="utf-8")
    _differential(path, examples=150)


def _near_timestamps() -> st.SearchStrategy[str]:
    """Timestamp text with each part a little beyond its range, now and then."""

    def text(y: int, mo: int, d: int, h: int, mi: int, s: int | None, frac: str, off: str) -> str:
        second = "" if s is None else f":{s:02d}{frac}"
        return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}{second}{off}"

    offsets = st.sampled_from(["Z", "z", ""]) | st.builds(
        lambda sign, h, m: f"{sign}{h:02d}:{m:02d}",
        st.sampled_from("+-"),
        st.sampled_from([0, 9, 10, 19, 20, 22, 23, 24, 25]),
        st.sampled_from([0, 9, 10, 59, 60, 99]),
    )
    return st.builds(
        text,
        st.sampled_from([0, 1, 4, 100, 1900, 2000, 2023, 2024, 2026, 2100, 2400, 9999]),
        st.sampled_from([0, 1, 2, 4, 9, 10, 11, 12, 13]),
        st.sampled_from([0, 1, 9, 10, 19, 20, 28, 29, 30, 31, 32]),
        st.sampled_from([0, 9, 10, 19, 20, 23, 24, 25]),
        st.sampled_from([0, 9, 10, 59, 60, 61]),
        st.none() | st.sampled_from([0, 9, 10, 59, 60, 61]),
        st.sampled_from(["", ".", ".5", ".123", ".1234567"]),
        offsets,
    )


def _near_durations() -> st.SearchStrategy[str]:
    part = st.builds(
        lambda n, unit: f"{n}{unit}",
        st.sampled_from(["", "0", "1", "15", "1.5", "1.1234"]),
        st.sampled_from(["W", "D", "T", "H", "M", "S", "ms", "s", "m", "h", "d", "w", "x", " "]),
    )
    return st.builds(
        lambda p, parts, tail: p + "".join(parts) + tail,
        st.sampled_from(["", "P", "PT", "p"]),
        st.lists(part, max_size=4),
        st.sampled_from(["", "", "\n", "T"]),
    )


@pytest.mark.parametrize(
    ("kind", "texts", "read"),
    [
        ("timestamp", _near_timestamps(), times.timestamp_ms),
        ("duration", _near_durations() | _duration_text(), times.duration_ms),
    ],
)
def test_the_text_of_times_is_what_the_runtime_reads(
    kind: str, texts: st.SearchStrategy[str], read: Callable[[str], int | None]
) -> None:
    """The patterns know what ``runtime.times`` reads: each part of a timestamp within
    its range (the calendar too: 2024-02-29 but not 2026-02-29 or 1900-02-29), a
    duration's parts, and no final newline (Python's ``$`` would take one)."""
    validator = jsonschema.Draft202012Validator(json_schema.SCALARS[kind])
    seen = {True: 0, False: 0}

    @settings(max_examples=1500, deadline=None, database=None)
    @given(texts)
    def agree(text: str) -> None:
        accepted = validator.is_valid(text)
        assert accepted == (read(text) is not None), text
        seen[accepted] += 1

    agree()
    assert min(seen.values()) > 100, seen


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("everything")
    (root / "lib.wf").write_text(LIBRARY, encoding="utf-8")
    (root / "everything.wf").write_text(EVERYTHING, encoding="utf-8")
    return root / "everything.wf"


GOOD_INPUT = (
    '{"name": "a", "count": 1, "corner": {"x": -2}, "prices": {"p": 1.5, "q": null},'
    ' "wait": "PT10M", "at": "2026-12-01T10:00:00+01:00", "due": null, "speed": "slow",'
    ' "lines": [{"sku": "s", "price": 2, "box": {"corner": {"x": 1, "label": "l"}}}]}'
)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({}, None),
        ({"count": True}, "'count' must be int"),
        ({"count": "1"}, "'count' must be int"),
        ({"count": 9223372036854775808}, "'count' must be int"),  # read as a decimal
        ({"amount": "12.5"}, "'amount' must be decimal"),
        ({"wait": "10 m"}, "'wait' must be duration"),
        ({"wait": "10m\n"}, "'wait' must be duration"),
        ({"wait": "P1DT"}, "'wait' must be duration"),
        ({"wait": 1.5}, "'wait' must be duration"),
        ({"at": "2026-02-29T10:00Z"}, "'at' must be timestamp"),
        ({"at": "2026-12-01T10:00"}, "'at' must be timestamp"),
        ({"due": "2026-12-01"}, "'due' must be timestamp"),
        ({"speed": "medium"}, "'speed' must be one of slow, fast"),
        ({"lines": [{"sku": "s"}]}, "missing field 'price' (decimal) in 'lines[0]'"),
        (
            {"lines": [{"sku": "s", "price": 1, "box": {"corner": {"x": 1, "z": 2}}}]},
            "unknown field 'z'",
        ),
        ({"prices": {"p": "1"}}, "'prices['p']' must be decimal"),
        ({"corner": None}, "'corner' is null"),
        ({"nested": [[{"x": 1}, None], "x"]}, "'nested[1]' must be a list"),
        ({"colour": "red"}, "unknown input field 'colour'"),
    ],
)
def test_hand_made_values_are_judged_alike(
    everything: Path, change: dict[str, object], words: str | None
) -> None:
    schema = _schemas(everything)["input.schema.json"]
    value = {**json.loads(GOOD_INPUT), **change}
    text = json.dumps(value).replace(
        '"count": 9.223372036854776e+18', '"count": 9223372036854775808'
    )
    parsed = codec.loads(text)
    problems = fit_input(_table(everything), parsed)[1]
    by_schema = jsonschema.Draft202012Validator(schema).is_valid(parsed)
    if words is None:
        assert problems == [] and by_schema
    else:
        assert any(words in p for p in problems), problems
        assert not by_schema


def test_what_json_schema_cannot_say_is_left_to_the_runtime(everything: Path) -> None:
    """The gaps the module's documentation lists, each as it is: the schema accepts,
    the runtime refuses with its words."""
    schema = _schemas(everything)["input.schema.json"]
    table = _table(everything)
    good = json.loads(GOOD_INPUT)
    deep: dict[str, object] = {"kids": []}
    for _ in range(70):
        deep = {"kids": [deep]}
    gaps = {
        "amount": (Decimal("1." + "1" * 40), "34"),
        "wait": (f"{2**63}ms", "must be duration"),
        "tree": (deep, "nested too deeply"),
        "name": ("x" * 300_000, "the limit is"),
    }
    for name, (value, words) in gaps.items():
        data = codec.loads(codec.dumps({**good, name: value}))
        assert jsonschema.Draft202012Validator(schema).is_valid(data), name
        problems = fit_input(table, data)[1]
        assert any(words in p for p in problems), (name, problems)


def test_the_documents_are_valid_draft_2020_12_and_name_their_source(everything: Path) -> None:
    program = load_program([read_file(str(everything))])
    files = {f.name: f.text for f in json_schema.generate(program, str(everything.parent / "out"))}
    assert sorted(files) == [
        "everything/error.Refused.schema.json",
        "everything/form.check.schema.json",
        "everything/input.schema.json",
        "everything/message.paid.schema.json",
        "everything/result.quote.get.schema.json",
        "everything/result.ship.it.schema.json",
        "everything/signal.ping.schema.json",
        "everything/signal.poke.schema.json",
    ]
    source = (everything.parent / "everything.wf").read_bytes()
    for text in files.values():
        schema = json.loads(text)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert (
            "from ../../everything.wf (sha256 " + hashlib.sha256(source).hexdigest()
            in schema["$comment"]
        )
    schema = json.loads(files["everything/input.schema.json"], parse_float=Decimal)
    assert schema["properties"]["big"]["default"] == Decimal("33.33333333333333333333333333333333")
    assert '"default": 33.33333333333333333333333333333333' in files["everything/input.schema.json"]
    assert schema["properties"]["speed"] == {"$ref": "#/$defs/Speed", "default": "fast"}
    assert schema["$defs"]["lib.Box"]["properties"]["tags"]["default"] == ["a", "b"]
    assert schema["required"] == ["name", "count", "prices", "corner"]
    result = json.loads(files["everything/result.ship.it.schema.json"])
    assert "additionalProperties" not in result  # a handler may return more
    assert json.loads(files["everything/signal.ping.schema.json"])["additionalProperties"] is False


def test_check_exits_1_when_a_schema_is_stale_or_missing(
    everything: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "schemas"
    assert main(["gen", "json-schema", str(everything), "-o", str(out), "--check"]) == 1
    assert (
        "everything/input.schema.json is stale: run 'wf gen json-schema' again"
        in capsys.readouterr().out
    )
    assert not out.exists()
    assert main(["gen", "json-schema", str(everything), "-o", str(out)]) == 0
    assert "wrote 8 of 8 files" in capsys.readouterr().out
    assert main(["gen", "json-schema", str(everything), "-o", str(out), "--check"]) == 0
    (out / "everything" / "form.check.schema.json").write_text("{}")
    assert main(["gen", "json-schema", str(everything), "-o", str(out), "--check"]) == 1
    assert "form.check.schema.json is stale" in capsys.readouterr().out


def test_the_examples_schemas_are_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/schema is what `wf gen json-schema examples -o examples/schema` writes."""
    monkeypatch.chdir(EXAMPLES.parent)
    assert main(["gen", "json-schema", "examples", "-o", "examples/schema", "--check"]) == 0


def test_a_default_the_runtime_cannot_compute_is_refused(tmp_path: Path) -> None:
    flow = tmp_path / "over.wf"
    flow.write_text(
        "workflow over version 1\ninput { n: int = 9223372036854775807 + 1 }\nstart done\n"
        "end done: completed\n"
    )
    program = load_program([read_file(str(flow))])
    with pytest.raises(GenError, match="the default of 'n' cannot be computed: int overflow"):
        json_schema.generate(program)


def test_the_example_of_the_schemas_doc_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/schemas.md's Python example validates as it says, and the runtime agrees."""
    doc = (EXAMPLES.parent / "docs" / "schemas.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```python\n(.*?)^```", doc, re.M | re.S)
    monkeypatch.chdir(EXAMPLES.parent)
    scope: dict[str, object] = {}
    exec(compile(block, "docs/schemas.md", "exec"), scope)
    table = _table(EXAMPLES / "payment_retry.wf")
    good, late = scope["good"], scope["late"]
    assert isinstance(good, dict) and isinstance(late, dict)
    assert fit_input(table, codec.loads(json.dumps(good)))[1] == []
    (problem,) = fit_input(table, codec.loads(json.dumps(late)))[1]
    assert problem in doc.replace("\n", " ")
