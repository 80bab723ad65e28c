"""The argparse boilerplate, written once: commands are declared, not wired.

A command is a frozen attrs *request* whose fields carry their command-line form
(``arg`` metadata: the flags and argparse's keywords), a function from that
request to a ``Result`` (the exit code and what to print, in order), and a
``Command`` entry naming it. ``build_parser`` turns the entries into argparse
parsers; ``request_of`` turns parsed arguments back into the request. So no
helper ever sees an ``argparse.Namespace``, and a command can be called from
Python with a request.

This module imports nothing heavy: building the parser must stay cheap.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any, Literal, Protocol, TypeVar

import attrs
from attrs import frozen

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
Stream = Literal["out", "err"]
Chunk = tuple[Stream, "str | bytes"]

_ARG = "wflang.cli.arg"


class UsageError(Exception):
    """A problem with the command line or the files and values it names (exit 2)."""


@frozen
class Arg:
    """How a request field is given on the command line."""

    flags: tuple[str, ...]  # none for a positional argument
    kwargs: dict[str, Any]  # argparse's add_argument keywords
    #: from the parsed value to the field's value (e.g. ``--color auto`` to a bool)
    convert: Callable[[Any], Any] | None = None


def arg(*flags: str, convert: Callable[[Any], Any] | None = None, **kwargs: Any) -> dict[str, Arg]:
    """The ``metadata`` of a request field: its flags and ``add_argument`` keywords
    (the default is the field's own unless ``default`` is given here)."""
    return {_ARG: Arg(flags, kwargs, convert)}


def flag_field(*flags: str, help: str) -> Any:
    """A request field that is off unless its flag is given (``--once``)."""
    return attrs.field(default=False, metadata=arg(*flags, action="store_true", help=help))


@frozen
class Result:
    """What a command did: its exit code and what it prints, in order."""

    code: int
    printed: tuple[Chunk, ...] = ()


class Out:
    """The output of a command as it is made, returned as a ``Result``."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []

    def print(self, text: str = "", *, err: bool = False) -> None:
        self.write(text + "\n", err=err)

    def write(self, data: str | bytes, *, err: bool = False) -> None:
        if data:
            self.chunks.append(("err" if err else "out", data))

    def done(self, code: int = EXIT_OK) -> Result:
        return Result(code, tuple(self.chunks))

    @contextmanager
    def kept_on_error(self) -> Iterator[None]:
        """What was printed before an error is printed with it (``printed_before``)."""
        try:
            yield
        except Exception as err:
            err.printed_before = tuple(self.chunks)  # type: ignore[attr-defined]
            raise


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)

#: What the running command opened, closed when it ends (see ``command_scope``).
_OPENED: ContextVar[ExitStack | None] = ContextVar("wflang_cli_opened", default=None)


@contextmanager
def command_scope() -> Iterator[None]:
    """Close what a command opens (a store, its connections and their threads) when it
    ends, however it ends: left to the garbage collector, a PostgreSQL pool stops its
    threads whenever a collection happens to run, on whatever thread that is."""
    with ExitStack() as stack:
        token = _OPENED.set(stack)
        try:
            yield
        finally:
            _OPENED.reset(token)


def closed_at_end(resource: C) -> C:
    """``resource``, to be closed when the running command ends (outside a command, as
    when a command's function is called from Python, the caller closes it)."""
    stack = _OPENED.get()
    if stack is not None:
        stack.callback(resource.close)
    return resource


def said(line: str) -> Result:
    """The result of a command that succeeds and prints one line (what it did)."""
    out = Out()
    out.print(line)
    return out.done()


def emit(chunks: Sequence[Chunk]) -> None:
    """Print a command's output on the process's streams."""
    for stream, data in chunks:
        target = sys.stdout if stream == "out" else sys.stderr
        if isinstance(data, bytes):
            target.flush()
            target.buffer.write(data)
        else:
            target.write(data)


@frozen
class Command:
    """A command (``("ops", "retry")``): its request type, its function and its help."""

    path: tuple[str, ...]
    request: type
    run: Callable[[Any], Result]
    help: str
    description: str | None = None


@frozen
class Group:
    """A command that only holds actions (``wf ops ACTION``)."""

    path: tuple[str, ...]
    help: str
    description: str | None = None


def _arguments(request: type) -> Iterator[tuple[attrs.Attribute[Any], Arg]]:
    for field in attrs.fields(request):
        spec = field.metadata.get(_ARG)
        if spec is not None:
            yield field, spec


def add_arguments(parser: argparse.ArgumentParser, request: type) -> None:
    """One argparse argument per field of ``request``, in the order of the fields."""
    for field, spec in _arguments(request):
        kwargs = dict(spec.kwargs)
        if "default" not in kwargs and field.default is not attrs.NOTHING:
            kwargs["default"] = field.default
        if kwargs.get("action") == "append":
            kwargs["default"] = None  # argparse appends to its default: never share one
        if spec.flags:
            parser.add_argument(*spec.flags, dest=field.name, **kwargs)
        else:
            parser.add_argument(field.name, **kwargs)


def request_of(request: type, parsed: argparse.Namespace) -> Any:
    """The request the parsed arguments stand for (lists become tuples)."""
    values: dict[str, Any] = {}
    for field, spec in _arguments(request):
        value = getattr(parsed, field.name)
        if spec.convert is not None:
            value = spec.convert(value)
        elif isinstance(value, list):
            value = tuple(value)
        elif value is None and spec.kwargs.get("action") == "append":
            value = ()
        values[field.name] = value
    return request(**values)


def build_parser(
    parser: argparse.ArgumentParser, entries: Sequence[Command | Group]
) -> argparse.ArgumentParser:
    """Add ``entries`` (groups before their actions) to ``parser``."""
    subs: dict[tuple[str, ...], Any] = {
        (): parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    }
    for entry in entries:
        parent = subs[entry.path[:-1]]
        p = parent.add_parser(entry.path[-1], help=entry.help, description=entry.description)
        if isinstance(entry, Group):
            dest = f"{entry.path[-1]}_command"
            subs[entry.path] = p.add_subparsers(dest=dest, metavar="ACTION", required=True)
        else:
            add_arguments(p, entry.request)
            p.set_defaults(command_entry=entry, command_parser=p)  # its usage, for errors
    return parser
