"""Members of an enum imported ``as alias`` written ``alias.Enum.member`` (issue 14
leftovers, item 2), as ``alias.Type`` is written in types: typed as the enum in
defaults, comparisons, lists and the guards of a choice (whose coverage counts them),
lowered to the member's name, printed back as written; an unknown enum or member is an
error with the closest name as a hint. Run on the engine and the test kit here, on
SQLite and PostgreSQL in tests/store/test_qualified_enums.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.compiler.check import check
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse, parse_file
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine
from wflang.runtime.ir import Value
from wflang.testing import WorkflowEnv

DATA = Path(__file__).parent / "data" / "qualified"
TIERS = (DATA / "tiers.wf").read_text()
LEVELS = (DATA / "levels.wf").read_text()

#: The input, and the output the workflow gives for it.
RUNS: list[tuple[dict[str, Value], dict[str, Value]]] = [
    ({}, {"best": False, "tier": "gold", "label": "midtrue"}),  # the default
    ({"tier": "platinum"}, {"best": True, "tier": "platinum", "label": "toptrue"}),
    ({"tier": "standard"}, {"best": False, "tier": "standard", "label": "lowfalse"}),
]


@pytest.mark.parametrize(("given", "want"), RUNS)
def test_qualified_members_run_on_the_test_kit(
    given: dict[str, Value], want: dict[str, Value]
) -> None:
    env = WorkflowEnv.from_files(DATA / "tiers.wf")
    iid = env.start("tiers", given)
    assert env.status(iid) == "completed", env.instance(iid).error
    assert env.instance(iid).output == want


@pytest.mark.parametrize(("given", "want"), RUNS)
def test_qualified_members_run_on_the_engine(
    given: dict[str, Value], want: dict[str, Value]
) -> None:
    engine = Engine(list(WorkflowEnv.from_files(DATA / "tiers.wf").engine.tables.values()))
    got = engine.instance(engine.start("tiers", given))
    assert (got.status, got.output) == (rt.Status.COMPLETED, want)


def test_a_qualified_member_prints_back_as_written() -> None:
    spec = parse(TIERS, "tiers.wf").spec
    assert spec is not None
    assert format_spec(spec, TIERS) == TIERS
    assert "levels.Tier.platinum -> top" in format_spec(spec)


def _problems(tmp_path: Path, tiers: str) -> list[tuple[str, str, str | None]]:
    (tmp_path / "tiers.wf").write_text(tiers)
    (tmp_path / "levels.wf").write_text(LEVELS)
    result = check([parse_file(str(tmp_path / "tiers.wf"))])
    return [(d.code, d.message, d.hint) for d in result.diagnostics]


def test_the_file_checks_clean(tmp_path: Path) -> None:
    assert _problems(tmp_path, TIERS) == []


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        (
            "levels.Tier.golden",
            ("WF310", "enum levels.Tier has no member 'golden'", "did you mean 'gold'?"),
        ),
        (
            "levels.Tear.gold",
            ("WF310", "the file imported as 'levels' declares no enum 'Tear'",
             "did you mean 'Tier'?"),
        ),
        (  # a misspelt alias is named as one, with the real alias as the hint
            "level.Tier.gold",
            ("WF310", "unknown import alias 'level' in 'level.Tier' (aliases: levels)",
             "did you mean 'levels'?"),
        ),
    ],
)  # fmt: skip
def test_an_unknown_enum_or_member_is_an_error_with_a_hint(
    tmp_path: Path, written: str, problem: tuple[str, str, str | None]
) -> None:
    tiers = TIERS.replace("label: context.note + string(input.tier in [levels.Tier.gold,",
                          f"label: context.note + string(input.tier in [{written},")  # fmt: skip
    assert tiers != TIERS
    found = _problems(tmp_path, tiers)
    assert problem in found
    assert [p for p in found if p[0] == "WF310"] == [problem]  # one finding, not two


def test_a_choice_that_misses_a_qualified_member_is_reported(tmp_path: Path) -> None:
    tiers = TIERS.replace("    when input.tier == levels.Tier.standard -> low\n", "")
    assert tiers != TIERS
    found = [p for p in _problems(tmp_path, tiers) if p[0] == "WF211"]
    assert len(found) == 1 and "standard" in found[0][1], found
