"""``wf check --watch``: check, then check again each time a watched file changes.

The changes come from an iterator of sets of changed files, so that the loop is tested
with a list of them; ``polled_changes`` is the one the command uses: it compares the
.wf files under the paths (their size and modification time) every ``interval``
seconds, with the ``sleep`` it is given (a virtual clock in the tests).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from wflang.cli.framework import Chunk, Result

#: A file's size and modification time, or None when it is gone.
Stamp = tuple[int, int]


def stamp(path: str) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def watched(paths: Sequence[str]) -> list[str]:
    """The files named and the .wf files under the folders named, as they are now."""
    found: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found += sorted(str(f) for f in path.rglob("*.wf"))
        else:
            found.append(p)
    return found


def polled_changes(
    paths: Sequence[str],
    *,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[frozenset[str]]:
    """Each time one or more of the watched files was created, changed or removed: which."""
    before = {p: stamp(p) for p in watched(paths)}
    while True:
        sleep(interval)
        now = {p: stamp(p) for p in watched(paths)}
        changed = frozenset(p for p in before.keys() | now.keys() if before.get(p) != now.get(p))
        before = now
        if changed:
            yield changed


def watch(
    check: Callable[[], Result],
    changes: Iterable[frozenset[str]],
    emit: Callable[[Sequence[Chunk]], None],
) -> Result:
    """Check, then again after each change, printing each report as it is made; the exit
    code is the last check's (when the changes end, or on Ctrl-C)."""
    result = check()
    emit(result.printed)
    try:
        for changed in changes:
            names = ", ".join(sorted(changed))
            emit([("err", f"\n[watch] {names} changed: checking again\n")])
            result = check()
            emit(result.printed)
    except KeyboardInterrupt:
        pass
    return Result(result.code)
