"""Named record types as service results and types imported by a qualified name
(issue 14, item 5): ``service pricing.quote(...) -> Quote``, ``alias.Type`` wherever a
type is written. Parsed, formatted back, checked (unknown alias, unknown type in the
alias, a result that is no record, the result's fields typed), compiled, and a handler's
result checked against the record with its defaults filled in, exactly. The stores'
side is in tests/store/test_examples_durable.py (the pricing example)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from wflang.compiler.check import check
from wflang.compiler.compile import compile_workflow
from wflang.dsl import parse_file
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse
from wflang.runtime import table as tb
from wflang.runtime.validate import check_handler_result
from wflang.testing import WorkflowEnv, succeed

LIB = """\
type Line { sku: string, qty: int = 1 }

type Quote { price: decimal, currency: string = "EUR", lines: list[Line] = [] }

enum Tier { standard, gold }
"""

MAIN = """\
workflow w version 1

import "lib.wf" as shop

type Local { price: decimal, note: string = "none" }

input { tier: shop.Tier?, lines: list[shop.Line] }

context { price: decimal = 0, currency: string = "", note: string = "" }

output { price: decimal, currency: string, note: string }

service pricing.quote(lines: list[shop.Line], tier: shop.Tier?) -> shop.Quote reads

service pricing.local() -> Local

start quote

task quote: service pricing.quote {
    args { lines: input.lines, tier: input.tier }
    output { price: result.price, currency: result.currency }
    next local
}

task local: service pricing.local {
    output { note: result.note }
    next done
}

end done: completed {
    output { price: context.price, currency: context.currency, note: context.note }
}
"""


def _project(tmp_path: Path, main: str = MAIN, lib: str = LIB) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "lib.wf").write_text(lib)
    (tmp_path / "main.wf").write_text(main)
    return tmp_path / "main.wf"


def _findings(path: Path) -> list[tuple[str, str, str | None]]:
    result = check([parse_file(path)])
    return [(d.code, d.message, d.hint) for d in result.diagnostics]


def test_a_named_result_and_qualified_types_parse_into_the_spec() -> None:
    spec = parse(MAIN, "main.wf").spec
    assert spec is not None
    quote, local = [d for d in spec.declarations if isinstance(d, sp.ServiceDecl)]
    assert isinstance(quote.result, ty.NamedType) and quote.result.name == "shop.Quote"
    assert quote.read_only and not local.read_only
    assert str(quote.params[0].type) == "list[shop.Line]"
    assert str(quote.params[1].type) == "shop.Tier?"


@pytest.mark.parametrize(
    "line",
    [
        "service a.b(x: int) -> Quote",
        "service a.b(x: shop.Line?) -> shop.Quote reads raises E, F",
        "service a.b() -> { v: int } reads",
        "service a.b() reads raises E",
        "type T { a: map[string, list[shop.Line]], b: shop.Line? }",
    ],
)
def test_the_new_syntax_formats_back_to_itself(line: str) -> None:
    parsed = parse(line + "\n", "x.wf")
    assert parsed.ok, parsed.diagnostics
    assert parsed.spec is not None
    assert format_spec(parsed.spec, line + "\n") == line + "\n"


def test_reads_comes_before_raises() -> None:
    parsed = parse("service a.b() raises E reads\n", "x.wf")
    assert [(d.code, d.hint) for d in parsed.diagnostics] == [
        ("WF001", "'reads' comes before 'raises': service s.f(...) -> { ... } reads raises E")
    ]


def test_a_workflow_with_named_results_and_qualified_types_is_clean(tmp_path: Path) -> None:
    assert _findings(_project(tmp_path)) == []


@pytest.mark.parametrize(
    ("before", "after", "finding"),
    [
        (
            "list[shop.Line] }",
            "list[shp.Line] }",
            (
                "WF104",
                "unknown import alias 'shp' in 'shp.Line' (aliases: shop)",
                "did you mean 'shop'?",
            ),
        ),
        (
            "-> shop.Quote",
            "-> shop.Qoute",
            (
                "WF104",
                "the file imported as 'shop' declares no type 'Qoute'",
                "did you mean 'Quote'?",
            ),
        ),
        (
            "-> Local",
            "-> Locl",
            ("WF104", "unknown type 'Locl'", "did you mean 'Local'?"),
        ),
        (
            "-> Local",
            "-> shop.Tier",
            (
                "WF104",
                "the result of pricing.local must be a record, but 'shop.Tier' is an enum",
                "declare a record: type Result { ... }, or write the fields: -> { ... }",
            ),
        ),
        (
            "output { note: result.note }",
            "output { note: result.nope }",
            ("WF310", "Local has no field 'nope'", "did you mean 'note'?"),
        ),
        (
            "output { price: result.price,",
            "output { price: result.currency,",
            ("WF301", "'price' must be decimal, not string", None),
        ),
    ],
)
def test_named_results_and_qualified_types_are_checked(
    tmp_path: Path, before: str, after: str, finding: tuple[str, str, str | None]
) -> None:
    assert before in MAIN
    assert finding in _findings(_project(tmp_path, MAIN.replace(before, after)))


def test_the_table_describes_a_named_result_by_the_records_fields(tmp_path: Path) -> None:
    table = compile_workflow(parse_file(_project(tmp_path))).table
    assert table is not None
    results = {s.name: s for s in table.types.results}
    assert [(f.name, f.type, f.has_default) for f in results["quote"].fields] == [
        ("price", "decimal", False),
        ("currency", "string", True),
        ("lines", "list[Line]", True),
    ]
    records = {r.name for r in table.types.records}
    assert {"shop.Quote", "shop.Line", "Local"} <= records
    assert tb.loads(tb.dumps(table)) == table


def test_a_handlers_result_gets_the_records_defaults_deeply_and_exact_decimals(
    tmp_path: Path,
) -> None:
    table = compile_workflow(parse_file(_project(tmp_path))).table
    assert table is not None
    given: dict[str, object] = {"price": 2.1, "lines": [{"sku": "a"}]}
    output, problems = check_handler_result(table, "quote", given)
    assert problems == []
    assert output == {
        "price": Decimal("2.1"),
        "currency": "EUR",
        "lines": [{"sku": "a", "qty": 1}],
    }
    assert given == {"price": 2.1, "lines": [{"sku": "a"}]}  # the handler's own is untouched
    output, problems = check_handler_result(table, "quote", {"currency": "USD"})
    assert problems == ["missing field 'price' (decimal) in result of quote"]


def test_the_engine_runs_a_named_result_with_its_defaults(tmp_path: Path) -> None:
    table = compile_workflow(parse_file(_project(tmp_path))).table
    assert table is not None
    env = WorkflowEnv(
        [table],
        {
            "pricing.quote": succeed({"price": Decimal("4.5")}),
            "pricing.local": succeed({"price": 1}),
        },
    )
    iid = env.start("w", {"lines": [{"sku": "a", "qty": 2}]})
    assert env.status(iid) == "completed"
    assert env.instance(iid).output == {"price": Decimal("4.5"), "currency": "EUR", "note": "none"}


LONG = """\
service pricing.quote_for_a_very_long_name(
    sku: string,
    quantity: int,
    customer_id: string,
    tier: shop.Tier,
) -> shop.Quote reads raises NoPrice, Unavailable

service risk.score_for_a_very_long_name(customer_id: string, amount: decimal) -> {
    score: int,
    band: string,
    reasons: list[string],
} reads raises Unavailable
"""


def test_a_long_signature_breaks_before_reads_and_raises_never() -> None:
    one_line = "\n\n".join(" ".join(block.split()).replace("( ", "(").replace(",)", ")")
                           for block in LONG.strip().split("\n\n")) + "\n"  # fmt: skip
    for text in (LONG, one_line):
        parsed = parse(text, "x.wf")
        assert parsed.spec is not None, parsed.diagnostics
        assert format_spec(parsed.spec, text) == LONG


@pytest.mark.parametrize(
    ("old", "new", "codes"),
    [
        ("-> { price: decimal }", "-> Quote", []),  # the same fields: no change
        ("-> Quote", "-> { price: decimal }", []),
        ("-> { price: decimal }", "-> Priced", ["WF614"]),  # Priced adds currency
        ("-> Quote", "-> shop.Quote", ["WF614"]),  # another file's record: by name
        ("-> shop.Quote", "-> shop.Quote", []),
        # breaking both ways, so the version must go up too (WF690)
        ("-> Quote reads", "-> Quote", ["WF658", "WF690"]),
        ("-> Quote", "-> Quote reads", ["WF658", "WF690"]),
    ],
)
def test_diff_of_a_service_result_and_effect(old: str, new: str, codes: list[str]) -> None:
    from wflang.compiler.diff import diff_specs

    template = (
        "workflow w version 1\n\ntype Quote { price: decimal }\n\n"
        "type Priced { price: decimal, currency: string }\n\n"
        "service pricing.quote() RESULT\n"
    )
    specs = [parse(template.replace("RESULT", r), "x.wf").spec for r in (old, new)]
    assert specs[0] is not None and specs[1] is not None
    assert sorted(c.diagnostic.code for c in diff_specs(specs[0], specs[1]).changes) == codes


def test_wf_table_marks_read_only_tasks() -> None:
    from wflang.runtime.describe import describe

    table = compile_workflow(parse_file(Path(__file__).parent.parent / "examples/pricing.wf")).table
    assert table is not None
    states = [line.split() for line in describe(table).splitlines() if "  task  " in line]
    assert [(s[2], s[-1] == "(reads)") for s in states] == [
        ("quote", True),
        ("hold", False),
        ("score", True),
        ("release", False),
    ]
