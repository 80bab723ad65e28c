"""Node for the tests of the VS Code extension (editors/vscode): found, its npm packages
installed from the lock file, and the extension's TextMate grammar run on documents.

Without ``node`` and ``npm`` the tests skip, saying so, unless ``WFLANG_REQUIRE_NODE`` is
set: CI (``.ci/run``) installs them and sets it, so there they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
EXTENSION = ROOT / "editors" / "vscode"

#: One token: its text and its scopes, outermost first (without ``source.wf``).
Token = tuple[str, tuple[str, ...]]


def node_tools() -> tuple[str, str]:
    """``node`` and ``npm``, with the extension's packages installed (``npm ci``)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        reason = "node and npm are not installed (.ci/run installs them from Debian packages)"
        if os.environ.get("WFLANG_REQUIRE_NODE"):
            pytest.fail(f"WFLANG_REQUIRE_NODE is set but {reason}")
        pytest.skip(reason)
    _install()
    return node, npm


@cache
def _install() -> None:
    """``make editor-deps``: ``npm ci`` unless node_modules is newer than the lock file."""
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "editor-deps"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"


def tokenize(documents: dict[str, str]) -> dict[str, list[list[Token]]]:
    """Each document's lines as the extension's grammar tokenizes them in VS Code."""
    node, _ = node_tools()
    done = subprocess.run(
        [node, str(EXTENSION / "test" / "tokenize.js")],
        input=json.dumps(documents),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    raw: dict[str, list[list[tuple[str, list[str]]]]] = json.loads(done.stdout)
    return {
        name: [[(text, tuple(scopes)) for text, scopes in line] for line in lines]
        for name, lines in raw.items()
    }
