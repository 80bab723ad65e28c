"""The checker's findings as the protocol's diagnostics: the code links to its entry
in docs/rules.md, the hint follows the message, related spans become related
information, and the rules' own explanations answer a hover on a finding."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pygls.workspace import TextDocument

from wflang.dsl.diagnostics import CODES, Diagnostic, Severity
from wflang.lsp.positions import to_range

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}
#: Findings about code that does nothing, which editors fade rather than underline.
_UNNECESSARY = ("unused", "unreachable", "unsuppressed", "useless")

#: Where docs/rules.md is, in a source checkout (an installed wheel has no docs).
LOCAL_RULES = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def rules_url(base: str | None) -> str | None:
    """The address of the rule catalogue: the one configured, else the checkout's file."""
    if base:
        return base
    return LOCAL_RULES.as_uri() if LOCAL_RULES.is_file() else None


def to_lsp(
    d: Diagnostic, doc_of: Callable[[str], TextDocument], rules: str | None
) -> lsp.Diagnostic:
    """One finding of the document ``doc_of(d.span.file)``."""
    message = f"{d.message}\nhint: {d.hint}" if d.hint else d.message
    related = [
        lsp.DiagnosticRelatedInformation(
            lsp.Location(uri_of(r.span.file), to_range(r.span, doc_of(r.span.file))), r.message
        )
        for r in d.related
        if not r.span.file.startswith("<")
    ]
    return lsp.Diagnostic(
        range=to_range(d.span, doc_of(d.span.file)),
        message=message,
        severity=_SEVERITY[d.severity],
        code=d.code,
        code_description=lsp.CodeDescription(f"{rules}#{d.code.lower()}") if rules else None,
        source="wf",
        related_information=related or None,
        tags=[lsp.DiagnosticTag.Unnecessary] if any(w in d.name for w in _UNNECESSARY) else None,
        data={"name": d.name},
    )


def explain(code_id: str) -> str | None:
    """A rule's explanation, as Markdown: its name, summary and documentation."""
    code = CODES.lookup(code_id)
    if code is None:
        return None
    doc = code.doc.replace("\n    ", "\n        ")
    return f"**{code.id}** `{code.name}`: {code.summary}\n\n{doc}".rstrip()


def uri_of(path: str) -> str:
    return from_fs_path(path) or path
