"""``wf run`` and ``wf worker`` take the runtime's ``Limits`` as options (issue 12
leftover): ``--max-string-chars``, ``--max-list-items``, ``--max-context-chars`` and
(issue 14) ``--max-list-elements``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.cli.values import LIMITS
from wflang.runtime.limits import Limits

from .test_values import GROW

LISTS = """\
workflow lists version 1
context { xs: list[int] = [] }
output { n: int }
start fill
task fill: script {
    output { xs: [1, 2, 3] }
    next done
}
end done: completed { output { n: len(context.xs) } }
"""
STRING_CAUGHT = "a string of 1,024 characters is over the limit of 1,000 (Limits.string_chars)"
GROWING = json.dumps({"n": 1, "turns": 12})


def test_the_defaults_of_the_options_are_those_of_limits() -> None:
    assert {name: getattr(Limits(), name) for name in LIMITS} == LIMITS


@pytest.fixture
def grow(tmp_path: Path) -> str:
    (tmp_path / "grow.wf").write_text(GROW)
    return str(tmp_path / "grow.wf")


def test_wf_run_applies_the_string_limit(grow: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", grow, "--input", GROWING]) == 0
    assert "status: completed" in capsys.readouterr().out
    assert main(["run", grow, "--input", GROWING, "--max-string-chars", "1000"]) == 1
    out = capsys.readouterr().out
    assert "status: dead_lettered" in out and STRING_CAUGHT in out


def test_wf_run_applies_the_context_limit(grow: str, capsys: pytest.CaptureFixture[str]) -> None:
    start = json.dumps({"n": 1, "turns": 100, "s": "x" * 1_001})
    assert main(["run", grow, "--input", start, "--max-context-chars", "5000"]) == 1
    assert "the limit is 5,000" in capsys.readouterr().out


def test_wf_run_applies_the_list_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "lists.wf").write_text(LISTS)
    path = str(tmp_path / "lists.wf")
    assert main(["run", path]) == 0
    assert 'output: {"n": 3}' in capsys.readouterr().out
    assert main(["run", path, "--max-list-items", "2"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "wf: error: lists version 1 does not fit the limits: "
        "a list of 3 items is over the limit of 2\n"
    )


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "lots"])
def test_a_limit_must_be_a_whole_number_from_one(
    grow: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["run", grow, "--max-string-chars", value])
    assert exit.value.code == 2
    assert "is not a whole number from 1" in capsys.readouterr().err


TOUCHING = """\
workflow touching version 1
input { xs: list[int] }
output { big: int }
start done
end done: completed { output { big: len(filter(input.xs, x => x > 1)) } }
"""
TOUCHED = "the expression touches more than 3 list items (Limits.list_elements)"


def test_wf_run_applies_the_budget_of_list_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "touching.wf").write_text(TOUCHING)
    path = str(tmp_path / "touching.wf")
    assert main(["run", path, "--input", '{"xs": [1, 2, 3]}', "--max-list-elements", "3"]) == 0
    assert 'output: {"big": 2}' in capsys.readouterr().out
    assert main(["run", path, "--input", '{"xs": [1, 2, 3, 4]}', "--max-list-elements", "3"]) == 1
    out = capsys.readouterr().out
    assert "status: dead_lettered" in out and TOUCHED in out
