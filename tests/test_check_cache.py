"""The result cache of ``wf check`` (issue 13): a hit prints exactly what the check
printed, and every input of the check is in the key (each stale-result test fails
if the cache answered)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import wflang
from wflang.cli import check_cache, main, source
from wflang.cli.files import REPORT_FORMATS
from wflang.cli.framework import Result

WARNS = "workflow w version 1\nsignal poke\nstart a\nend a: completed\n"
BROKEN = "workflow w version 1\nstart a\nend a: completed\nend b: completed\n"
SUPPRESSED = WARNS.replace("signal poke\n", "signal poke  // wf: ignore[WF304]\n")
MAIN = 'workflow m version 1\nimport "lib/lib.wf"\ninput { x: money }\nstart e\nend e: completed\n'
LIB = 'import "base.wf"\ntype money { amount: amount }\n'
BASE = "type amount { value: decimal }\n"

Run = tuple[int, str, str]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own, turned on; the folder of its entries."""
    monkeypatch.delenv(check_cache.NO_CACHE_ENV)
    monkeypatch.setenv("WFLANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path / "cache" / "check"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    (root / "lib").mkdir(parents=True)
    (root / "warns.wf").write_text(WARNS)
    (root / "suppressed.wf").write_text(SUPPRESSED)
    (root / "main.wf").write_text(MAIN)
    (root / "lib" / "lib.wf").write_text(LIB)
    (root / "lib" / "base.wf").write_text(BASE)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of every check that ran (a cache miss), in order."""
    ran: list[str] = []
    real = source._check

    def counted(req: source.Check, files: list[str], entry: check_cache.Lookup | None) -> Result:
        ran.append(" ".join(req.paths))
        return real(req, files, entry)

    monkeypatch.setattr(source, "_check", counted)
    return ran


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def uncached(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    return run(capsys, "--no-cache", *argv)


@pytest.mark.parametrize("fmt", REPORT_FORMATS)
@pytest.mark.parametrize("color", ["always", "never"])
@pytest.mark.parametrize("paths", [["warns.wf"], ["main.wf", "suppressed.wf"], ["."]])
def test_a_hit_prints_the_bytes_and_exit_code_of_the_check(
    cache: Path,
    project: Path,
    checks: list[str],
    capsys: pytest.CaptureFixture[str],
    fmt: str,
    color: str,
    paths: list[str],
) -> None:
    (project / "broken.wf").write_text(BROKEN)
    (project / "pyproject.toml").write_text('[tool.wflang.rules]\nWF304 = "info"\n')
    argv = ("--format", fmt, "--color", color, *paths)
    expected = uncached(capsys, *argv)
    assert run(capsys, *argv) == expected  # a miss, stored
    assert run(capsys, *argv) == expected  # a hit
    assert len(checks) == 2  # the uncached check and the miss


def test_a_hit_imports_no_parser_and_no_checker(cache: Path, project: Path) -> None:
    env = {**os.environ, "WFLANG_CACHE_DIR": str(cache.parent)}
    env.pop(check_cache.NO_CACHE_ENV, None)
    argv = ["main.wf", "warns.wf"]
    first = subprocess.run([sys.executable, "-m", "wflang.cli", "check", *argv],
                           env=env, capture_output=True, check=False)  # fmt: skip
    probe = (
        "import sys\nfrom wflang.cli import main\ncode = main(['check', *sys.argv[1:]])\n"
        "heavy = [m for m in sys.modules if m == 'lark' or m.startswith(('lark.', "
        "'wflang.dsl', 'wflang.compiler'))]\nprint('heavy:', heavy, file=sys.stderr)\n"
        "raise SystemExit(code)\n"
    )
    again = subprocess.run([sys.executable, "-c", probe, *argv],
                           env=env, capture_output=True, check=False)  # fmt: skip
    assert again.returncode == first.returncode == 0
    assert again.stdout == first.stdout
    assert again.stderr.decode() == first.stderr.decode() + "heavy: []\n"


def _warm(capsys: pytest.CaptureFixture[str], checks: list[str], *argv: str) -> Run:
    before = run(capsys, *argv)
    assert run(capsys, *argv) == before
    assert len(checks) == 1  # the second was a hit
    checks.clear()
    return before


def _after_change(capsys: pytest.CaptureFixture[str], checks: list[str], *argv: str) -> Run:
    after = run(capsys, *argv)
    assert checks, "the cache answered after a change to an input"
    assert after == uncached(capsys, *argv)
    return after


def test_an_edited_file_checked_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = _warm(capsys, checks, "warns.wf")
    (project / "warns.wf").write_text(BROKEN)
    assert _after_change(capsys, checks, "warns.wf") != before


def test_an_edited_import_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = _warm(capsys, checks, "main.wf")
    (project / "lib" / "lib.wf").write_text('import "base.wf"\ntype money { amount: amount\n')
    assert _after_change(capsys, checks, "main.wf") != before  # 'lib/lib.wf' has errors


def test_an_edited_import_of_an_import_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # main.wf sees only the declarations of lib.wf, so its findings may not change:
    # the check runs again all the same (``checks`` says the cache did not answer).
    _warm(capsys, checks, "main.wf")
    (project / "lib" / "base.wf").write_text("type amount { value: decimal\n")
    _after_change(capsys, checks, "main.wf")


def test_an_import_that_appears_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "lib" / "lib.wf").unlink()
    before = _warm(capsys, checks, "main.wf")
    assert before[0] == 1
    (project / "lib" / "lib.wf").write_text(LIB)
    assert _after_change(capsys, checks, "main.wf") == (0, "All clean: 1 file checked.\n", "")


def test_an_import_that_leads_elsewhere_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (project / ".git").mkdir()  # the project root
    outside = project.parent / "outside.wf"
    outside.write_text(LIB)
    (project / "lib" / "real.wf").write_text(LIB)
    (project / "lib" / "lib.wf").unlink()
    (project / "lib" / "lib.wf").symlink_to(project / "lib" / "real.wf")
    before = _warm(capsys, checks, "main.wf")
    assert before[0] == 0
    (project / "lib" / "lib.wf").unlink()
    (project / "lib" / "lib.wf").symlink_to(outside)  # the same bytes, outside the project
    assert _after_change(capsys, checks, "main.wf")[0] == 1


def test_a_new_configuration_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = _warm(capsys, checks, "warns.wf")
    assert before[0] == 0
    (project / "pyproject.toml").write_text('[tool.wflang.rules]\nWF304 = "error"\n')
    assert _after_change(capsys, checks, "warns.wf")[0] == 1


def test_a_project_root_that_appears_below_the_configuration_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text("[tool.wflang]\nimport-paths = ['../shared']\n")
    (project.parent / "shared").mkdir()
    (project.parent / "shared" / "base.wf").write_text(BASE)
    (project / "lib" / "lib.wf").write_text('import "../../shared/base.wf"\n' + LIB[17:])
    before = _warm(capsys, checks, "main.wf")
    assert before[0] == 0
    (project / "lib" / ".git").mkdir()  # lib/ is now a project of its own: shared/ is outside
    assert _after_change(capsys, checks, "lib/lib.wf", "main.wf")[0] == 1
    # main.wf's project, whose scope its imports share, has not changed: a right hit
    assert run(capsys, "main.wf") == before == uncached(capsys, "main.wf")


def test_an_option_is_in_the_key(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    _warm(capsys, checks, "warns.wf")
    assert _after_change(capsys, checks, "--fail-on", "warning", "warns.wf")[0] == 1
    checks.clear()
    assert _after_change(capsys, checks, "--preset", "all", "warns.wf")


def test_a_touched_wflang_source_file_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    _warm(capsys, checks, "warns.wf")
    rules = Path(wflang.__file__).parent / "compiler" / "registry.py"
    info = rules.stat()
    try:
        os.utime(rules, ns=(info.st_atime_ns, info.st_mtime_ns + 1))
        _after_change(capsys, checks, "warns.wf")
    finally:
        os.utime(rules, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_corrupt_entry_is_a_miss(
    cache: Path, project: Path, checks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = _warm(capsys, checks, "warns.wf")
    (entry,) = cache.glob("*.json")
    for broken in (b"", b"{", b"[1, 2]", json.dumps({"key": "x"}).encode(), b"\xff\xfe"):
        entry.write_bytes(broken)
        assert _after_change(capsys, checks, "warns.wf") == before
    good = json.loads(entry.read_text())
    good["printed"] = [["elsewhere", "x"]]
    entry.write_text(json.dumps(good))
    checks.clear()
    assert _after_change(capsys, checks, "warns.wf") == before


def test_a_cache_that_cannot_be_written_only_costs_the_store(
    tmp_path: Path,
    project: Path,
    checks: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.delenv(check_cache.NO_CACHE_ENV)
    monkeypatch.setenv("WFLANG_CACHE_DIR", str(blocker))  # check/ cannot be made in a file
    expected = uncached(capsys, "--format", "concise", "warns.wf", "main.wf")
    for _ in range(2):
        assert run(capsys, "--format", "concise", "warns.wf", "main.wf") == expected
    assert len(checks) == 3
    assert blocker.read_text() == ""


@pytest.mark.parametrize("off", ["flag", "env", "empty-dir"])
def test_the_cache_can_be_turned_off(
    cache: Path,
    project: Path,
    checks: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    off: str,
) -> None:
    argv = ("--no-cache", "warns.wf") if off == "flag" else ("warns.wf",)
    if off == "env":
        monkeypatch.setenv(check_cache.NO_CACHE_ENV, "1")
    if off == "empty-dir":
        monkeypatch.setenv("WFLANG_CACHE_DIR", "")
    expected = run(capsys, *argv)
    assert run(capsys, *argv) == expected
    assert len(checks) == 2
    assert not cache.exists()


def test_standard_input_and_the_step_summary_are_not_cached(
    cache: Path,
    project: Path,
    checks: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = project / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    for _ in range(2):
        run(capsys, "--format", "github", "warns.wf")
    assert len(checks) == 2
    assert summary.read_text().count("warns.wf") == 2  # appended by each check
    assert not cache.exists()


def test_the_oldest_entries_are_evicted(tmp_path: Path) -> None:
    for n in range(5):
        (tmp_path / f"{n}.json").write_text("x" * 10)
        os.utime(tmp_path / f"{n}.json", ns=(n * 10**9, n * 10**9))
    check_cache.evict(tmp_path, max_entries=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2.json", "3.json", "4.json"]
    check_cache.evict(tmp_path, max_bytes=25)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["3.json", "4.json"]


def test_checks_at_once_share_the_cache(cache: Path, project: Path) -> None:
    env = {**os.environ, "WFLANG_CACHE_DIR": str(cache.parent)}
    env.pop(check_cache.NO_CACHE_ENV, None)
    argv = [sys.executable, "-m", "wflang.cli", "check", "--format", "json", "."]
    alone = subprocess.run([*argv, "--no-cache"], env=env, capture_output=True, check=False)
    together = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for _ in range(3)]  # fmt: skip
    for process in together:
        out, err = process.communicate()
        assert (process.returncode, out, err) == (alone.returncode, alone.stdout, alone.stderr)
    assert [p.name for p in cache.iterdir()] == [next(cache.glob("*.json")).name]  # no temp
    again = subprocess.run(argv, env=env, capture_output=True, check=False)
    assert (again.returncode, again.stdout, again.stderr) == (
        alone.returncode, alone.stdout, alone.stderr
    )  # fmt: skip


def test_the_help_says_how_to_turn_it_off(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "--no-cache neither read nor write the cache of results (also: WFLANG_NO_CACHE=1)" in text
    )
