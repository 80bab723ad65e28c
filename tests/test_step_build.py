"""The values the step function makes without their constructors (``step.build``)
have exactly their attrs fields and equal what the constructors make."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_step_common import FANOUT, LOOP, table_of
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime import step as sp
from wflang.runtime.changes import Change
from wflang.runtime.ir import Value
from wflang.runtime.keys import task_key
from wflang.runtime.step import build
from wflang.runtime.waiting import Wait


def _fields(cls: type) -> set[str]:
    return {f.name for f in attrs.fields(cls)}


def _own(value: object) -> set[str]:
    """The names in a value's ``__dict__`` but the step's index of an instance."""
    return set(vars(value)) - {"_step_index"}


def _same(fast: object, made: object) -> None:
    assert _own(fast) == _fields(type(made)) == _own(made)
    assert fast == made
    for name in _fields(type(made)):
        assert getattr(fast, name) == getattr(made, name), name


def test_a_new_draft_freezes_to_the_tokens_defaults() -> None:
    draft = build.Draft(3, 4, parent=1, index=2, side=True, locals=(("x", 1),))
    _same(build.token_of(draft), rt.Token(3, 4, 1, 2, side=True, locals=(("x", 1),)))


def test_a_call_is_its_fields_and_its_token_waits_for_it() -> None:
    token = rt.Token(1, 4, attempt=2, waiting="entering", visit=7)
    fields = token.__dict__.copy()
    made = rt.ScheduleTask(task_key("i", "n", 7, 1, 2), 1, "n", "s.x", {"a": 1}, 2)
    _same(build.call(fields, "i", "n", "s.x", {"a": 1}), made)
    _same(build.token_with(fields), attrs.evolve(token, waiting="task"))


def test_a_draft_of_a_token_has_its_fields() -> None:
    token = rt.Token(1, 2, 0, 1, 3, "signal:go", False, True, (), 7)
    draft = build.draft_of(token)
    draft.waiting = Wait.TASK
    _same(build.token_of(draft), attrs.evolve(token, waiting="task"))
    assert token.waiting == "signal:go"  # the draft is a copy


@given(st.integers(0, 5), st.integers(1, 9), st.integers(0, 5), st.integers(0, 99))
def test_token_fields_and_entered(token: int, state: int, parent: int, visit: int) -> None:
    fields = build.token_fields(token, 0, parent, 2, Wait.IDLE, 0)
    build.entered(fields, state, visit)
    made = rt.Token(token, state, parent, 2, waiting="entering", visit=visit)
    _same(build.token_with(fields), made)


@given(st.booleans(), st.booleans(), st.integers(0, 9))
def test_counted_joins(ok: bool, keeps: bool, index: int) -> None:
    output: dict[str, Value] = {"b": 2}
    join = rt.Join(5, 4, 1, 1, 3, ((0, {"a": 1}),))
    kept: tuple[tuple[int, Value], ...] = ((index, output),) if ok and keeps else ()
    made = rt.Join(5, 4, 1 + ok, 1 + (not ok), 3, join.results + kept)
    _same(build.counted(join, ok, index, output, keeps), made)


def test_a_step_is_its_fields() -> None:
    old = rt.Instance("i", "w", 1, rt.Status.RUNNING, {"a": 1}, {}, seq=4, seed=9)
    token = rt.Token(0, 1)
    timer = rt.Timer("i:t:1:0:1:sleep", 0, "sleep", 5)
    join = rt.Join(0, 2)
    index: build.Index = ({0: token}, {timer.id: timer}, {0: join})
    commands: tuple[rt.Command, ...] = (rt.CancelTimer(timer.id),)
    step = build.frozen(old, {"n": 1}, index, commands, ("why",), {"status": rt.Status.FAILED})
    made = attrs.evolve(
        old, context={"n": 1}, status=rt.Status.FAILED, tokens=(token,), timers=(timer,),
        joins=(join,), seq=5,
    )  # fmt: skip
    # what it changed in the context (the field it added), found when first asked
    assert "changes" not in vars(step) and "_context_before" in vars(step)
    assert step.changes == (Change("add", "/n", 1),)
    assert "_context_before" not in vars(step)  # the old context is let go
    _same(step, sp.Step(made, commands, ("why",), (Change("add", "/n", 1),)))
    new = step.instance
    _same(new, made)
    copies = build.index_of(new)  # the index it keeps, copied
    assert copies == index and all(c is not i for c, i in zip(copies, index, strict=True))
    # A step of the common path keeps no index: the next one builds it from the fields.
    later = build.stepped(new, {"n": 2}, (), (), ())
    _same(later.instance, attrs.evolve(made, context={"n": 2}, tokens=(), seq=6))
    assert later.changes == (Change("replace", "/n", 2, 1),)
    assert "_step_index" not in vars(later.instance)
    assert build.index_of(later.instance) == ({}, {timer.id: timer}, {0: join})


@given(
    st.lists(st.integers(0, 30), unique=True, max_size=8),
    st.integers(0, 31),
    st.integers(0, 9),
    st.integers(0, 40),
)
def test_position_finds_a_token_by_id(ids: list[int], wanted: int, end: int, next_: int) -> None:
    tokens = tuple(rt.Token(i, 0) for i in sorted(ids))
    next_token = max([next_, *(i + 1 for i in ids)])  # above every id, as an instance's
    at = build.position(tokens, wanted, len(tokens), next_token)
    assert (at >= 0) == (wanted in ids)
    if at >= 0:
        assert tokens[at].id == wanted
    end = min(end, len(tokens))
    among = build.position(tokens, wanted, end, next_token)  # among the first ``end`` only
    assert among == (at if 0 <= at < end else -1)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=12))
def test_every_instance_a_step_makes_round_trips(picks: list[int]) -> None:
    """Instances and tokens made by real steps (both paths) have exactly their fields,
    and equal themselves read back from JSON."""
    for source in (LOOP, FANOUT.replace("JOIN", "all")):
        table = table_of(source)
        s = sp.start(table, "i1", {}, 0)
        for pick in picks:
            inst = s.instance
            assert _own(inst) == _fields(rt.Instance)
            for token in inst.tokens:
                assert _own(token) == _fields(rt.Token)
                assert type(token.waiting) is str  # the stored text, not a ``Wait``
            assert codec.load_instance(codec.dump_instance(inst)) == inst
            open_ = [c.key for c in s.commands if isinstance(c, rt.ScheduleTask)]
            waiting = [
                task_key(inst.id, table.states[t.state].name, t.visit, t.id, t.attempt)
                for t in inst.tokens
                if t.waiting == "task"
            ]
            assert set(open_) <= set(waiting)
            if not waiting:
                break
            key = waiting[pick % len(waiting)]
            s = sp.step(table, inst, rt.TaskCompleted(key, {"v": pick}), 0)
