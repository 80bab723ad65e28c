"""Output for tools: a versioned JSON document, described by ``diagnostics.schema.json``.

The document (version 1)::

    {"version": 1, "tool": {"name": "wflang", "version": "0.1.0"},
     "files": ["flows/order.wf"], "summary": {"error": 1, "warning": 0, "info": 0},
     "diagnostics": [{"code": "WF001", "name": "syntax-error", "severity": "error",
                      "message": "...", "hint": "..." | null,
                      "location": {"file", "line", "column", "end_line", "end_column"},
                      "related": [{"message": "...", "location": {...}}],
                      "fingerprint": "0123456789abcdef"}]}

Lines and columns are 1-based, columns count code points and ``end_column`` is
exclusive. ``fingerprint`` does not change when lines are added above a finding.
Files are named as given to ``wf check``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from wflang.compiler.report.model import Report, fingerprint, tool_version
from wflang.dsl.span import Span

JSON_SCHEMA_VERSION = 1
SCHEMA_RESOURCE = "diagnostics.schema.json"


def json_schema() -> dict[str, object]:
    """The JSON Schema (Draft 2020-12) of the document ``--format json`` prints."""
    # a file beside this module, as the grammar is: importlib.resources would cost
    # every `wf check` its import (issue 13)
    text = Path(__file__).with_name(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    return cast(dict[str, object], json.loads(text))


def _location(span: Span) -> dict[str, object]:
    return {
        "file": span.file,
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
    }


def to_document(report: Report, *, root: Path | None = None) -> dict[str, object]:
    """The report as a JSON-ready value; ``root`` is what fingerprint paths are relative to."""
    base = Path.cwd() if root is None else root
    return {
        "version": JSON_SCHEMA_VERSION,
        "tool": {"name": "wflang", "version": tool_version()},
        "files": list(report.files),
        "summary": {s.value: n for s, n in report.counts().items()},
        "diagnostics": [
            {
                "code": d.code,
                "name": d.name,
                "severity": d.severity.value,
                "message": d.message,
                "hint": d.hint,
                "location": _location(d.span),
                "related": [
                    {"message": r.message, "location": _location(r.span)} for r in d.related
                ],
                "fingerprint": fingerprint(report, d, base),
            }
            for d in report.diagnostics
        ],
    }


def render_json(report: Report, *, color: bool = False, root: Path | None = None) -> str:
    """The document, indented; non-ASCII text is escaped so any terminal encoding will do."""
    return json.dumps(to_document(report, root=root), indent=2) + "\n"
