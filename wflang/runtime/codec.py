"""JSON for runtime values: instances, events, commands and history entries.

Durable stores keep an instance as one JSON document after every step and a
history row per step; ``wf history --json`` prints the same documents that
``replay`` and ``wf render --history`` read. Decimals stay exact: they are
written as JSON numbers (``4.95``, never a float's ``4.9500000001``) and read
back with ``parse_float=Decimal``; integers stay integers, but a whole number beyond
64 bits, which no ``int`` can be, reads back as the whole decimal it was written from.
"""

from __future__ import annotations

import json
import re
import secrets
import typing
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import cattrs
from cattrs.strategies import configure_tagged_union

from wflang.runtime import instance as rt
from wflang.runtime.changes import ADD, REMOVE, Change
from wflang.runtime.engine import HistoryEntry
from wflang.runtime.ir import Value
from wflang.runtime.numbers import INT_MAX, INT_MIN, canonical
from wflang.runtime.table import Table

HISTORY_FORMAT = "wflang.history/1"

# A per-process random marker: Decimals travel through the C JSON encoder as
# marked strings and are turned back into bare numbers afterwards. No input can
# forge the marker because nobody knows it.
_MARK = "\x1f" + secrets.token_hex(8) + ":"
_MARKED = re.compile('"' + re.escape(json.dumps(_MARK)[1:-1]) + r'(-?[0-9][0-9.Ee+-]*)"')


def _marked(value: object) -> str | int:
    """``default`` of the encoder: only Decimals reach it (values are JSON-like), and
    are written in the one form of ``wflang.runtime.numbers``, which reading gives back
    (a whole decimal within 64 bits as an int, one beyond as its digits)."""
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value)
        number = canonical(value)
        if type(number) is int:
            return number
        return _MARK + str(number)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def dumps(data: object, indent: int | None = None, *, sort_keys: bool = False) -> str:
    """Compact JSON of unstructured data; Decimals as exact numbers.

    Keys keep their order: a record's field order is part of its value, and the
    same instance must always give the same bytes. ``indent`` or ``sort_keys``: for
    people (``json.dumps``'s spacing).
    """
    if indent is None and not sort_keys:
        text = _COMPACT(data)
    else:
        text = json.dumps(
            data, indent=indent, ensure_ascii=False, default=_marked, sort_keys=sort_keys
        )
    return _MARKED.sub(r"\1", text) if _MARK[1:] in text else text


def _compact_encoder() -> Any:
    """The C encoder made once (``JSONEncoder.encode`` builds one per call, which
    costs more than encoding a small document); no cycle check: values are trees."""
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or quote is None:  # pragma: no cover - CPython has both
        return json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_marked).encode
    chunks = make(None, _marked, quote, None, ":", ",", False, False, True)
    return lambda data: "".join(chunks(data, 0))


_COMPACT = _compact_encoder()


def loads(text: str | bytes) -> Any:
    """Parse JSON written by ``dumps``: numbers with a point or exponent become Decimals,
    and so do whole numbers beyond 64 bits (``9223372036854775808``, as ``dumps`` writes
    the whole decimal ``-9223372036854775808 / -1``; older documents say ``…E0``)."""
    long = _LONG.search(text) if isinstance(text, str) else _LONG_BYTES.search(text)
    if long is None:  # the usual case: no whole number here can be beyond 64 bits
        return json.loads(text, parse_float=Decimal)
    return json.loads(text, parse_float=Decimal, parse_int=_whole)


#: 19 digits in a row: the shortest whole number beyond 64 bits (in a string too: rare).
_LONG = re.compile(r"[0-9]{19}")
_LONG_BYTES = re.compile(rb"[0-9]{19}")


def _whole(text: str) -> int | Decimal:
    """A JSON whole number: an int within 64 bits, else the whole decimal (``int()``
    refuses more digits than Python converts, as reading did before)."""
    n = int(text)
    return n if INT_MIN <= n <= INT_MAX else Decimal(text)


def _is_value(t: Any) -> bool:
    """``Value`` as annotated (resolved annotations expand the alias): passed through."""
    return t is Value or Decimal in getattr(t, "__args__", ())


def _is_value_map(t: Any) -> bool:
    """``dict[str, Value]``: already JSON-like, so passed through as it is."""
    args = typing.get_args(t)
    return typing.get_origin(t) is dict and len(args) == 2 and _is_value(args[1])


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter(omit_if_default=True)  # smaller documents, fewer pages
    conv.register_structure_hook_func(_is_value, lambda v, _: v)
    conv.register_unstructure_hook_func(_is_value, lambda v: v)
    # Not copied item by item: the document is encoded at once and the frozen value
    # it comes from is never changed (a third of the cost of unstructuring an instance).
    conv.register_unstructure_hook_func(_is_value_map, lambda v: v)
    configure_tagged_union(rt.Event, conv, tag_name="type", tag_generator=lambda c: c.__name__)
    configure_tagged_union(rt.Command, conv, tag_name="type", tag_generator=lambda c: c.__name__)
    return conv


CONVERTER = _converter()


def unstructure_instance(instance: rt.Instance) -> dict[str, Any]:
    data: dict[str, Any] = CONVERTER.unstructure(instance, rt.Instance)
    return data


def structure_instance(data: Any) -> rt.Instance:
    instance: rt.Instance = CONVERTER.structure(data, rt.Instance)
    return instance


def dump_instance(instance: rt.Instance) -> str:
    return dumps(unstructure_instance(instance))


def load_instance(text: str | bytes) -> rt.Instance:
    return structure_instance(loads(text))


def _tagged(value: object) -> dict[str, Any]:
    """An event or command as a dict with its ``type``: the class's own hook, looked
    up once per class (the union's dispatch costs more than the unstructuring)."""
    cls = type(value)
    hook = _HOOKS.get(cls)
    if hook is None:
        hook = _HOOKS[cls] = CONVERTER.get_unstructure_hook(cls)
    data: dict[str, Any] = hook(value)
    data["type"] = cls.__name__
    return data


_HOOKS: dict[type, Any] = {}


def unstructure_event(event: rt.Event) -> dict[str, Any]:
    return _tagged(event)


def structure_event(data: Any) -> rt.Event:
    event: rt.Event = CONVERTER.structure(data, rt.Event)  # type: ignore[arg-type]
    return event


def dump_event(event: rt.Event) -> str:
    return dumps(unstructure_event(event))


def load_event(text: str | bytes) -> rt.Event:
    return structure_event(loads(text))


def unstructure_commands(commands: Sequence[rt.Command]) -> list[dict[str, Any]]:
    return [_tagged(c) for c in commands]


def structure_commands(data: Any) -> tuple[rt.Command, ...]:
    return tuple(CONVERTER.structure(c, rt.Command) for c in data)  # type: ignore[arg-type]


def unstructure_entry(entry: HistoryEntry) -> dict[str, Any]:
    return {
        "seq": entry.seq,
        "at": entry.at,
        "event": None if entry.event is None else unstructure_event(entry.event),
        "input": entry.input,
        "decisions": list(entry.decisions),
        "commands": unstructure_commands(entry.commands),
        "changes": unstructure_changes(entry.changes),
    }


def unstructure_changes(changes: Sequence[Change]) -> list[dict[str, Value]]:
    """Context changes as JSON Patch operations with the value each replaced (``old``):
    an ``add`` has no ``old``, a ``remove`` no ``value`` (as RFC 6902 writes them)."""
    ops: list[dict[str, Value]] = []
    for c in changes:
        op: dict[str, Value] = {"op": c.op, "path": c.path}
        if c.op != REMOVE:
            op["value"] = c.value
        if c.op != ADD:
            op["old"] = c.old
        ops.append(op)
    return ops


def structure_changes(data: Any) -> tuple[Change, ...]:
    """What ``unstructure_changes`` wrote (nothing: an entry recorded before changes were)."""
    return tuple(Change(d["op"], d["path"], d.get("value"), d.get("old")) for d in data or ())


def structure_entry(data: Any) -> HistoryEntry:
    return HistoryEntry(
        seq=int(data["seq"]),
        at=int(data["at"]),
        event=None if data.get("event") is None else structure_event(data["event"]),
        input=data.get("input"),
        decisions=tuple(data.get("decisions", ())),
        commands=structure_commands(data.get("commands", ())),
        changes=structure_changes(data.get("changes")),
    )


def history_document(
    table: Table,
    table_hash: str,
    instance: rt.Instance,
    history: Sequence[HistoryEntry],
    extra: Sequence[dict[str, Any]] = (),
    compacted: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``wflang.history/1`` document: what ``wf history --json`` prints.

    ``current`` names the nodes where the instance's tokens are now (``current_nodes``);
    ``failed`` the node whose failure dead-lettered or failed it (read from the last
    decision that says so). ``extra`` carries per-entry store fields (who did an ops
    action and why), merged into the entries by position. ``compacted`` (a compacted
    history's: ``compacted_part``) says where the entries begin and holds the checkpoint
    they replay from.
    """
    entries = [unstructure_entry(e) for e in history]
    for entry, more in zip(entries, extra, strict=False):
        entry.update({k: v for k, v in more.items() if v is not None})
    return {
        "format": HISTORY_FORMAT,
        "instance": instance.id,
        "workflow": instance.workflow,
        "version": instance.version,
        "table_hash": table_hash,
        "status": instance.status.value,
        "current": current_nodes(table, instance),
        "failed": _failed_node(table, instance, history),
        "output": instance.output,
        "error": instance.error,
        "entries": entries,
    } | ({} if compacted is None else {"compacted": compacted})


def compacted_part(checkpoint: rt.Instance, at: int | None, archived: int) -> dict[str, Any]:
    """A history document's ``compacted``: the steps up to ``through`` went (``archived``
    of them to the store's archive); ``checkpoint`` is the instance after that step."""
    return {
        "through": checkpoint.seq,
        "at": at,
        "archived": archived,
        "checkpoint": unstructure_instance(checkpoint),
    }


def load_checkpoint(data: Any) -> rt.Instance | None:
    """The checkpoint a ``wflang.history/1`` document's entries replay from (None: they
    begin at the start)."""
    compacted = data.get("compacted") if isinstance(data, dict) else None
    return None if compacted is None else structure_instance(compacted["checkpoint"])


def current_nodes(table: Table, instance: rt.Instance) -> list[str]:
    """The nodes where the instance's tokens are: where it waits, or, dead-lettered,
    where it is stuck (what ops retry or force-complete); none once it has ended."""
    if instance.status.finished and instance.status is not rt.Status.DEAD_LETTERED:
        return []
    return sorted({table.states[t.state].name for t in instance.tokens})


def load_history(data: Any) -> list[HistoryEntry]:
    """The entries of a ``wflang.history/1`` document, for ``replay``."""
    if not isinstance(data, dict) or data.get("format") != HISTORY_FORMAT:
        raise ValueError(f"not a {HISTORY_FORMAT} document")
    return [structure_entry(e) for e in data["entries"]]


def _failed_node(
    table: Table, instance: rt.Instance, history: Sequence[HistoryEntry]
) -> str | None:
    if instance.status not in (
        rt.Status.DEAD_LETTERED,
        rt.Status.FAILED,
        rt.Status.COMPENSATED,
    ):
        return None
    names = {s.name for s in table.states}
    for entry in reversed(history):
        for decision in reversed(entry.decisions):
            head, sep, rest = decision.partition(": ")
            if sep and head in names and ("dead-lettered" in rest or "unhandled" in rest):
                return head
    return None
