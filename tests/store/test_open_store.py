"""``open_store`` on a SQLite path whose folder is missing (issue 12 leftover): a typo
in a path is a clear error, not a new folder; ``create=True`` (``wf store migrate``)
makes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from wflang.cli import main
from wflang.store import StoreError, open_store


def test_a_missing_folder_is_an_error_and_nothing_is_made(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sotre' / 'state.db'}"
    with pytest.raises(StoreError, match=r"no folder '.*/sotre' for the store 'sqlite:///"):
        open_store(url)
    assert list(tmp_path.iterdir()) == []


def test_create_makes_the_folders(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'a' / 'b' / 'state.db'}", create=True)
    store.migrate()
    assert (tmp_path / "a" / "b" / "state.db").is_file()


def test_a_file_in_a_folder_that_exists_is_made_when_first_used(tmp_path: Path) -> None:
    open_store(f"sqlite:///{tmp_path / 'state.db'}").migrate()
    assert (tmp_path / "state.db").is_file()


def test_wf_store_migrate_still_makes_the_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'new' / 'state.db'}"
    assert main(["store", "info", "--store", url]) == 2
    assert "no store at" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    assert main(["store", "migrate", "--store", url]) == 0
    assert (tmp_path / "new" / "state.db").is_file()
