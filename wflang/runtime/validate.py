"""Checking values from outside against the workflow's declared types.

A start input, a signal's payload, the output a person gives a human task and
the output an operator forces on a step all come from outside the workflow;
they are checked here, deeply, before anything is stored: required fields
present, no unknown fields, scalars of the right kind, enum members, records
by their fields, and every element of lists and maps. The table carries the
types as written (``list[Item]``, ``decimal?``) and the declarations they name.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from wflang.runtime.failures import RUNTIME_ERRORS
from wflang.runtime.ir import Value, evaluate
from wflang.runtime.numbers import canonical, fits
from wflang.runtime.table import FieldType, Table, Types
from wflang.runtime.times import FORMS, typed_fields
from wflang.runtime.waiting import Wait
from wflang.runtime.waiting import parse as parse_waiting

_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "int": (int,),
    "decimal": (int, Decimal, float),  # a JSON number ("12.5" is a string)
    "bool": (bool,),
    "duration": (int,),
    "timestamp": (int,),
}
#: How values of the types the runtime keeps as numbers are written in JSON.
_UNITS = {name: f" ({form})" for name, form in FORMS.items()}
_MAX_DEPTH = 64
#: Kept as 64-bit integers by the stores (due times, wake-ups).
_INT64 = ("int", "duration", "timestamp")


#: The largest value accepted from outside, as compact JSON: every value a person or
#: another system sends is kept in the instance's history (and often its context), and
#: an instance is stored whole after every step.
MAX_VALUE_BYTES = 256 * 1024


class InvalidValue(ValueError):
    """A value from outside does not fit the declared type; ``problems`` lists why.
    Nothing was stored. The engine, the test kit and the durable client all say it so."""

    def __init__(self, what: str, problems: Sequence[str]) -> None:
        super().__init__(f"{what} does not fit: " + "; ".join(problems))
        self.problems = tuple(problems)


def validate_input(table: Table, data: Mapping[str, Value]) -> list[str]:
    """Problems with a start input, in words; empty when it fits."""
    fields = tuple(FieldType(f.name, f.type, f.default is not None) for f in table.input)
    return _sized(data, "input") or validate_fields(table.types, fields, data, "input")


def validate_signal(table: Table, kind: str, name: str, payload: Mapping[str, Value]) -> list[str]:
    """Problems with a signal's (or message's: ``kind`` is the ``Wait`` it answers) name
    and payload."""
    shapes = table.types.signals if kind == Wait.SIGNAL else table.types.messages
    for shape in shapes:
        if shape.name == name:
            where = f"{kind} {name}"
            return _sized(payload, where) or validate_fields(
                table.types, shape.fields, payload, where
            )
    known = ", ".join(s.name for s in shapes) or "none"
    return [f"{table.workflow} declares no {kind} '{name}' ({kind}s: {known})"]


def publication_problems(
    tables: Iterable[Table], message: str, payload: Mapping[str, Value]
) -> list[str] | None:
    """Why a message cannot be published: versions may declare it differently, and it
    must fit one of them (then ``[]``), else every version's problems, sorted; None when
    no version declares it."""
    declaring = [t for t in tables if any(m.name == message for m in t.types.messages)]
    if not declaring:
        return None
    refusals = [validate_signal(t, Wait.MESSAGE, message, payload) for t in declaring]
    return sorted({p for r in refusals for p in r}) if all(refusals) else []


def validate_result(table: Table, state: str, output: Mapping[str, Value]) -> list[str]:
    """Problems with the output given to a step (a human task's form, a service's result)."""
    declared = _results(table).get(state)
    where = f"output of {state}"
    if declared is not None:
        fields = declared[0]
        return _sized(output, where) or validate_fields(table.types, fields, output, where)
    if output:
        return [f"{state} declares no output, but fields were given: {', '.join(output)}"]
    return []


def undeclared_error(table: Table, state: int, error: str) -> str | None:
    """Why a service task's failure named ``error`` is an invalid result, or None.

    A service that declares its errors (``raises``) is a contract: a workflow routes
    a declared error its services cannot raise nowhere (``wf check`` says so), so its
    handler failing the task with one is a bug in the handler, seen by the routes as
    ``InvalidResult``. Names the workflow does not declare (a crashing handler's
    exception class) cannot be routed by name and are left as they are."""
    entry = table.states[state].entry
    raises: tuple[str, ...] | None = getattr(entry, "raises", None)
    if raises is None or error in raises or error in RUNTIME_ERRORS:
        return None
    if error not in table.errors:
        return None
    service = getattr(entry, "service", None)
    declared = ", ".join(raises) or "nothing"
    if service is None:  # a user or manual task: what its person may raise
        return f"the task failed with {error}, which it does not raise (it raises {declared})"
    return (
        f"the handler of {service} failed with {error}, which {service} does not raise"
        f" (it raises {declared})"
    )


def check_error_payload(
    table: Table, error: str, payload: Mapping[str, object] | None
) -> tuple[dict[str, Value] | None, list[str]]:
    """A failure's payload in the runtime's form (defaults filled in), and the problems
    with it: an error declared with a payload must come with one that fits its fields
    (no field beyond them); one declared without gets none. An error the workflow does
    not declare is no business of its routes: its payload is dropped."""
    shape = next((s for s in table.types.errors if s.name == error), None)
    where = f"payload of {error}"
    if shape is None:
        if payload and error in table.errors:
            return None, [f"{error} declares no payload, but one was given: {', '.join(payload)}"]
        return None, []
    value, problems = exact({} if payload is None else payload, where)
    if not problems:
        assert isinstance(value, dict)
        problems = _sized(value, where) or validate_fields(table.types, shape.fields, value, where)
    if problems:
        return None, [p if where in p else f"{p} in the {where}" for p in problems]
    assert isinstance(value, dict)
    filled = _fill(table, shape.fields, value, 0)
    assert isinstance(filled, dict)
    return filled, []


def raised_on_task(
    table: Table, state: str, error: str, payload: Mapping[str, object] | None
) -> tuple[dict[str, Value] | None, list[str]]:
    """An error a person raises on a human task, checked like a form before anything is
    stored: it must be one the task ``raises``, with a payload that fits its fields."""
    entry = table.states[table.state_id(state)].entry
    raises: tuple[str, ...] = getattr(entry, "raises", None) or ()
    if error not in raises:
        close = difflib.get_close_matches(error, raises, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        declared = ", ".join(raises) or "nothing"
        return None, [f"{state} does not raise '{error}' (it raises {declared}){hint}"]
    shape = next((s for s in table.types.errors if s.name == error), None)
    if shape is not None and isinstance(payload, Mapping):  # as in a form: ISO-8601 times
        payload = typed_fields(table.types, shape.fields, payload)  # type: ignore[arg-type]
    return check_error_payload(table, error, payload)


def _sized(value: object, where: str) -> list[str]:
    """A problem when the value is larger than ``MAX_VALUE_BYTES`` as JSON."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except TypeError:  # not JSON-like at all: the field checks say why
        return []
    except ValueError:  # an int that Python will not write as text
        return [f"the {where} holds a number of more than {sys.get_int_max_str_digits():,} digits"]
    try:
        size = len(text.encode())
    except UnicodeEncodeError as err:  # a lone surrogate: no store or JSON reader takes it
        bad = err.object[err.start : err.end].encode("unicode_escape").decode()
        return [f"the {where} holds text that is not valid Unicode ({bad})"]
    if size <= MAX_VALUE_BYTES:
        return []
    return [f"the {where} is {size:,} bytes as JSON; the limit is {MAX_VALUE_BYTES:,}"]


#: A quick check of a result: (name, accepted types, optional, has a default) per
#: declared field when every field is a scalar; None when some field needs the full check.
_Plan = tuple[tuple[str, tuple[type, ...], bool, bool], ...]
#: A step's declared result: its fields, their quick check, and whether a default may
#: fill a field of it or of a record it holds (most results have none: nothing to walk).
_Declared = tuple[tuple[FieldType, ...], _Plan | None, bool]


def _results(table: Table) -> dict[str, _Declared]:
    """The declared result of each step, by step name, with its quick check: made once
    per table and kept with it (``Table.memo``)."""
    memo = table.memo
    results: dict[str, _Declared] | None = memo.results  # type: ignore[assignment]
    if results is None:
        results = {
            s.name: (s.fields, _plan(s.fields), _has_defaults(table, s.fields))
            for s in table.types.results
        }
        memo.results = results
    return results


def _plan(fields: Sequence[FieldType]) -> _Plan | None:
    plan = tuple(
        (f.name, _SCALARS[t.removesuffix("?")], t.endswith("?"), f.has_default)
        for f in fields
        for t in (f.type.strip(),)
        if t.removesuffix("?") in _SCALARS and t.removesuffix("?") not in ("bool", "decimal")
    )
    return plan if len(plan) == len(fields) else None


def check_handler_result(
    table: Table, state: str, result: Mapping[str, object]
) -> tuple[dict[str, Value], list[str]]:
    """What a service handler returned, in the runtime's one form of values (``exact``),
    and the problems with it: the one check of every engine and store, so that a value
    it lets through is one the step can use (a JSON float for a decimal field becomes
    an exact decimal, not a float that fails the next ``+``).

    ``result`` is the caller's own (``outcome.returned`` copies what a handler returned,
    a store decodes it): a result already in that form comes back as it is, not copied."""
    if _plain(result):  # the usual case
        output: dict[str, Value] = result if type(result) is dict else dict(result)  # type: ignore[arg-type]
    else:
        value, problems = exact(result, f"result of {state}")
        if problems:
            return {}, [f"{p} in the result of {state}" for p in problems]
        assert isinstance(value, dict)
        output = value
    declared = _results(table).get(state)
    if declared is None:
        return output, []
    problems = _result_problems(table, state, declared, output)
    if not problems and declared[2]:
        filled = _fill(table, declared[0], output, 0)  # a copy where a default goes
        assert isinstance(filled, dict)
        output = filled
    return output, problems


def with_defaults(
    table: Table, fields: Sequence[FieldType], record: dict[str, Value]
) -> dict[str, Value]:
    """``record`` (already checked against ``fields``) with the defaults of the fields it
    leaves out, at any depth: a field with a default is never read as null. The same
    object when nothing was missing."""
    filled = _fill(table, fields, record, 0)
    assert isinstance(filled, dict)
    return filled


def input_with_defaults(table: Table, data: dict[str, Value]) -> dict[str, Value]:
    """A start input (already checked) with its defaults, in it and in its records."""
    fields = [FieldType(f.name, f.type, f.default is not None, f.default) for f in table.input]
    return with_defaults(table, fields, data)


def payload_with_defaults(
    table: Table, kind: str, name: str, payload: dict[str, Value]
) -> dict[str, Value]:
    """A signal's or message's payload (already checked) with its defaults."""
    shapes = table.types.signals if kind == Wait.SIGNAL else table.types.messages
    for shape in shapes:
        if shape.name == name:
            return with_defaults(table, shape.fields, payload)
    return payload


def result_with_defaults(table: Table, state: str, output: dict[str, Value]) -> dict[str, Value]:
    """A step's output from outside (a human task's form, already checked) with the
    defaults of its declared fields."""
    declared = _results(table).get(state)
    if declared is None or not declared[2]:
        return output
    return with_defaults(table, declared[0], output)


def forced_output_problems(
    table: Table, step: str, waiting: str, output: Mapping[str, Value]
) -> list[str]:
    """Problems with the output an operator finishes a waiting ``step`` with: what it
    waits for, as if it had arrived (a signal's or a message's payload, else the
    step's declared result)."""
    wait = parse_waiting(waiting)
    if wait.kind in (Wait.SIGNAL, Wait.MESSAGE):
        return validate_signal(table, wait.kind.value, wait.name, output)
    return validate_result(table, step, output)


def _has_defaults(table: Table, fields: Sequence[FieldType]) -> bool:
    records = {r.name: r.fields for r in table.types.records}
    seen: set[str] = set()
    todo = [fields]
    while todo:
        group = todo.pop()
        if any(f.default is not None for f in group):
            return True
        for f in group:
            for name in _type_names(f.type):
                if name in records and name not in seen:
                    seen.add(name)
                    todo.append(records[name])
    return False


def _type_names(type_text: str) -> list[str]:
    """The names a type is written with: ``map[string, list[Item]]?`` gives map,
    string, list, Item."""
    for ch in "[],?":
        type_text = type_text.replace(ch, " ")
    return type_text.split()


def _fill(table: Table, fields: Sequence[FieldType], record: dict[str, Value], depth: int) -> Value:
    """A record (checked against ``fields``) with the defaults of the fields it leaves
    out, in it and in the records it holds; the same object when nothing was missing."""
    out = record
    for f in fields:
        if f.name not in record:
            if f.default is not None:
                out = dict(record) if out is record else out
                out[f.name] = evaluate(table.expressions[f.default], {})
            continue
        value = record[f.name]
        new = _fill_value(table, f.type, value, depth + 1)
        if new is not value:
            out = dict(record) if out is record else out
            out[f.name] = new
    return out


def _fill_value(table: Table, type_text: str, value: Value, depth: int) -> Value:
    type_text = type_text.strip().removesuffix("?")
    if value is None or depth > _MAX_DEPTH or type_text in _SCALARS:
        return value
    if type_text.startswith("list[") and isinstance(value, list):
        items = [_fill_value(table, type_text[5:-1], v, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if type_text.startswith("map[") and isinstance(value, dict):
        inner = _split_pair(type_text[4:-1])[2]
        entries = {k: _fill_value(table, inner, v, depth + 1) for k, v in value.items()}
        return value if all(entries[k] is v for k, v in value.items()) else entries
    for record in table.types.records:
        if record.name == type_text and isinstance(value, dict):
            return _fill(table, record.fields, value, depth)
    return value


def _plain(record: Mapping[str, object]) -> bool:
    """Whether a record holds only strings, booleans, nulls and 64-bit ints by string
    keys: already in the runtime's form (and quicker to tell than to walk)."""
    for k, v in record.items():
        t = type(v)
        if t is int:
            if not -9_223_372_036_854_775_808 <= v <= 9_223_372_036_854_775_807:  # type: ignore[operator]
                return False
        elif t is not str and t is not bool and v is not None:
            return False
        if type(k) is not str:
            return False
    return True


def exact(value: object, where: str = "value") -> tuple[Value, list[str]]:
    """A value from outside in the one form the runtime keeps (``wflang.runtime.numbers``):
    a float as the decimal it reads as (``420.1``, not ``420.099999...``), a whole
    decimal without fractional digits as an int, a tuple as a list; and the problems of
    what is no JSON value (a datetime, a set, bytes, NaN, a key that is not a string),
    anywhere in it. The same value, unchanged, when it is already in that form."""
    problems: list[str] = []
    result = _exact(value, where, problems, 0)
    return result, problems


def _exact(value: object, where: str, problems: list[str], depth: int) -> Value:
    t = type(value)
    if t is str or t is bool or value is None:
        return value  # type: ignore[return-value]
    if t is int:
        if not -(2**63) <= value < 2**63:  # type: ignore[operator]
            problems.append(
                f"'{where}' is a whole number beyond 64 bits"
                " (write a larger decimal with a point or an exponent)"
            )
        return value  # type: ignore[return-value]
    if t is float or t is Decimal:
        number = Decimal(repr(value)) if t is float else value
        assert isinstance(number, Decimal)
        why = fits(number)
        if why is not None:
            problems.append(f"'{where}' {why}")
            return None
        return canonical(number)
    if depth >= _MAX_DEPTH:
        problems.append(f"'{where}' is nested too deeply")
        return None
    if t is dict:
        assert isinstance(value, dict)
        out: dict[str, Value] = {}
        same = True
        for k, v in value.items():
            if type(k) is not str:
                problems.append(f"'{where}' has a key that is not a string: {k!r}")
                continue
            new = _exact(v, f"{where}.{k}" if depth else k, problems, depth + 1)
            same = same and new is v
            out[k] = new
        return value if same else out
    if t is list or t is tuple:
        assert isinstance(value, list | tuple)
        items = [_exact(v, f"{where}[{i}]", problems, depth + 1) for i, v in enumerate(value)]
        same = t is list and all(a is b for a, b in zip(items, value, strict=True))
        return value if same else items  # type: ignore[return-value]
    problems.append(f"'{where}' is a {t.__name__}, not a JSON value")
    return None


def validate_handler_result(table: Table, state: str, result: Mapping[str, Value]) -> list[str]:
    """Problems with what a service handler returned: the declared fields must be there
    with their types; fields beyond them are let through (a handler may return a whole
    API response), since nothing can read them (``wf check`` refuses such reads)."""
    declared = _results(table).get(state)
    return [] if declared is None else _result_problems(table, state, declared, result)


def _result_problems(
    table: Table, state: str, declared: _Declared, result: Mapping[str, Value]
) -> list[str]:
    fields, plan, _ = declared
    if plan is not None and _fits(plan, result):  # the usual case, without any message
        return []
    return validate_fields(table.types, fields, result, f"result of {state}", extra=True)


def _fits(plan: _Plan, data: Mapping[str, Value]) -> bool:
    """A quick yes for a result whose declared fields (all scalars) are present with
    their type (extra fields allowed); False means: run the full check for the words."""
    if not isinstance(data, dict):
        return False
    for name, kinds, optional, has_default in plan:
        value = data.get(name, _MISSING)
        if value is _MISSING:
            if not (optional or has_default):
                return False
        elif value is None:
            if not optional:
                return False
        elif not isinstance(value, kinds) or isinstance(value, bool):
            return False
    return True


_MISSING = object()


def validate_fields(
    types: Types, fields: Sequence[FieldType], data: object, where: str, *, extra: bool = False
) -> list[str]:
    """Problems with an object given for these fields (JSON from outside: any shape);
    ``extra``: fields that are not declared are allowed, here and in nested records."""
    if not isinstance(data, Mapping):
        return [f"{where} must be an object, not {_kind(data)}"]
    problems: list[str] = []
    declared = {f.name: f for f in fields}
    for name in data if not extra else ():
        if name not in declared:
            known = ", ".join(declared) or "none"
            problems.append(
                f"unknown input field '{name}' (fields: {known})"
                if where == "input"
                else f"unknown field '{name}' in {where} (fields: {known})"
            )
    for name, f in declared.items():
        if name not in data:
            if not f.type.endswith("?") and not f.has_default:
                problems.append(
                    f"missing input field '{name}' ({f.type})"
                    if where == "input"
                    else f"missing field '{name}' ({f.type}) in {where}"
                )
            continue
        problems.extend(_check(types, data[name], f.type, name, 0, extra))
    return problems


def _check(
    types: Types, value: Value, type_text: str, where: str, depth: int, extra: bool
) -> list[str]:
    if depth > _MAX_DEPTH:
        return [f"'{where}' is nested too deeply"]
    type_text = type_text.strip()
    if type_text.endswith("?"):
        if value is None:
            return []
        type_text = type_text[:-1]
    if value is None:
        return [f"'{where}' is null but its type {type_text} is not optional"]
    if type_text in _SCALARS:
        ok = isinstance(value, _SCALARS[type_text]) and not (
            isinstance(value, bool) and type_text != "bool"
        )
        if ok and isinstance(value, Decimal | float):
            if not _is_finite(value):
                return [f"'{where}' must be a finite {type_text}, not {value}"]
            why = fits(_decimal_of(value))
            if why is not None:
                return [f"'{where}' {why}"]
        elif ok and type(value) is int and not -(2**63) <= value < 2**63:
            if type_text == "decimal":
                return [
                    f"'{where}' is a whole number beyond 64 bits"
                    " (write a larger decimal with a point or an exponent)"
                ]
            if type_text in _INT64:
                return [f"'{where}' is out of range for {type_text} (64 bits)"]
        unit = _UNITS.get(type_text, "")
        return [] if ok else [f"'{where}' must be {type_text}{unit}, not {_kind(value)}"]
    if type_text.startswith("list[") and type_text.endswith("]"):
        if not isinstance(value, list):
            return [f"'{where}' must be a list, not {_kind(value)}"]
        inner = type_text[5:-1]
        return [
            p
            for i, v in enumerate(value)
            for p in _check(types, v, inner, f"{where}[{i}]", depth + 1, extra)
        ]
    if type_text.startswith("map[") and type_text.endswith("]"):
        if not isinstance(value, dict):
            return [f"'{where}' must be a map, not {_kind(value)}"]
        _, _, inner = _split_pair(type_text[4:-1])
        return [
            p
            for k, v in value.items()
            for p in _check(types, v, inner, f"{where}[{k!r}]", depth + 1, extra)
        ]
    for enum in types.enums:
        if enum.name == type_text:
            if isinstance(value, str) and value in enum.members:
                return []
            return [f"'{where}' must be one of {', '.join(enum.members)}, not {value!r}"]
    for record in types.records:
        if record.name == type_text:
            if not isinstance(value, dict):
                return [f"'{where}' must be a {type_text} record, not {_kind(value)}"]
            problems = validate_fields(types, record.fields, value, f"'{where}'", extra=extra)
            return problems
    return []  # a type the table does not describe (an imported alias): not checked here


def _split_pair(text: str) -> tuple[str, str, str]:
    depth = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            return text[:i].strip(), ",", text[i + 1 :].strip()
    return text, "", "string"


def _decimal_of(value: Decimal | float) -> Decimal:
    """The decimal a JSON number reads as (a float's shortest repr: ``420.1``)."""
    return Decimal(repr(value)) if isinstance(value, float) else value


def _is_finite(value: Decimal | float) -> bool:
    return Decimal(value).is_finite() if isinstance(value, float) else value.is_finite()


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    if isinstance(value, Decimal | float):
        return "decimal"
    return type(value).__name__
