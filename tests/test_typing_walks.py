"""The typing's first walk (``inference._non_null_writes``) types only each node's
``output``: what it finds a node writes that cannot be null must be what typing the
whole node finds, or the null facts, and so the findings, would differ. Checked by
typing every workflow both ways: with the first walk, and with the full typing of
each node in its place (as the typing did before)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.compiler import inference
from wflang.compiler.check import module_model
from wflang.compiler.inference import _type_workflow
from wflang.compiler.model import Model
from wflang.compiler.program import load_program
from wflang.compiler.types import Inference, Type, TypeEnv
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse

from .fuzzing import mutate, seeds
from .strategies import specs
from .test_step_properties import workflows


def full_node_writes(m: Model, env: TypeEnv, node: sp.Node, roots: dict[str, Type]) -> set[str]:
    """What typing the whole node (guards, args, output…) finds it writes non-null."""
    found: list[set[str]] = []
    real = inference._type_output

    def keep(*args: object) -> set[str]:
        written = real(*args)  # type: ignore[arg-type]
        found.append(written)
        return written

    def quiet(roots: Mapping[str, Type]) -> Inference:
        return Inference(env, roots)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference, "_type_output", keep)
        inference._type_node(m, env, node, roots, quiet, [])
    if isinstance(node, sp.FirstNode):  # each arm's output, typed on its own: only its
        return set()  # route has what it writes, so no walk counts on a first's writes
    (written,) = found  # its output, typed once
    return written


def assert_same(text: str) -> None:
    """Type a workflow, checking at each node of the first walk that it finds what the
    full typing of the node finds; the typing is the same as without the check."""
    program = load_program([parse(text, "w.wf")])
    if program.modules["w.wf"].spec is None:
        return
    first_walk = inference._non_null_writes

    def compared(m: Model, env: TypeEnv, node: sp.Node, roots: dict[str, Type]) -> set[str]:
        fast = first_walk(m, env, node, roots)
        assert fast == full_node_writes(m, env, node, roots), node.name.text
        return fast

    alone = _type_workflow(module_model(program, "w.wf"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference, "_non_null_writes", compared)
        checked = _type_workflow(module_model(program, "w.wf"))
    assert alone == checked
    assert dict(alone.types) == dict(checked.types)


@pytest.mark.parametrize("path_text", seeds(), ids=lambda p: p[0])
def test_the_first_walk_finds_what_the_full_typing_finds(path_text: tuple[str, str]) -> None:
    _, text = path_text
    assert_same(text)
    assert_same(mutate(text, len(text), 2))  # and broken: findings of every kind


PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(st.one_of(specs.map(format_spec), workflows()), st.integers(0, 2**16))
def test_the_first_walk_agrees_on_generated_workflows(text: str, seed: int) -> None:
    assert_same(text)
    assert_same(mutate(text, seed, 2))
