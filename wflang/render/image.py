"""SVG and PNG through Graphviz: the only part of ``wf render`` that needs ``dot``.

DOT and Mermaid are plain text and always available; images need the ``dot``
program. When it is missing the user gets one sentence naming the package to
install, never a traceback.
"""

from __future__ import annotations

import shutil

INSTALL = (
    "Graphviz's 'dot' program is needed for --format svg and png, and it is not on PATH: "
    "install the 'graphviz' package (Debian/Ubuntu: sudo apt-get install graphviz; "
    "macOS: brew install graphviz), or use --format dot or mermaid"
)


class ImageError(Exception):
    """The image cannot be made: ``dot`` is missing or failed."""


def to_image(dot_text: str, fmt: str) -> bytes:
    """``dot_text`` laid out and drawn by Graphviz as ``svg`` or ``png`` bytes."""
    if shutil.which("dot") is None:
        raise ImageError(INSTALL)
    try:
        import graphviz  # type: ignore[import-untyped,unused-ignore]
    except ImportError as err:  # pragma: no cover - a dependency of wflang
        raise ImageError("the 'graphviz' Python package is missing: pip install graphviz") from err
    try:
        data: bytes = graphviz.Source(dot_text).pipe(format=fmt)
    except graphviz.ExecutableNotFound as err:
        raise ImageError(INSTALL) from err
    except graphviz.CalledProcessError as err:
        detail = (err.stderr or b"").decode("utf-8", errors="replace").strip()
        raise ImageError(f"dot failed: {detail}") from err
    return data
