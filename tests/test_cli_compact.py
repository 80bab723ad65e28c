"""`wf ops compact`, and what `wf history` and `wf render --history --at` say of a
compacted history (issue 18 item 4), on a SQLite store moved by a virtual clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.runtime.codec import load_checkpoint, load_history
from wflang.runtime.replay import replay
from wflang.store import open_store

from .store.kit import MINUTE, T0, data_table

TICKER = Path(__file__).parent / "data" / "durable" / "ticker.wf"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_compact_then_history_and_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    now = [T0]
    store = open_store(url, clock=lambda: now[0], create=True)
    store.migrate()
    table = data_table("ticker")
    store.deploy(table)
    store.create(store.deployed("ticker"), {"id": "t"}, "t-1")
    store.advance("w", history=None)

    def fire(n: int) -> None:
        for _ in range(n):
            now[0] += MINUTE
            assert store.advance("w", history=None).transitions == 1

    fire(5)
    code, out, err = run(capsys, "ops", "compact", "t-1", "--store", url, "--actor", "ann",
                         "--reason", "old loop")  # fmt: skip
    assert code == 0, err
    assert out.startswith("t-1: compacted to a checkpoint at step 6 (history 6 rows)")
    assert out.rstrip().endswith("by ann: old loop")
    fire(3)
    code, out, _ = run(capsys, "history", "t-1", "--store", url)
    assert out.splitlines()[0] == "steps 1 to 6 compacted: kept from a checkpoint after 6"
    assert out.splitlines()[1].startswith("#7 ")
    code, out, _ = run(capsys, "history", "t-1", "--json", "--store", url)
    doc = json.loads(out)
    assert doc["compacted"]["through"] == 6 and doc["compacted"]["archived"] == 0
    info = store.instance("t-1")
    assert info.instance is not None
    # the document replays from its checkpoint to the stored instance
    got = replay(table, "t-1", load_history(doc), info.instance.seed,
                 checkpoint=load_checkpoint(doc))  # fmt: skip
    assert got.reproduces(info.instance)
    path = tmp_path / "h.json"
    path.write_text(out)
    code, out, err = run(capsys, "render", str(TICKER), "--history", str(path), "--at", "3")
    assert code == 2
    assert (
        "step 3 was compacted: the history keeps steps 7 to 9, from a checkpoint after step 6"
        in err
    )
    code, out, err = run(capsys, "render", str(TICKER), "--history", str(path), "--at", "7")
    assert code == 0, err
    assert "ticks = 6" in out  # the checkpoint's value, changed by step 7
    store.close()


def test_compact_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    assert run(capsys, "store", "migrate", "--store", url)[0] == 0
    code, _, err = run(capsys, "ops", "compact", "nobody", "--store", url)
    assert code == 1 and "no instance 'nobody'" in err


def ticked(url: str, ids: tuple[str, ...], minutes: int) -> dict[str, int]:
    """Ticker instances on the store at ``url``, moved ``minutes`` minutes (a tick each)
    with no history policy (every step kept); the steps each keeps."""
    now = [T0]
    store = open_store(url, clock=lambda: now[0], create=True)
    store.migrate()
    store.deploy(data_table("ticker"))
    for iid in ids:
        store.create(store.deployed("ticker"), {"id": iid}, iid)
    store.advance("w", history=None)
    for _ in range(minutes):
        now[0] += MINUTE
        store.advance("w", history=None)
    kept = {iid: len(store.history(iid)) for iid in ids}
    store.close()
    return kept


def test_compact_all_compacts_those_that_keep_enough_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    kept = ticked(url, ("t-1", "t-2"), 6)
    assert kept == {"t-1": 7, "t-2": 7}
    code, out, err = run(capsys, "ops", "compact", "--all", "--min-steps", "7", "--dry-run",
                         "--store", url, "--actor", "ann")  # fmt: skip
    assert code == 0, err
    assert out.startswith("would compact 2 instance(s) keeping 7 steps or more (history 14 rows)")
    store = open_store(url)
    assert [len(store.history(i)) for i in ("t-1", "t-2")] == [7, 7]  # the dry run: nothing
    code, out, err = run(capsys, "ops", "compact", "--all", "--min-steps", "8", "--json",
                         "--store", url)  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == {"dry_run": False, "instances": [], "rows": {}}
    code, out, err = run(capsys, "ops", "compact", "--all", "--min-steps", "7", "--json",
                         "--workflow", "ticker", "--store", url)  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["instances"] == ["t-1", "t-2"] and doc["rows"]["wf_history"] == 14
    for iid in ("t-1", "t-2"):
        assert store.history(iid) == []  # kept from the checkpoint of its last step
        info = store.instance(iid)
        assert info.instance is not None
        assert store.kept_history(iid).checkpoint == info.instance
    store.close()


def test_compact_all_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    assert run(capsys, "store", "migrate", "--store", url)[0] == 0
    for argv, said in (
        ((), "name one instance, or --all (not both)"),
        (("t-1", "--all"), "name one instance, or --all (not both)"),
        (("t-1", "--dry-run"), "--workflow and --dry-run go with --all"),
        (("--all", "--workflow", "nope"), "no workflow 'nope' is deployed"),
    ):
        code, _, err = run(capsys, "ops", "compact", *argv, "--store", url)
        assert code in (1, 2) and said in err, (argv, err)


def test_worker_history_options_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    assert run(capsys, "store", "migrate", "--store", url)[0] == 0
    with pytest.raises(SystemExit) as exit_:
        main(["worker", "--once", "--history-every", "5", "--store", url])
    assert exit_.value.code == 2
    assert "--history-every: '5' is not a whole number from 10" in capsys.readouterr().err
    code, _, err = run(capsys, "worker", "--once", "--keep-all-history", "--archive-history",
                       "--store", url)  # fmt: skip
    assert code == 2 and "--keep-all-history compacts nothing" in err
    code, out, err = run(capsys, "worker", "--once", "--history-every", "10",
                         "--archive-history", "--store", url)  # fmt: skip
    assert code == 0, err
    assert "nothing more is due" in out
