"""What the durable commands share: the options ``--store``, ``--reason``, ``--actor``
and ``--json``, opening the store, and printing records as JSON, or a listing of them.

Each durable command opens the store named by ``--store`` (default
``$WFLANG_STORE``, else ``sqlite:///.wflang/state.db``), checks its request through
``wflang.durable.client`` and prints the outcome. A refused request (unknown id, a
value of the wrong type, an illegal action) prints why and exits 1 with nothing
changed; a usage or connection problem exits 2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import field

from wflang.cli.framework import Out, UsageError, arg, closed_at_end, flag_field

if TYPE_CHECKING:
    from wflang.durable.client import Client
    from wflang.store import Store

#: ``wflang.store.DEFAULT_URL``, written here so that building the parser opens no
#: store module (a test keeps the two equal).
DEFAULT_URL = "sqlite:///.wflang/state.db"


def store_field() -> Any:
    return field(
        default=None,
        metadata=arg(
            "--store",
            metavar="URL",
            help=f"sqlite:///path.db or postgresql://user@host/db "
            f"(default: $WFLANG_STORE, else {DEFAULT_URL})",
        ),
    )


def reason_field() -> Any:
    return field(
        default=None, metadata=arg("--reason", help="why: recorded in the history with who did it")
    )


def actor_field() -> Any:
    return field(
        default=None,
        metadata=arg("--actor", help="who: recorded in the history (default $WF_ACTOR or login)"),
    )


def json_field(what: str = "print JSON") -> Any:
    return flag_field("--json", help=what)


def open_cli_store(
    url: str | None, *, check: bool = True, create: bool = False, timeout: float = 10.0
) -> Store:
    """The store of ``--store``; a one-shot command gives up on a database that does not
    answer within ``timeout`` seconds (a worker waits longer: it rides out outages).

    Only ``create`` (``wf store migrate``) makes a SQLite file or its folders: any other
    command on a file that is not there is refused and leaves nothing behind.
    """
    from wflang.store import default_url, open_store, sqlite_path
    from wflang.store.backend import redact, redact_url, url_secrets
    from wflang.store.records import StoreError

    url = url or default_url()
    shown = redact_url(url)
    path = sqlite_path(url)
    if path and not create and not Path(path).exists():
        raise UsageError(
            f"no store at {shown} (no such file): "
            f"create one with `wf store migrate --store {shown}`"
        )
    try:
        store = closed_at_end(open_store(url, timeout=timeout, create=create))
    except StoreError as err:  # an unknown or unreadable URL: a usage problem
        raise UsageError(str(err)) from None
    try:
        if check:
            store.check_schema()
        else:  # open it now: a file that is not a database says so here
            store.schema_version()
    except StoreError:
        raise
    except Exception as err:  # cannot connect, cannot open the file, not a database
        why = redact(str(err), url_secrets(url))
        raise UsageError(f"cannot open the store {shown}: {why}") from None
    return store


def client(url: str | None, actor: str | None = None) -> Client:
    """The durable client on the store of ``--store``, acting as ``--actor``."""
    from wflang.durable.client import Client

    return Client(open_cli_store(url), actor)


def json_text(data: object) -> str:
    from wflang.runtime import codec

    return codec.dumps(data, indent=2)


def record(value: object) -> dict[str, Any]:
    """A store record (an attrs class) as a dict, for JSON."""
    import attrs

    return attrs.asdict(value)  # type: ignore[arg-type]


Item = TypeVar("Item")


def listing(
    items: Sequence[Item],
    *,
    json: bool,
    document: Callable[[Item], object] = record,
    empty: str,
    lines: Callable[[Sequence[Item]], Iterable[str]],
) -> Out:
    """The output of a listing command: with ``--json`` a JSON list (an item's
    ``document``, by default its record), else the sentence ``empty`` when there is
    nothing, or the ``lines`` the items make (given all of them: a table's columns are
    as wide as its widest cell)."""
    out = Out()
    if json:
        out.print(json_text([document(item) for item in items]))
    elif not items:
        out.print(empty)
    else:
        for line in lines(items):
            out.print(line)
    return out
