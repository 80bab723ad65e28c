"""A field's default that is no literal (``100 / 3``, ``["a", "b"]``, ``2 * 60``) as a
Python expression of the generated class: computed as the runtime computes it
(``compiler.lower.constant``: the value a left-out field gets) and written for the
field's type, so that a class built without the field holds what the runtime would
fill in. A list is given by a factory (a default is never shared between instances);
a default no Python expression here can write (a record's) leaves the field required.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from decimal import Decimal

from attrs import frozen

from wflang.compiler.lower import constant
from wflang.compiler.model import Model
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.types import TypeSpec
from wflang.gen.names import Declared, Imports, Scope, py_name, py_string, walk_type

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
#: Writes a value of one type as Python, or None when it cannot.
Write = Callable[[object], str | None]


def computed_default(
    model: Model, e: ex.Expr, t: TypeSpec, scope: Scope, imports: Imports
) -> str | None:
    """The default ``e`` of a field of type ``t`` as the generated class writes it, or
    None (the field is required)."""
    try:
        value = constant(model, e)
    except ValueError:  # the checker lets no such default through
        return None
    written = walk_type(t, scope, _Literal(imports))(value)
    if written is None or written[:1] not in "[{":
        return written
    return "field(factory=list)" if written == "[]" else f"field(factory=lambda: {written})"


@frozen
class _Literal:
    """A type as the writer of its values (a ``TypeVisitor``)."""

    imports: Imports

    def primitive(self, name: str) -> Write:
        imports = self.imports

        def write(value: object) -> str | None:
            if name == "string":
                return py_string(value) if isinstance(value, str) else None
            if name == "bool" or isinstance(value, bool):
                return repr(value) if name == "bool" and isinstance(value, bool) else None
            if name == "decimal":
                return _decimal(value, imports)
            if not isinstance(value, int):
                return None
            if name == "int":
                return str(value)
            imports.stdlib.add("datetime")
            if name == "duration":
                return f"datetime.timedelta(milliseconds={value})"
            at = EPOCH + datetime.timedelta(milliseconds=value)  # a timestamp: epoch ms
            return f"datetime.datetime.fromisoformat({py_string(at.isoformat())})"

        return write

    def list_of(self, item: Write) -> Write:
        def write(value: object) -> str | None:
            if not isinstance(value, list):
                return None
            items = [item(v) for v in value]
            return None if None in items else f"[{', '.join(i for i in items if i)}]"

        return write

    def map_of(self, value: Write) -> Write:
        def write(data: object) -> str | None:
            if not isinstance(data, dict):
                return None
            entries = [(py_string(str(k)), value(v)) for k, v in data.items()]
            if any(v is None for _, v in entries):
                return None
            return "{" + ", ".join(f"{k}: {v}" for k, v in entries) + "}"

        return write

    def optional(self, inner: Write) -> Write:
        return lambda value: "None" if value is None else inner(value)

    def declared(self, declared: Declared) -> Write:
        if not isinstance(declared.decl, sp.EnumDecl):
            return lambda _: None  # a record: no literal writes one
        ref = self.imports.ref(declared)
        return lambda value: f"{ref}.{py_name(value)}" if isinstance(value, str) else None


def _decimal(value: object, imports: Imports) -> str | None:
    """A decimal (a Decimal, or a whole one as an int) exactly."""
    if not isinstance(value, int | Decimal):
        return None
    imports.stdlib.add("decimal")
    return f"decimal.Decimal({py_string(str(value))})"
