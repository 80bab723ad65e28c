"""Completeness of the step function's per-kind tables: a node kind or an event
added to the runtime cannot be forgotten by the step."""

from __future__ import annotations

from typing import get_args

import attrs

from wflang.runtime import instance as rt
from wflang.runtime import table as tb
from wflang.runtime.step import ENTER, HANDLERS
from wflang.runtime.step.enter import SUBMIT, entering
from wflang.runtime.step.scopes import JOINED

KINDS = set(get_args(tb.Entry))


def _with_field(name: str) -> set[type]:
    return {kind for kind in KINDS if name in attrs.fields_dict(kind)}


def test_every_node_kind_is_entered() -> None:
    assert set(ENTER) == KINDS


def test_every_event_is_handled() -> None:
    assert set(HANDLERS) == set(get_args(rt.Event))


def test_every_kind_with_a_body_joins_it() -> None:
    """A parallel's branches and a map's items end into their join."""
    assert set(JOINED) == _with_field("branches") | _with_field("body")


def test_every_kind_that_retries_submits_again() -> None:
    assert set(SUBMIT) == _with_field("retry")


def test_every_kind_has_an_entry_strategy() -> None:
    """``entering`` chooses a strategy for every kind (a shorter one for some)."""
    samples: list[tb.Entry] = [
        tb.TaskEntry("service", "s.x"),
        tb.TaskEntry("service", "s.x", timers=(tb.Timer(0, 0),)),
        tb.TaskEntry("script"),
        tb.ChoiceEntry(),
        tb.WaitEntry("signal", "go"),
        tb.FirstEntry((tb.Arm("signal", "go"), tb.Arm("after", None, 0))),
        tb.SleepEntry(0),
        tb.ParallelEntry((1,)),
        tb.MapEntry(0, "item", 1),
        tb.CallEntry("child", None),
        tb.EndEntry("completed"),
    ]
    assert {type(s) for s in samples} == KINDS
    for sample in samples:
        assert callable(entering(sample))
