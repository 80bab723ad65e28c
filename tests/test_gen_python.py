"""``wf gen python`` (issue 17): a typed, deterministic, formatted module per file,
which mypy --strict and ruff accept, and which catches a handler that does not fit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wflang.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent


def tool(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / name), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def mypy(cwd: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    return tool("mypy", "--strict", "--no-incremental", "--cache-dir=/dev/null", *targets, cwd=cwd)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every example generated into ``gen/`` of a fresh folder."""
    root = tmp_path_factory.mktemp("typed")
    assert main(["gen", "python", str(EXAMPLES), "-o", str(root / "gen")]) == 0
    return root


def test_every_example_gives_a_module_mypy_strict_and_ruff_accept(package: Path) -> None:
    names = sorted(p.name for p in (package / "gen").glob("*.py"))
    expected = sorted(f"{p.stem}.py" for p in EXAMPLES.glob("*.wf"))
    assert names == sorted(["__init__.py", *expected])
    checked = mypy(package, "gen")
    assert checked.returncode == 0, checked.stdout
    config = f"--config={ROOT / 'pyproject.toml'}"
    lint = tool("ruff", "check", config, "gen", cwd=package)
    assert lint.returncode == 0, lint.stdout
    fmt = tool("ruff", "format", "--check", config, "gen", cwd=package)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_the_modules_import_and_name_their_source_and_its_hash(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib
    import importlib

    monkeypatch.syspath_prepend(str(package))
    try:
        order = importlib.import_module("gen.order_saga")
        shared = importlib.import_module("gen.shared_types")
        text = (package / "gen" / "order_saga.py").read_text()
        digest = hashlib.sha256((EXAMPLES / "order_saga.wf").read_bytes()).hexdigest()
        assert f"# sha256: {digest}" in text
        assert (
            text.splitlines()[1]
            == f"# source: {os.path.relpath(EXAMPLES, package / 'gen')}/order_saga.wf"
        )
        assert order.WORKFLOW == "order_saga"
        assert shared.Tier.gold.value == "gold"
        line = order.LineItem(sku="a", qty=1, unit_price=__import__("decimal").Decimal("2.50"))
        with pytest.raises(AttributeError):  # frozen
            setattr(line, "qty", 2)  # noqa: B010 - what frozen refuses
        assert not hasattr(line, "__dict__")  # slotted
    finally:
        for name in [m for m in sys.modules if m == "gen" or m.startswith("gen.")]:
            del sys.modules[name]


def test_generating_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    assert main(["gen", "python", str(EXAMPLES), "-o", str(tmp_path / "a")]) == 0
    assert main(["gen", "python", str(EXAMPLES / "pricing.wf"), "-o", str(tmp_path / "b")]) == 0
    for f in (tmp_path / "b").glob("*.py"):
        if f.name != "__init__.py":
            assert f.read_bytes() == (tmp_path / "a" / f.name).read_bytes(), f.name


def test_check_exits_1_when_a_file_is_stale_or_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "flows" / "greet.wf"
    flow.parent.mkdir()
    flow.write_text(GREET)
    out = tmp_path / "typed"
    assert main(["gen", "python", str(flow), "-o", str(out), "--check"]) == 1
    assert "greet.py is stale" in capsys.readouterr().out
    assert not out.exists()  # --check writes nothing
    assert main(["gen", "python", str(flow), "-o", str(out)]) == 0
    assert main(["gen", "python", str(flow), "-o", str(out), "--check"]) == 0
    assert "up to date" in capsys.readouterr().out
    flow.write_text(GREET.replace("name: string)", "name: string, loud: bool = false)"))
    before = (out / "greet.py").read_text()
    assert main(["gen", "python", str(flow), "-o", str(out), "--check"]) == 1
    assert "greet.py is stale" in capsys.readouterr().out
    assert (out / "greet.py").read_text() == before


def test_a_workflow_with_errors_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "bad.wf"
    flow.write_text(GREET.replace("start say", "start nowhere"))
    assert main(["gen", "python", str(flow), "-o", str(tmp_path / "out")]) == 1
    assert "start node 'nowhere' is not defined" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_two_files_of_one_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "greet.wf").write_text(GREET)
    argv = ["gen", "python", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "would both be the module 'greet'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


GREET = """workflow greet version 1
input { name: string, when: timestamp?, within: duration = 1h }
context { text: string = "" }
output { text: string }
type Mood { word: string, at: timestamp, by: decimal = 1 }
enum Tone { warm, from }
error Shy { why: string }
service greet.say(name: string) -> { text: string, mood: Mood?, tone: Tone } raises Shy
service greet.log(text: string)
start say
task say: service greet.say {
    args { name: input.name }
    output { text: result.text }
    next log
}
task log: service greet.log {
    args { text: "said" }
    next done
}
end done: completed {
    output { text: "ok" }
}
"""

#: A handlers file written against the generated module; each case breaks one thing.
HANDLERS = """
from __future__ import annotations

from gen import greet
from wflang.handlers import Registry


class Handlers:
    def greet_say(self, *, name: str) -> greet.GreetSayResult:
        return greet.GreetSayResult(text="hi", mood=None, tone=greet.Tone.warm)

    def greet_log(self, *, text: str) -> None:
        return None


registry = greet.register(Registry(), Handlers())
"""

BROKEN = {
    "correct": ("", ""),
    "wrong argument name": (
        "def greet_say(self, *, name: str)",
        "def greet_say(self, *, nme: str)",
    ),
    "wrong argument type": (
        "def greet_say(self, *, name: str)",
        "def greet_say(self, *, name: int)",
    ),
    "wrong result type": ("-> None:\n        return None", "-> int:\n        return 0"),
    "missing method": ("    def greet_log(self, *, text: str) -> None:\n        return None\n", ""),
    "wrong field": ('text="hi", mood=None', 'txt="hi", mood=None'),
}


@pytest.fixture(scope="module")
def greet_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("greet")
    (root / "greet.wf").write_text(GREET)
    assert main(["gen", "python", str(root / "greet.wf"), "-o", str(root / "gen")]) == 0
    return root


def test_mypy_accepts_fitting_handlers_and_names_each_mistake(greet_package: Path) -> None:
    """One mypy run over one handlers file per case (issue 17: a correct file passes; a
    wrong argument name, argument type, result type and a missing method fail)."""
    for case, (old, new) in BROKEN.items():
        text = HANDLERS.replace(old, new) if old else HANDLERS
        assert case == "correct" or text != HANDLERS, case
        (greet_package / f"h_{case.replace(' ', '_')}.py").write_text(textwrap.dedent(text))
    result = mypy(greet_package, *(f"h_{c.replace(' ', '_')}.py" for c in BROKEN))
    by_file: dict[str, str] = {}
    for line in result.stdout.splitlines():
        by_file.setdefault(line.split(":")[0], "")
        by_file[line.split(":")[0]] += line + "\n"
    assert "h_correct.py" not in by_file, by_file
    conflict = 'Argument 2 to "register" has incompatible type "Handlers"; expected "GreetServices"'
    expected = {
        "wrong_argument_name": [
            conflict,
            "Got:",
            "def greet_say(self, *, nme: str) -> GreetSayResult",
        ],
        "wrong_argument_type": [
            conflict,
            "Got:",
            "def greet_say(self, *, name: int) -> GreetSayResult",
        ],
        "wrong_result_type": [conflict, "Got:", "def greet_log(self, *, text: str) -> int"],
        "missing_method": [
            conflict,
            '"Handlers" is missing following "GreetServices" protocol member:',
            "greet_log",
        ],
        "wrong_field": ['Unexpected keyword argument "txt" for "GreetSayResult"'],
    }
    for case, said in expected.items():
        found = by_file.get(f"h_{case}.py", "")
        assert all(s in found for s in said), (case, found)
        assert found.count("error:") == 1, found  # that mistake and nothing else


def test_generated_classes_round_trip_through_the_runtimes_values(
    greet_package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime
    import decimal
    import importlib

    from wflang.handlers import from_value, to_value

    monkeypatch.syspath_prepend(str(greet_package))
    try:
        greet = importlib.import_module("gen.greet")
        at = datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.UTC)
        mood = greet.Mood(word="hi", at=at)
        value = to_value(mood)
        assert value == {"word": "hi", "at": 1767323045006, "by": decimal.Decimal(1)}
        assert type(value["by"]) is decimal.Decimal
        back = from_value(value, greet.Mood)
        assert back == mood and type(back.by) is decimal.Decimal
        result = greet.GreetSayResult(text="x", mood=mood, tone=greet.Tone.from_)
        assert to_value(result)["tone"] == "from"
        inputs = greet.GreetInput(name="Ada")
        assert to_value(inputs) == {"name": "Ada", "when": None, "within": 3_600_000}
        assert from_value({"name": "Ada", "when": 0, "within": 5}, greet.GreetInput).within == (
            datetime.timedelta(milliseconds=5)
        )
        with pytest.raises(ValueError, match="has no time zone"):
            to_value(greet.Mood(word="x", at=datetime.datetime(2026, 1, 1)))
        error = greet.shy_error(greet.ShyPayload(why="new"), "too shy")
        assert (error.error, error.message, error.payload) == ("Shy", "too shy", {"why": "new"})
    finally:
        for name in [m for m in sys.modules if m == "gen" or m.startswith("gen.")]:
            del sys.modules[name]


def test_the_examples_typed_package_is_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/typed is what `wf gen python examples -o examples/typed` writes, from any
    working folder (its files name their sources relative to themselves)."""
    assert main(["gen", "python", str(EXAMPLES), "-o", str(EXAMPLES / "typed"), "--check"]) == 0
    monkeypatch.chdir(ROOT)
    assert main(["gen", "python", "examples", "-o", "examples/typed", "--check"]) == 0


def test_the_example_handlers_use_the_typed_package_and_pass_mypy_strict() -> None:
    checked = mypy(EXAMPLES, "order_handlers.py", "payment_handlers.py")
    assert checked.returncode == 0, checked.stdout
    for name in ("order_handlers.py", "payment_handlers.py"):
        assert "from typed import" in (EXAMPLES / name).read_text()


def test_wf_diff_notes_a_service_change_that_needs_regenerating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old.wf", tmp_path / "new.wf"
    old.write_text(GREET)
    new.write_text(
        GREET.replace("service greet.say(name: string)", "service greet.say(name: string?)")
        .replace("service greet.log(text: string)", "service greet.log(text: string) -> { n: int }")
        .replace("context {", "service greet.new(a: int)\ncontext {")
    )
    assert main(["diff", str(old), str(new)]) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "note: service greet.new is new: greet.new(a: int); regenerate the typed handlers "
        "(wf gen python)",
        "note: service greet.say changed its signature: greet.say(name: string) -> "
        "{ text: string, mood: Mood?, tone: Tone } → greet.say(name: string?) -> "
        "{ text: string, mood: Mood?, tone: Tone }; regenerate the typed handlers (wf gen python)",
        "note: service greet.log changed its signature: greet.log(text: string) → "
        "greet.log(text: string) -> { n: int }; regenerate the typed handlers (wf gen python)",
    ]
    assert main(["diff", str(old), str(old)]) == 0
    assert capsys.readouterr().err == ""  # nothing to regenerate


def test_a_default_that_is_no_literal_is_the_value_the_runtime_fills_in(tmp_path: Path) -> None:
    """``100 / 3``, ``[1m, 2h]``, ``2 * 60``, ``int? = 1 + 1``: the generated class's
    default is what the runtime gives a left-out field, so a field with any default is
    optional; and the module still passes mypy --strict and ruff format."""
    from tests.test_gen_json_schema import EVERYTHING, LIBRARY
    from wflang.compiler.compile import compile_workflow
    from wflang.compiler.program import read_file
    from wflang.handlers import to_value
    from wflang.runtime.ir import Value
    from wflang.runtime.shapes import shapes
    from wflang.runtime.validate import fit_input, settled

    (tmp_path / "lib.wf").write_text(LIBRARY)
    (tmp_path / "everything.wf").write_text(EVERYTHING)
    assert (
        main(["gen", "python", str(tmp_path / "everything.wf"), "-o", str(tmp_path / "gen")]) == 0
    )
    text = (tmp_path / "gen" / "everything.py").read_text()
    assert 'big: decimal.Decimal = decimal.Decimal("33.33333333333333333333333333333333")' in text
    assert "twice: int = 120" in text
    assert "maybe: int | None = 2" in text
    assert (
        'later: datetime.datetime = datetime.datetime.fromisoformat("2026-12-01T11:00:00+00:00")'
        in text
    )
    assert "speeds: list[Speed] = field(factory=lambda: [Speed.slow])" in text
    checked = mypy(tmp_path, "gen")
    assert checked.returncode == 0, checked.stdout
    fmt = tool(
        "ruff", "format", "--check", f"--config={ROOT / 'pyproject.toml'}", "gen", cwd=tmp_path
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        from gen import everything, lib  # type: ignore[import-not-found]

        made = everything.EverythingInput(name="n", count=1, prices={}, corner=lib.Point(x=1))
        value = to_value(made)
        compiled = compile_workflow(read_file(str(tmp_path / "everything.wf")))
        assert compiled.table is not None
        table = compiled.table
        given: dict[str, Value] = {"name": "n", "count": 1, "prices": {}, "corner": {"x": 1}}
        fitted, problems = fit_input(table, given)
        assert problems == []
        filled = settled(table, shapes(table).input, fitted)
        # the class writes out the optional fields it holds as None; the runtime leaves them out
        assert value == {"due": None, "nested": None, "tree": None, **filled} | {
            "corner": {"x": 1, "y": 0, "label": None}
        }
        box = to_value(lib.Box(corner=lib.Point(x=1)))
        assert box["tags"] == ["a", "b"] and box["size"] == "small"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "gen" or m.startswith("gen.")]:
            del sys.modules[name]
