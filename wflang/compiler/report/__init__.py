"""The output formats of ``wf check``: for people, for tools and for CI.

Stages return ``Diagnostic`` values; the CLI gathers them into a ``Report`` and
calls ``render`` with a format name from ``FORMATS``:

- ``text``: rustc-style snippets with a caret under the span, then a summary line;
- ``concise``: ``path:line:col: error[WF001] message``, one line each;
- ``json``: a versioned document, see ``json_schema()``;
- ``sarif``: SARIF 2.1.0 for GitHub code scanning;
- ``github``: GitHub Actions annotations; ``github_step_summary`` gives the
  Markdown table of every finding for ``$GITHUB_STEP_SUMMARY``.

Every output ends in a newline (or is empty), so the CLI writes it as it is.
"""

from __future__ import annotations

from pathlib import Path

from wflang.compiler.report.github import github_step_summary, render_github
from wflang.compiler.report.json import json_schema, render_json, to_document
from wflang.compiler.report.model import Renderer, Report, fingerprint, summary_line
from wflang.compiler.report.sarif import render_sarif, to_sarif
from wflang.compiler.report.text import format_concise, format_text, render_concise, render_text

FORMATS: dict[str, Renderer] = {
    "text": render_text,
    "concise": render_concise,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
}
"""Every output format by name; the CLI offers exactly these."""


def render(fmt: str, report: Report, *, color: bool = False, root: Path | None = None) -> str:
    """The whole output of ``wf check`` in a format.

    ``color`` adds ANSI colours (``text`` only); ``root`` is the folder that
    SARIF URIs, GitHub paths and fingerprints are made relative to (default: the
    working folder).
    """
    try:
        renderer = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}") from None
    return renderer(report, color=color, root=Path.cwd() if root is None else root)


__all__ = [
    "FORMATS",
    "Renderer",
    "Report",
    "fingerprint",
    "format_concise",
    "format_text",
    "github_step_summary",
    "json_schema",
    "render",
    "summary_line",
    "to_document",
    "to_sarif",
]
