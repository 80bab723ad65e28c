"""The fuzzer behind tests/test_fuzz.py: mutated and generated sources through the toolchain.

``run_pipeline`` takes one source text through parse → check → fmt → compile → run
(the in-memory engine of the test kit, with handlers that answer with plausible
typed results or raise declared errors) and returns what it cost; anything that
goes wrong raises. ``mutants`` is the hypothesis strategy of inputs: the examples
and the test data mutated token by token (deletions, duplications, swaps, junk,
comments, unicode, huge numbers, other line endings) and sources generated from
random specs and random runnable workflows.

Run it long with ``python -m tests.test_fuzz --examples 20000``.
"""

from __future__ import annotations

import random
import time
import traceback
import tracemalloc
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import attrs
from hypothesis import strategies as st
from lark import Token

from wflang.compiler.compile import compile_workflow
from wflang.dsl import parse
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import lex
from wflang.runtime import instance as rt
from wflang.runtime.engine import Engine, TaskCall, TaskError
from wflang.runtime.ir import Value
from wflang.runtime.table import CallEntry, Table, TaskEntry, Types
from wflang.runtime.validate import fit_input, fit_output, fit_payload

ROOT = Path(__file__).parent.parent
#: A bound a busy machine keeps: CPU seconds (not wall time) per KB of input, plus a base.
SECONDS_BASE, SECONDS_PER_KB = 5.0, 2.0
#: Peak memory allocated by Python (tracemalloc) per KB of input, plus a base.
MB_BASE, MB_PER_KB = 24.0, 8.0
#: How far a run is driven: rounds of answering tasks, signals, messages and timers.
ROUNDS = 6
#: And at most so many timers fired in a round.
TIMERS = 50
_COMMENTS = {"LINE_COMMENT", "BLOCK_COMMENT"}


def _seed_paths() -> list[Path]:
    paths = sorted(ROOT.joinpath("examples").glob("*.wf"))
    paths += sorted(ROOT.joinpath("tests", "data").rglob("*.wf"))
    return paths


@cache
def seeds() -> tuple[tuple[str, str], ...]:
    """(path, text) of every .wf file of the examples and the test data, small ones first."""
    found = []
    for path in _seed_paths():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if len(text) <= 64 * 1024:
            found.append((str(path.relative_to(ROOT)), text))
    return tuple(found)


def tokens(text: str) -> list[Token]:
    """The tokens of ``text`` (blanks and comments included), as far as it lexes."""
    found: list[Token] = []
    try:
        for t in lex(text):
            found.append(t)
    except Exception:  # a mutant need not lex: what lexed is enough
        pass
    return found


# ------------------------------------------------------------------------- mutations

JUNK = [
    "{", "}", "(", ")", "[", "]", ",", ":", "->", "..", ".", "=", "==", "<", "+", "-", "*", "/",
    "%", "?", "$", "'", '"', "#", ";", "&&", "!", "@", "\\", "`", "non-interrupting", "next",
    "task", "end", "retry", "map", "over", "as", "join", "branch", "workflow", "version",
    "import", "output", "args", "when", "else", "not", "and", "in", "null", "true",
    "0", "1", "-1", "3.5", "1e9", "0.000000001", "90s", "P1D", "PT1.5S", "2026-02-30T25:61:00Z",
    '"s"', '"\\u{10FFFF}"', '"\\u{d800}"', '"\\q"', "// c", "/* c */", "/*", "*/",
    "\u00e9", "\u200b", "\ufeff", "\u202e", "\U0001f600", "\x00", "\x0b", "\x1b[31m",
    "\ud800", "\u2028", "\r", "\r\n", "\t", " " * 200,
]  # fmt: skip
HUGE = ["9" * 19, "18446744073709551616", "1" + "0" * 40, "9" * 400, "1" + "0" * 5000]
COMMENTS = ["// c\n", "/* c */", "/* c\n */", "\n// c\n", "//\n"]


Mutation = Callable[[random.Random, str, list[Token]], str]


def _at(rng: random.Random, toks: list[Token]) -> Token | None:
    solid = [t for t in toks if t.type != "WS"]
    return rng.choice(solid) if solid else None


def _span(t: Token) -> tuple[int, int]:
    return int(t.start_pos or 0), int(t.end_pos or 0)


def delete_token(rng: random.Random, text: str, toks: list[Token]) -> str:
    t = _at(rng, toks)
    if t is None:
        return text
    a, b = _span(t)
    return text[:a] + text[b:]


def duplicate_token(rng: random.Random, text: str, toks: list[Token]) -> str:
    t = _at(rng, toks)
    if t is None:
        return text
    a, b = _span(t)
    return text[:b] + " " + text[a:b] + text[b:]


def swap_tokens(rng: random.Random, text: str, toks: list[Token]) -> str:
    solid = [t for t in toks if t.type != "WS"]
    if len(solid) < 2:
        return text
    i = rng.randrange(len(solid) - 1)
    (a1, b1), (a2, b2) = _span(solid[i]), _span(solid[i + 1])
    return text[:a1] + text[a2:b2] + text[b1:a2] + text[a1:b1] + text[b2:]


def insert_junk(rng: random.Random, text: str, toks: list[Token]) -> str:
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice(JUNK) + text[at:]


def insert_comment(rng: random.Random, text: str, toks: list[Token]) -> str:
    t = _at(rng, toks)
    if t is None or t.type in _COMMENTS:
        return text
    _, b = _span(t)
    return text[:b] + rng.choice(COMMENTS) + text[b:]


def insert_unicode(rng: random.Random, text: str, toks: list[Token]) -> str:
    at = rng.randrange(len(text) + 1)
    ch = chr(rng.choice([rng.randrange(0x80, 0x800), rng.randrange(0x800, 0xD800),
                         rng.randrange(0xE000, 0x110000), rng.randrange(0, 0x20)]))  # fmt: skip
    return text[:at] + ch + text[at:]


def huge_number(rng: random.Random, text: str, toks: list[Token]) -> str:
    numbers = [t for t in toks if t.type in ("INT", "DECIMAL", "DURATION")]
    if not numbers:
        return text
    t = rng.choice(numbers)
    a, b = _span(t)
    big = rng.choice(HUGE)
    if t.type == "DURATION":
        big += rng.choice(["ms", "s", "d", "w"])
    elif t.type == "DECIMAL":
        big += "." + rng.choice(["5", "0" * 30 + "1", "9" * 60])
    return text[:a] + big + text[b:]


def line_endings(rng: random.Random, text: str, toks: list[Token]) -> str:
    return text.replace("\n", rng.choice(["\r\n", "\r", "\n\n", "\u2028", "\x0c\n"]))


def rename(rng: random.Random, text: str, toks: list[Token]) -> str:
    names = [t for t in toks if t.type == "NAME"]
    if not names:
        return text
    t = rng.choice(names)
    a, b = _span(t)
    other = rng.choice([str(rng.choice(names)), "input", "context", "result", "x" * 300, "_"])
    return text[:a] + other + text[b:]


def long_string(rng: random.Random, text: str, toks: list[Token]) -> str:
    strings = [t for t in toks if t.type == "STRING"]
    if not strings:
        return text
    a, b = _span(rng.choice(strings))
    body = rng.choice(["a" * 20_000, "\\n" * 2000, "\\u{1F600}" * 500, "\\\\" * 3000])
    return text[:a] + '"' + body + '"' + text[b:]


def cut(rng: random.Random, text: str, toks: list[Token]) -> str:
    at = rng.randrange(len(text) + 1)
    return text[:at]


MUTATIONS: tuple[Mutation, ...] = (
    delete_token, duplicate_token, swap_tokens, insert_junk, insert_comment, insert_unicode,
    huge_number, line_endings, rename, long_string, cut,
)  # fmt: skip


def mutate(text: str, seed: int, count: int) -> str:
    rng = random.Random(seed)
    for _ in range(count):
        text = rng.choice(MUTATIONS)(rng, text, tokens(text))
    return text


@st.composite
def mutants(draw: st.DrawFn) -> tuple[str, str]:
    """(file name, source): a mutated seed file, or a generated source, maybe mutated."""
    from .strategies import specs
    from .test_step_properties import workflows

    kind = draw(st.sampled_from(["seed", "seed", "seed", "spec", "runnable"]))
    if kind == "seed":
        path, text = draw(st.sampled_from(seeds()))
    elif kind == "spec":
        path, text = "generated.wf", format_spec(draw(specs))
    else:
        path, text = "generated.wf", draw(workflows())
    count = draw(st.integers(0 if kind != "seed" else 1, 4))
    return path, mutate(text, draw(st.integers(0, 2**32)), count)


def generated_pool(size: int) -> list[str]:
    """Sources generated from random specs and random runnable workflows (for the long run,
    which mutates them further without hypothesis)."""
    import warnings

    from hypothesis.errors import HypothesisWarning, NonInteractiveExampleWarning

    from .strategies import specs
    from .test_step_properties import workflows

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
        warnings.simplefilter("ignore", HypothesisWarning)
        pool = [format_spec(specs.example()) for _ in range(size // 2)]
        pool += [workflows().example() for _ in range(size - size // 2)]
    return pool


def inputs(count: int, seed: int, pool: list[str]) -> Iterator[tuple[str, str, int]]:
    """(file name, source, run seed) for the long run: as ``mutants``, without hypothesis."""
    rng = random.Random(seed)
    for _ in range(count):
        if rng.random() < 0.6 or not pool:
            path, text = rng.choice(seeds())
            n = rng.randint(1, 4)
        else:
            path, text = "generated.wf", rng.choice(pool)
            n = rng.randint(0, 4)
        yield path, mutate(text, rng.randrange(2**32), n), rng.randrange(2**16)


# ------------------------------------------------------------------------- known failures

#: Failures the fuzzer finds that are reported in issue 20 and fixed elsewhere, by
#: (item, exception type, text in the message or in the file of the raising frame).
#: The suite's fuzz test skips an input that fails only so; the long run counts them
#: apart. Remove an entry when its fix lands: the test then holds the line.
KNOWN: tuple[tuple[str, type[BaseException], str], ...] = ()


def known(err: BaseException) -> str | None:
    """The issue item a failure is already reported as, if it is."""
    frames = traceback.extract_tb(err.__traceback__)
    where = frames[-1].filename if frames else ""
    for item, kind, text in KNOWN:
        if isinstance(err, kind) and (text in str(err) or where.endswith(text)):
            return item
    return None


# ------------------------------------------------------------------------- the pipeline


@attrs.frozen
class Cost:
    """What one input cost: CPU seconds and peak traced memory, and its size."""

    kb: float
    seconds: float
    peak_mb: float
    stages: tuple[str, ...]

    @property
    def seconds_allowed(self) -> float:
        return SECONDS_BASE + SECONDS_PER_KB * self.kb

    @property
    def mb_allowed(self) -> float:
        return MB_BASE + MB_PER_KB * self.kb


def run_pipeline(path: str, text: str, seed: int = 0) -> Cost:
    """parse → check → fmt → compile → run; raises on any failure, returns the cost."""
    tracemalloc.start()
    began = time.process_time()
    try:
        stages = _pipeline(path, text, seed)
        seconds = time.process_time() - began
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    kb = len(text.encode("utf-8", "surrogatepass")) / 1024
    return Cost(kb, seconds, peak / 2**20, stages)


def _pipeline(path: str, text: str, seed: int) -> tuple[str, ...]:
    stages = ["parse"]
    parsed = parse(text, str(ROOT / path))
    assert parsed.spec is not None or parsed.diagnostics, "no spec and no diagnostic"
    if parsed.spec is not None:
        stages.append("fmt")
        check_format(parsed.spec, parsed.text, str(ROOT / path))  # the text its spans refer to
    stages.append("check")
    compiled = compile_workflow(parsed)
    if compiled.table is not None:
        stages.append("run")
        drive(compiled.table, seed)
    return tuple(stages)


def _meaning(spec: sp.WorkflowSpec) -> tuple[sp.WorkflowSpec, list[tuple[str, ...]]]:
    """A spec without what formatting may move: suppressions' line numbers."""
    return attrs.evolve(spec, suppressions=()), [s.codes for s in spec.suppressions]


def check_format(spec: sp.WorkflowSpec, text: str, file: str) -> None:
    """``wf fmt`` is idempotent and keeps the meaning and the comments."""
    once = format_spec(spec, text)
    again = parse(once, file)
    assert again.spec is not None, f"formatted source does not parse: {again.diagnostics}"
    assert _meaning(again.spec) == _meaning(spec), "formatting changed the meaning"
    assert [c.text.rstrip() for c in again.spec.comments] == [
        c.text.rstrip() for c in spec.comments
    ], "formatting changed the comments"
    assert format_spec(again.spec, once) == once, "formatting is not idempotent"


# ------------------------------------------------------------------------- running


def plausible(types: Types, type_text: str, rng: random.Random, depth: int = 0) -> Value:
    """A value of a declared type (as the table writes it), sometimes at an edge."""
    t = type_text.strip()
    if t.endswith("?"):
        return None if rng.random() < 0.3 or depth > 4 else plausible(types, t[:-1], rng, depth)
    scalars: dict[str, Callable[[], Value]] = {
        "string": lambda: rng.choice(["", "x", "caf\u00e9", "a" * 300, "\U0001f600"]),
        "int": lambda: rng.choice([0, 1, -1, 7, 2**31, -(2**62)]),
        "decimal": lambda: rng.choice(
            [Decimal("0"), Decimal("1.50"), Decimal("-3"), Decimal("12345678901234567890.123")]
        ),
        "bool": lambda: rng.choice([True, False]),
        "duration": lambda: rng.choice([0, 1000, 3_600_000, 90 * 86_400_000]),
        "timestamp": lambda: rng.choice([0, 1_767_225_600_000, 4_102_444_800_000]),
    }
    if t in scalars:
        return scalars[t]()
    if t.startswith("list[") and t.endswith("]"):
        n = 0 if depth > 4 else rng.randint(0, 3)
        return [plausible(types, t[5:-1], rng, depth + 1) for _ in range(n)]
    if t.startswith("map[") and t.endswith("]"):
        inner = t[4:-1].split(",", 1)[-1]
        return {} if depth > 4 else {"k": plausible(types, inner, rng, depth + 1)}
    for enum in types.enums:
        if enum.name == t and enum.members:
            return rng.choice(enum.members)
    for record in types.records:
        if record.name == t:
            return {
                f.name: plausible(types, f.type, rng, depth + 1)
                for f in record.fields
                if not (f.has_default and rng.random() < 0.5)
            }
    return "x"


def _fields(types: Types, shape: Any, rng: random.Random) -> dict[str, Value]:
    return {f.name: plausible(types, f.type, rng) for f in shape.fields}


def _services(table: Table) -> set[str]:
    return {
        s.entry.service
        for s in table.states
        if isinstance(s.entry, TaskEntry) and s.entry.service is not None
    }


def drive(table: Table, seed: int) -> None:
    """Start the workflow with a plausible input and answer it for a few rounds."""
    rng = random.Random(seed)
    types = table.types
    results = {r.name: r for r in types.results}

    def handler(task: TaskCall, **args: Value) -> dict[str, Value]:
        if rng.random() < 0.25:
            errors = list(table.errors) or ["Unavailable"]
            raise TaskError(rng.choice(errors), transient=rng.random() < 0.5)
        shape = results.get(task.node)
        return {} if shape is None else _fields(types, shape, rng)

    callees = {s.entry.workflow for s in table.states if isinstance(s.entry, CallEntry)}
    if callees - {table.workflow}:
        return  # the engine needs the tables of the workflows it calls; a mutant has none
    engine = Engine([table], dict.fromkeys(_services(table), handler), seed=seed)
    data = {
        f.name: plausible(types, f.type, rng)
        for f in table.input
        if f.default is None or rng.random() < 0.5
    }
    if fit_input(table, data)[1]:
        return  # the input does not fit (a type the table does not describe): nothing to run
    iid = engine.start(table.workflow, data)
    for _ in range(ROUNDS):
        if engine.instance(iid).status.finished:
            return
        for key, task in list(_human_tasks(engine)):
            shape = results.get(task.node)
            output = {} if shape is None else _fields(types, shape, rng)
            if key in _open_keys(engine):
                # a person raises only what the task declares (with no payload to make up)
                entry = table.states[table.state_id(task.node)].entry
                raisable = [
                    e
                    for e in getattr(entry, "raises", None) or ()
                    if all(s.name != e for s in types.errors)
                ]
                wrong = bool(fit_output(table, task.node, output, fill=True)[1])
                if raisable and (wrong or rng.random() < 0.2):
                    engine.fail_task(key, rng.choice(raisable))
                elif not wrong:
                    engine.complete_task(key, output)
        for kind, shapes in (("signal", types.signals), ("message", types.messages)):
            for shape in shapes:
                payload = _fields(types, shape, rng)
                if not fit_payload(table, kind, shape.name, payload)[1] and iid in engine.records:
                    engine.send(iid, rt.SignalReceived(shape.name, payload, "", kind))
        _advance(engine, rng.choice([1_000, 3_600_000, 86_400_000, 40 * 86_400_000]))


def _advance(engine: Engine, ms: int) -> None:
    """Move the clock by ``ms``, firing at most ``TIMERS`` timers: a loop through a 1 ms
    sleep would otherwise fire billions of them in 40 days (as it is told to)."""
    until = engine.now + ms
    for _ in range(TIMERS):
        due = min((d for d, _ in engine.timers.values()), default=until + 1)
        if due > until:
            break
        engine.advance(max(due - engine.now, 0))
    else:
        return
    engine.advance(until - engine.now)


def _human_tasks(engine: Engine) -> Iterator[tuple[str, rt.CreateHumanTask]]:
    for record in list(engine.records.values()):
        for key, task in list(record.tasks.items()):
            if isinstance(task, rt.CreateHumanTask):
                yield key, task


def _open_keys(engine: Engine) -> set[str]:
    return {key for record in engine.records.values() for key in record.tasks}
