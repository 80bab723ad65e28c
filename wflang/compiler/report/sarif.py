"""SARIF 2.1.0, the subset GitHub code scanning reads.

One run; ``tool.driver.rules`` lists every registered code (so alerts keep their
rule help even in runs that do not trigger them); each result points at its rule
by ``ruleId`` and ``ruleIndex``. File URIs are relative to the root under
``%SRCROOT%`` (files outside the root keep an absolute ``file://`` URI).
``partialFingerprints.primaryLocationLineHash`` is the finding's fingerprint,
which does not depend on line numbers, plus ``:n`` for the n-th finding with the
same one, as GitHub computes its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from wflang.compiler.report.model import (
    INFORMATION_URI,
    RULES_DOC_URI,
    Report,
    fingerprint,
    locate,
    tool_version,
)
from wflang.dsl.diagnostics import CODES, Code, CodeRegistry, Diagnostic, Severity
from wflang.dsl.span import Span

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SRCROOT = "%SRCROOT%"
FULL_DESCRIPTION_LIMIT = 1024
"""GitHub shows at most this many characters of a rule's ``fullDescription``."""

LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def help_uri(code_id: str) -> str:
    """Where a rule is documented: its section of ``docs/rules.md``."""
    return f"{RULES_DOC_URI}#{code_id.lower()}"


def _rule(code: Code) -> dict[str, object]:
    doc = code.doc or code.summary
    if len(doc) > FULL_DESCRIPTION_LIMIT:
        doc = doc[: FULL_DESCRIPTION_LIMIT - 1] + "…"
    help_text = f"{code.summary}\n\n{code.doc}" if code.doc else code.summary
    return {
        "id": code.id,
        "name": code.name,
        "shortDescription": {"text": code.summary},
        "fullDescription": {"text": doc},
        "help": {
            "text": help_text,
            "markdown": f"{help_text}\n\n[{code.id} {code.name}]({help_uri(code.id)})",
        },
        "helpUri": help_uri(code.id),
        "defaultConfiguration": {"level": LEVELS[code.severity]},
        "properties": {"tags": [code.category]},
    }


def _rules(report: Report, registry: CodeRegistry) -> list[Code]:
    """Every registered code, then any code a finding uses that is not registered."""
    rules = list(registry.all())
    known = {c.id for c in rules}
    for d in report.diagnostics:
        if d.code not in known:
            known.add(d.code)
            rules.append(Code(d.code, d.name, "other", d.severity, d.name.replace("-", " ")))
    return rules


def message_text(d: Diagnostic) -> str:
    """The message, then the hint as a second sentence (GitHub titles alerts by the first)."""
    text = d.message.rstrip()
    if not d.hint:
        return text
    if not text.endswith((".", "!", "?")):
        text += "."
    return f"{text} {d.hint[:1].upper()}{d.hint[1:]}"


class _Artifacts:
    """The run's ``artifacts`` list, each file once, in the order first seen."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.index: dict[str, int] = {}
        self.entries: list[dict[str, object]] = []

    def uri(self, file: str) -> dict[str, object]:
        path, inside = locate(file, self.root)
        if inside:
            return {"uri": quote(path, safe="/"), "uriBaseId": SRCROOT}
        return {"uri": Path(path).as_uri()}

    def add(self, file: str, *, target: bool = False) -> int:
        if file not in self.index:
            self.index[file] = len(self.entries)
            entry: dict[str, object] = {"location": self.uri(file)}
            if target:
                entry["roles"] = ["analysisTarget"]
            self.entries.append(entry)
        return self.index[file]

    def location(self, span: Span) -> dict[str, object]:
        """A ``physicalLocation`` for a span (no region when the span has no position)."""
        artifact = {**self.uri(span.file), "index": self.add(span.file)}
        out: dict[str, object] = {"artifactLocation": artifact}
        if span.line >= 1:
            out["region"] = {
                "startLine": span.line,
                "startColumn": max(1, span.column),
                "endLine": max(span.line, span.end_line),
                "endColumn": max(1, span.end_column),
            }
        return out


def to_sarif(
    report: Report, *, root: Path | None = None, registry: CodeRegistry = CODES
) -> dict[str, object]:
    """The report as a SARIF 2.1.0 log (a JSON-ready value)."""
    base = Path(os.path.abspath(Path.cwd() if root is None else root))
    rules = _rules(report, registry)
    rule_index = {c.id: i for i, c in enumerate(rules)}
    artifacts = _Artifacts(base)
    for f in report.files:
        artifacts.add(f, target=True)
    seen: dict[str, int] = {}
    results: list[dict[str, object]] = []
    for d in report.diagnostics:
        fp = fingerprint(report, d, base)
        seen[fp] = seen.get(fp, 0) + 1
        result: dict[str, object] = {
            "ruleId": d.code,
            "ruleIndex": rule_index[d.code],
            "level": LEVELS[d.severity],
            "message": {"text": message_text(d)},
            "locations": [{"physicalLocation": artifacts.location(d.span)}],
            "partialFingerprints": {"primaryLocationLineHash": f"{fp}:{seen[fp]}"},
        }
        if d.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "physicalLocation": artifacts.location(r.span),
                    "message": {"text": r.message},
                }
                for i, r in enumerate(d.related, start=1)
            ]
        results.append(result)
    root_uri = base.as_uri()
    version = tool_version()
    run: dict[str, object] = {
        "tool": {
            "driver": {
                "name": "wflang",
                "version": version,
                "semanticVersion": version,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(c) for c in rules],
            }
        },
        "originalUriBaseIds": {
            SRCROOT: {"uri": root_uri if root_uri.endswith("/") else root_uri + "/"}
        },
        "artifacts": artifacts.entries,
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(report: Report, *, color: bool = False, root: Path | None = None) -> str:
    """The SARIF log as indented JSON."""
    return json.dumps(to_sarif(report, root=root), indent=2) + "\n"
