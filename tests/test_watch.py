"""``wf check --watch``: the loop with a scripted list of changes, the poller with a
virtual clock (its sleep makes the edits), and the command end to end. No real sleep."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.cli import watch as watching
from wflang.cli.framework import Chunk, Result

BROKEN = "workflow w version 1\nstart a\nend a: completed\nend b: completed\n"
FIXED = "workflow w version 1\nstart a\nend a: completed\n"


def test_the_loop_checks_once_then_after_each_change_and_keeps_the_last_code() -> None:
    results = iter([Result(1, (("out", "one finding\n"),)), Result(0, (("out", "clean\n"),))])
    printed: list[Chunk] = []

    def emit(chunks: Sequence[Chunk]) -> None:
        printed.extend(chunks)

    result = watching.watch(lambda: next(results), [frozenset({"b.wf", "a.wf"})], emit)
    assert result == Result(0)
    assert printed == [
        ("out", "one finding\n"),
        ("err", "\n[watch] a.wf, b.wf changed: checking again\n"),
        ("out", "clean\n"),
    ]


def test_ctrl_c_ends_the_watch_with_the_last_check_s_code() -> None:
    class Interrupted:
        def __iter__(self) -> Iterator[frozenset[str]]:
            return self

        def __next__(self) -> frozenset[str]:
            raise KeyboardInterrupt

    assert watching.watch(lambda: Result(1), Interrupted(), lambda chunks: None) == Result(1)


def test_the_poller_reports_created_changed_and_removed_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.wf", tmp_path / "sub" / "b.wf"
    a.write_text(FIXED)
    (tmp_path / "notes.txt").write_text("not watched")

    def create_b() -> None:
        b.parent.mkdir()
        b.write_text(FIXED)

    edits: Iterator[Callable[[], object]] = iter(
        [
            lambda: None,  # a tick with no change yields nothing
            lambda: a.write_text(BROKEN),  # changed (another size)
            create_b,  # created in a folder
            lambda: (tmp_path / "notes.txt").write_text("changed, but not a .wf file"),
            a.unlink,  # removed
        ]
    )
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the virtual clock: time passes, a file changes
        slept.append(seconds)
        next(edits)()

    changes = watching.polled_changes([str(tmp_path)], interval=0.25, sleep=sleep)
    assert list(itertools.islice(changes, 3)) == [
        frozenset({str(a)}),
        frozenset({str(b)}),
        frozenset({str(a)}),
    ]
    assert slept == [0.25] * 5


def test_check_watch_rechecks_the_edited_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "f.wf"
    f.write_text(BROKEN)

    def one_edit(paths: Sequence[str]) -> Iterator[frozenset[str]]:
        assert list(paths) == [str(f)]
        f.write_text(FIXED)
        yield frozenset({str(f)})

    monkeypatch.setattr(watching, "polled_changes", one_edit)
    code = main(["check", "--watch", "--format", "concise", str(f)])
    out, err = capsys.readouterr()
    assert code == 0
    assert out == (
        f"{f}:4:5: error[WF201] node 'b' cannot be reached from the start of the workflow\n"
    )
    assert err == f"\n[watch] {f} changed: checking again\n"


def test_check_watch_of_standard_input_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--watch", "-"]) == 2
    assert capsys.readouterr().err == (
        "wf: error: --watch watches files: standard input ('-') cannot be watched\n"
    )
