"""``wf gen json-schema``: a JSON Schema (draft 2020-12) of each value a workflow takes
from outside (``gen.payloads``), for other languages and API gateways.

A schema says what the runtime accepts at its boundary (``runtime.fit``), as JSON:

- ``int``: a JSON integer of 64 bits; ``bool``: ``true`` or ``false``;
- ``decimal``: a JSON number (text such as ``"12.5"`` is refused);
- ``timestamp``: epoch milliseconds (a 64-bit integer) or ISO-8601 text with an offset
  (``2026-12-01T10:00:00Z``; a real date and time: the pattern knows the calendar);
- ``duration``: integer milliseconds or text, ISO-8601 (``PT10M``) or the language's
  (``10m``, ``1h30m``);
- an enum: one of its members' names; ``T?``: ``T`` or ``null``; a field with a default
  or an optional type may be left out (its ``default`` is the value it then gets);
- a record: an object of exactly its fields (a service's result may hold more: a
  handler may return a whole API response).

Records and enums are ``$defs`` named as the workflow's file writes them (``Quote``;
``shared_types.Customer`` for one declared in an imported file), each document whole
by itself. What JSON Schema cannot say is left to the runtime, which refuses it with
its own words: a decimal beyond 34 significant digits, a duration beyond 64 bits of
milliseconds, a value nested deeper than 64 levels or larger than 256 KiB as JSON.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import TypeAlias

from wflang.compiler.check import module_model
from wflang.compiler.lower import constant
from wflang.compiler.model import Model
from wflang.compiler.program import Module, Program
from wflang.dsl import spec as sp
from wflang.dsl.types import OptionalType
from wflang.gen.names import (
    Declared,
    GenError,
    Scope,
    module_name,
    named_modules,
    source_hash,
    walk_type,
)
from wflang.gen.payloads import Payload, Scopes, boundary
from wflang.gen.python import GeneratedFile, shown

Schema: TypeAlias = dict[str, object]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_INT64 = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}
#: The end of the text, in every regex dialect a validator may use (``$`` also matches
#: before a final newline in Python's, which the runtime does not take).
_END = r"(?![\s\S])"
_DAY = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
#: ``runtime.times.timestamp_ms``'s text: a date that exists (year 1 to 9999), a time
#: of day (seconds and a fraction optional), an offset under a day (Python's minutes of
#: an offset run to 99 below 23 hours).
TIMESTAMP_PATTERN = (
    rf"^(?!0000)(?:[0-9]{{4}}-{_DAY}|{_LEAP_YEAR}-02-29)"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]+)?)?"
    r"(?:Z|[+-](?:(?:[01][0-9]|2[0-2]):[0-9]{2}|23:[0-5][0-9]))" + _END
)
#: ``runtime.times.duration_ms``'s text: ISO-8601 weeks, days, hours, minutes and
#: seconds (a fraction of three digits at most), at least one; or the language's form.
DURATION_PATTERN = (
    r"^(?:(?:[0-9]+(?:ms|s|m|h|d|w))+"
    r"|P(?=[0-9]|T[0-9])(?:[0-9]+W)?(?:[0-9]+D)?"
    r"(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]{1,3})?S)?)?)" + _END
)
#: The language's scalars that JSON writes in more than one way, as shared ``$defs``.
SCALARS: dict[str, Schema] = {
    "int": {"description": "a whole number of 64 bits", **_INT64},
    "decimal": {
        "description": "an exact decimal number (at most 34 significant digits), written as"
        " a JSON number; keep its digits (do not pass it through a binary float)",
        "type": "number",
    },
    "timestamp": {
        "description": "an instant: epoch milliseconds, or ISO-8601 text with an offset"
        " such as 2026-12-01T10:00:00Z",
        "anyOf": [_INT64, {"type": "string", "pattern": TIMESTAMP_PATTERN}],
    },
    "duration": {
        "description": "integer milliseconds, or text: ISO-8601 (PT10M, P1DT12H, PT1.5S)"
        " or the language's (10m, 1h30m, 250ms)",
        "anyOf": [_INT64, {"type": "string", "pattern": DURATION_PATTERN}],
    },
}
_PLAIN: dict[str, Schema] = {"string": {"type": "string"}, "bool": {"type": "boolean"}}


class _Document:
    """One schema being written: the ``$defs`` it refers to, gathered as it is."""

    def __init__(self, workflow: Module, model: Model, scopes: Scopes, *, open_: bool) -> None:
        self.workflow, self.model, self.scopes, self.open = workflow, model, scopes, open_
        self.defs: dict[str, Schema] = {}

    def ref(self, key: str) -> Schema:
        return {"$ref": f"#/$defs/{key}"}

    # -- the TypeVisitor --------------------------------------------------------------

    def primitive(self, name: str) -> Schema:
        if name in _PLAIN:
            return dict(_PLAIN[name])
        self.defs.setdefault(name, SCALARS[name])
        return self.ref(name)

    def list_of(self, item: Schema) -> Schema:
        return {"type": "array", "items": item}

    def map_of(self, value: Schema) -> Schema:
        return {"type": "object", "additionalProperties": value}

    def optional(self, inner: Schema) -> Schema:
        if set(inner) == {"type"} and isinstance(inner["type"], str):
            return {"type": [inner["type"], "null"]}
        return {"anyOf": [inner, {"type": "null"}]}

    def declared(self, declared: Declared) -> Schema:
        name = declared.decl.name.text
        key = (
            name if declared.path == self.workflow.path else f"{module_name(declared.path)}.{name}"
        )
        if key not in self.defs:
            self.defs[key] = {}  # taken before its fields: a record may hold itself
            decl = declared.decl
            if isinstance(decl, sp.EnumDecl):
                self.defs[key] = {"enum": [m.text for m in decl.members]}
            else:
                made = self.record(decl.fields, self.scopes.of(declared.path))
                self.defs[key] = {"description": f"type {name}", **made}
        return self.ref(key)

    # -- records ------------------------------------------------------------------------

    def record(self, fields: tuple[sp.Field, ...], scope: Scope) -> Schema:
        properties: dict[str, object] = {}
        required = []
        for f in fields:
            made = walk_type(f.type, scope, self)
            if f.default is not None:
                made = {**made, "default": self.default(f)}
            elif not isinstance(f.type, OptionalType):
                required.append(f.name.text)
            properties[f.name.text] = made
        schema: Schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        if not self.open:
            schema["additionalProperties"] = False
        return schema

    def default(self, f: sp.Field) -> object:
        assert f.default is not None
        try:
            return constant(self.model, f.default)
        except ValueError as err:
            raise GenError(f"the default of '{f.name.text}' cannot be computed: {err}") from err


def generate(program: Program, folder: str | None = None) -> list[GeneratedFile]:
    """A schema per payload of each workflow of ``program``: ``<workflow
    file>/<kind>.<name>.schema.json`` (``order_saga/signal.card_updated.schema.json``;
    the input: ``order_saga/input.schema.json``)."""
    scopes = Scopes(program)
    files = []
    for name, module in named_modules(program):
        path = module.path
        if module.spec is None or module.spec.header is None:
            continue  # a library: the workflows that import it have its payloads
        model = module_model(program, path)
        # named relative to the files themselves, a folder down
        source = shown(path, None if folder is None else str(Path(folder) / name))
        for payload in boundary(module, scopes):
            text = _text(module, model, scopes, payload, source)
            files.append(GeneratedFile(f"{name}/{file_name(payload)}", text))
    return files


def file_name(payload: Payload) -> str:
    """``input.schema.json``, ``signal.card_updated.schema.json``."""
    if payload.kind == "input":
        return "input.schema.json"
    return f"{payload.kind}.{payload.name}.schema.json"


def _text(module: Module, model: Model, scopes: Scopes, payload: Payload, source: str) -> str:
    assert module.spec is not None and module.spec.header is not None
    header = module.spec.header
    doc = _Document(module, model, scopes, open_=payload.open)
    body = doc.record(payload.fields, payload.scope)
    digest = source_hash(module)
    schema: Schema = {
        "$schema": DIALECT,
        "title": f"{header.name.text} {payload.title}",
        "description": _description(payload, header),
        "$comment": f"Generated by `wf gen json-schema` from {source} (sha256 {digest}):"
        " do not edit; regenerate when the source changes.",
        **body,
    }
    if doc.defs:
        schema["$defs"] = {k: doc.defs[k] for k in sorted(doc.defs)}
    return _dumps(schema) + "\n"


def _description(payload: Payload, header: sp.Header) -> str:
    wf = f"workflow {header.name.text} version {header.version}"
    match payload.kind:
        case "input":
            return f"The input an instance of {wf} is started with."
        case "signal" | "message":
            return f"The payload of the {payload.kind} {payload.name} to {wf}."
        case "form":
            return f"The form a person completes the human task {payload.name} of {wf} with."
        case "error":
            return f"The payload of the error {payload.name}, failing a task of {wf}."
        case _:
            return (
                f"What the handler of {payload.name} returns to {wf} (fields beyond these"
                " are let through)."
            )


_NUMBER = re.compile(r'"\\u001fdecimal:([^"]*)"')


def _dumps(schema: Schema) -> str:
    """JSON with two spaces; a decimal (a default) as the number it is, exactly."""

    def number(value: object) -> object:
        if isinstance(value, Decimal):
            return f"\x1fdecimal:{value}"
        raise TypeError(f"{type(value).__name__} is not a JSON value")

    text = json.dumps(schema, indent=2, ensure_ascii=False, default=number)
    return _NUMBER.sub(r"\1", text)
