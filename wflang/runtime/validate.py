"""Values from outside against the workflow's declared types, at every entry point.

A start input, a signal's or a message's payload, the output a person gives a human
task, the output an operator forces on a step, a handler's result and an error's
payload all come from outside the workflow. Each entry point (the engine, the test kit,
the durable client, the stores committing a worker's result) takes such a value through
one function here, before anything is stored: the value in the runtime's form (time text
read as milliseconds, defaults where the step would not fill them) and its problems, in
words naming the field's path. The shape is found in ``runtime.shapes`` and the value is
walked by ``runtime.fit``; both once, for every kind.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from wflang.runtime.failures import RUNTIME_ERRORS
from wflang.runtime.fit import MAX_DEPTH, fit
from wflang.runtime.ir import Value
from wflang.runtime.numbers import canonical, fits
from wflang.runtime.shapes import Declared, Plan, shapes
from wflang.runtime.table import Table
from wflang.runtime.waiting import Wait
from wflang.runtime.waiting import parse as parse_waiting

#: The largest value accepted from outside, as compact JSON: every value a person or
#: another system sends is kept in the instance's history (and often its context), and
#: an instance is stored whole after every step.
MAX_VALUE_BYTES = 256 * 1024
#: A value from outside in the runtime's form, and the problems with it (none: it fits;
#: else the value is not to be used).
Fitted = tuple[dict[str, Value], list[str]]


class InvalidValue(ValueError):
    """A value from outside does not fit the declared type; ``problems`` lists why.
    Nothing was stored. The engine, the test kit and the durable client all say it so."""

    def __init__(self, what: str, problems: Sequence[str]) -> None:
        super().__init__(f"{what} does not fit: " + "; ".join(problems))
        self.problems = tuple(problems)


def _fit(
    table: Table, declared: Declared, data: Mapping[str, Value], where: str, *, fill: bool
) -> Fitted:
    problems = _sized(data, where)
    if problems:
        return {}, problems
    return fit(table, declared.fields, data, where, fill=fill)


def fit_input(table: Table, data: Mapping[str, Value]) -> Fitted:
    """A start input (or a replay's new one) with its time text read; its defaults are
    the step's to fill (``settled``), so that the history keeps the input as given."""
    return _fit(table, shapes(table).input, data, "input", fill=False)


def fit_payload(table: Table, kind: str, name: str, payload: Mapping[str, Value]) -> Fitted:
    """A signal's (or a message's: ``kind`` is the ``Wait`` it answers) payload with its
    time text read; its defaults are filled where it arrives, by the version that takes
    it (a message published by correlation reaches versions that declare it apart)."""
    declared = shapes(table).payload(kind)
    found = declared.get(name)
    if found is None:
        known = ", ".join(declared) or "none"
        return {}, [f"{table.workflow} declares no {kind} '{name}' ({kind}s: {known})"]
    return _fit(table, found, payload, f"{kind} {name}", fill=False)


def fit_output(table: Table, state: str, output: Mapping[str, Value], *, fill: bool) -> Fitted:
    """The output given to a step (a human task's form, ``fill``ed before it is stored;
    an operator's forced output, filled by the step) with its time text read."""
    declared = shapes(table).results.get(state)
    if declared is None:
        problems = (
            [f"{state} declares no output, but fields were given: {', '.join(output)}"]
            if output
            else []
        )
        return {}, problems
    return _fit(table, declared, output, f"output of {state}", fill=fill)


def fit_forced(table: Table, step: str, waiting: str, output: Mapping[str, Value]) -> Fitted:
    """The output an operator finishes a waiting ``step`` with: what it waits for, as if
    it had arrived (a signal's or a message's payload, else the step's declared result)."""
    wait = parse_waiting(waiting)
    if wait.kind in (Wait.SIGNAL, Wait.MESSAGE):
        return fit_payload(table, wait.kind.value, wait.name, output)
    return fit_output(table, step, output, fill=False)


def taken(table: Table, message: str, payload: Mapping[str, Value]) -> dict[str, Value] | None:
    """A published message's payload as this version takes it (its time text read), or
    None when it does not fit this version's declaration of the message."""
    value, problems = fit_payload(table, Wait.MESSAGE, message, payload)
    return None if problems else value


def publication_problems(
    tables: Iterable[Table], message: str, payload: Mapping[str, Value]
) -> list[str] | None:
    """Why a message cannot be published: versions may declare it differently, and it
    must fit one of them (then ``[]``), else every version's problems, sorted; None when
    no version declares it."""
    declaring = [t for t in tables if message in shapes(t).messages]
    if not declaring:
        return None
    refusals = [fit_payload(t, Wait.MESSAGE, message, payload)[1] for t in declaring]
    return sorted({p for r in refusals for p in r}) if all(refusals) else []


def settled(table: Table, declared: Declared | None, data: dict[str, Value]) -> dict[str, Value]:
    """A value already taken at its entry point, as the step keeps it: its defaults
    filled at any depth (and any time text read); the same object when its shape has
    neither (most have not: nothing to walk)."""
    if declared is None or not declared.changes:
        return data
    return fit(table, declared.fields, data, "value", fill=True)[0]


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
    """A failure's payload in the runtime's form (time text read, defaults filled in), and
    the problems with it: an error declared with a payload must come with one that fits
    its fields (no field beyond them); one declared without gets none. An error the
    workflow does not declare is no business of its routes: its payload is dropped."""
    declared = shapes(table).errors.get(error)
    where = f"payload of {error}"
    if declared is None:
        if payload and error in table.errors:
            return None, [f"{error} declares no payload, but one was given: {', '.join(payload)}"]
        return None, []
    value, problems = exact({} if payload is None else payload, where)
    if not problems:
        assert isinstance(value, dict)
        value, problems = _fit(table, declared, value, where, fill=True)
    if problems:
        return None, [p if where in p else f"{p} in the {where}" for p in problems]
    assert isinstance(value, dict)
    return value, []


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


def check_handler_result(
    table: Table, state: str, result: Mapping[str, object]
) -> tuple[dict[str, Value], list[str]]:
    """What a service handler returned, in the runtime's one form of values (``exact``,
    time text read, defaults filled), and the problems with it: the one check of every
    engine and store, so that a value it lets through is one the step can use (a JSON
    float for a decimal field becomes an exact decimal, not a float that fails the next
    ``+``). The declared fields must be there with their types; fields beyond them are
    let through (a handler may return a whole API response), since nothing can read them
    (``wf check`` refuses such reads).

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
    declared = shapes(table).results.get(state)
    if declared is None:
        return output, []
    if declared.plan is not None and _fits(declared.plan, output) and not declared.changes:
        return output, []  # the usual case, without any message
    value, problems = fit(table, declared.fields, output, f"result of {state}", extra=True)
    return (output, problems) if problems else (value, [])


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
    if depth >= MAX_DEPTH:
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


def _fits(plan: Plan, data: Mapping[str, Value]) -> bool:
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


_MISSING = object()
