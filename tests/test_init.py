"""``wf init NAME``: the scaffold checks clean, is formatted, its generated types are
current, its handlers pass mypy --strict, and its own test passes under pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_gen_python import mypy
from wflang.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("init")
    assert main(["init", "refunds", "--path", str(parent)]) == 0
    return parent / "refunds"


def test_init_says_what_it_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "init", "payouts", "--path", str(tmp_path))
    folder = tmp_path / "payouts"
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"created {folder / 'payouts.wf'}",
        f"created {folder / 'handlers.py'}",
        f"created {folder / 'test_payouts.py'}",
        f"created {folder / '.pre-commit-config.yaml'}",
        f"created {folder / 'pyproject.toml'}",
        f"created {folder / 'flow_types/__init__.py'}",
        f"created {folder / 'flow_types/payouts.py'}",
        f"next: cd {folder} && wf check . && pytest (and 'pre-commit install' to check every commit)",
    ]
    assert "workflow payouts version 1" in (folder / "payouts.wf").read_text()


def test_the_scaffold_checks_clean_is_formatted_and_its_types_are_current(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)  # its own pyproject.toml's [tool.wflang]
    assert run(capsys, "check", "--preset", "strict", ".") == (
        0,
        "All clean: 1 file checked.\n",
        "",
    )
    assert run(capsys, "fmt", "--check", ".")[:2] == (0, "")
    assert run(capsys, "gen", "python", "refunds.wf", "-o", "flow_types", "--check")[0] == 0
    hooks = (project / ".pre-commit-config.yaml").read_text()
    for entry in (
        "entry: wf fmt --check",
        "entry: wf check",
        "wf gen python refunds.wf -o flow_types --check",
    ):
        assert entry in hooks


def test_the_scaffold_s_own_test_passes(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}  # not this run's
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_the_scaffold_s_handlers_and_test_pass_mypy_strict(project: Path) -> None:
    checked = mypy(project, "handlers.py", "test_refunds.py", "flow_types")
    assert checked.returncode == 0, checked.stdout


def test_init_refuses_a_folder_that_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "refunds").mkdir()
    assert run(capsys, "init", "refunds", "--path", str(tmp_path)) == (
        2,
        "",
        f"wf: error: {tmp_path / 'refunds'} already exists: wf init makes a new folder\n",
    )


@pytest.mark.parametrize("name", ["Refunds", "2fast", "my-flow", "class"])
def test_init_refuses_a_name_that_is_not_a_module_name(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "init", name, "--path", str(tmp_path)) == (
        2,
        "",
        f"wf: error: cannot name a workflow {name!r}: a name is lower case letters, digits and "
        "'_', starting with a letter, and not a Python keyword (it names a module too)\n",
    )
    assert list(tmp_path.iterdir()) == []
