"""Bad options and inputs at the CLI and client boundary (issue 20, items 6, 7, 9, 10).

Each is refused with a message that says what is wrong, exit 2 for a usage problem (1
for a value the workflow refuses), no traceback, and nothing stored or created.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from wflang.cli import main
from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file
from wflang.durable.client import Client, InvalidValue
from wflang.durable.worker import Worker
from wflang.runtime.ir import Value
from wflang.store import open_store
from wflang.store.backend import redact_url
from wflang.store.records import Advanced, StoreError

DATA = Path(__file__).parent / "data"
FLOW = str(DATA / "cli_durable" / "opsflow.wf")
PG_DSN = os.environ.get("WFLANG_TEST_PG_DSN", "")


def wf(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run `wf`; its exit code, stdout and stderr (argparse's own errors exit too)."""
    try:
        code = main(list(argv))
    except SystemExit as exit:
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def store_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A migrated SQLite store with opsflow v1 deployed and no instances."""
    url = f"sqlite:///{tmp_path / 'state.db'}"
    assert wf(capsys, "store", "migrate", "--store", url)[0] == 0
    assert wf(capsys, "deploy", FLOW, "--store", url)[0] == 0
    return url


def _instances(capsys: pytest.CaptureFixture[str], url: str) -> list[object]:
    code, out, _ = wf(capsys, "list", "--json", "--store", url)
    assert code == 0
    listed: list[object] = json.loads(out)
    return listed


# ---------------------------------------------------------------- 6. worker settings


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--lease", "0", "'0' is not a number from 0.1 to 86,400 seconds"),
        ("--lease", "-5", "from 0.1 to 86,400 seconds"),
        ("--lease", "nan", "'nan' is not a number"),
        ("--lease", "inf", "'inf' is not a number"),
        ("--lease", "0.05", "from 0.1"),  # the heartbeat (every third) cannot keep it
        ("--lease", "1e999999999", "is not a number"),
        ("--concurrency", "0", "'0' is not a whole number from 1 to 10,000"),
        ("--concurrency", "2.5", "not a whole number"),
        ("--batch", "0", "from 1 to 10,000"),
        ("--poll", "-1", "from 1 to 3,600,000"),
        ("--metrics-port", "99999999999999999999", "from 1 to 65,535"),
    ],
)
def test_worker_settings_that_cannot_work_are_refused_before_anything_opens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, says: str
) -> None:
    db = tmp_path / "new" / "state.db"
    code, _, err = wf(capsys, "worker", option, value, "--once", "--store", f"sqlite:///{db}")
    assert code == 2
    assert f"argument {option}: {says}" in err or says in err, err
    assert not db.parent.exists()  # nothing opened, nothing created


@pytest.mark.parametrize(
    "settings",
    [
        {"lease_ms": 0},
        {"lease_ms": -1},
        {"lease_ms": float("nan")},
        {"lease_ms": float("inf")},
        {"lease_ms": 99},
        {"lease_ms": True},
        {"concurrency": 0},
        {"batch": 0},
        {"poll_ms": 0},
    ],
)
def test_the_worker_api_refuses_the_same_settings(
    tmp_path: Path, settings: dict[str, object]
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'state.db'}")
    name = next(iter(settings))
    with pytest.raises(ValueError, match=f"{name} must be a whole number from"):
        Worker(store, {}, **settings)  # type: ignore[arg-type]  # the bad input under test


def test_a_long_poll_does_not_hold_up_the_heartbeat(tmp_path: Path) -> None:
    """The heartbeat renews a running call's lease every third of the lease, however long
    the idle poll: with a 1 h poll it used to wait an hour, and the lease expired.

    The store's clock stands still, so the lease cannot run out because a loaded machine
    delayed a renewal (the handler then ran twice); what is tested is that renewals
    come while the call runs, at the heartbeat's pace, not the poll's."""
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = open_store(url, clock=lambda: 1_700_000_000_000)
    store.migrate()
    table = compile_workflow(parse_file(str(DATA / "worker_process" / "blocking.wf"))).table
    assert table is not None
    Client(store, actor="test").deploy(table)
    Client(store, actor="test").start("blocking", {"id": "x"}, instance_id="x")
    renewals: list[int] = []
    renewed = threading.Event()
    heartbeat = store.heartbeat

    def counted(worker: str, leases: Sequence[tuple[str, int]], lease_ms: int) -> list[str]:
        lost = heartbeat(worker, leases, lease_ms)
        if leases:
            renewals.append(len(leases))
            if len(renewals) >= 3:
                renewed.set()
        return lost

    store.heartbeat = counted  # type: ignore[method-assign]  # a spy on the store's own
    seen: list[bool] = []

    def call(id: str) -> dict[str, Value]:
        seen.append(renewed.wait(timeout=20))  # bounded: fails instead of hanging
        return {"done": True}

    def finished(adv: Advanced) -> None:
        if adv.finished:
            worker.stop()

    worker = Worker(
        store, {"slow.call": call}, lease_ms=300, poll_ms=3_600_000, on_advance=finished
    )
    worker.run()
    assert seen == [True]
    assert store.instance("x").status == "completed"


# ---------------------------------------------------------------- 7. no tracebacks


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "--input is nested too deeply"),
        (b'{"id": "x", "amount": ' + b"9" * 5000 + b"}", "more than 4,300 digits"),
        (b'{"id": "\xff"}', "is not UTF-8 text (invalid start byte at byte 8)"),
        (b'{"id": ', "--input is not JSON: Expecting value"),
    ],
    ids=["deep", "digits", "not-utf8", "not-json"],
)
def test_start_input_files_that_cannot_be_read_are_usage_errors(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str
) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(content)
    code, _, err = wf(capsys, "start", "opsflow", "--input", f"@{path}", "--store", store_url)
    assert code == 2 and says in err, err
    assert _instances(capsys, store_url) == []


def test_an_endless_input_file_is_refused_after_a_bounded_read(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = wf(capsys, "start", "opsflow", "--input", "@/dev/zero", "--store", store_url)
    assert code == 2 and "--input: /dev/zero is longer than 4,194,304 bytes" in err
    assert _instances(capsys, store_url) == []


@pytest.mark.parametrize("where", ["input", "signal"])
def test_a_lone_surrogate_in_a_value_is_refused(
    store_url: str, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    lone = '"\\ud800"'  # valid JSON, but no UTF-8 text: no store can keep it
    args: tuple[str, ...]
    if where == "input":
        args = ("start", "opsflow", "--input", '{"id": ' + lone + "}")
        says = "the input holds text that is not valid Unicode (\\ud800)"
    else:
        assert wf(capsys, "start", "opsflow", "--input", '{"id": "a"}', "--id", "a",
                  "--store", store_url)[0] == 0  # fmt: skip
        args = ("signal", "a", "go", "--payload", '{"by": ' + lone + "}")
        says = "the signal go holds text that is not valid Unicode (\\ud800)"
    code, _, err = wf(capsys, *args, "--store", store_url)
    assert code == 1 and says in err, err
    rows = open_store(store_url).history("a") if where == "signal" else []
    assert rows == [] and len(_instances(capsys, store_url)) == (where == "signal")


def test_an_argument_that_is_not_utf8_is_a_usage_error(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    not_utf8 = b"\xff".decode("utf-8", "surrogateescape")  # how the OS hands it over
    code, _, err = wf(capsys, "status", not_utf8, "--store", store_url)
    assert code == 2 and "is not valid UTF-8 text" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("list", "--limit", "99999999999999999999999"), "argument --limit: '99999999999999999999999'"
         " is not a whole number from 1 to 9,223,372,036,854,775,807"),
        (("start", "opsflow", "--version", "99999999999999999999"),
         "argument --version: '99999999999999999999' is not a whole number from 1 to 2,147,483,647"),
    ],
)  # fmt: skip
def test_numbers_beyond_what_the_store_keeps_are_usage_errors(
    store_url: str, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], says: str
) -> None:
    code, _, err = wf(capsys, *argv, "--store", store_url)
    assert code == 2 and says in err, err
    assert _instances(capsys, store_url) == []


def test_a_handlers_module_that_raises_on_import_is_a_usage_error(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "raising_handlers.py"
    bad.write_text("raise ZeroDivisionError('boom while loading')\n")
    says = f"cannot import handlers '{bad}': ZeroDivisionError: boom while loading"
    code, _, err = wf(capsys, "worker", "--once", "--handlers", str(bad), "--store", store_url)
    assert code == 2 and says in err, err
    code, _, err = wf(capsys, "run", FLOW, "--handlers", str(bad))
    assert code == 2 and says in err, err
    code, _, err = wf(capsys, "run", FLOW, "--handlers", "no_such_handlers_module")
    assert code == 2 and "cannot import handlers 'no_such_handlers_module': " in err
    sys.modules.pop("raising_handlers", None)


def test_compile_into_a_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = wf(capsys, "compile", FLOW, "-o", str(tmp_path))
    assert code == 2 and f"cannot write {tmp_path}: Is a directory" in err


@pytest.mark.parametrize("command", [("store", "info"), ("store", "migrate"), ("status", "x")])
def test_a_file_that_is_not_a_database_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    corrupt = tmp_path / "state.db"
    corrupt.write_bytes(b"not a database, just some bytes" * 300)
    code, _, err = wf(capsys, *command, "--store", f"sqlite:///{corrupt}")
    assert code == 2 and f"cannot open the store sqlite:///{corrupt}: file is not a database" in err
    assert corrupt.read_bytes() == b"not a database, just some bytes" * 300


@pytest.mark.parametrize(
    ("instance_id", "says"),
    [
        (5, "must be a string, not int"),
        ("", "must be 1 to 200 characters long, not 0"),
        ("x" * 201, "must be 1 to 200 characters long, not 201"),
        ("a\ud800", "must be printable text"),
        ("a\nb", "must be printable text"),
    ],
)
def test_the_client_refuses_an_instance_id_that_is_not_short_text(
    store_url: str, instance_id: object, says: str
) -> None:
    client = Client(open_store(store_url), actor="test")
    with pytest.raises(InvalidValue, match=f"the instance id does not fit: {says}"):
        client.start("opsflow", {"id": "a"}, instance_id=instance_id)  # type: ignore[arg-type]  # the bad input under test
    assert client.store.instances() == []


# ------------------------------------------------------- 9. read-only creates nothing


@pytest.mark.parametrize(
    "command",
    [
        ("status", "x"),
        ("history", "x"),
        ("list",),
        ("versions",),
        ("store", "info"),
        ("outbox",),
        ("tasks", "list"),
        ("ops", "dead-letters"),
        ("start", "opsflow"),
        ("worker", "--once"),
    ],
)
def test_a_command_on_a_store_that_is_not_there_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    url = f"sqlite:///{tmp_path / 'new' / 'dir' / 'x.db'}"
    code, _, err = wf(capsys, *command, "--store", url)
    assert code == 2
    assert f"no store at {url} (no such file): create one with `wf store migrate" in err
    assert list(tmp_path.iterdir()) == []
    assert wf(capsys, "store", "migrate", "--store", url)[0] == 0  # migrate creates it
    assert (tmp_path / "new" / "dir" / "x.db").is_file()


# ----------------------------------------------------------------------- 10. secrets

MALFORMED = [
    "postgresql://postgres:s3cret%PW@127.0.0.1:5432/test",
    "postgresql://postgres:s3cret@[::1:5432/db",
    "postgresql://postgres:s3cret@127.0.0.1:5432/test?password=s3cret%ZZ",
    "postgres://postgres:s3cret%@127.0.0.1/db?sslmode=nonsense",
]


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_url_never_shows_its_password(
    url: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        code, out, err = wf(capsys, "status", "x", "--store", url)
    assert code == 2 and "cannot read the store URL postgres" in err and ":***@" in err, err
    said = out + err + caplog.text
    assert "s3c" not in said and "et@" not in said, said
    with pytest.raises(StoreError) as raised:
        open_store(url)
    assert "s3c" not in str(raised.value) and raised.value.__cause__ is None
    assert raised.value.__suppress_context__


@pytest.mark.parametrize(
    "url",
    [
        *MALFORMED,
        "postgresql://u:s3cret@h/db",
        "postgresql://u:s3:cr@et@h/db",
        "postgresql://postgres:s3c@r/et@[::1/db",
        "postgresql://h/db?user=u&password=s3cret&sslmode=require",
        "mysql://u:s3cret@h/db",
        "no url at all: s3cret",  # no password to find: shown as given
    ],
)
def test_redaction_takes_any_text_and_hides_every_password(url: str) -> None:
    shown = redact_url(url)
    assert ("s3c" not in shown) or url.startswith("no url")


@pytest.mark.skipif(not PG_DSN, reason="set WFLANG_TEST_PG_DSN to run the PostgreSQL tests")
def test_the_pool_and_worker_logs_never_show_an_opened_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """psycopg's pool logs libpq's words about a failed connection, and the worker logs
    its store's errors with their tracebacks: a password quoted in them is hidden."""
    url = PG_DSN.replace("postgres@", "postgres:s3cr%40et@", 1)  # trust: the password is ignored
    store = open_store(url, pool=1)
    try:
        with caplog.at_level(logging.DEBUG):
            logging.getLogger("psycopg.pool").warning("bad token: %s", "s3cr%40et")
            try:
                raise RuntimeError("cannot connect as postgres:s3cr@et")
            except RuntimeError:
                logging.getLogger("wflang.worker").exception("store unavailable")
    finally:
        store.close()
    assert "bad token: ***" in caplog.text and "as postgres:***" in caplog.text
    assert "s3cr" not in caplog.text


# ------------------------------------------------------- files that never end


class _Endless(io.RawIOBase):
    """A stream of zero bytes that never ends (`cat /dev/zero | wf check -`)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        buffer[:] = bytes(len(buffer))
        return len(buffer)


@pytest.mark.parametrize(
    "argv",
    [("parse", "/dev/zero"), ("check", "-"), ("compile", "/dev/zero"), ("render", "/dev/zero")],
)
def test_an_endless_source_is_read_only_up_to_the_limit(
    argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(_Endless())))
    code, out, err = wf(capsys, *argv)
    assert code in (1, 2) and "the limit is 16,777,216" in out + err, out + err


def test_a_history_nested_too_deeply_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "h.json"
    history.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = wf(capsys, "render", FLOW, "--history", str(history))
    assert code == 2 and "nested too deeply" in err


def test_json_logs_show_the_traceback_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from wflang.durable import logs
    from wflang.store import postgres

    postgres.hide_in_logs("postgresql://postgres:s3cr3t-json@localhost/test")
    logs.configure("json", "info")
    try:
        try:
            raise RuntimeError("connect as postgres:s3cr3t-json failed")
        except RuntimeError:
            logging.getLogger("wflang.worker").exception("store unavailable")
    finally:
        logging.getLogger("wflang").handlers[:] = []
        logging.getLogger("wflang").propagate = True
        logging.getLogger("wflang").setLevel(logging.NOTSET)
    err = capsys.readouterr().err
    assert "store unavailable" in err and "postgres:***" in err and "s3cr3t" not in err
