"""``wf render --history FILE.json``: a recorded instance drawn on its workflow.

Reads the ``wflang.history/1`` document that ``wf history ID --json`` and
``wf run ... --json`` write. Only what a diagram needs is kept: the nodes
entered (every decision ``enter X``, in order), the nodes where tokens are now
and the failed one. The reader is written against the document, not against
the runtime's codec, so a diagram can be drawn from a file alone; anything that
does not fit the format is a ``HistoryError`` naming what is wrong.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

from attrs import frozen

from wflang.render.build import START, join_key
from wflang.render.diagram import DEdge, Diagram, LegendEntry, Overlay

FORMAT = "wflang.history/1"
ENTER = "enter "


class HistoryError(Exception):
    """The file is not a wflang history, or not one of this workflow."""


@frozen
class History:
    """What a diagram shows of one instance's history."""

    instance: str
    workflow: str
    version: int
    status: str
    current: tuple[str, ...]
    failed: str | None
    entered: tuple[str, ...]  # node names, in the order they were entered
    decisions: tuple[tuple[str, ...], ...] = ()  # each entry's decisions, in order
    #: ``--at N``: the history drawn as it was after step N, and the context's values
    #: then (field, compact JSON), folded from the entries' changes
    at: int | None = None
    values: tuple[tuple[str, str], ...] = ()


def _field(doc: dict[str, object], key: str, kind: type, what: str) -> object:
    value = doc.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise HistoryError(f"'{key}' must be {what}, not {json.dumps(value)[:40]}")
    return value


def _strings(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HistoryError(f"'{key}' must be a list of strings")
    return tuple(value)


def parse_history(text: str, at: int | None = None) -> History:
    """A history from the text of a ``wflang.history/1`` document; ``at``: only its
    steps up to that sequence number, with the context's values after it."""
    try:
        doc = json.loads(text, parse_float=Decimal)
    except RecursionError:
        raise HistoryError("not a wflang history: nested too deeply") from None
    except ValueError as err:  # not JSON, or an integer beyond Python's digit limit
        raise HistoryError(f"not JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise HistoryError(f"not a wflang history: expected format {FORMAT!r}, found {found!r}")
    failed = doc.get("failed")
    if failed is not None and not isinstance(failed, str):
        raise HistoryError("'failed' must be a node name or null")
    entries = _field(doc, "entries", list, "a list of entries")
    entered: list[str] = []
    decisions: list[tuple[str, ...]] = []
    assert isinstance(entries, list)
    values: dict[str, object] = _checkpoint_context(doc)
    ended = True  # the document's current and failed nodes are those after its last step
    if at is not None:
        count = len(entries)
        entries = _until(entries, at)
        ended = len(entries) == count
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise HistoryError(f"entry {i} must be an object")
        if at is not None:
            _fold(values, entry.get("changes", []), i)
        decisions.append(_strings(entry.get("decisions", []), f"entries[{i}].decisions"))
        entered += (d.removeprefix(ENTER) for d in decisions[-1] if d.startswith(ENTER))
    return History(
        instance=str(_field(doc, "instance", str, "a string")),
        workflow=str(_field(doc, "workflow", str, "a string")),
        version=int(_field(doc, "version", int, "an integer")),  # type: ignore[call-overload]
        status=str(_field(doc, "status", str, "a string")),
        current=_strings(doc.get("current"), "current") if ended else (),
        failed=failed if ended else None,
        entered=tuple(entered),
        decisions=tuple(decisions),
        at=at,
        values=tuple((name, _shown(value)) for name, value in values.items()),
    )


def _until(entries: list[object], at: int) -> list[object]:
    seqs = [e.get("seq") for e in entries if isinstance(e, dict)]
    if not seqs or at not in seqs:
        known = f"steps {seqs[0]} to {seqs[-1]}" if seqs else "no steps"
        if seqs and isinstance(seqs[0], int) and 0 < at < seqs[0]:
            raise HistoryError(
                f"step {at} was compacted: the history keeps {known}, from a checkpoint "
                f"after step {seqs[0] - 1}"
            )
        raise HistoryError(f"there is no step {at} in the history (it has {known})")
    return entries[: seqs.index(at) + 1]


def _checkpoint_context(doc: dict[str, object]) -> dict[str, object]:
    """The context's values before the first entry: none at the start, the checkpoint's
    in a compacted history (``compacted.checkpoint.context``)."""
    compacted = doc.get("compacted")
    if compacted is None:
        return {}
    point = compacted.get("checkpoint") if isinstance(compacted, dict) else None
    context = point.get("context") if isinstance(point, dict) else None
    if not isinstance(context, dict):
        raise HistoryError("'compacted' must hold the checkpoint's context")
    return dict(context)


def _fold(values: dict[str, object], changes: object, i: int) -> None:
    """Apply an entry's changes (JSON Patch operations of ``/field``) to ``values``."""
    if not isinstance(changes, list):
        raise HistoryError(f"'entries[{i}].changes' must be a list of operations")
    for change in changes:
        if not isinstance(change, dict) or not isinstance(change.get("path"), str):
            raise HistoryError(f"'entries[{i}].changes' holds an operation without a path")
        name = change["path"].removeprefix("/")
        if change.get("op") == "remove":
            values.pop(name, None)
        else:
            values[name] = change.get("value")


def _shown(value: object) -> str:
    """A value as compact JSON with its decimals exact (``json.dumps`` has no way to
    write a ``Decimal`` as a number)."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_shown(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def validate(history: History, workflow: str, version: int, nodes: set[str]) -> None:
    """Refuse a history of another workflow or version, or one naming unknown nodes."""
    if history.workflow != workflow or history.version != version:
        raise HistoryError(
            f"the history is of {history.workflow} version {history.version}, "
            f"the file is {workflow} version {version}"
        )
    named = [*history.entered, *history.current, *([history.failed] if history.failed else [])]
    unknown = sorted({n for n in named if n not in nodes})
    if unknown:
        raise HistoryError(
            "the history names nodes that are not in the workflow: " + ", ".join(unknown)
        )


def history_overlay(d: Diagram, history: History, owners: dict[str, str]) -> Overlay:
    """Visited path, current nodes and the failed step. ``owners`` maps each node of
    a branch or map body to its parallel or map, whose join is visited with it."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, name in enumerate(history.entered):
        first.setdefault(name, i)
        last[name] = i
        owner = owners.get(name)
        if owner is not None:  # the join of a body that ran
            first.setdefault(join_key(owner), i)
            last[join_key(owner)] = i
    if history.entered:
        first[START] = last[START] = -1
    nodes: dict[str, set[str]] = {k: {"visited"} for k in first}
    for name in history.current:
        nodes.setdefault(name, set()).add("current")
    if history.failed:
        nodes.setdefault(history.failed, set()).add("failed")
    edges = {key: frozenset({"visited"}) for key in taken_edges(d, history, owners)}
    legend = [LegendEntry("visited", f"visited ({len(set(history.entered))} nodes)")]
    legend += (LegendEntry("info", f"{name} = {value}") for name, value in history.values)
    if history.current:
        legend.append(LegendEntry("current", "current: " + ", ".join(history.current)))
    if history.failed:
        legend.append(LegendEntry("failed", f"failed: {history.failed}"))
    return Overlay(
        nodes={k: frozenset(v) for k, v in nodes.items()},
        edges=edges,
        legend_title=f"history of {history.instance}: {history.status}"
        if history.at is None
        else f"history of {history.instance} after step {history.at}",
        legend=tuple(legend),
    )


#: The kind of edge a decision leads to the next ``enter``: a boundary timer fired, an
#: error handled by a route, a compensation run; otherwise a plain successor.
_ROUTES = (("timer ", ("timeout", "timeout-side")), ("compensate with ", ("compensate",)))
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _route(decision: str) -> tuple[str, ...]:
    for prefix, kinds in _ROUTES:
        if decision.startswith(prefix):
            return kinds
    if decision.endswith(" handled"):
        return ("error",)
    if " caught " in decision:  # a boundary signal or message (``events._caught``)
        return ("event-side",) if decision.endswith("(non-interrupting)") else ("event",)
    return ()


def taken_edges(d: Diagram, history: History, owners: dict[str, str]) -> set[str]:
    """The keys of the edges the history took, and no others.

    Each ``enter X`` was reached over one edge into X: the one whose tail the history
    named last before it (the step that completed, failed over a route, had its timer
    fire, or the choice entered just before), of the kind the decision before it says
    (a timeout, a handled error, a compensation). A body's end leads to its join.
    """
    into: dict[str, list[DEdge]] = {}
    for e in d.edges:
        into.setdefault(e.head, []).append(e)
    names = {n.key for n in d.nodes}
    seen: dict[str, int] = {START: 0}  # node key -> when the history last named it
    taken: set[str] = set()
    clock = 0
    for decisions in history.decisions:
        route: tuple[str, ...] = ()
        for decision in decisions:
            clock += 1
            if not decision.startswith(ENTER):
                for word in _WORD.findall(decision):
                    if word in names:
                        seen[word] = clock
                    if join_key(word) in names and " join " in decision:
                        seen[join_key(word)] = clock
                route = _route(decision) or route
                continue
            head = decision.removeprefix(ENTER)
            candidates = [e for e in into.get(head, ()) if e.tail in seen]
            if candidates:
                edge = max(candidates, key=lambda e: (seen[e.tail], e.kind in route))
                taken.add(edge.key)
            seen[head] = clock
            route = ()
            owner = owners.get(head)
            done = [e for e in d.edges if e.tail == head and e.kind == "done"]
            if owner is not None and done:  # a body's end: its join is reached
                taken.update(e.key for e in done)
                seen[join_key(owner)] = clock
    return taken
