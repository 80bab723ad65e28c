"""Handlers by service name: ``@handler("payments.charge")`` and ``Registry``.

A registry maps each service to the function that serves it and remembers where
that function is written (its file and line), for the checks made before any work
starts (``wflang.handlers.verify``). What the runtime calls is a wrapper: it gives
each argument in the form the function's annotation asks for (a generated class, an
enum, a ``datetime``, a ``timedelta``, a ``Decimal``: ``convert``; anything else as
the runtime's value) and turns what it returns (a generated class or a plain dict)
back into a runtime value. A registry is a ``Mapping[str, Handler]``, so it goes
wherever handlers went: ``Engine``, ``Worker``, ``WorkflowEnv``.
"""

from __future__ import annotations

import functools
import inspect
import os
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any, TypeVar

import attrs
from attrs import frozen

from wflang.handlers.convert import CONVERTER, needs_conversion, structure
from wflang.runtime import engine
from wflang.runtime.outcome import PENDING, Handler, TaskCall

F = TypeVar("F", bound=Callable[..., Any])

#: The mark ``@handler`` leaves on a function: (service, at_most_once).
MARK = "__wflang_handler__"


@frozen
class Registered:
    """One service's handler: the function as written, where, and what the runtime calls."""

    service: str
    fn: Callable[..., Any]
    at_most_once: bool
    file: str
    line: int
    call: Handler

    @property
    def where(self) -> str:
        """``file:line``; the file relative to the working folder when it is inside it."""
        if not self.line:
            return self.file
        try:
            relative = os.path.relpath(self.file)
        except ValueError:  # another drive
            relative = self.file
        return f"{self.file if relative.startswith('..') else relative}:{self.line}"


def location(fn: Callable[..., Any]) -> tuple[str, int]:
    """The file and line a function is written at (its first decorator's line)."""
    target = inspect.unwrap(getattr(fn, "__func__", fn))
    code = getattr(target, "__code__", None)
    if code is None:  # a callable object: its class
        cls = type(target)
        try:
            return inspect.getsourcefile(cls) or "?", inspect.getsourcelines(cls)[1]
        except (OSError, TypeError):
            return "?", 0
    return code.co_filename, code.co_firstlineno


class Registry(Mapping[str, Handler]):
    """Handlers by service name; ``registry.handler("svc")`` registers a function."""

    def __init__(self, entries: Iterable[Registered] = ()) -> None:
        self.entries: dict[str, Registered] = {e.service: e for e in entries}

    @classmethod
    def of(cls, handlers: Mapping[str, Handler]) -> Registry:
        """A registry of plain handlers by service (a ``Registry`` is returned as is)."""
        if isinstance(handlers, Registry):
            return handlers
        registry = cls()
        for service, fn in handlers.items():
            registry.add(service, fn)
        return registry

    def handler(self, service: str, *, at_most_once: bool = False) -> Callable[[F], F]:
        """Register a function as the handler of ``service``: ``@registry.handler("x.y")``."""

        def register(fn: F) -> F:
            self.add(service, fn, at_most_once=at_most_once)
            return fn

        return register

    def add(self, service: str, fn: Callable[..., Any], *, at_most_once: bool = False) -> None:
        file, line = location(fn)
        self.entries[service] = Registered(service, fn, at_most_once, file, line, typed(fn))

    def update(self, other: Registry) -> None:
        self.entries.update(other.entries)

    def at_most_once(self) -> frozenset[str]:
        return frozenset(s for s, e in self.entries.items() if e.at_most_once)

    def __getitem__(self, service: str) -> Handler:
        return self.entries[service].call

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"Registry({sorted(self.entries)})"


def handler(service: str, *, at_most_once: bool = False) -> Callable[[F], F]:
    """Register a function as the handler of ``service``: ``@handler("payments.charge")``.

    ``at_most_once=True`` is for effects that must never repeat: a durable worker
    records that the call started before making it, and if the worker dies during
    the call, the step fails with ``Interrupted`` instead of being run again. The
    function is marked, so that loading its module (``load``) finds it, and it is
    registered for ``Engine``'s default handlers too.
    """

    def register(fn: F) -> F:
        setattr(fn, MARK, (service, at_most_once))
        engine.handler(service, at_most_once=at_most_once)(typed(fn))
        return fn

    return register


def typed(fn: Callable[..., Any]) -> Handler:
    """What the runtime calls for ``fn``: its arguments converted as it annotates them,
    ``task`` given if it asks, and its result (a generated class) as a runtime value."""
    if getattr(fn, "__wflang_typed__", False):
        return fn
    params = inspect.signature(fn).parameters
    wants_task = "task" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )

    # A name Python reserves is taken as ``name_`` (``from_``): only such a function
    # has its arguments renamed.
    renames = any(name.endswith("_") for name in params)

    @functools.cache  # at the first call: the annotations may name classes defined later
    def conversions() -> dict[str, object]:
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # an annotation that does not resolve: the values as they are
            hints = {}
        return {name: hint for name, hint in hints.items() if needs_conversion(hint)}

    def arguments(task: TaskCall, args: dict[str, Any]) -> dict[str, Any]:
        convert = conversions()
        if not convert and not renames:  # the values as they are (``args`` is our own dict)
            if wants_task:
                args["task"] = task
            return args
        kwargs: dict[str, Any] = {}
        for name, value in args.items():
            py = name if name in params or f"{name}_" not in params else f"{name}_"
            hint = convert.get(py)
            kwargs[py] = value if hint is None else structure(value, hint)
        if wants_task:
            kwargs["task"] = task
        return kwargs

    if inspect.iscoroutinefunction(fn):

        async def call_async(task: TaskCall, **args: Any) -> Any:
            return _result(await fn(**arguments(task, args)))

        wrapper: Any = call_async
    else:

        def call(task: TaskCall, **args: Any) -> Any:
            return _result(fn(**arguments(task, args)))

        wrapper = call
    functools.update_wrapper(wrapper, fn)
    del wrapper.__wrapped__  # the runtime inspects the wrapper's own signature (``task``)
    wrapper.__wflang_typed__ = True
    return typing.cast(Handler, wrapper)


def _result(result: object) -> object:
    """What a handler returned, as the runtime takes it: a generated class (or a mapping
    holding times and decimals) as a value; anything else as it is, for the runtime to
    judge (``outcome.returned``)."""
    if result is None or result is PENDING or (type(result) is dict and _plain(result)):
        return result
    if attrs.has(type(result)) or isinstance(result, Mapping):
        return CONVERTER.unstructure(result)
    return result


#: The types of a value that needs no conversion (the runtime judges a float).
_PLAIN = frozenset({str, int, bool, float, Decimal, type(None)})


def _plain(value: object) -> bool:
    """Whether ``value`` holds only the runtime's own kinds of value (no class, no time):
    most results, returned as they are, without a walk by cattrs."""
    if type(value) in _PLAIN:
        return True
    if isinstance(value, dict):
        return type(value) is dict and all(_plain(v) for v in value.values())
    if isinstance(value, list):
        return type(value) is list and all(_plain(v) for v in value)
    return False
