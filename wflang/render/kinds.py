"""The visual language: one style per node kind, close to the BPMN conventions.

Two registries, so a new node kind is one case in each and no renderer has an
``if kind == ...`` chain:

- ``classify`` matches a spec node (exhaustively: mypy fails on a kind it
  misses) to its kind key (``task.service``, ``wait.message``, ``end.failed``...)
  and its detail lines;
- ``KINDS`` maps a kind key to its ``Style``: the DOT shape, the Mermaid
  brackets, the marker glyph and the colours.

Tasks are rounded boxes with a small marker (gear for a service, pencil for a
script, a face for a user, a hand for manual work); choices are diamonds; the
start and the ends are circles, an end's outcome shown by its border and fill;
waits and sleeps are double-bordered events with a clock, envelope or signal
triangle; calls have the thick border of a BPMN call activity.
"""

from __future__ import annotations

from typing import Any, assert_never

from attrs import frozen

from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_expr


@frozen
class Style:
    """How one kind of node is drawn in both formats."""

    shape: str  # DOT shape
    mermaid: tuple[str, str]  # Mermaid brackets: ("(", ")") is a rounded box
    marker: str = ""  # glyph in front of the detail line
    fill: str = "#ffffff"
    border: str = "#455a64"
    penwidth: float = 1.2
    rounded: bool = False
    peripheries: int = 1
    width: float | None = None  # a fixed size for marker-only shapes (start, forks)
    show_name: bool = True  # False for the start circle and the forks
    small: bool = False  # a small name (joins)
    outside: bool = False  # the name beside the shape (ends: fixed small circles)
    description: str = ""  # for the tooltip and the docs


_TASK = {"shape": "box", "mermaid": ("(", ")"), "fill": "#eef5fc", "border": "#1e5a8c"}
_TASK_ARGS: dict[str, Any] = {**_TASK, "rounded": True}
_EVENT: dict[str, Any] = {
    "shape": "ellipse",
    "mermaid": ("([", "])"),
    "peripheries": 2,
    "fill": "#fff8e1",
    "border": "#a0740b",
}
#: Forks and joins: the gateways of a parallel or a map.
_GATEWAY: dict[str, Any] = {
    "shape": "diamond",
    "mermaid": ("{", "}"),
    "fill": "#fffde7",
    "border": "#8d6e00",
}
_END: dict[str, Any] = {
    "shape": "circle",
    "mermaid": ("((", "))"),
    "penwidth": 3.0,
    "outside": True,
    "width": 0.34,
}

KINDS: dict[str, Style] = {
    "start": Style(
        "circle",
        ("((", "))"),
        fill="#e8f5e9",
        border="#2e7d32",
        width=0.3,
        show_name=False,
        description="start",
    ),
    "task.service": Style(**_TASK_ARGS, marker="⚙", description="service task"),
    # A read-only service (`reads`): nothing to undo, so drawn paler, and its detail says so.
    "task.service.reads": Style(
        **{**_TASK_ARGS, "fill": "#f4f9f4", "border": "#5b8c5a"},
        marker="⚙",
        description="service task that only reads",
    ),
    "task.script": Style(**_TASK_ARGS, marker="✎", description="script task"),
    "task.user": Style(**_TASK_ARGS, marker="☺", description="user task"),
    "task.manual": Style(**_TASK_ARGS, marker="☝", description="manual task"),
    # BPMN's send task and throw events: a filled marker says it sends rather than waits.
    "task.send.message": Style(**_TASK_ARGS, marker="✉➤", description="send task: a message"),
    "task.send.signal": Style(**_TASK_ARGS, marker="▲", description="send task: a signal"),
    "choice": Style("diamond", ("{", "}"), fill="#fffde7", border="#8d6e00", description="choice"),
    # BPMN's event-based gateway: a diamond around a pentagon in a double circle; here a
    # double-bordered diamond with the pentagon, its arms' events on its edges.
    "first": Style(
        **{**_GATEWAY, "mermaid": ("{{", "}}")},
        marker="⬠",
        peripheries=2,
        description="first: goes on with whichever event comes first",
    ),
    "wait.signal": Style(**_EVENT, marker="△", description="wait for a signal"),
    "wait.message": Style(**_EVENT, marker="✉", description="wait for a message"),
    "wait.until": Style(**_EVENT, marker="◷", description="wait until a time"),
    "sleep": Style(**_EVENT, marker="◷", description="sleep"),
    "call": Style(
        **{**_TASK_ARGS, "mermaid": ("[[", "]]")},
        penwidth=2.6,
        marker="⊞",
        description="call of a sub-workflow",
    ),
    "fork.parallel": Style(
        **_GATEWAY, marker="+", width=0.4, show_name=False, description="parallel fork"
    ),
    "fork.map": Style(
        **_GATEWAY, marker="|||", width=0.4, show_name=False, description="map: one item each"
    ),
    "join": Style(**_GATEWAY, marker="+", small=True, description="join"),
    "end.completed": Style(
        **_END, fill="#e8f5e9", border="#2e7d32", marker="✓", description="end: completed"
    ),
    "end.failed": Style(
        **_END, fill="#ffebee", border="#c62828", marker="✕", description="end: failed"
    ),
    "end.cancelled": Style(
        **_END, fill="#eceff1", border="#607d8b", marker="⊘", description="end: cancelled"
    ),
    "end.compensated": Style(
        **_END, fill="#fff3e0", border="#e65100", marker="↺", description="end: compensated"
    ),
    "missing": Style(
        "box",
        ("[", "]"),
        marker="?",
        fill="#ffffff",
        border="#c62828",
        description="a node that is named but not defined",
    ),
}


def _retry(retry: sp.Retry | None) -> str:
    if retry is None or retry.attempts is None:
        return ""
    return f" · ↻ {retry.attempts}×"  # noqa: RUF001 (a multiplication sign)


def _task(n: sp.TaskNode, read_only: frozenset[str]) -> tuple[str, tuple[str, ...]]:
    kind, what = _work(n.work)
    if isinstance(n.work, sp.ServiceWork) and n.work.service.text in read_only:
        kind, what = f"{kind}.reads", f"{what} · reads"
    style = KINDS[f"task.{kind}"]
    return f"task.{kind}", (f"{style.marker} {what}{_retry(n.retry)}",)


def _service(w: sp.ServiceWork) -> tuple[str, str]:
    return "service", w.service.text + (" · async" if w.asynchronous else "")


def _script(w: sp.ScriptWork) -> tuple[str, str]:
    return "script", "script"


def _user(w: sp.UserWork) -> tuple[str, str]:
    return "user", "user" + _assignee(w.assignee)


def _manual(w: sp.ManualWork) -> tuple[str, str]:
    return "manual", "manual" + _assignee(w.assignee)


def _send(w: sp.SendWork) -> tuple[str, str]:
    to = w.kind.target_keyword
    return f"send.{w.kind.value}", f"{w.name.text} {to} {format_expr(w.target)}"


def _assignee(who: ex.Expr | None) -> str:
    """The assignee on a diagram: a literal's text, an expression as written."""
    if who is None:
        return ""
    return f" · {who.value if isinstance(who, ex.StringLit) else format_expr(who)}"


def _work(w: sp.TaskWork) -> tuple[str, str]:
    """A task's work -> (kind suffix, what the detail line says)."""
    match w:
        case sp.ServiceWork():
            return _service(w)
        case sp.ScriptWork():
            return _script(w)
        case sp.UserWork():
            return _user(w)
        case sp.ManualWork():
            return _manual(w)
        case sp.SendWork():
            return _send(w)
        case _:
            assert_never(w)


def _signal(t: sp.SignalTrigger) -> tuple[str, str]:
    return "wait.signal", f"signal {t.signal.text}"


def _message(t: sp.MessageTrigger) -> tuple[str, str]:
    return "wait.message", f"message {t.message.text}"


def _until(t: sp.UntilTrigger) -> tuple[str, str]:
    return "wait.until", f"until {format_expr(t.at)}"


def _trigger(t: sp.WaitTrigger) -> tuple[str, str]:
    """A wait's trigger -> (kind, what the detail line says)."""
    match t:
        case sp.SignalTrigger():
            return _signal(t)
        case sp.MessageTrigger():
            return _message(t)
        case sp.UntilTrigger():
            return _until(t)
        case _:
            assert_never(t)


def _wait(n: sp.WaitNode) -> tuple[str, tuple[str, ...]]:
    kind, what = _trigger(n.trigger)
    return kind, (f"{KINDS[kind].marker} {what}",)


def _choice(n: sp.ChoiceNode) -> tuple[str, tuple[str, ...]]:
    return "choice", ()


def _first(n: sp.FirstNode) -> tuple[str, tuple[str, ...]]:
    return "first", (f"{KINDS['first'].marker} first of {len(n.arms)}",)


def _sleep(n: sp.SleepNode) -> tuple[str, tuple[str, ...]]:
    return "sleep", (f"{KINDS['sleep'].marker} {format_expr(n.duration)}",)


def _call(n: sp.CallNode) -> tuple[str, tuple[str, ...]]:
    version = "" if n.version is None else f" v{n.version}"
    return "call", (f"{KINDS['call'].marker} {n.workflow.text}{version}{_retry(n.retry)}",)


def _end(n: sp.EndNode) -> tuple[str, tuple[str, ...]]:
    kind = f"end.{n.outcome.value}"
    error = "" if n.error is None else f" {n.error.text}"
    return kind, (f"{KINDS[kind].marker}{error}",)


def _parallel(n: sp.ParallelNode) -> tuple[str, tuple[str, ...]]:
    return "fork.parallel", ()


def _map(n: sp.MapNode) -> tuple[str, tuple[str, ...]]:
    return "fork.map", ()


def classify(node: sp.Node, read_only: frozenset[str] = frozenset()) -> tuple[str, tuple[str, ...]]:
    """A node's kind key (in ``KINDS``) and the detail lines drawn under its name;
    ``read_only``: the services declared ``reads``, whose tasks are drawn apart."""
    match node:
        case sp.TaskNode():
            return _task(node, read_only)
        case sp.ChoiceNode():
            return _choice(node)
        case sp.WaitNode():
            return _wait(node)
        case sp.FirstNode():
            return _first(node)
        case sp.SleepNode():
            return _sleep(node)
        case sp.ParallelNode():
            return _parallel(node)
        case sp.MapNode():
            return _map(node)
        case sp.CallNode():
            return _call(node)
        case sp.EndNode():
            return _end(node)
        case _:
            assert_never(node)


def join_label(join: sp.Join | None) -> str:
    """``all``, ``any`` or ``2 of 3``: what a parallel's join node says."""
    if join is None or join.kind is sp.JoinKind.ALL:
        return "all"
    if join.kind is sp.JoinKind.ANY:
        return "any"
    return f"{join.count}" + ("" if join.of is None else f" of {join.of}")


def map_detail(n: sp.MapNode) -> str:
    """The line under a map cluster's name: what it runs over and how."""
    parts = [f"{'≡' if n.sequential else '|||'} over {format_expr(n.items)} as {n.alias.text}"]
    if n.sequential:
        parts.append("sequential")
    if n.concurrency is not None:
        parts.append(f"concurrency {n.concurrency}")
    if n.tolerate is not None:
        parts.append(f"tolerate {n.tolerate.value}{'%' if n.tolerate.percent else ''}")
    if n.locals:  # each item's own variables
        parts.append(f"local {', '.join(f.name.text for f in n.locals)}")
    if n.collects:  # the context lists it fills
        parts.append(f"collect → {', '.join(c.target.text for c in n.collects)}")
    return " · ".join(parts)
