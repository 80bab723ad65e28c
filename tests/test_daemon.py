"""``wf daemon`` (issue 13, docs/daemon.md): a warm fork server answers the read-only
source commands exactly as an in-process run would, and any doubt about it (no
server, a stale or unreachable one, a folder others may enter) is a quiet fallback.

Real processes: a server per test in a short temporary folder of its own, started
with ``wf daemon start`` (which returns when the server listens) and stopped with
``wf daemon stop`` (which returns when it has ended). No sleeping: every wait is on
a pipe or a socket closing.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from subprocess import DEVNULL

import pytest

from wflang.cli import daemon_client as dc
from wflang.user_cache import cache_dir

ROOT = Path(__file__).resolve().parent.parent
WF = str(Path(sys.executable).with_name("wf"))
EXAMPLE = str(ROOT / "examples" / "order_saga.wf")
BROKEN = "workflow Broken {\n  start -> nowhere\n}\n"

pytestmark = pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="Linux only")


def wf(
    env: dict[str, str], *args: str, stdin: bytes = b"", cwd: Path = ROOT
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [WF, *args], env=env, cwd=cwd, input=stdin, capture_output=True, check=False
    )


def served(env: dict[str, str]) -> int:
    """How many commands the server has answered (from ``wf daemon status``)."""
    found = re.search(r"(\d+) commands served", wf(env, "daemon", "status").stdout.decode())
    assert found, "no server"
    return int(found.group(1))


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    """The environment of a test's commands: its own socket folder and caches (a
    short path: a Unix socket's name has at most 107 bytes)."""
    top = tempfile.mkdtemp(prefix="wfd")
    environ = {**os.environ, "XDG_RUNTIME_DIR": top, "WFLANG_CACHE_DIR": f"{top}/cache"}
    environ.pop(dc.NO_DAEMON_ENV, None)
    environ.pop("WFLANG_NO_CACHE", None)  # set by conftest: the cached case needs the cache
    environ.pop("NO_COLOR", None)
    try:
        yield environ
    finally:
        wf(environ, "daemon", "stop")
        shutil.rmtree(top)


@pytest.fixture
def running(env: dict[str, str]) -> dict[str, str]:
    started = wf(env, "daemon", "start")
    assert started.returncode == 0, started.stderr
    assert b"started" in started.stdout
    return env


def in_process(env: dict[str, str]) -> dict[str, str]:
    return {**env, dc.NO_DAEMON_ENV: "1"}


CASES = {
    "clean": (["check", "--no-cache", EXAMPLE], b""),
    "cached": (["check", EXAMPLE], b""),
    "errors": (["check", "broken.wf"], b""),
    "missing": (["check", "nowhere.wf"], b""),
    "json": (["check", "--format", "json", "broken.wf"], b""),
    "stdin": (["check", "-"], BROKEN.encode()),
    "usage": (["check", "--no-such-option"], b""),
    "fmt": (["fmt", "--check", "broken.wf"], b""),
    "compile": (["compile", EXAMPLE], b""),
    "help": (["check", "--help"], b""),
}


@pytest.mark.parametrize("case", CASES)
def test_the_daemon_answers_as_an_in_process_run(
    running: dict[str, str], tmp_path: Path, case: str
) -> None:
    (tmp_path / "broken.wf").write_text(BROKEN)
    argv, stdin = CASES[case]
    before = served(running)
    alone = wf(in_process(running), *argv, stdin=stdin, cwd=tmp_path)
    warm = wf(running, *argv, stdin=stdin, cwd=tmp_path)
    assert served(running) == before + 1  # it was the server's answer
    assert (warm.returncode, warm.stdout, warm.stderr) == (
        alone.returncode,
        alone.stdout,
        alone.stderr,
    )
    assert alone.stdout or alone.stderr


def test_a_request_leaves_the_server_as_it_was(running: dict[str, str], tmp_path: Path) -> None:
    """Each request is a fresh fork: one's folder, environment and caches are not the
    next one's."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "flow.wf").write_text(BROKEN)
    (second / "flow.wf").write_text(Path(EXAMPLE).read_text())
    shutil.copy(ROOT / "examples" / "shared_types.wf", second)  # what it imports
    one = {**running, "WFLANG_CACHE_DIR": str(tmp_path / "cache1")}
    two = {**running, "WFLANG_CACHE_DIR": str(tmp_path / "cache2")}
    assert wf(one, "check", "flow.wf", cwd=first).returncode == 1
    after = wf(two, "check", "flow.wf", cwd=second)
    assert (after.returncode, after.stdout) == (0, b"All clean: 1 file checked.\n")
    assert len(list((tmp_path / "cache2" / "check").iterdir())) == 1  # its environment's cache
    assert after.stdout == wf(in_process(two), "check", "flow.wf", cwd=second).stdout
    assert served(running) == 2


def test_a_stale_server_is_not_used(env: dict[str, str], tmp_path: Path) -> None:
    stale = {**env, dc.TEST_FINGERPRINT_ENV: "other sources"}
    assert wf(stale, "daemon", "start").returncode == 0
    status = wf(env, "daemon", "status")
    assert b"stale" in status.stdout
    got = wf(env, "check", "--no-cache", EXAMPLE)
    assert (got.returncode, got.stdout, got.stderr) == (0, b"All clean: 1 file checked.\n", b"")
    assert served(env) == 0
    restarted = wf(env, "daemon", "start")  # a stale server is replaced
    assert b"started" in restarted.stdout
    assert b"running;" in wf(env, "daemon", "status").stdout


def test_a_socket_without_a_server_falls_back(env: dict[str, str]) -> None:
    folder = Path(env["XDG_RUNTIME_DIR"]) / "wflang"
    folder.mkdir(mode=0o700)
    path = subprocess.run(
        [
            sys.executable,
            "-c",
            "from wflang.cli.daemon_client import socket_path; print(socket_path())",
        ],
        env=env,
        capture_output=True,
        check=True,
        text=True,
    ).stdout.strip()
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(path)  # a socket file nobody listens on (a server that was killed)
    left.close()
    got = wf(env, "check", "--no-cache", EXAMPLE)
    assert (got.returncode, got.stdout, got.stderr) == (0, b"All clean: 1 file checked.\n", b"")
    assert wf(env, "daemon", "status").returncode == 1
    assert wf(env, "daemon", "start").returncode == 0  # the dead socket is replaced
    assert served(env) == 0


def test_the_socket_folder_is_private(running: dict[str, str]) -> None:
    folder = Path(running["XDG_RUNTIME_DIR"]) / "wflang"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o755)  # others may enter: the client does not trust it
    try:
        got = wf(running, "check", "--no-cache", EXAMPLE)
        assert (got.returncode, got.stdout) == (0, b"All clean: 1 file checked.\n")
        assert wf(running, "daemon", "status").returncode == 1
    finally:
        folder.chmod(0o700)
    assert served(running) == 0


def test_start_refuses_a_folder_others_may_enter(env: dict[str, str]) -> None:
    folder = Path(env["XDG_RUNTIME_DIR"]) / "wflang"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    got = wf(env, "daemon", "start")
    assert got.returncode == 2
    assert b"must be a folder of yours that only you can enter (mode 0700)" in got.stderr
    assert [p.name for p in folder.iterdir()] == ["daemon.log"] or not list(folder.iterdir())


def test_stop_and_status(env: dict[str, str]) -> None:
    assert wf(env, "daemon", "status").stdout == b"wf daemon: not running\n"
    assert wf(env, "daemon", "status").returncode == 1
    assert wf(env, "daemon", "start").returncode == 0
    again = wf(env, "daemon", "start")
    assert (again.returncode, b"running;" in again.stdout) == (0, True)
    status = wf(env, "daemon", "status")
    assert status.returncode == 0
    assert status.stdout.startswith(b"wf daemon: running; pid ")
    assert wf(env, "daemon", "stop").stdout == b"wf daemon: stopped\n"  # returns once it ended
    assert not [p for p in (Path(env["XDG_RUNTIME_DIR"]) / "wflang").iterdir() if p.is_socket()]
    assert wf(env, "daemon", "stop").stdout == b"wf daemon: not running\n"
    assert wf(env, "daemon", "status").returncode == 1


def test_the_client_finds_the_user_cache_folder_as_user_cache_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    for chosen in ("/tmp/somewhere", None):
        if chosen is None:
            monkeypatch.delenv("WFLANG_CACHE_DIR", raising=False)
        else:
            monkeypatch.setenv("WFLANG_CACHE_DIR", chosen)
        found = cache_dir()
        assert found is not None
        assert dc.folder() == str(found / "daemon")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert dc.folder() == "/run/user/1000/wflang"


def test_the_client_imports_nothing_heavy() -> None:
    """Without a server, a served command's client costs one stat before the
    ordinary run; with one, it must not import the command's modules."""
    code = (
        "import sys; from wflang.cli.daemon_client import answered; "
        "answered(['check', 'x.wf']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('attrs', 'lark', 'socket', 'pathlib')))"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout == "[]\n"


def _on_a_terminal(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, bytes]:
    """``wf ARGS`` with its standard output on a pseudo-terminal: its status and what
    it wrote there (read until the terminal's last writer has gone)."""
    main, other = pty.openpty()
    try:
        proc = subprocess.Popen([WF, *args], env=env, cwd=cwd, stdout=other, stderr=subprocess.PIPE)
        os.close(other)
        written = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            written += chunk
        proc.communicate()
    finally:
        os.close(main)
    return proc.returncode, written


def test_colours_follow_the_clients_terminal(running: dict[str, str], tmp_path: Path) -> None:
    """The server's child writes to the client's own terminal: ``--color auto`` sees a
    terminal and colours, exactly as in-process."""
    (tmp_path / "broken.wf").write_text(BROKEN)
    before = served(running)
    alone = _on_a_terminal(in_process(running), tmp_path, "check", "broken.wf")
    warm = _on_a_terminal(running, tmp_path, "check", "broken.wf")
    assert served(running) == before + 1
    assert warm == alone
    assert b"\x1b[" in alone[1]  # coloured: it was a terminal


def test_an_idle_server_ends_itself(env: dict[str, str]) -> None:
    started = wf(env, "daemon", "start", "--idle-timeout", "0.2")
    assert started.returncode == 0
    found = re.search(rb"started, pid (\d+)", started.stdout)
    assert found
    pid = int(found.group(1))
    try:
        ended = os.pidfd_open(pid)  # readable when the process has ended
    except ProcessLookupError:
        ended = None  # already gone
    if ended is not None:
        try:
            assert select.select([ended], [], [], 120)[0], "the server did not end"
        finally:
            os.close(ended)
    assert wf(env, "daemon", "status").stdout == b"wf daemon: not running\n"
    assert not [p for p in (Path(env["XDG_RUNTIME_DIR"]) / "wflang").iterdir() if p.is_socket()]


def test_a_client_that_goes_interrupts_its_command(running: dict[str, str]) -> None:
    """A Ctrl-C ends the client; its command in the server must not go on reading the
    client's terminal. Here ``wf check -`` waits on a pipe we keep open: once the
    client is interrupted, the worker ends and with it the last reader of the pipe."""
    read, write = os.pipe()
    # Ctrl-C as a terminal delivers it: a test run in the background (`cmd &` in a
    # script, nohup) inherits SIGINT ignored, and so would the client, which would then
    # never see it. exec keeps the default set here.
    as_in_a_terminal = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    # not pipes: a worker left running would hold them open, and we would wait on it
    client = subprocess.Popen(
        [sys.executable, "-c", as_in_a_terminal, WF, "check", "-"],
        env=running,
        stdin=read,
        stdout=DEVNULL,
        stderr=DEVNULL,
    )
    os.close(read)
    try:
        poll = select.poll()
        poll.register(write, select.POLLERR)
        deadline = time.monotonic() + 120
        while served(running) == 0:  # until the server has the request (and the pipe)
            assert time.monotonic() < deadline, "the request never reached the server"
        client.send_signal(signal.SIGINT)
        client.wait(120)
        assert poll.poll(120_000), "the worker still reads the pipe"  # POLLERR: no reader
    finally:
        os.close(write)
