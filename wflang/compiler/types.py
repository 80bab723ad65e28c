"""The type system of expressions: types, assignability and inference.

Types are small frozen values. Records are named and their fields resolved on
demand, so recursive records need no special care. ``Unknown`` stands for a type
that could not be found (already reported elsewhere) and is assignable to and
from everything, so one mistake is reported once, not at every use.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import assert_never

from attrs import define, field, frozen

from wflang.compiler.null_facts import non_null_paths, null_checked_paths, path_of
from wflang.compiler.symbols import did_you_mean
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.span import Span

PRIMITIVES = ("string", "int", "decimal", "bool", "duration", "timestamp")
GENERICS = {"list": 1, "map": 2}


@frozen
class Prim:
    name: str

    def __str__(self) -> str:
        return self.name


@frozen
class ListT:
    elem: Type

    def __str__(self) -> str:
        return f"list[{self.elem}]"


@frozen
class MapT:
    key: Type
    value: Type

    def __str__(self) -> str:
        return f"map[{self.key}, {self.value}]"


@frozen
class Opt:
    inner: Type

    def __str__(self) -> str:
        return f"{self.inner}?"


@frozen
class Record:
    """A record type by name: a declared ``type``, or ``input``, a service result…"""

    name: str

    def __str__(self) -> str:
        return self.name


@frozen
class Enum:
    name: str

    def __str__(self) -> str:
        return self.name


@frozen
class EnumNamespace:
    """The type of a bare enum name, whose members are reached with a dot."""

    name: str

    def __str__(self) -> str:
        return f"enum {self.name}"


@frozen
class Unknown:
    def __str__(self) -> str:
        return "unknown"


Type = Prim | ListT | MapT | Opt | Record | Enum | EnumNamespace | Unknown

#: Where an expression was written: the expression and its span. Expressions compare
#: equal wherever they were written, so a typing keyed by the expression alone would give
#: two equal lambda bodies over items of different types one type (and one arithmetic).
Placed = tuple[ex.Expr, Span]


def place_of(e: ex.Expr) -> Placed:
    return (e, e.span)


# Annotated, since ``builtin_types`` imports them back while this module loads.
INT: Prim = Prim("int")
DECIMAL: Prim = Prim("decimal")
STRING: Prim = Prim("string")
BOOL: Prim = Prim("bool")
DURATION: Prim = Prim("duration")
TIMESTAMP: Prim = Prim("timestamp")
NULL: Prim = Prim("null")
UNKNOWN: Unknown = Unknown()
NUMERIC: tuple[Prim, Prim] = (INT, DECIMAL)


class Fit(enum.Enum):
    """How a value fits where it goes: fine, only if it is not null, or not at all."""

    OK = "ok"
    OPTIONAL = "optional"
    MISMATCH = "mismatch"


def fits(src: Type, dst: Type) -> Fit:
    """Whether a value of type ``src`` may be used where ``dst`` is expected."""
    if isinstance(src, Unknown) or isinstance(dst, Unknown) or src == dst:
        return Fit.OK
    if isinstance(dst, Opt):
        if src == NULL:
            return Fit.OK
        return fits(src.inner if isinstance(src, Opt) else src, dst.inner)
    if isinstance(src, Opt):
        return Fit.OPTIONAL if fits(src.inner, dst) is Fit.OK else Fit.MISMATCH
    if src == INT and dst == DECIMAL:
        return Fit.OK
    if isinstance(src, ListT) and isinstance(dst, ListT):
        return fits(src.elem, dst.elem)
    if isinstance(src, MapT) and isinstance(dst, MapT):
        worst = max((fits(src.key, dst.key), fits(src.value, dst.value)), key=_badness)
        return worst
    return Fit.MISMATCH


def _badness(f: Fit) -> int:
    return {Fit.OK: 0, Fit.OPTIONAL: 1, Fit.MISMATCH: 2}[f]


def strip(t: Type) -> Type:
    return t.inner if isinstance(t, Opt) else t


#: The kinds of problem of the list forms (issue 14), each reported by its own rule.
LIST_ELEMENT = "list-element"  # an aggregate of the wrong items, '+' of different lists
PREDICATE = "predicate"  # the body of a predicate is not a bool
PROJECTION = "projection"  # ``xs[*].f`` where the items have no field f
LAMBDA = "lambda"  # a lambda out of place, missing, or naming an existing name
ASSIGNEE = "assignee"  # a user or manual task's assignee that is not a string
#: The kinds of problem of a map's item variables and its ``collect`` (issue 14 item 2).
LOCAL_OUTSIDE = "local-outside"  # ``local`` where no map around declares variables
UNKNOWN_LOCAL = "unknown-local"  # ``local.x`` that the map does not declare
LOCAL_TYPE = "local-type"  # a variable written a value of another type
COLLECT_TYPE = "collect-type"  # items collected into a field that cannot hold them
#: The name the item variables are read by (``local.tries``), and held under at run time.
LOCAL_ROOT = "local"


@frozen
class TypeProblem:
    """A problem found while typing an expression: which kind, where, what."""

    kind: str  # "mismatch", "unknown-field", "optional", or one of the list kinds below
    message: str
    span: Span
    hint: str | None = None


@define
class TypeEnv:
    """Resolves type names and record fields for one workflow."""

    types: Mapping[str, sp.TypeDecl | sp.EnumDecl]
    records: dict[str, Mapping[str, sp.Field]] = field(factory=dict)  # synthetic records
    #: Anonymous records whose fields are typed already: a map's item output.
    shapes: dict[str, Mapping[str, Type]] = field(factory=dict)
    #: Records whose unknown fields are a problem of their own kind (an error's payload).
    kinds: dict[str, str] = field(factory=dict)
    #: Why a record has no such field, by (record, field): (kind of problem, reason).
    absent: dict[tuple[str, str], tuple[str, str]] = field(factory=dict)
    #: ``field_types`` of each record asked for: every read of a field asks (forgotten
    #: when the record is registered again).
    _typed: dict[str, Mapping[str, Type] | None] = field(factory=dict, init=False)

    def resolve(self, spec: ty.TypeSpec) -> Type:
        if isinstance(spec, ty.OptionalType):
            return Opt(self.resolve(spec.inner))
        if isinstance(spec, ty.GenericType):
            args = [self.resolve(a) for a in spec.args]
            if spec.name == "list" and len(args) == 1:
                return ListT(args[0])
            if spec.name == "map" and len(args) == 2:
                return MapT(args[0], args[1])
            return UNKNOWN
        if spec.name in PRIMITIVES:
            return Prim(spec.name)
        decl = self.types.get(spec.name)
        name = self.canonical(spec.name)
        if isinstance(decl, sp.EnumDecl):
            return Enum(name)
        if isinstance(decl, sp.TypeDecl):
            return Record(name)
        return UNKNOWN

    def canonical(self, name: str) -> str:
        """The name a declared type is known by: ``alias.Item`` is the type ``Item``
        unless this file's own ``Item`` hides it."""
        decl = self.types.get(name)
        own = decl is not None and self.types.get(decl.name.text) is decl
        return decl.name.text if own and decl is not None else name

    def record(self, name: str, fields: tuple[sp.Field, ...] | Mapping[str, sp.Field]) -> Record:
        """Register a synthetic record (``input``, a service result) and return its type."""
        if not isinstance(fields, Mapping):
            fields = {f.name.text: f for f in fields}
        self.records[name] = fields
        self._typed.pop(name, None)
        return Record(name)

    def shape(self, name: str, fields: Mapping[str, Type]) -> Record:
        """Register an anonymous record with typed fields and return its type."""
        self.shapes[name] = fields
        self._typed.pop(name, None)
        return Record(name)

    def field_types(self, record: Record) -> Mapping[str, Type] | None:
        """The types of a record's fields (None: no such record)."""
        if record.name in self.shapes:
            return self.shapes[record.name]
        if record.name in self._typed:
            return self._typed[record.name]
        fields = self.fields(record)
        typed = None if fields is None else {n: self.resolve(f.type) for n, f in fields.items()}
        self._typed[record.name] = typed
        return typed

    def conforms(self, src: Type, dst: Type) -> Fit:
        """``fits``, where also an anonymous record (``shapes``) fits a declared record
        with the same fields: every field it has is declared there and fits (a value
        that may be null fits only an optional field), and every field it lacks is
        optional there (it reads as null)."""
        fit = fits(src, dst)
        if fit is not Fit.MISMATCH:
            return fit
        if isinstance(dst, Opt):
            return self.conforms(strip(src), dst.inner)
        if isinstance(src, Opt):
            return Fit.OPTIONAL if self.conforms(src.inner, dst) is Fit.OK else Fit.MISMATCH
        if isinstance(src, ListT) and isinstance(dst, ListT):
            return self.conforms(src.elem, dst.elem)
        if not (isinstance(src, Record) and isinstance(dst, Record)) or src.name not in self.shapes:
            return Fit.MISMATCH
        have, want = self.shapes[src.name], self.field_types(dst)
        if want is None or not set(have) <= set(want):
            return Fit.MISMATCH
        for name, t in want.items():  # a field that may be null cannot be checked apart
            if name not in have and not isinstance(t, Opt):
                return Fit.MISMATCH
            if name in have and self.conforms(have[name], t) is not Fit.OK:
                return Fit.MISMATCH
        return Fit.OK

    def fields(self, record: Record) -> Mapping[str, sp.Field] | None:
        if record.name in self.records:
            return self.records[record.name]
        decl = self.types.get(record.name)
        if isinstance(decl, sp.TypeDecl):
            return {f.name.text: f for f in decl.fields}
        return None

    def enum_members(self, name: str) -> tuple[str, ...]:
        decl = self.types.get(name)
        return tuple(m.text for m in decl.members) if isinstance(decl, sp.EnumDecl) else ()


@define
class Inference:
    """Infers the type of expressions under a set of roots, collecting problems."""

    env: TypeEnv
    roots: Mapping[str, Type]
    problems: list[TypeProblem] = field(factory=list)
    checked: frozenset[str] = frozenset()  # paths known not to be null here
    #: When given, every expression inferred and its type (the lowering reads them).
    seen: dict[Placed, Type] | None = None

    def infer(self, e: ex.Expr) -> Type:
        t = _infer(self, e)
        if self.seen is not None:
            self.seen[place_of(e)] = t
        return t

    def expect(self, e: ex.Expr, want: Type, what: str) -> Type:
        """Infer ``e`` and report when it does not fit ``want``."""
        got = self.infer(e)
        fit = self.env.conforms(got, want)
        if fit is Fit.MISMATCH:
            self.problem("mismatch", f"{what} must be {want}, not {got}", e.span)
        elif fit is Fit.OPTIONAL and path_of(e) not in self.checked:
            self.problem(
                "optional",
                f"{what} may be null ({got}) where {want} is expected",
                e.span,
                hint=f"check it first ('{path_of(e)} != null and …') or use coalesce()",
            )
        return got

    def value(self, e: ex.Expr, what: str) -> Type:
        """Infer an operand that must not be null: report an unchecked ``T?``, give ``T``."""
        got = self.infer(e)
        if isinstance(got, Opt) and path_of(e) not in self.checked:
            self.problem(
                "optional",
                f"{what} may be null ({got})",
                e.span,
                hint=f"check it first ('{path_of(e)} != null and …') or use coalesce()",
            )
        return strip(got)

    def problem(self, kind: str, message: str, span: Span, hint: str | None = None) -> None:
        self.problems.append(TypeProblem(kind, message, span, hint))

    def guarded(self, paths: frozenset[str]) -> Inference:
        return Inference(self.env, self.roots, self.problems, self.checked | paths, self.seen)


def _ref(inf: Inference, e: ex.Ref) -> Type:
    if e.name in inf.roots:
        return inf.roots[e.name]
    if e.name in inf.env.types and isinstance(inf.env.types[e.name], sp.EnumDecl):
        return EnumNamespace(e.name)
    if e.name == LOCAL_ROOT and inf.roots:
        inf.problem(
            LOCAL_OUTSIDE,
            "'local' is read only in the body of a map that declares 'local { … }'",
            e.span,
            hint="declare the variable in the map: local { NAME: TYPE = … }",
        )
        return UNKNOWN
    if e.name == "error" and inf.roots:
        inf.problem(
            "error-unavailable",
            "no error is handled here: 'error' is read only in a node that 'on' routes lead to",
            e.span,
            hint="route the error here with 'on ERROR -> …' and reach this node no other way",
        )
        return UNKNOWN
    inf.problem(
        "unknown-field",
        f"unknown name '{e.name}'",
        e.span,
        hint=did_you_mean(e.name, inf.roots)
        or (
            f"names here: {', '.join(sorted(inf.roots))}"
            if inf.roots
            else "nothing can be read here: a default is a constant"  # only defaults have no roots
        ),
    )
    return UNKNOWN


def _member(inf: Inference, e: ex.Member) -> Type:
    if isinstance(e.target, ex.Ref) and e.target.name not in inf.roots:
        qualified = qualified_enum(inf, e.target.name, e.name, e.span)
        if qualified is not None:
            return qualified
    target = inf.infer(e.target)
    if isinstance(target, Unknown):
        return UNKNOWN
    if isinstance(target, EnumNamespace):
        members = inf.env.enum_members(target.name)
        if e.name in members:
            return Enum(inf.env.canonical(target.name))
        inf.problem(
            "unknown-field",
            f"enum {target.name} has no member '{e.name}'",
            e.span,
            hint=did_you_mean(e.name, members) or f"its members: {', '.join(members)}",
        )
        return UNKNOWN
    optional = isinstance(target, Opt)
    if optional and path_of(e.target) not in inf.checked:
        inf.problem(
            "optional",
            f"'{path_of(e.target)}' may be null ({target}) when '.{e.name}' is read",
            e.target.span,
            hint=f"check '{path_of(e.target)} != null and …' first",
        )
    base = strip(target)
    fields = inf.env.field_types(base) if isinstance(base, Record) else None
    if fields is None:
        inf.problem("unknown-field", f"{target} has no fields; '.{e.name}' is not defined", e.span)
        return UNKNOWN
    found = fields.get(e.name)
    record = base.name if isinstance(base, Record) else ""
    absent = inf.env.absent.get((record, e.name))
    if found is None and absent is not None:
        inf.problem(absent[0], f"'{path_of(e)}' cannot be read here: {absent[1]}", e.span)
        return UNKNOWN
    if found is None:
        inf.problem(
            inf.env.kinds.get(record, "unknown-field"),
            f"{base} has no field '{e.name}'",
            e.span,
            hint=did_you_mean(e.name, fields) or f"fields: {', '.join(fields) or 'none'}",
        )
        return UNKNOWN
    return found  # a null target is reported above, once


def _index(inf: Inference, e: ex.Index) -> Type:
    target = inf.value(e.target, "what is indexed")
    if isinstance(target, ListT):
        inf.expect(e.index, INT, "a list index")
        return target.elem
    if isinstance(target, MapT):
        inf.expect(e.index, target.key, "a map key")
        return Opt(target.value)
    if target == STRING:
        inf.expect(e.index, INT, "a string index")
        return STRING
    if not isinstance(target, Unknown):
        inf.problem("mismatch", f"{target} cannot be indexed", e.span)
    return UNKNOWN


def _unary(inf: Inference, e: ex.Unary) -> Type:
    if e.op == "not":
        inf.expect(e.operand, BOOL, "the operand of 'not'")
        return BOOL
    t = inf.value(e.operand, f"the operand of '{e.op}'")
    if t in NUMERIC or t == DURATION or isinstance(t, Unknown):
        return t
    inf.problem("mismatch", f"'{e.op}' needs a number or a duration, not {t}", e.span)
    return UNKNOWN


#: (op, left, right) -> result for the arithmetic that is allowed.
_ARITHMETIC: dict[tuple[str, Type, Type], Type] = {}
for _op in "+-*/%":
    for _l in NUMERIC:
        for _r in NUMERIC:
            _ARITHMETIC[_op, _l, _r] = INT if _l == _r == INT and _op != "/" else DECIMAL
_ARITHMETIC.update({
    ("+", STRING, STRING): STRING,
    ("+", DURATION, DURATION): DURATION,
    ("-", DURATION, DURATION): DURATION,
    ("+", TIMESTAMP, DURATION): TIMESTAMP,
    ("-", TIMESTAMP, DURATION): TIMESTAMP,
    ("-", TIMESTAMP, TIMESTAMP): DURATION,
    ("*", DURATION, INT): DURATION,
    ("*", INT, DURATION): DURATION,
    ("/", DURATION, INT): DURATION,
})  # fmt: skip
_ORDERED = (INT, DECIMAL, STRING, DURATION, TIMESTAMP)


def _binary(inf: Inference, e: ex.Binary) -> Type:
    op = e.op
    if op in ("and", "or"):
        inf.expect(e.left, BOOL, f"the left side of '{op}'")
        facts = non_null_paths(e.left) if op == "and" else null_checked_paths(e.left)
        rhs = inf.guarded(facts)
        rhs.expect(e.right, BOOL, f"the right side of '{op}'")
        return BOOL
    if op in ("==", "!="):  # comparing with null is how null is checked
        left, right = inf.infer(e.left), inf.infer(e.right)
    elif op in ("in", "not in"):
        left, right = inf.infer(e.left), inf.value(e.right, f"the right side of '{op}'")
    else:
        left = inf.value(e.left, f"the left side of '{op}'")
        right = inf.value(e.right, f"the right side of '{op}'")
    if isinstance(left, Unknown) or isinstance(right, Unknown):
        return BOOL if op in ex.BINARY_PRECEDENCE and ex.BINARY_PRECEDENCE[op] == 4 else UNKNOWN
    if op in ("==", "!="):
        if fits(left, right) is Fit.MISMATCH and fits(right, left) is Fit.MISMATCH:
            inf.problem("mismatch", f"{left} and {right} cannot be compared with '{op}'", e.span)
        return BOOL
    if op in ("<", "<=", ">", ">="):
        lt, rt = strip(left), strip(right)
        if not ((lt in NUMERIC and rt in NUMERIC) or (lt == rt and lt in _ORDERED)):
            inf.problem("mismatch", f"{left} and {right} cannot be ordered with '{op}'", e.span)
        return BOOL
    if op in ("in", "not in"):
        container = strip(right)
        if isinstance(container, ListT):
            ok = fits(left, container.elem) is not Fit.MISMATCH
        elif isinstance(container, MapT):
            ok = fits(left, container.key) is not Fit.MISMATCH
        else:
            ok = container == STRING and strip(left) == STRING
        if not ok:
            kind = LIST_ELEMENT if isinstance(container, ListT) else "mismatch"
            inf.problem(kind, f"'{op}' cannot look for {left} in {right}", e.span)
        return BOOL
    if op == "+" and isinstance(strip(left), ListT) and isinstance(strip(right), ListT):
        return concat_type(inf, e, left, right)
    result = _ARITHMETIC.get((op, strip(left), strip(right)))
    if result is None:
        inf.problem("mismatch", f"'{op}' does not apply to {left} and {right}", e.span)
        return UNKNOWN
    return result


def _list(inf: Inference, e: ex.ListLit) -> Type:
    """A list of the narrowest type all its items fit: ``[1, 2.5]`` is ``list[decimal]``,
    ``[1, null]`` is ``list[int?]``."""
    if not e.items:
        return ListT(UNKNOWN)
    elem = inf.infer(e.items[0])
    for item in e.items[1:]:
        got = inf.infer(item)
        wider = widen(elem, got)
        if wider is None:
            inf.problem("mismatch", f"every item of a list must be {elem}, not {got}", item.span)
        else:
            elem = wider
    return ListT(elem)


def widen(common: Type, got: Type) -> Type | None:
    """The narrowest type both ``common`` and ``got`` fit, as for the items of a list
    literal (``int`` and ``decimal`` give ``decimal``, ``T`` and null ``T?``); None if none."""
    if fits(got, common) is Fit.OK:
        return common
    both = (got, _optional(common), _optional(got))
    return next((t for t in both if fits(common, t) is Fit.OK and fits(got, t) is Fit.OK), None)


def _optional(t: Type) -> Type:
    if t == NULL:
        return t
    return t if isinstance(t, Opt) else Opt(t)


# The builtins and the list forms are typed beside the builtins' table; they use
# the classes above, so they are imported after them.
from wflang.compiler.builtin_types import (  # noqa: E402
    call_type,
    concat_type,
    lambda_out_of_place,
    project_type,
)
from wflang.compiler.qualified import qualified_enum  # noqa: E402


def _infer(inf: Inference, e: ex.Expr) -> Type:
    """The type of one expression, by its kind (paths and operators first: the most common)."""
    match e:
        case ex.Member():
            return _member(inf, e)
        case ex.Ref():
            return _ref(inf, e)
        case ex.Binary():
            return _binary(inf, e)
        case ex.Unary():
            return _unary(inf, e)
        case ex.Call():
            return call_type(inf, e)
        case ex.Project():
            return project_type(inf, e)
        case ex.Lambda():
            return lambda_out_of_place(inf, e)
        case ex.Index():
            return _index(inf, e)
        case ex.ListLit():
            return _list(inf, e)
        case ex.IntLit():
            return INT
        case ex.DecimalLit():
            return DECIMAL
        case ex.StringLit():
            return STRING
        case ex.BoolLit():
            return BOOL
        case ex.NullLit():
            return NULL
        case ex.DurationLit():
            return DURATION
        case ex.TimestampLit():
            return TIMESTAMP
        case _:
            assert_never(e)
