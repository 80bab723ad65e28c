"""The one interpreter of commands (``wflang.runtime.commands``) and of a handler's
outcome (``wflang.runtime.outcome``): every command kind has a meaning, and the
engine and the stores implement every effect."""

from __future__ import annotations

import inspect
import typing

from wflang.runtime import instance as rt
from wflang.runtime.commands import COMMANDS, Effects, child_outcome, interpret
from wflang.runtime.engine import EngineEffects
from wflang.runtime.outcome import TaskCall, TaskError, call_handler
from wflang.store.effects import StoreEffects


def test_every_command_kind_has_a_meaning() -> None:
    assert set(COMMANDS) == set(typing.get_args(rt.Command))


def _effects(cls: type) -> set[str]:
    return {n for n, f in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}


def test_the_engine_and_the_stores_implement_every_effect() -> None:
    wanted = _effects(Effects)
    assert wanted <= _effects(EngineEffects)
    assert wanted <= _effects(StoreEffects)


class _Recorded:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def __getattr__(self, name: str) -> typing.Callable[..., None]:
        return lambda *args: self.calls.append((name, args))


def test_a_finished_child_tells_its_parent_after_its_own_end() -> None:
    rec = _Recorded()
    end = rt.Finish(rt.Status.FAILED, error="Boom")
    interpret(typing.cast(Effects, rec), "root/abc", "call-key", (end,))
    assert rec.calls == [("finish", (end,)), ("tell_parent", (rt.ChildFailed("call-key", "Boom"),))]
    interpret(typing.cast(Effects, rec), "top", None, (end,))
    assert rec.calls[-1] == ("finish", (end,))  # no parent: nobody to tell


def test_a_child_outcome_is_its_output_or_its_error_or_its_status() -> None:
    done = rt.Finish(rt.Status.COMPLETED, output={"a": 1})
    assert child_outcome("k", done) == rt.ChildCompleted("k", {"a": 1})
    assert child_outcome("k", rt.Finish(rt.Status.CANCELLED)) == rt.ChildFailed("k", "cancelled")


def test_a_handler_outcome_means_the_same_wherever_it_runs() -> None:
    call = TaskCall("i", "n", 1, "key")

    def declared() -> None:
        raise TaskError("Bad", "no", transient=False)

    def crashes() -> None:
        raise ZeroDivisionError("x")

    def no_object() -> typing.Any:  # a handler with a bug: its type says it may
        return [1]

    assert call_handler(declared, {}, call, "s") == rt.TaskFailed("key", "Bad", False, "no")
    assert call_handler(crashes, {}, call, "s") == rt.TaskFailed(
        "key", "ZeroDivisionError", True, "x"
    )
    assert call_handler(no_object, {}, call, "s") == rt.TaskFailed(
        "key", "InvalidResult", False, "the handler of s returned list, not an object"
    )
    assert call_handler(lambda: None, {}, call, "s") == rt.TaskCompleted("key", {})
