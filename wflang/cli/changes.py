"""``wf history --changes``: what each step changed in the context, in words.

Reads the entries of a ``wflang.history/1`` document (``changes``: JSON Patch
operations with the value each replaced, ``runtime.changes``) and prints one line per
field: ``+ field = new`` (added), ``~ field: old -> new`` (replaced), ``- field (was
old)`` (removed). Values are compact JSON, decimals exact.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from wflang.runtime import codec
from wflang.runtime.ir import Value

#: The field of each kind of event that says which one it was (a task's key, a timer…).
_DETAIL = ("name", "timer", "key", "state")


def event_label(event: Mapping[str, Value] | None) -> str:
    """``start``, or the event's type and what it answers: ``TaskCompleted KEY``,
    ``SignalReceived approval``, ``TimerFired ID``."""
    if event is None:
        return "start"
    for name in _DETAIL:
        detail = event.get(name)
        if isinstance(detail, str) and detail:
            return f"{event['type']} {detail}"
    return str(event["type"])


def change_lines(changes: Sequence[Mapping[str, Value]]) -> Iterator[str]:
    for change in changes:
        field = str(change["path"]).removeprefix("/")
        op = change["op"]
        if op == "add":
            yield f"+ {field} = {codec.dumps(change.get('value'))}"
        elif op == "remove":
            yield f"- {field} (was {codec.dumps(change.get('old'))})"
        else:
            old, new = codec.dumps(change.get("old")), codec.dumps(change.get("value"))
            yield f"~ {field}: {old} -> {new}"
