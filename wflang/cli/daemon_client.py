"""The client side of ``wf daemon`` (issue 13): hand a read-only source command to a
warm server, or say it could not (``None``) so that the command runs in-process.

It runs before anything heavy is imported, so it imports only what the interpreter
has already loaded (``os``, ``sys``) and two built-in C modules (``_socket``,
``zlib``): no ``socket``, ``pathlib`` or ``attrs``. The server is ``daemon.py``;
the protocol is written once, here, and both sides use it:

- the client connects to the socket of its installation (``socket_path``), checks
  that the server runs as its own user, and sends one message: a 4-byte length, then
  NUL-separated fields (``encode``), with its standard input, output and error
  passed as file descriptors (``SCM_RIGHTS``) so that the server's child writes
  straight to them (a terminal stays a terminal: colours and ``isatty`` as in-process);
- the server answers one byte: ``A`` (accepted; a signed 4-byte exit status follows
  when the command has ended) or ``S`` (stale: it was started from other sources or
  another interpreter; the client runs the command itself).

Any failure before ``A`` (no server, a refused or broken connection, a folder that
is not private) is a quiet fallback to the in-process run: the daemon never makes a
command fail. After ``A`` the command's output may already be written, so running
it again would print it twice: a server that vanishes then is an error (exit 2).
"""

from __future__ import annotations

import os
import sys

#: The commands a server answers: those that read source files and print (and
#: ``fmt``, which may rewrite them), never a store, a worker or an in-memory run.
SERVED = frozenset(
    ("parse", "fmt", "check", "rules", "schema", "diff", "compile", "table", "render")
)
#: Set (not empty, not "0") to never ask a server.
NO_DAEMON_ENV = "WFLANG_NO_DAEMON"
ACCEPTED = b"A"
STALE = b"S"
#: the kinds of request
RUN, STATUS, STOP = "run", "status", "stop"
#: a test hook: the fingerprint a server claims instead of its own (to test staleness)
TEST_FINGERPRINT_ENV = "_WFLANG_DAEMON_TEST_FINGERPRINT"


def package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def folder() -> str:
    """The private folder of the sockets: ``$XDG_RUNTIME_DIR/wflang``, else ``daemon``
    in the user cache folder (``wflang.user_cache.cache_dir``, written again here
    with ``os.path`` so as not to import ``pathlib``; a test checks they agree)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "wflang")
    chosen = os.environ.get("WFLANG_CACHE_DIR")
    if not chosen:  # unset, or set empty (caching off): the default cache folder
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        chosen = os.path.join(base, "wflang")
    return os.path.join(chosen, "daemon")


def socket_path() -> str:
    """One socket per installation (its package folder and interpreter), so that two
    checkouts or virtual environments each have their own server."""
    import zlib

    where = f"{package_dir()}\n{sys.executable}".encode(errors="surrogateescape")
    return os.path.join(folder(), f"wf-{zlib.crc32(where):08x}.sock")


def private(path: str) -> bool:
    """``path`` is a real folder of this user that nobody else may enter."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return (
        (info.st_mode & 0o170000) == 0o040000
        and info.st_uid == os.getuid()
        and not info.st_mode & 0o077
    )


def _tree(top: str, out: list[str]) -> None:
    with os.scandir(top) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name == "__pycache__":
                continue
            if entry.is_dir(follow_symlinks=False):
                _tree(entry.path, out)
            elif entry.is_file():
                info = entry.stat()
                out.append(f"{entry.path} {info.st_size} {info.st_mtime_ns}")


def fingerprint() -> str:
    """The interpreter and every installed ``wflang`` file's size and modification
    time: a server whose fingerprint differs runs other code than this client."""
    found = [sys.executable, sys.version]
    _tree(package_dir(), found)
    return "\n".join(found)


def encode(fields: list[str]) -> bytes:
    data = b"\0".join(os.fsencode(f) for f in fields)
    return len(data).to_bytes(4, "big") + data


def peer_uid(sock: object) -> int:
    """The user id of the process at the other end of a Unix socket (``SO_PEERCRED``:
    three native ints, pid, uid and gid)."""
    import _socket

    raw: bytes = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)  # type: ignore[attr-defined]
    return int.from_bytes(raw[4:8], sys.byteorder)


def _streams() -> list[str]:
    """How the client's own standard streams encode text, so the server's child wraps
    the same descriptors the same way."""
    found = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        found.append(f"{stream.encoding}\t{stream.errors}\t{int(stream.line_buffering)}")
    return found


def request(kind: str, fields: list[str], fds: tuple[int, ...] = ()) -> object:
    """Connect, send one request, and return the connected socket (the caller reads
    the answer and closes it); OSError when there is no usable server."""
    import _socket

    path = socket_path()
    if not private(os.path.dirname(path)) or not hasattr(_socket, "SO_PEERCRED"):
        raise OSError(f"no private socket folder at {os.path.dirname(path)}")
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
        if peer_uid(sock) != os.getuid():
            raise OSError("the server runs as another user")
        data = encode([kind, *fields])
        rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
        ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)] if fds else []
        sent = sock.sendmsg([data], ancillary)
        if sent < len(data):
            sock.sendall(data[sent:])
    except BaseException:
        sock.close()
        raise
    return sock


def read_all(sock: object, size: int) -> bytes:
    """Up to ``size`` bytes, fewer only when the server closed the connection."""
    got = b""
    while len(got) < size:
        chunk: bytes = sock.recv(size - len(got))  # type: ignore[attr-defined]
        if not chunk:
            break
        got += chunk
    return got


def answered(args: list[str]) -> int | None:
    """The exit status of ``wf ARGS`` run by a server, or None: run it in-process."""
    if not args or args[0] not in SERVED or os.environ.get(NO_DAEMON_ENV, "") not in ("", "0"):
        return None
    try:
        if not os.path.exists(socket_path()):
            return None  # the common case without a server: one stat
        fields = [fingerprint(), os.getcwd(), *_streams(), sys.argv[0], str(len(args)), *args]
        fields.extend(f"{k}={v}" for k, v in os.environ.items())
        sock = request(RUN, fields, (0, 1, 2))
    except (OSError, ValueError, AttributeError):  # AttributeError: a closed stream
        return None
    try:
        try:
            first = read_all(sock, 1)
        except OSError:
            return None
        if first != ACCEPTED:
            return None  # stale, refused or gone before starting: run it here
        status = read_all(sock, 4)
    except OSError:
        status = b""
    finally:
        sock.close()  # type: ignore[attr-defined]
    if len(status) < 4:
        print("wf: error: the wf daemon ended during the command; run it again", file=sys.stderr)
        return 2
    code = int.from_bytes(status, "big", signed=True)
    return 128 - code if code < 0 else code  # killed by a signal: as a shell reports it
