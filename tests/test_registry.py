"""The checker's registry is the single source of truth: every code's preset, whether
it blocks compiling, and the meta-rules (WF9xx) are said there and nowhere else."""

from __future__ import annotations

from wflang.compiler.check import check
from wflang.compiler.compile import compile_workflow
from wflang.compiler.config import Config, parse_config
from wflang.compiler.registry import RULES, Pass, Preset, blocking_rules
from wflang.dsl.diagnostics import CODES, Severity
from wflang.dsl.parser import parse

BLANKET = "workflow w version 1\nstart done\nend done: completed  // wf: ignore\n"


def test_every_code_but_the_parser_and_loader_ones_is_a_registered_rule() -> None:
    unregistered = {c.id for c in CODES.all() if c.id not in RULES}
    assert all(code.startswith("WF0") or code == "WF113" for code in unregistered)
    meta = {r.id for r in RULES.values() if r.check is None}
    assert meta == {"WF901", "WF902", "WF903"}
    assert all(RULES[code].pass_ is Pass.SUPPRESSIONS for code in meta)
    assert RULES["WF903"].preset is Preset.STRICT


def test_the_blocking_rules_are_flagged_errors_in_the_registry() -> None:
    assert blocking_rules() == {"WF101", "WF102", "WF103", "WF107", "WF115", "WF323"}
    assert all(RULES[code].code.severity is Severity.ERROR for code in blocking_rules())
    # Turned off for `wf check`, a blocking rule still stops `wf compile`.
    parsed = parse("workflow w version 1\nstart a\ntask a: script { next nowhere }\n")
    config = parse_config({"rules": {"unknown-target": "off"}})
    assert not any(d.code == "WF102" for d in check([parsed], config).diagnostics)
    compiled = compile_workflow(parsed, config)
    assert compiled.table is None
    assert any(d.code == "WF102" for d in compiled.check.diagnostics)
    # A lambda out of place has nothing to lower to, whatever the configuration says.
    misplaced = parse(
        "workflow w version 1\ninput { xs: list[int] }\nstart c\n"
        "choice c { when len(x => x) > 0 -> e else -> e }\nend e: completed\n"
    )
    off = parse_config({"rules": {"misplaced-lambda": "off"}})
    compiled = compile_workflow(misplaced, off)
    assert compiled.table is None
    assert [d.code for d in compiled.check.diagnostics] == ["WF323"]


def test_meta_rules_are_configured_like_every_rule() -> None:
    """`wf rules` lists WF903 with the strict preset; the configuration used to reject
    it as an unknown rule (it was not in the registry)."""
    parsed = parse(BLANKET)
    default = check([parsed]).diagnostics
    assert not any(d.code == "WF903" for d in default)  # strict only
    config = parse_config({"rules": {"blanket-suppression": "error", "WF901": "off"}})
    found = {d.code: d.severity for d in check([parsed], config).diagnostics}
    assert found.get("WF903") is Severity.ERROR
    assert "WF901" not in found  # the blanket suppression silences nothing: off
    strict = {d.code: d.severity for d in check([parsed], Config(Preset.STRICT)).diagnostics}
    assert strict.get("WF903") is Severity.ERROR
    assert strict.get("WF901") is Severity.ERROR
