"""Handlers checked against the workflows before any work starts (issue 17).

Three mistakes are found when a worker, ``wf run`` or the test kit starts, not
when a call dead-letters: a service the workflows call that has no handler
(unless missing handlers are allowed: those calls then fail with ``NoHandler``),
a handler for a service no workflow calls (a typo: with a did-you-mean), and a
handler whose parameters cannot take the arguments its service is called with.
Each problem names the service, the workflow and where the handler is written.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from attrs import frozen

from wflang.handlers.registry import Registered, Registry
from wflang.runtime.table import Table, TaskEntry


@frozen
class Call:
    """A service call a workflow makes: the service, where, and the arguments it gives."""

    service: str
    workflow: str
    version: int
    step: str
    args: frozenset[str]

    @property
    def where(self) -> str:
        return f"{self.workflow} version {self.version} (step {self.step})"


class HandlersRefused(Exception):
    """The handlers do not fit the workflows: ``problems`` says how, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("the handlers do not fit the workflows:\n  " + "\n  ".join(problems))
        self.problems = problems


def calls(tables: Iterable[Table]) -> list[Call]:
    """Every service call of the tables, one per step, in table order."""
    found = []
    for table in tables:
        for state in table.states:
            entry = state.entry
            if isinstance(entry, TaskEntry) and entry.work == "service" and entry.service:
                names = frozenset(name for name, _ in entry.args.entries)
                found.append(Call(entry.service, table.workflow, table.version, state.name, names))
    return found


def problems(
    tables: Iterable[Table],
    registry: Registry,
    *,
    allow_missing: bool = False,
    allow_unused: bool = False,
) -> list[str]:
    """What is wrong with ``registry`` for the workflows of ``tables``, in words.
    ``allow_missing``: a service without a handler is no problem (its calls fail with
    ``NoHandler``); ``allow_unused``: nor is a handler for a service no table calls."""
    made = calls(tables)
    called: dict[str, list[Call]] = {}
    for call in made:
        called.setdefault(call.service, []).append(call)
    found = []
    if not allow_missing:
        for service, where in called.items():
            if service not in registry.entries:
                found.append(
                    f"service '{service}' has no handler; {where[0].where} calls it "
                    f'(register one with @handler("{service}"), or allow missing handlers)'
                )
    for service, entry in registry.entries.items():
        if service not in called:
            if allow_unused:
                continue
            close = difflib.get_close_matches(service, list(called), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            deployed = ", ".join(sorted({f"{c.workflow} v{c.version}" for c in made})) or "none"
            found.append(
                f"the handler at {entry.where} ({_name(entry)}) serves '{service}', which no "
                f"workflow calls (workflows: {deployed}){hint}"
            )
            continue
        for call in called[service]:
            mismatch = signature_problem(entry.fn, call.args)
            if mismatch:
                found.append(
                    f"the handler of '{service}' at {entry.where} ({_name(entry)}) cannot take "
                    f"the arguments {call.where} gives it: {mismatch}"
                )
                break
    return found


def verify(
    tables: Iterable[Table],
    registry: Registry,
    *,
    allow_missing: bool = False,
    allow_unused: bool = False,
) -> None:
    """Raise ``HandlersRefused`` if ``problems`` finds any."""
    found = problems(list(tables), registry, allow_missing=allow_missing, allow_unused=allow_unused)
    if found:
        raise HandlersRefused(found)


def signature_problem(fn: Callable[..., Any], args: frozenset[str]) -> str | None:
    """Why ``fn`` cannot be called with ``args`` as keywords (and ``task``), if it cannot.
    A language name Python cannot write (``from``) may be taken as ``from_``."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature: it is not judged
        return None
    kinds = inspect.Parameter
    takes_any = any(p.kind is kinds.VAR_KEYWORD for p in params.values())
    taken = set()
    said = []
    for name in sorted(args):
        py = name if name in params or f"{name}_" not in params else f"{name}_"
        param = params.get(py)
        if param is None or param.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD):
            if not takes_any:
                said.append(f"it has no parameter '{name}'")
            continue
        if param.kind is kinds.POSITIONAL_ONLY:
            said.append(f"'{py}' is positional-only, and arguments are given by name")
        taken.add(py)
    for name, param in params.items():
        required = param.default is kinds.empty and param.kind not in (
            kinds.VAR_POSITIONAL,
            kinds.VAR_KEYWORD,
        )
        if required and name not in taken and name != "task":
            said.append(f"it requires '{name}', which the service is not given")
    return "; ".join(said) or None


def _name(entry: Registered) -> str:
    return getattr(entry.fn, "__qualname__", type(entry.fn).__name__)
