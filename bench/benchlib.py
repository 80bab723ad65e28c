"""What the benchmarks share: a description of the machine and of the code measured."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "missing"


def machine(*packages: str) -> dict[str, Any]:
    """Date, platform, Python and CPU count, and the versions of ``packages``."""
    info: dict[str, Any] = {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu_count": os.cpu_count(),
    }
    info.update({name: version(name) for name in packages})
    return info


def source_state(folders: tuple[str, ...], what: str) -> str:
    """The commit measured, and whether ``folders`` had uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        status = ["status", "--porcelain", "--untracked-files=no", "--", *folders]
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), *status],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} ({what} modified)" if dirty else head
