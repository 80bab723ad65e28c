"""Where wflang keeps what it caches for the user (built parsers, ``wf check`` results).

A module of its own, importing nothing heavy: ``wf check`` looks for a cached
result before it imports the parser.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path | None:
    """``$WFLANG_CACHE_DIR``, else ``$XDG_CACHE_HOME/wflang``, else ``~/.cache/wflang``;
    None when ``WFLANG_CACHE_DIR`` is set empty (caching turned off)."""
    chosen = os.environ.get("WFLANG_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "wflang"
