"""Every ``wf`` command closes the store it opened, however it ends (issue 13).

Left to the garbage collector, a PostgreSQL store's pool stopped its threads whenever a
collection happened to run, on whatever thread that was ("cannot join current
thread"), and a SQLite store kept its file open until then.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import wflang.store
from wflang.cli import main
from wflang.store import Store


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Store, list[bool]]]]:
    """The stores the commands open, each with whether its ``close`` was called."""
    seen: list[tuple[Store, list[bool]]] = []
    real = wflang.store.open_store

    def spy(*args: object, **kwargs: object) -> Store:
        store = real(*args, **kwargs)  # type: ignore[arg-type]  # passed through as given
        closed: list[bool] = []
        close = store.close

        def counted() -> None:
            closed.append(True)
            close()

        store.close = counted  # type: ignore[method-assign]  # a spy on the store's own
        seen.append((store, closed))
        return store

    monkeypatch.setattr(wflang.store, "open_store", spy)
    yield seen
    for store, closed in seen:
        if not closed:
            store.close()


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["store", "migrate"], 0),
        (["list"], 0),
        (["status", "no-such-instance"], 1),  # refused by the store
        (["start", "no-such-workflow", "--input", "{}"], 1),
    ],
    ids=["migrate", "list", "refused", "unknown-workflow"],
)
def test_a_command_closes_its_store(
    store_url: str,
    opened: list[tuple[Store, list[bool]]],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
) -> None:
    if argv[0] != "store":
        assert main(["store", "migrate", "--store", store_url]) == 0
    assert main([*argv, "--store", store_url]) == code, capsys.readouterr()
    assert opened and all(closed == [True] for _, closed in opened)
    for store, _ in opened:
        pool = getattr(store, "pool", None)  # PostgreSQL: its threads are stopped
        assert pool is None or pool.closed


def test_a_store_that_fails_its_schema_check_is_closed(
    store_url: str, opened: list[tuple[Store, list[bool]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Opened, then refused (not migrated): closed all the same."""
    if store_url.startswith("sqlite"):
        assert main(["store", "migrate", "--store", store_url]) == 0
        opened.clear()
        with open(store_url.removeprefix("sqlite:///"), "r+b") as db:  # not a database
            db.write(b"x" * 100)
    code = main(["list", "--store", store_url])
    err = capsys.readouterr().err
    assert code != 0 and "wf: error:" in err, (code, err)
    assert opened and all(closed == [True] for _, closed in opened)
