"""Python names for what a .wf file declares, and its types as Python annotations.

Each file of a program becomes one module of the generated package, named after the
file (``shared_types.wf`` -> ``shared_types``). A type written in a file is resolved
as the checker resolves it (``compiler.model``: its own types, then those of the
files it imports, ``alias.Type`` through an ``as alias`` import) to the module that
declares it; a module refers to another's types through ``from . import x as _x``.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, TypeVar, assert_never

from attrs import define, field, frozen

from wflang.compiler.program import Module, Program
from wflang.dsl import spec as sp
from wflang.dsl.types import PRIMITIVE_TYPES, GenericType, NamedType, OptionalType, TypeSpec

T = TypeVar("T")


class GenError(Exception):
    """The program cannot be written as Python (two files of one name, a clash)."""


#: The language's primitives as Python types (``wflang.handlers`` converts them).
PRIMITIVES = {
    "string": "str",
    "int": "int",
    "bool": "bool",
    "decimal": "decimal.Decimal",
    "duration": "datetime.timedelta",
    "timestamp": "datetime.datetime",
}


def py_name(name: str) -> str:
    """A field, parameter or member name as Python writes it (a keyword gets ``_``)."""
    return f"{name}_" if keyword.iskeyword(name) or keyword.issoftkeyword(name) else name


def camel(name: str) -> str:
    """``card_updated`` -> ``CardUpdated``; ``payments.charge`` -> ``PaymentsCharge``."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[._]+", name) if part)


def snake(name: str) -> str:
    """``payments.charge`` -> ``payments_charge``: a service as a method name."""
    return py_name(name.replace(".", "_"))


def module_name(path: str) -> str:
    """The generated module of a .wf file: its stem, made an identifier."""
    stem = re.sub(r"\W", "_", Path(path).stem) or "_"
    return py_name(f"_{stem}" if stem[0].isdigit() else stem)


@frozen
class Declared:
    """A record or enum: the file that declares it and its declaration."""

    path: str
    decl: sp.TypeDecl | sp.EnumDecl


@define
class Scope:
    """The types one file may write, by the names it writes them with."""

    path: str
    types: dict[str, Declared] = field(factory=dict)


def scope_of(module: Module, program: Program) -> Scope:
    """The types ``module`` sees: imported ones first (later imports win), its own last."""
    scope = Scope(module.path)
    for decl, target in module.imports:
        imported = program.modules.get(target) if target is not None else None
        if imported is None or imported.spec is None:
            continue
        for d in _type_decls(imported.spec):
            found = Declared(imported.path, d)
            if decl.alias is None:
                scope.types[d.name.text] = found
            else:
                scope.types[f"{decl.alias.text}.{d.name.text}"] = found
    assert module.spec is not None
    for d in _type_decls(module.spec):
        scope.types[d.name.text] = Declared(module.path, d)
    return scope


def _type_decls(spec: sp.WorkflowSpec) -> Iterator[sp.TypeDecl | sp.EnumDecl]:
    for d in spec.declarations:
        if isinstance(d, sp.TypeDecl | sp.EnumDecl):
            yield d


@define
class Imports:
    """What a generated module imports, gathered while its text is written."""

    here: str  # the path of the file the module is generated from
    stdlib: set[str] = field(factory=set)  # ``datetime``, ``decimal``, ``enum``
    modules: dict[str, str] = field(factory=dict)  # path -> module name
    handlers: set[str] = field(factory=set)  # names from ``wflang.handlers``
    typing: set[str] = field(factory=set)

    def ref(self, declared: Declared) -> str:
        """How this module writes a record or enum declared in ``declared.path``."""
        if declared.path == self.here:
            return declared.decl.name.text
        name = module_name(declared.path)
        self.modules[declared.path] = name
        return f"_{name}.{declared.decl.name.text}"

    def use(self, annotation: str) -> str:
        for module in ("datetime", "decimal", "enum"):
            if f"{module}." in annotation:
                self.stdlib.add(module)
        return annotation


class TypeVisitor(Protocol[T]):
    """What a generator makes of each form of a type (Python annotations, JSON Schema,
    TypeScript): ``walk_type`` is the one walk of a written type, and resolves the names
    of records and enums as the checker does."""

    def primitive(self, name: str) -> T: ...

    def list_of(self, item: T) -> T: ...

    def map_of(self, value: T) -> T: ...  # keys are strings

    def optional(self, inner: T) -> T: ...

    def declared(self, declared: Declared) -> T: ...


def walk_type(t: TypeSpec, scope: Scope, visitor: TypeVisitor[T]) -> T:
    """``t``, written in ``scope``'s file, as ``visitor`` makes it."""
    match t:
        case OptionalType():
            return visitor.optional(walk_type(t.inner, scope, visitor))
        case GenericType():
            inner = walk_type(t.args[-1], scope, visitor)
            return visitor.list_of(inner) if t.name == "list" else visitor.map_of(inner)
        case NamedType():
            if t.name in PRIMITIVE_TYPES:
                return visitor.primitive(t.name)
            found = scope.types.get(t.name)
            if found is None:  # the checker refuses an unknown type before this
                raise GenError(f"{scope.path}: unknown type '{t.name}'")
            return visitor.declared(found)
        case _:
            assert_never(t)


@frozen
class _Annotation:
    """A type as a Python annotation in the module of ``imports``."""

    imports: Imports

    def primitive(self, name: str) -> str:
        return self.imports.use(PRIMITIVES[name])

    def list_of(self, item: str) -> str:
        return f"list[{item}]"

    def map_of(self, value: str) -> str:
        return f"dict[str, {value}]"

    def optional(self, inner: str) -> str:
        return f"{inner} | None"

    def declared(self, declared: Declared) -> str:
        return self.imports.ref(declared)


def annotation(t: TypeSpec, scope: Scope, imports: Imports) -> str:
    """A type of ``scope``'s file as a Python annotation in the module of ``imports``."""
    return walk_type(t, scope, _Annotation(imports))
