"""The transition table: the contract between the compiler and the runtime.

A compiled workflow is a ``Table`` of frozen values: its states (one per node,
numbered densely in source order) with each kind's entry data, its events
(numbered densely), and a row per (state, event) holding the ordered
transitions the step function tries. Expressions are compiled to the IR of
``wflang.runtime.ir`` and referred to by index. The runtime imports nothing
from ``dsl`` or ``compiler``: this module is all it needs.

The JSON form (``dumps``/``loads``, through cattrs) is deterministic: the same
source gives the same bytes, and ``table_hash`` is the hash of those bytes. A field
added to the format after its first release (``ADDED``) is left out of the JSON while
it holds its default, so a table that uses nothing it added keeps its bytes and its
hash: the same source compiled before and after the addition deploys as one content.
"""

from __future__ import annotations

import hashlib
import json
from collections import abc
from functools import lru_cache
from typing import Any

import cattrs
from attrs import define, evolve, field, fields, frozen
from cattrs.gen import make_dict_unstructure_fn, override
from cattrs.strategies import configure_tagged_union

from wflang.runtime import ir
from wflang.runtime.times import READERS

SCHEMA_VERSION = 1

#: Where a transition goes when it leaves its scope: the end of a branch or body.
NO_STATE = -1


@frozen
class Mapping:
    """``name: expression`` pairs, written into the context or passed as arguments."""

    entries: tuple[tuple[str, int], ...]  # (field, expression index)


@frozen
class Retry:
    attempts: int = 1
    initial_delay_ms: int = 1000
    max_delay_ms: int | None = None
    factor: str = "2"  # a decimal, as text
    jitter: str = "0"  # a fraction of the delay, as text
    non_retryable: tuple[str, ...] = ()


@frozen
class Timer:
    """A boundary timer: after ``after`` (an expression of a duration), raise ``event``.
    A ``cycle`` fires again every ``after`` while its node is active, ``times`` in all
    (None: no bound)."""

    after: int
    event: int
    interrupting: bool = True
    cycle: bool = False
    times: int | None = None


@frozen
class Catch:
    """A boundary signal or message: while its node is active, the signal or message
    ``name`` (a message with the text of ``correlation``, evaluated when the node is
    entered) raises ``event``, whose row writes what it brought and goes on at its route.
    Interrupting: the node is cancelled; else a side path starts at the route."""

    kind: str  # signal | message
    name: str
    event: int
    interrupting: bool = True
    correlation: int | None = None  # a message's: expression index


@frozen
class Send:
    """What a send task sends: the signal or message ``name`` to ``target``, the
    expression of the instance's id (a signal) or of the correlation (a message)."""

    kind: str  # signal | message
    name: str
    target: int  # expression index


@frozen
class TaskEntry:
    """Work done by a handler (service), a person (user, manual) or inline (script)."""

    work: str  # service | script | user | manual | send
    service: str | None = None
    #: A human task's assignee written as a string literal; ``assignee_from``: the
    #: expression of any other (``user input.manager``), evaluated when the task is
    #: entered. Two fields so that a literal's table stays as it was (its hash too).
    assignee: str | None = None
    assignee_from: int | None = None
    args: Mapping = Mapping(())
    form: tuple[str, ...] = ()  # the form's field names, for human tasks
    retry: Retry | None = None
    timers: tuple[Timer, ...] = ()
    #: A service task: the errors its service declares (``raises``), the only ones its
    #: handler may fail it with by name (``validate.undeclared_error``); a user or manual
    #: task: the errors a person may raise on it. None: a script task, a person who may
    #: raise nothing, or a table compiled before services' errors were a contract.
    raises: tuple[str, ...] | None = None
    #: A service task whose service is declared ``reads``: it changes nothing outside.
    #: The step treats it as any service task (``wf check`` refuses compensating it,
    #: WF405); the table says so for the tools that read it.
    read_only: bool = False
    #: A send task: what it sends (its ``args`` are the payload).
    send: Send | None = None
    #: An ``async`` service task: its handler is handed the task's key as a completion
    #: token, and the task waits for the client to complete or fail it.
    asynchronous: bool = False
    #: Its boundary signals and messages (``on signal S -> NODE``), in source order.
    catches: tuple[Catch, ...] = ()
    #: An async task's heartbeat timeout (an expression of a duration): without a
    #: heartbeat with its token for that long, it times out by its interrupting timeout.
    heartbeat: int | None = None


@frozen
class ChoiceEntry:
    """A choice decides on entry: its row for ``enter`` holds the guarded transitions."""


@frozen
class WaitEntry:
    trigger: str  # signal | message | until
    name: str | None = None  # the signal or message
    expression: int | None = None  # the correlation or the instant
    timers: tuple[Timer, ...] = ()


@frozen
class Arm:
    """An arm of a ``first``: what it waits for (its route is the row ``arm:K``)."""

    trigger: str  # signal | message | after | until
    name: str | None = None  # the signal or message
    #: the correlation, the delay of an ``after``, or the instant of an ``until``
    expression: int | None = None


@frozen
class FirstEntry:
    """An event-based choice: a token per arm waits for its event; the first to come
    goes on along its arm's row, and the others are stopped in the same step."""

    arms: tuple[Arm, ...]


def arm_event(k: int) -> str:
    """The event of the row an arm's route is: ``arm:K``."""
    return f"arm:{k}"


@frozen
class SleepEntry:
    duration: int  # expression index


@frozen
class ParallelEntry:
    branches: tuple[int, ...]  # the first state of each branch
    join: str = "all"  # all | any | n
    count: int | None = None
    timers: tuple[Timer, ...] = ()
    catches: tuple[Catch, ...] = ()


@frozen
class MapEntry:
    items: int  # expression index
    alias: str
    body: int  # the first state of the body
    concurrency: int | None = None  # None: unbounded
    sequential: bool = False
    tolerate: int = 0
    tolerate_percent: bool = False
    timers: tuple[Timer, ...] = ()
    #: Each item's own variables (``local { … }``): name and default's expression (None:
    #: null), bound as one record under ``LOCALS`` in the item's token.
    locals: tuple[tuple[str, int | None], ...] = ()
    #: The expression of each ``collect``, evaluated as an item completes (with the
    #: item's output as ``result``); the map's ``done`` row writes the lists, read
    #: as ``collected(i)``.
    collects: tuple[int, ...] = ()
    catches: tuple[Catch, ...] = ()


#: The root an item's variables are read from (``local.tries``) and held under.
LOCALS = "local"


def collected(i: int) -> str:
    """The root the ``done`` row of a map reads the list of its ``i``-th collect from:
    not a name a file can write."""
    return f"$collect:{i}"


@frozen
class CallEntry:
    workflow: str
    version: int | None
    args: Mapping = Mapping(())
    retry: Retry | None = None
    timers: tuple[Timer, ...] = ()
    catches: tuple[Catch, ...] = ()


@frozen
class EndEntry:
    outcome: str  # completed | failed | cancelled | compensated
    output: Mapping = Mapping(())
    error: str | None = None


Entry = (
    TaskEntry
    | ChoiceEntry
    | WaitEntry
    | FirstEntry
    | SleepEntry
    | ParallelEntry
    | MapEntry
    | CallEntry
    | EndEntry
)


@frozen
class State:
    """One node: its name, kind, the scope it lives in and what happens on entry."""

    name: str
    kind: str
    owner: int  # the parallel or map state whose body holds it, or NO_STATE
    entry: Entry


@frozen
class Action:
    """What a transition does besides moving: ``write`` a mapping into the context,
    ``local`` into the variables of the map item the token runs in, or ``compensate``
    (register a compensation state)."""

    kind: str  # write | local | compensate
    mapping: Mapping | None = None
    state: int = NO_STATE


@frozen
class Transition:
    guard: int | None  # expression index; None always matches
    target: int
    actions: tuple[Action, ...] = ()


@frozen
class Row:
    state: int
    event: int
    transitions: tuple[Transition, ...]


@frozen
class InputField:
    """A declared input field: its type as written, and its default (an expression)."""

    name: str
    type: str
    default: int | None = None


@frozen
class FieldType:
    """A declared field: its name, its type as written, and whether it may be left out;
    ``default``: its default value's expression (a constant), which fills a service's
    result where the handler left the field out (``validate.check_handler_result``)."""

    name: str
    type: str
    has_default: bool = False
    default: int | None = None


@frozen
class Shape:
    """A named set of fields: a record type, a signal's payload, a step's output."""

    name: str
    fields: tuple[FieldType, ...]


@frozen
class Enum:
    name: str
    members: tuple[str, ...]


@frozen
class Types:
    """The declarations values from outside are checked against.

    Signals' and messages' payloads, the output a person or an operator gives a
    step (``results``: a service task's result, a human task's form, by state
    name), errors' payloads, and the record and enum types those mention.
    """

    records: tuple[Shape, ...] = ()
    enums: tuple[Enum, ...] = ()
    signals: tuple[Shape, ...] = ()
    messages: tuple[Shape, ...] = ()
    results: tuple[Shape, ...] = ()
    #: The payloads of the errors declared with one: a handler (or a person) failing
    #: a task with such an error gives its payload, checked against these fields.
    errors: tuple[Shape, ...] = ()


@define(eq=False)
class Memo:
    """What the runtime prepares from a table, once (``runtime.step.compiled``,
    ``runtime.shapes``): kept with the table, never part of its value (not compared,
    hashed or serialised)."""

    key: object = None
    value: object = None
    # the declared shapes of values from outside (``runtime.shapes``)
    shapes: object = None
    # the names of the ``async`` service tasks (``asynchronous``)
    asynchronous: frozenset[str] | None = None


@frozen
class Table:
    """A compiled workflow."""

    schema: int
    workflow: str
    version: int
    source_hash: str
    start: int
    states: tuple[State, ...]
    events: tuple[str, ...]
    rows: tuple[Row, ...]
    expressions: tuple[ir.IR, ...]
    input: tuple[InputField, ...] = ()
    context: tuple[tuple[str, int | None], ...] = ()  # (field, default expression)
    errors: tuple[str, ...] = ()
    types: Types = Types()
    #: The declared types of the context's and the output's fields whose values may
    #: hold times (``("context.approved_at", "timestamp?")``), sorted: what shows their
    #: integers as times to people (``wf history --changes``). Nothing runs by it.
    time_types: tuple[tuple[str, str], ...] = ()
    memo: Memo = field(init=False, factory=Memo, eq=False, repr=False)

    def state_id(self, name: str) -> int:
        for i, s in enumerate(self.states):
            if s.name == name:
                return i
        raise KeyError(name)


#: The kinds of value a timestamp or a duration is (which text from outside may give).
TIME_KINDS = tuple(READERS)


@frozen
class TypeRef:
    """A declared type as written (``map[string, list[Item]]?``), read once: its kind
    (a scalar's name, ``list``, ``map`` or a declared name), whether null is allowed,
    and the type of a list's items or a map's values."""

    text: str  # as written, without the ``?``
    kind: str
    optional: bool
    inner: TypeRef | None = None


@lru_cache(maxsize=4096)
def type_ref(text: str) -> TypeRef:
    """``text`` read as a type (the table holds types as their text)."""
    text = text.strip()
    optional = text.endswith("?")
    text = text.removesuffix("?").strip()
    if text.startswith("list[") and text.endswith("]"):
        return TypeRef(text, "list", optional, type_ref(text[5:-1]))
    if text.startswith("map[") and text.endswith("]"):
        return TypeRef(text, "map", optional, type_ref(_map_value(text[4:-1])))
    return TypeRef(text, text, optional)


def _map_value(text: str) -> str:
    """The value type of a map's ``K, V`` (a map written with one type has string values)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            return text[i + 1 :].strip()
    return "string"


def holds_times(records: abc.Mapping[str, abc.Sequence[FieldType]], text: str) -> bool:
    """Whether a value of the type written ``text`` may hold a timestamp or a duration
    (itself, or in a list, a map or a record it holds)."""
    return any(t.kind in TIME_KINDS for _, t in reachable(records, [FieldType("", text)]))


def reachable(
    records: abc.Mapping[str, abc.Sequence[FieldType]], fields: abc.Sequence[FieldType]
) -> abc.Iterator[tuple[FieldType, TypeRef]]:
    """Each of ``fields`` and of the fields of the records they hold (each record once),
    with every type its value may hold: itself, a list's items, a map's values."""
    seen: set[str] = set()
    todo = [fields]
    while todo:
        group = todo.pop()
        for f in group:
            t: TypeRef | None = type_ref(f.type)
            while t is not None:
                yield f, t
                if t.kind in records and t.kind not in seen:
                    seen.add(t.kind)
                    todo.append(records[t.kind])
                t = t.inner


#: The fields added to the table's JSON since its first release (schema 1 as of commit
#: 3fcedfa), by class: each is left out while it holds its default (``_converter``), so
#: a table compiled from a source that uses nothing they add has the bytes, and the hash,
#: the older compiler gave it (``tests/test_table_hash.py`` keeps tables it compiled).
#: A field added to a table class goes here (the test fails until it does).
ADDED: dict[type, tuple[str, ...]] = {
    # First: the hooks of the classes that hold timers are made with the timers' own.
    Timer: ("cycle", "times"),  # repeating boundary timers (issue 15 item 2)
    TaskEntry: (
        "assignee_from",
        "raises",
        "read_only",
        "send",
        "asynchronous",
        "catches",
        "heartbeat",
    ),
    MapEntry: ("locals", "collects", "catches"),  # a map item's variables, its collects
    ParallelEntry: ("catches",),  # boundary signals and messages (issue 15 item 1)
    CallEntry: ("catches",),
    FieldType: ("default",),
    Types: ("errors",),
    # Last: made with the tagged unions' hooks of what it holds (see ``_converter``).
    Table: ("time_types",),  # times shown to people (issue 15)
}


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)

    def leave_out_defaults(cls: type, added: tuple[str, ...]) -> None:
        names = {a.name for a in fields(cls)}
        assert set(added) <= names, (cls, added)
        left_out: dict[str, Any] = {name: override(omit_if_default=True) for name in added}
        conv.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, conv, **left_out))

    for cls, added in ADDED.items():
        if cls is not Table:
            leave_out_defaults(cls, added)
    scalar: Any = None | bool | int | str
    conv.register_structure_hook_func(lambda t: t == scalar, lambda v, _: v)
    configure_tagged_union(ir.IR, conv, tag_name="kind", tag_generator=lambda c: c.__name__.lower())
    configure_tagged_union(
        Entry,
        conv,
        tag_name="kind",
        tag_generator=lambda c: c.__name__.removesuffix("Entry").lower(),
    )
    leave_out_defaults(Table, ADDED[Table])  # with the unions' hooks, made just above
    return conv


CONVERTER = _converter()


def dumps(table: Table) -> str:
    """Deterministic JSON: sorted keys, no spaces that depend on anything but the table."""
    return json.dumps(CONVERTER.unstructure(table), sort_keys=True, indent=1) + "\n"


def loads(text: str) -> Table:
    data: Any = json.loads(text)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_VERSION:
        found = data.get("schema") if isinstance(data, dict) else None
        raise ValueError(f"table schema {found!r} is not {SCHEMA_VERSION}; recompile the workflow")
    table: Table = CONVERTER.structure(data, Table)
    return table


def table_hash(table: Table) -> str:
    """The identity of a compiled version: sha256 of its canonical JSON."""
    return hashlib.sha256(dumps(table).encode("utf-8")).hexdigest()


def same_behaviour(a: Table, b: Table) -> bool:
    """Whether two tables run alike: equal but for the hash of the text they came from
    (a comment or the layout changed), so one may stand for the other."""
    return _behaviour(a) == _behaviour(b)


def _behaviour(table: Table) -> Table:
    """A table without what does not change how it runs: the hash of its source, the
    types that show its times to people (a table compiled before it had them runs
    alike), and the empty ``raises`` of a human task (a person who may raise nothing,
    which a table compiled from 3467e8f until it was left out of the JSON says with
    ``()``, the others with None: ``validate.raised_on_task`` reads both alike)."""
    states = tuple(
        evolve(s, entry=evolve(s.entry, raises=None))
        if isinstance(s.entry, TaskEntry) and s.entry.work in _PEOPLE and s.entry.raises == ()
        else s
        for s in table.states
    )
    return evolve(table, source_hash="", states=states, time_types=())


_PEOPLE = ("user", "manual")


def asynchronous(table: Table, node: str) -> bool:
    """Whether ``node`` is an ``async`` service task: what its handler returns completes
    nothing, the client completes or fails it later with its key."""
    found = table.memo.asynchronous
    if found is None:
        found = table.memo.asynchronous = frozenset(
            s.name for s in table.states if isinstance(s.entry, TaskEntry) and s.entry.asynchronous
        )
    return node in found


def not_under_way(key: str, kind: str, status: str) -> str:
    """The refusal of a heartbeat for the task ``key``, a ``kind`` task that is
    ``status``: only an async service call under way takes one."""
    return (
        f"task '{key}' is a {kind} task that is {status}: only an async call under way "
        "takes a heartbeat"
    )


def heartbeat_refused(table: Table, key: str, node: str, *, human: bool = False) -> str | None:
    """Why the task ``key`` at ``node``, under way, takes no heartbeat (a ``human`` task;
    a call whose task declares no heartbeat timeout), or None. The durable client and
    the engine refuse it so, delivering nothing (the step would only note it ignored
    one)."""
    if human:
        return not_under_way(key, "human", "open")
    entry = next((s.entry for s in table.states if s.name == node), None)
    if isinstance(entry, TaskEntry) and entry.heartbeat is not None:
        return None
    return f"task '{key}' ({node}) declares no heartbeat timeout"
