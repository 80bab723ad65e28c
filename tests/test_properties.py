"""Property tests: printing any valid spec parses back to it; no input crashes the parser."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wflang.dsl import parse, parse_bytes
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.serialize import structure, unstructure

from .strategies import soups, specs

PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(specs)
def test_print_then_parse_round_trips(spec: sp.WorkflowSpec) -> None:
    text = format_spec(spec)
    result = parse(text, spec.file)
    assert result.diagnostics == (), text
    assert result.spec == spec, text
    # And formatting is idempotent on what it printed.
    assert format_spec(result.spec, text) == text


@PROPS
@given(specs)
def test_unstructure_structure_round_trips(spec: sp.WorkflowSpec) -> None:
    data = json.loads(json.dumps(unstructure(spec)))
    back = structure(json.loads(json.dumps(data)))
    assert back == spec
    assert unstructure(back) == data


@PROPS
@given(st.binary(max_size=400))
def test_random_bytes_only_give_diagnostics(data: bytes) -> None:
    result = parse_bytes(data, "fuzz.wf")
    assert result.spec is not None or result.diagnostics


@PROPS
@given(soups)
def test_token_soup_only_gives_diagnostics(text: str) -> None:
    result = parse(text, "soup.wf")
    assert result.spec is not None or result.diagnostics
    for d in result.diagnostics:
        assert d.span.line >= 1 and d.span.column >= 1
        assert d.message
