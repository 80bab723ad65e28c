"""``wf daemon start|stop|status``: a warm fork server for the read-only source
commands (issue 13; ``docs/daemon.md``).

A fresh ``wf check`` spends most of its time importing ``attrs``, ``lark``, the
``dsl`` and the compiler and loading the parser (``docs/architecture.md``, "Known
debts"). The server does that once, then forks a child per request: the child puts
the client's standard streams on 0, 1 and 2, takes its working folder, environment
and arguments, and runs the ordinary in-process ``main``. Each child is a fresh copy
of the warm parent, so nothing one request does reaches the next. The protocol and
the client are in ``daemon_client.py`` (it must import almost nothing).
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence

from attrs import field, frozen

from wflang.cli import daemon_client as dc
from wflang.cli.framework import (
    EXIT_FINDINGS,
    EXIT_OK,
    Command,
    Group,
    Out,
    Result,
    UsageError,
    arg,
)

#: hours, as in ``--idle-timeout``'s default: a server nobody asks ends itself
DEFAULT_IDLE_SECONDS = 3 * 60 * 60


def warm() -> None:
    """Import what the served commands import when they run, and load the parser and
    its lexer once (a first parse), so that each child starts with them."""
    import wflang.cli.app
    import wflang.cli.compile
    import wflang.cli.diff
    import wflang.cli.render
    import wflang.cli.source
    import wflang.compiler.check
    import wflang.compiler.program
    import wflang.compiler.report
    import wflang.dsl.formatter
    from wflang.dsl.parser import parse

    for word in dc.SERVED:
        wflang.cli.app.build_parser(word)
    parse("workflow Warm {\n}\n", "<warm-up>")


def ensure_folder(path: str) -> None:
    """Make the socket folder (mode 0700), or refuse one that is not private."""
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if not dc.private(path):
        raise SystemExit(
            f"wf daemon: error: {path} must be a folder of yours that only you can enter "
            "(mode 0700); fix or remove it"
        )


# --- the server ---------------------------------------------------------------


class Server:
    def __init__(self, listener: socket.socket, idle: float, fingerprint: str) -> None:
        self.listener = listener
        self.idle = idle
        self.fingerprint = fingerprint
        self.started = time.time()
        self.served = 0

    def loop(self) -> None:
        self.listener.settimeout(self.idle)
        while True:
            _reap()
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                return  # idle for too long
            try:
                if self.handle(conn):
                    return
            except Exception:  # one bad request never ends the server
                traceback.print_exc()
                conn.close()

    def handle(self, conn: socket.socket) -> bool:
        """Answer one connection; True when the server must stop."""
        conn.settimeout(30)  # a client that connects and sends nothing is dropped
        data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
        try:
            if dc.peer_uid(conn) != os.getuid():
                conn.close()
                return False
            size = int.from_bytes(data[:4], "big")
            data = data[4:]
            while len(data) < size:
                more = conn.recv(size - len(data))
                if not more:
                    raise OSError("the request was cut short")
                data += more
            fields = [os.fsdecode(f) for f in data.split(b"\0")]
            kind, rest = fields[0], fields[1:]
            if kind == dc.STOP:
                conn.sendall(b"K")
                _keep_open_until_exit.append(conn)  # closed by our exit: stop waits on it
                return True
            if kind == dc.STATUS:
                fresh = rest[:1] == [self.fingerprint]
                conn.sendall(self.status(fresh).encode())
            elif kind == dc.RUN and len(fds) == 3:
                if rest[0] != self.fingerprint:
                    conn.sendall(dc.STALE)
                else:
                    conn.sendall(dc.ACCEPTED)
                    self.served += 1
                    self.fork(conn, rest[1:], fds)
            conn.close()
            return False
        finally:
            for fd in fds:
                os.close(fd)

    def status(self, fresh: bool) -> str:
        state = "running" if fresh else "stale (started from other wflang sources: restart it)"
        return (
            f"wf daemon: {state}; pid {os.getpid()}, up {time.time() - self.started:.0f} s, "
            f"{self.served} commands served, idle timeout {self.idle:.0f} s, "
            f"socket {dc.socket_path()}\n"
        )

    def fork(self, conn: socket.socket, fields: list[str], fds: Sequence[int]) -> None:
        """A handler child waits for a worker child and sends its exit status: a worker
        killed by a signal still gets an answer to its client, and a client that has
        gone (a Ctrl-C) interrupts its worker, which would otherwise go on reading the
        terminal (``wf check -``) or writing to it."""
        if os.fork() != 0:
            return
        try:
            self.listener.close()
            worker = os.fork()
            if worker == 0:
                conn.close()
                _work(fields, fds)  # never returns
            for fd in fds:  # only the worker holds the client's streams: its exit ends them
                os.close(fd)
            ended = os.pidfd_open(worker)
            ready, _, _ = select.select([conn.fileno(), ended], [], [])
            if ended not in ready:  # the client closed its end: it has gone
                os.kill(worker, signal.SIGINT)
            _, status = os.waitpid(worker, 0)
            code = os.waitstatus_to_exitcode(status)
            conn.sendall(code.to_bytes(4, "big", signed=True))
        finally:
            os._exit(0)


_keep_open_until_exit: list[socket.socket] = []
#: the server's own standard streams, kept by the worker so that no collection
#: closes descriptors 0-2 after they are the client's
_old_streams: list[object] = []


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass


def _stream(fd: int, spec: str, writing: bool) -> io.TextIOWrapper:
    encoding, errors, line_buffering = spec.split("\t")
    stream = open(fd, "w" if writing else "r", encoding=encoding, errors=errors, closefd=False)  # noqa: SIM115
    stream.reconfigure(line_buffering=line_buffering == "1")
    return stream


def _work(fields: list[str], fds: Sequence[int]) -> None:
    """In the worker child: become the client's process, run ``main``, exit as
    ``sys.exit(main())`` would."""
    code = 2
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _old_streams.extend((sys.stdin, sys.stdout, sys.stderr))  # freed, they close 0-2
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        cwd, streams, argv0, count = fields[0], fields[1:4], fields[4], int(fields[5])
        args, env = fields[6 : 6 + count], fields[6 + count :]
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(item.split("=", 1) for item in env)  # type: ignore[misc]
        sys.stdin = sys.__stdin__ = _stream(0, streams[0], False)  # type: ignore[misc]
        sys.stdout = sys.__stdout__ = _stream(1, streams[1], True)  # type: ignore[misc]
        sys.stderr = sys.__stderr__ = _stream(2, streams[2], True)  # type: ignore[misc]
        sys.argv = [argv0, *args]
        code = _exit_code(args)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _exit_code(args: list[str]) -> int:
    from wflang.cli import main

    try:
        result: object = main(args)
    except SystemExit as done:
        result = done.code
    except BaseException:
        traceback.print_exc()
        return 1
    if result is None:
        return 0
    if isinstance(result, int):
        return result & 0xFF
    print(result, file=sys.stderr)
    return 1


def serve(idle: float, ready_fd: int) -> int:
    """The server's process (``python -m wflang.cli.daemon``)."""
    path = dc.socket_path()
    ready = os.fdopen(ready_fd, "w")
    try:
        ensure_folder(os.path.dirname(path))
        if _answering(path):
            raise SystemExit("wf daemon: error: a server is already running")
        warm()
        fingerprint = os.environ.pop(dc.TEST_FINGERPRINT_ENV, None) or dc.fingerprint()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a socket left by a server that did not stop cleanly
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
        bound = os.stat(path).st_ino  # ours to remove at the end, unless replaced since
    except SystemExit as refused:
        ready.write(f"{refused.code}\n")
        ready.close()
        return 2
    ready.write(f"ready {os.getpid()}\n")
    ready.close()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        Server(listener, idle, fingerprint).loop()
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == bound:
                os.unlink(path)
        listener.close()
    return 0


def _answering(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


# --- the commands -------------------------------------------------------------


def _ask(kind: str, fields: list[str]) -> str | None:
    """A stop or status request's answer (read to the end), or None: no server."""
    try:
        sock = dc.request(kind, fields)
    except OSError:
        return None
    try:
        got = b""
        while chunk := sock.recv(4096):  # type: ignore[attr-defined]
            got += chunk
    except OSError:
        return None
    finally:
        sock.close()  # type: ignore[attr-defined]
    return got.decode()


@frozen(kw_only=True)
class DaemonStart:
    idle_timeout: float = field(
        default=DEFAULT_IDLE_SECONDS,
        metadata=arg(
            "--idle-timeout",
            type=float,
            metavar="SECONDS",
            help="end the server after this long without a request (default: 3 hours)",
        ),
    )


@frozen
class DaemonStop:
    pass


@frozen
class DaemonStatus:
    pass


def start(req: DaemonStart) -> Result:
    out = Out()
    status = _ask(dc.STATUS, [dc.fingerprint()])
    if status is not None and "stale" not in status:
        out.write(status)  # already running, from these sources
        return out.done()
    if status is not None:
        _ask(dc.STOP, [])  # a stale server: replaced
    read, write = os.pipe()
    log = os.path.join(dc.folder(), "daemon.log")
    try:
        ensure_folder(dc.folder())
    except SystemExit as refused:
        raise UsageError(str(refused.code).removeprefix("wf daemon: error: ")) from None
    with open(write, "w") as _, open(log, "ab") as errors:  # the parent's end of the pipe
        subprocess.Popen(
            [sys.executable, "-m", "wflang.cli.daemon", str(req.idle_timeout), str(write)],
            pass_fds=(write,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,  # no terminal: a Ctrl-C in it does not reach the server
        )
    with open(read) as answer:
        said = answer.read().strip()  # waits until the server listens, or refuses
    if not said.startswith("ready "):
        raise UsageError(said.removeprefix("wf daemon: error: ") or f"no server (see {log})")
    out.print(f"wf daemon: started, pid {said.split()[1]}, socket {dc.socket_path()}")
    return out.done()


def stop(req: DaemonStop) -> Result:
    out = Out()
    said = _ask(dc.STOP, [])  # returns when the server has ended
    out.print("wf daemon: stopped" if said == "K" else "wf daemon: not running")
    return out.done()


def status(req: DaemonStatus) -> Result:
    out = Out()
    said = _ask(dc.STATUS, [dc.fingerprint()])
    out.write(said or "wf daemon: not running\n")
    return out.done(EXIT_OK if said else EXIT_FINDINGS)


DAEMON = Group(
    ("daemon",),
    help="a warm server that answers parse, fmt, check, rules, schema, diff, compile, "
    "table and render faster (docs/daemon.md)",
)
DAEMON_START = Command(
    ("daemon", "start"),
    DaemonStart,
    start,
    help="start the server (or say that it runs)",
    description="Start a server for this installation of wflang in the background: it "
    "imports the checker, the compiler and the formatter and loads the parser once, then "
    "answers the source commands (each in a fresh fork of itself). It returns when the "
    "server listens. A stale server (started from other sources) is replaced.",
)
DAEMON_STOP = Command(
    ("daemon", "stop"),
    DaemonStop,
    stop,
    help="stop the server (returns when it has ended)",
)
DAEMON_STATUS = Command(
    ("daemon", "status"),
    DaemonStatus,
    status,
    help="say whether a server runs, and whether it is stale (exit 1: none runs)",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (DAEMON, DAEMON_START, DAEMON_STOP, DAEMON_STATUS)


if __name__ == "__main__":
    sys.exit(serve(float(sys.argv[1]), int(sys.argv[2])))
