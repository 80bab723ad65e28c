"""wf compile: deterministic tables, refusal on errors, and the expression IR."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.compiler.check import check
from wflang.compiler.compile import compile_workflow
from wflang.compiler.config import Config
from wflang.dsl.parser import parse, parse_file
from wflang.runtime import ir
from wflang.runtime.table import dumps, loads, table_hash

EXAMPLES = Path(__file__).parent.parent / "examples"
WORKFLOWS = sorted(p for p in EXAMPLES.glob("*.wf") if p.name != "shared_types.wf")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_example_compiles_deterministically(path: Path) -> None:
    first = compile_workflow(parse_file(str(path))).table
    second = compile_workflow(parse_file(str(path))).table
    assert first is not None and second is not None
    assert dumps(first) == dumps(second)
    assert loads(dumps(first)) == first
    assert table_hash(first) == table_hash(second)
    # Every transition targets a state of the table, every row a known event.
    for row in first.rows:
        assert 0 <= row.event < len(first.events)
        for t in row.transitions:
            assert -1 <= t.target < len(first.states)


def test_table_rows_follow_the_source() -> None:
    table = compile_workflow(parse_file(str(EXAMPLES / "order_saga.wf"))).table
    assert table is not None
    assert (table.workflow, table.version) == ("order_saga", 3)
    assert table.states[table.start].name == "price"
    choice = table.state_id("express_fee")
    (row,) = [r for r in table.rows if r.state == choice]
    assert table.events[row.event] == "enter"
    assert [table.states[t.target].name for t in row.transitions] == ["price_express", "reserve"]
    assert row.transitions[0].guard is not None and row.transitions[1].guard is None


def test_compile_refuses_a_workflow_with_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.wf"
    bad.write_text("workflow w version 1\nstart a\ntask a: script {\n    next nowhere\n}\n")
    out_file = tmp_path / "out.wfc.json"
    assert main(["compile", str(bad), "-o", str(out_file)]) == 1
    assert "WF102" in capsys.readouterr().out
    assert not out_file.exists()


def test_compile_writes_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "order.wfc.json"
    assert main(["compile", str(EXAMPLES / "order_saga.wf"), "-o", str(out_file)]) == 0
    table = loads(out_file.read_text())
    assert table.workflow == "order_saga"
    assert "sha256" in capsys.readouterr().err
    assert main(["table", str(EXAMPLES / "order_saga.wf")]) == 0
    assert "express_fee              enter          -> price_express" in capsys.readouterr().out


def test_loading_a_table_of_another_schema_is_refused() -> None:
    with pytest.raises(ValueError, match="recompile"):
        loads('{"schema": 99}')


def evaluate(source: str, env: dict[str, ir.Value]) -> ir.Value:
    """Lower the guard of a one-choice workflow and evaluate it."""
    text = (
        "workflow w version 1\n"
        "input { a: int, b: int, s: string, xs: list[int], d: decimal, o: int? }\n"
        f"start c\nchoice c {{\n    when {source} -> e\n    else -> e\n}}\nend e: completed\n"
    )
    table = compile_workflow(parse(text, "w.wf")).table
    assert table is not None, source
    row = next(r for r in table.rows if table.events[r.event] == "enter")
    guard = row.transitions[0].guard
    assert guard is not None
    return ir.evaluate(table.expressions[guard], {"input": env})


def test_expressions_evaluate() -> None:
    env: dict[str, ir.Value] = {
        "a": 7,
        "b": 2,
        "s": "Hello",
        "xs": [1, 2, 3],
        "d": Decimal("1.5"),
        "o": None,
    }
    assert evaluate("input.a / input.b > 3", env) is True  # 3.5
    assert evaluate("input.a % input.b == 1 and input.d * 2 == 3", env) is True
    assert evaluate('lower(input.s) == "hello" and len(input.xs) == 3', env) is True
    assert evaluate("2 in input.xs and coalesce(input.o, 4) == 4", env) is True
    assert evaluate("90s == 1m30s and input.xs[-1] == 3", env) is True


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("input.a / (input.b - 2) > 0", "division by zero"),
        ("input.xs[5] > 0", "index 5 is out of range (length 3)"),
        ("input.o > 0", "'>' cannot compare null"),
    ],
)
def test_expression_errors_are_clear(source: str, message: str) -> None:
    env: dict[str, ir.Value] = {
        "a": 7,
        "b": 2,
        "s": "x",
        "xs": [1, 2, 3],
        "d": Decimal(1),
        "o": None,
    }
    with pytest.raises(ir.ExpressionError, match=re.escape(message)):
        evaluate(source, env)


def test_unknown_operator_is_refused_when_loading() -> None:
    with pytest.raises(ValueError, match="unknown operator"):
        ir.compile_ir(ir.Apply("exec", (ir.Const("rm -rf /"),)))


DATA = Path(__file__).parent / "data"
SOURCES = sorted([*DATA.rglob("*.wf"), *EXAMPLES.glob("*.wf")])


def test_whatever_checks_clean_compiles() -> None:
    assert len(SOURCES) > 100
    clean = 0
    for path in SOURCES:
        compiled = compile_workflow(parse_file(str(path)))  # never raises
        errors = [d for d in compiled.check.diagnostics if d.severity.value == "error"]
        parsed = parse_file(str(path))
        if not errors and parsed.spec is not None and parsed.spec.header is not None:
            assert compiled.table is not None, path
            clean += 1
    assert clean > 50


def test_a_workflow_without_nodes_is_a_check_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    compiled = compile_workflow(parse("workflow w version 1\n", "w.wf"))
    assert compiled.table is None
    assert [(d.code, d.message) for d in compiled.check.diagnostics] == [
        ("WF103", "workflow 'w' has no nodes")
    ]
    f = tmp_path / "w.wf"
    f.write_text("workflow w version 1\n")
    for command in ("check", "compile"):
        assert main([command, str(f)]) == 1
        assert "workflow 'w' has no nodes" in capsys.readouterr().out
    # A library file (no header) declares things for others and needs no nodes.
    assert compile_workflow(parse("type t { a: int }\n", "lib.wf")).check.diagnostics == ()


@pytest.mark.parametrize(
    ("code", "source"),
    [
        ("WF103", "workflow w version 1\nend e: completed\n"),
        ("WF102", "workflow w version 1\nstart t\ntask t: script { next nowhere }\n"),
        ("WF101", "workflow w version 1\nstart e\nend e: completed\nend e: failed\n"),
    ],
)
def test_compile_reports_what_a_configuration_silenced_when_it_leaves_no_table(
    code: str, source: str
) -> None:
    silenced = Config(severities={code: None})
    assert check([parse(source, "w.wf")], silenced).diagnostics == ()
    compiled = compile_workflow(parse(source, "w.wf"), silenced)
    assert compiled.table is None
    assert [d.code for d in compiled.check.diagnostics] == [code]


def test_source_text_with_a_lone_surrogate_compiles() -> None:
    # Found by the long fuzz run: text given as a str (no file holds one) made the
    # source hash raise UnicodeEncodeError out of compile_workflow.
    source = "workflow w version 1\n// \ud800\nstart e\nend e: completed\n"
    result = compile_workflow(parse(source, "w.wf"))
    assert result.table is not None
    assert result.table.source_hash
