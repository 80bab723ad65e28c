"""Reading source files: never more than the size limit, and imports only from regular files.

A file named on the command line may be anything the user chooses (a pipe such as
``<(cat x.wf)`` included), but is read no further than the limit. An import is
written by whoever wrote the importing file, so it may only open a regular file:
``import "/dev/zero"`` would read until memory ran out and ``import "/dev/stdin"``
would wait forever.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: The largest source file, in bytes (and the largest source text, in characters).
MAX_SOURCE_BYTES = 16 * 1024 * 1024


class SourceError(Exception):
    """A source file that cannot, or may not, be read; the message says why."""


def read_source(path: str | Path, *, regular_only: bool) -> bytes:
    """The bytes of a source file, no more than MAX_SOURCE_BYTES + 1 of them.

    A file over the limit is read only that far: the parser refuses it (WF005).

    With ``regular_only`` anything but a regular file (a device, a pipe, a socket, a
    folder) is refused before a byte is read; the check is made on the opened file,
    so a path swapped in between cannot slip through.
    """
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise SourceError(_reason(err)) from err
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError("it is a folder")
        if not stat.S_ISREG(info.st_mode):
            if regular_only:
                raise SourceError("it is not a regular file")
            os.set_blocking(fd, True)  # a pipe named by the user is read as it comes
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(MAX_SOURCE_BYTES + 1)
    except OSError as err:
        raise SourceError(_reason(err)) from err
    finally:
        os.close(fd)


def _reason(err: OSError) -> str:
    if isinstance(err, FileNotFoundError):
        return "no such file"
    return str(err.strerror or err).lower()
