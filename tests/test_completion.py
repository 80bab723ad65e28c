"""``wf completion``: the bash script completes in bash (sourced, then called as bash
calls it, with COMP_WORDS and COMP_CWORD); the zsh and fish scripts offer the same
commands and flags, and their shells read them when they are installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.cli.app import HOMES

ROOT = Path(__file__).parent.parent


def script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "wf.bash"
    done = subprocess.run(
        [sys.executable, "-m", "wflang.cli", "completion", "bash"],
        capture_output=True,
        text=True,
        check=True,
    )
    path.write_text(done.stdout)
    return path


def complete(bash_script: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (``""``: a new word), from the repository."""
    program = (
        f"source {bash_script}\n"
        'COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()\n'
        '_wf_completion\nprintf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        ["bash", "-c", program, "bash", "wf", *words],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    return [line for line in done.stdout.split("\n") if line]


def test_bash_completes_commands_flags_and_choices(bash_script: Path) -> None:
    assert complete(bash_script, "ch") == ["check"]
    assert set(HOMES) <= set(complete(bash_script, ""))
    assert complete(bash_script, "check", "--fo") == ["--format"]
    assert complete(bash_script, "check", "--format", "") == [
        "text",
        "concise",
        "json",
        "sarif",
        "github",
    ]
    assert complete(bash_script, "check", "--fail-on", "w") == ["warning"]
    assert complete(bash_script, "ops", "re") == ["retry", "replay"]
    assert "--store" in complete(bash_script, "ops", "retry", "--")


def test_bash_completes_wf_files_and_folders_where_a_command_takes_files(bash_script: Path) -> None:
    assert complete(bash_script, "check", "examples/ord") == ["examples/order_saga.wf"]
    assert complete(bash_script, "fmt", "--check", "ex") == ["examples/"]
    # past a flag's value, the files again
    assert complete(bash_script, "check", "--format", "json", "examples/pri") == [
        "examples/pricing.wf"
    ]
    assert complete(bash_script, "check", "examples/order_") == [
        "examples/order_saga.wf"
    ]  # no .py, .json


def test_bash_completes_the_rule_codes_of_wf_rules(bash_script: Path) -> None:
    assert complete(bash_script, "rules", "WF20") == [f"WF20{n}" for n in range(1, 10)]


def test_zsh_and_fish_scripts_offer_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    zsh, fish = script("zsh", capsys), script("fish", capsys)
    assert zsh.startswith("#compdef wf\n") and "bashcompinit" in zsh and "_wf_completion" in zsh
    for word in HOMES:
        assert f"-a {word} -d" in fish
    assert (
        "complete -c wf -n '__fish_seen_subcommand_from check' -l format -x -a 'text concise json sarif github'"
        in fish
    )
    assert "__fish_seen_subcommand_from ops; and __fish_seen_subcommand_from retry" in fish


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_the_shell_reads_its_script_when_it_is_installed(
    shell: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / f"wf.{shell}"
    path.write_text(script(shell, capsys))
    if shutil.which(shell) is None:  # nothing more to check here: the text was checked above
        return
    done = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["completion", "tcsh"])
    assert exit.value.code == 2
    assert (
        "argument shell: invalid choice: 'tcsh' (choose from 'bash', 'zsh', 'fish')"
        in capsys.readouterr().err
    )
