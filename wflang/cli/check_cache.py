"""The result cache of ``wf check``: a repeated check of unchanged files prints the
stored report without importing the parser or the checker (as ruff's ``.ruff_cache``
or ``eslint --cache`` do).

An entry is named by a hash of what is known before the check runs: the options
that change the output (``--color`` already decided from the terminal and
``NO_COLOR``), the working folder (paths are printed as given), the files found
and their bytes, Python's version and a fingerprint of the installed ``wflang``
and ``lark`` (each file's path, size and modification time: an edited rule or
grammar is a new key). The entry also records what the check looked at on the
way, each with what it saw (ccache's manifest mode), and a lookup looks again:

- every file an import leads to, read or not (``read``: its bytes' hash, or why it
  could not be opened), and where it really is (``realpath``: the import scope
  follows symbolic links), so an edited, created or removed import is a miss;
- every folder above the working folder and above each file checked: its
  ``pyproject.toml`` (the configuration and the project root; one that did not
  exist is recorded as missing, so creating it is a miss) and whether it holds a
  ``.git`` (the project root), and the folders ``import-paths`` lead to;
- the ``--config`` file.

Each is looked at before the check reads it, so a file edited during a check
leaves an entry that no longer matches. Entries are written whole (a temporary
file renamed over), the oldest dropped past ``MAX_ENTRIES`` or ``MAX_BYTES``; an
entry that cannot be read or parsed is a miss and a folder that cannot be
written only costs the store. The folder is ``check/`` in the user cache folder of
the built parsers (``wflang.user_cache``). ``--no-cache`` or ``WFLANG_NO_CACHE=1``
turn it off, as does ``WFLANG_CACHE_DIR=`` (empty). Not cached: standard input,
a file that is not a regular file, ``--format github`` with
``$GITHUB_STEP_SUMMARY`` set (the report is also appended there), and a check
that ends in an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import wflang
from wflang.cli.framework import Chunk, Result
from wflang.user_cache import cache_dir

if TYPE_CHECKING:
    from wflang.compiler.program import Reader
    from wflang.dsl.parser import ParseResult

#: Set to anything but empty or ``0``: ``wf check`` neither reads nor writes the cache.
NO_CACHE_ENV = "WFLANG_NO_CACHE"
MAX_ENTRIES = 500
MAX_BYTES = 64 * 1024 * 1024
#: The layout of an entry; a change makes every older entry a miss.
_LAYOUT = "wflang-check-1"

Seen = str | bool
#: What was looked at: ``(kind, path)``, a kind of ``_KINDS``.
Look = tuple[str, str]


def _content(path: str) -> Seen:
    """A file's bytes as a hash, or why they cannot be read (as ``read_source`` opens it)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError) as err:
        return f"error {getattr(err, 'errno', None)}"
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return f"mode {stat.S_IFMT(mode)}"
        with os.fdopen(os.dup(fd), "rb") as f:
            return digest(f.read())
    except OSError as err:
        return f"error {err.errno}"
    finally:
        os.close(fd)


def _realpath(path: str) -> Seen:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError) as err:  # a NUL character: the import is refused
        return f"error {type(err).__name__}"


_KINDS: dict[str, Callable[[str], Seen]] = {
    "read": _content,
    "exists": os.path.exists,
    "realpath": _realpath,
}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def folder(no_cache: bool) -> Path | None:
    """Where results are kept, or None when the cache is turned off."""
    if no_cache or os.environ.get(NO_CACHE_ENV, "") not in ("", "0"):
        return None
    base = cache_dir()
    return None if base is None else base / "check"


def _tree(top: Path) -> Iterator[str]:
    """Every file under ``top`` but bytecode, with its size and modification time."""
    with os.scandir(top) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name == "__pycache__":
                continue
            if entry.is_dir():
                yield from _tree(Path(entry.path))
            elif entry.is_file():
                info = entry.stat()
                yield f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}"


def fingerprint() -> str:
    """The installed code that makes the report: ``wflang`` (its rules, its grammar)
    and ``lark`` (its syntax errors), found without importing ``lark``."""
    import importlib.util

    lark = importlib.util.find_spec("lark")
    tops = [Path(wflang.__file__).parent]
    if lark is not None and lark.origin:
        tops.append(Path(lark.origin).parent)
    files = [line for top in tops for line in _tree(top)]
    return digest("\n".join([wflang.__version__, sys.version, *files]).encode())


class Lookup:
    """One ``wf check``'s entry: its key, and what the check looked at, as it saw it."""

    def __init__(self, where: Path, key: str, data: dict[str, bytes]) -> None:
        self.where = where
        self.key = key
        #: the bytes of each file checked, read once (a pipe cannot be read twice)
        self.data = data
        self.seen: dict[Look, Seen] = {}

    @property
    def path(self) -> Path:
        return self.where / f"{self.key[:40]}.json"

    def look(self, kind: str, path: str) -> None:
        """Record what ``path`` is now, unless it was looked at already."""
        if (kind, path) not in self.seen:
            self.seen[(kind, path)] = _KINDS[kind](path)

    def look_above(self, folder: str) -> None:
        """The folder's real place, and the configuration and project markers above it."""
        self.look("realpath", folder)
        real = Path(os.path.realpath(folder))
        for above in (real, *real.parents):
            self.look("read", str(above / "pyproject.toml"))
            self.look("exists", str(above / ".git"))

    def look_at_import_paths(self, files: Sequence[str]) -> None:
        """Where the ``import-paths`` of each file's project really lead."""
        from wflang.compiler.program import import_paths, import_scope

        for path in files:
            root = import_scope(path).root
            for extra in import_paths(root):
                self.look("realpath", str(root / extra))

    def cached(self) -> Result | None:
        """The stored result, when every recorded look sees the same again."""
        try:
            entry = json.loads(self.path.read_bytes())
            if entry["key"] != self.key:
                return None  # another entry under a colliding name
            for kind, path, value in entry["seen"]:
                if _KINDS[kind](path) != value:
                    return None
            printed = tuple(_chunk(stream, text) for stream, text in entry["printed"])
            code = entry["code"]
            if not isinstance(code, int) or isinstance(code, bool):
                return None
        except Exception:  # missing, unreadable, truncated, of another layout: a miss
            return None
        with contextlib.suppress(OSError):
            os.utime(self.path)  # recently used: evicted last
        return Result(code, printed)

    def reader(self, parsed: list[ParseResult]) -> Reader:
        """The checker's reader of imports, recording what it reads (before using it)."""
        from wflang.dsl.parser import parse_bytes
        from wflang.dsl.source import SourceError, read_source

        def read(path: str) -> ParseResult:
            self.look("realpath", path)
            before = _content(path)
            try:
                data = read_source(path, regular_only=True)
            except SourceError:
                self.seen.setdefault(("read", path), before)
                raise
            self.seen.setdefault(("read", path), digest(data))
            result = parse_bytes(data, path)
            parsed.append(result)
            return result

        return read

    def store(self, result: Result) -> None:
        printed = [[stream, text] for stream, text in result.printed]
        if any(not isinstance(text, str) for _, text in printed):
            return
        seen = [[kind, path, value] for (kind, path), value in self.seen.items()]
        entry = {"key": self.key, "seen": seen, "code": result.code, "printed": printed}
        import tempfile  # only when storing: a hit does without it

        try:
            self.where.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.where, prefix=".entry-", suffix=".tmp")
        except OSError:  # not writable: the check is not cached
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(entry, file)
            os.replace(temporary, self.path)
        except Exception:  # a full disk, a rename refused
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return
        evict(self.where)


def _chunk(stream: object, text: object) -> Chunk:
    if stream not in ("out", "err") or not isinstance(text, str):
        raise ValueError("not an entry")
    return ("out" if stream == "out" else "err", text)


def evict(where: Path, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
    """Drop the least recently used entries past ``max_entries`` or ``max_bytes``."""
    entries: list[tuple[int, int, str]] = []
    with contextlib.suppress(OSError), os.scandir(where) as found:
        for e in found:
            if e.name.endswith(".json"):
                with contextlib.suppress(OSError):
                    info = e.stat()
                    entries.append((info.st_mtime_ns, info.st_size, e.path))
    entries.sort(reverse=True)
    total = 0
    for count, (_, size, path) in enumerate(entries, 1):
        total += size
        if count > max_entries or total > max_bytes:
            with contextlib.suppress(OSError):
                os.unlink(path)  # another wf check may have dropped it first


def lookup(
    options: Mapping[str, object], files: Sequence[str], *, no_cache: bool, fmt: str
) -> Lookup | None:
    """The entry of a check of ``files`` with ``options``, or None when not cached."""
    where = folder(no_cache)
    if where is None or "-" in files:
        return None
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        return None  # the report is also appended to a file: run the check
    data: dict[str, bytes] = {}
    for path in files:
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return None  # a pipe named by the user is read once, by the check
            with open(path, "rb") as f:
                data[path] = f.read()
        except OSError:
            return None  # the check says why it cannot be read
    hashed = [[path, digest(data[path])] for path in files]
    key = [_LAYOUT, fingerprint(), sorted(options.items()), os.getcwd(), hashed]
    return Lookup(where, digest(json.dumps(key, default=repr).encode()), data)
