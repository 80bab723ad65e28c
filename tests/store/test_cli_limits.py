"""``wf worker --max-string-chars`` on each store (issue 12 leftover: the runtime's
``Limits`` as options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.cli import main

from ..test_cli_limits import GROWING, STRING_CAUGHT
from ..test_values import GROW


@pytest.fixture
def grow(tmp_path: Path) -> str:
    (tmp_path / "grow.wf").write_text(GROW)
    return str(tmp_path / "grow.wf")


def test_wf_worker_applies_the_string_limit(
    grow: str, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def wf(*argv: str) -> str:
        assert main([*argv, "--store", url]) == 0
        return capsys.readouterr().out

    wf("store", "migrate")
    wf("deploy", grow)
    wf("start", "grow", "--input", GROWING, "--id", "free")
    wf("worker", "--once", "--log-level", "error")
    assert "status:   completed" in wf("status", "free")
    wf("start", "grow", "--input", GROWING, "--id", "bounded")
    wf("worker", "--once", "--log-level", "error", "--max-string-chars", "1000")
    status = wf("status", "bounded")
    assert "status:   dead_lettered" in status and STRING_CAUGHT in status


def test_wf_worker_applies_the_budget_of_list_items(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from ..test_cli_limits import TOUCHED, TOUCHING

    (tmp_path / "touching.wf").write_text(TOUCHING)

    def wf(*argv: str) -> str:
        assert main([*argv, "--store", url]) == 0
        return capsys.readouterr().out

    wf("store", "migrate")
    wf("deploy", str(tmp_path / "touching.wf"))
    wf("start", "touching", "--input", '{"xs": [1, 2, 3, 4]}', "--id", "free")
    wf("worker", "--once", "--log-level", "error")
    assert "status:   completed" in wf("status", "free")
    wf("start", "touching", "--input", '{"xs": [1, 2, 3, 4]}', "--id", "bounded")
    wf("worker", "--once", "--log-level", "error", "--max-list-elements", "3")
    status = wf("status", "bounded")
    assert "status:   dead_lettered" in status and TOUCHED in status
