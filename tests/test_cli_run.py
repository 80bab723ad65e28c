"""wf run: a workflow in memory with handlers from a module; bad input is refused clearly."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wflang.cli import main

FLOW = """workflow greet version 1
input { name: string, times: int = 2 }
context { text: string = "" }
output { text: string }
service greet.say(name: string, times: int) -> { text: string }
start say
task say: service greet.say {
    args { name: input.name, times: input.times }
    output { text: result.text }
    next rest
}
sleep rest 1h next done
end done: completed {
    output { text: context.text }
}
"""
HANDLERS = """from wflang.runtime.engine import handler

@handler("greet.say")
def say(name, times):
    return {"text": " ".join(["hello " + name] * times)}
"""


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "greet.wf").write_text(FLOW)
    (tmp_path / "greet_handlers.py").write_text(HANDLERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("greet_handlers", None)


def test_run_prints_history_and_output(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(files / "greet.wf"), "--input", '{"name": "Ada"}',
                 "--handlers", "greet_handlers"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "status: completed" in out
    assert 'output: {"text": "hello Ada hello Ada"}' in out
    assert "t= 3600.000s  TimerFired" in out  # the sleep ran on the virtual clock


@pytest.mark.parametrize(
    ("payload", "message", "exit_code"),
    [
        ('{"nam": "Ada"}', "unknown input field 'nam'", 1),  # refused, as by `wf start`
        ("{}", "missing input field 'name' (string)", 1),
        ('{"name": 5}', "'name' must be string, not int", 1),
        ("[1]", "--input must be a JSON object", 2),  # not even an input: usage
        ("{", "--input is not JSON", 2),
    ],
)
def test_bad_input_is_refused(
    files: Path, capsys: pytest.CaptureFixture[str], payload: str, message: str, exit_code: int
) -> None:
    code = main(
        ["run", str(files / "greet.wf"), "--input", payload, "--handlers", "greet_handlers"]
    )
    assert code == exit_code
    assert message in capsys.readouterr().err


def test_missing_handler_dead_letters(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wflang.runtime import engine

    engine.unregister("greet.say")
    code = main(["run", str(files / "greet.wf"), "--input", '{"name": "Ada"}',
                 "--allow-missing-handlers"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "status: dead_lettered" in out
    assert "error: say: NoHandler no handler for service 'greet.say'" in out


DURABLE_DATA = Path(__file__).parent / "data" / "durable"


def test_imported_workflows_are_registered_for_calls(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(DURABLE_DATA / "parent.wf"), "--input", '{"id": "p-1"}'])
    out = capsys.readouterr().out
    assert code == 0  # waiting for its child, which waits for a signal
    assert "enter c" in out and "status: waiting" in out
    # --uses is repeatable and does not swallow the file.
    code = main(["run", "--uses", str(DURABLE_DATA / "kid.wf"), str(DURABLE_DATA / "parent.wf"),
                 "--input", '{"id": "p-1"}'])  # fmt: skip
    assert code == 0 and "status: waiting" in capsys.readouterr().out


def test_check_errors_are_reported_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.wf").write_text("workflow bad version 1\nstart x\n")
    assert main(["run", str(tmp_path / "bad.wf")]) == 1
    captured = capsys.readouterr()
    assert "start node 'x' is not defined" in captured.out + captured.err
    assert "Traceback" not in captured.out + captured.err


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ('{"text": 5}', "InvalidResult 'text' must be string, not int"),
        ('{"txt": "hi"}', "InvalidResult missing field 'text' (string) in result of say"),
        ("[1]", "InvalidResult the handler of greet.say returned list, not an object"),
    ],
)
def test_a_handler_result_that_does_not_fit_fails_its_step(
    files: Path, capsys: pytest.CaptureFixture[str], result: str, problem: str
) -> None:
    (files / "bad_handlers.py").write_text(
        "from wflang.runtime.engine import handler\n\n"
        f'@handler("greet.say")\ndef say(name, times):\n    return {result}\n'
    )
    sys.modules.pop("bad_handlers", None)
    code = main(["run", str(files / "greet.wf"), "--input", '{"name": "Ada"}',
                 "--handlers", "bad_handlers"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "status: dead_lettered" in out and problem in out
    sys.modules.pop("bad_handlers", None)


def test_handlers_can_be_named_by_their_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--handlers examples/order_handlers.py` imports the file (issue 12); the module
    may import its neighbours, as it would from its own folder."""
    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    sys.modules.pop("order_handlers", None)
    try:
        code = main(["run", "examples/order_saga.wf", "--input", "@examples/order_input.json",
                     "--handlers", "examples/order_handlers.py"])  # fmt: skip
    finally:
        sys.modules.pop("order_handlers", None)
    out = capsys.readouterr().out
    assert code == 0 and "status: completed" in out
    (tmp_path / "helper.py").write_text("WORD = 'hi'\n")
    (tmp_path / "h.py").write_text(
        HANDLERS.replace('"hello "', "helper.WORD + ' '") + "import helper\n"
    )
    (tmp_path / "greet.wf").write_text(FLOW)
    try:
        code = main(["run", str(tmp_path / "greet.wf"), "--input", '{"name": "Ada", "times": 1}',
                     "--handlers", str(tmp_path / "h.py")])  # fmt: skip
    finally:
        for name in ("h", "helper"):
            sys.modules.pop(name, None)
    assert code == 0 and 'output: {"text": "hi Ada"}' in capsys.readouterr().out
