"""The language front end: .wf source text to a typed, frozen spec and diagnostics."""

from wflang.dsl.diagnostics import Diagnostic, Severity
from wflang.dsl.parser import ParseResult, parse, parse_bytes, parse_file
from wflang.dsl.spec import WorkflowSpec

__all__ = [
    "Diagnostic",
    "ParseResult",
    "Severity",
    "WorkflowSpec",
    "parse",
    "parse_bytes",
    "parse_file",
]
