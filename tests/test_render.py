"""``wf render``: golden diagrams of the examples, images, overlays, escaping, scale.

Golden DOT and Mermaid files live in tests/golden/render/; regenerate them with
``WFLANG_UPDATE_GOLDEN=1 pytest tests/test_render.py`` and review the diff.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.compiler.model import Model, build_model
from wflang.compiler.program import Module, Program
from wflang.dsl import spec as sp
from wflang.dsl.parser import ParseResult, parse_bytes
from wflang.render import build, to_dot, to_mermaid
from wflang.render.command import Request, render
from wflang.render.kinds import KINDS, classify

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "render"
DATA = Path(__file__).parent / "data" / "render"
UPDATE = os.environ.get("WFLANG_UPDATE_GOLDEN") == "1"
EXAMPLES = sorted(
    p.name for p in (ROOT / "examples").glob("*.wf") if "\nworkflow " in "\n" + p.read_text()
)
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is missing")


def _render(*args: str, capsys: pytest.CaptureFixture[bytes]) -> tuple[int, bytes, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err.decode("utf-8")


@pytest.fixture
def in_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


# ----------------------------------------------------------------- golden


@pytest.mark.parametrize("fmt", ["dot", "mermaid"])
@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_match_golden(example: str, fmt: str, in_root: None) -> None:
    out = render(Request(f"examples/{example}", fmt)).decode("utf-8")
    golden = GOLDEN / f"{Path(example).stem}.{'mmd' if fmt == 'mermaid' else 'dot'}"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["dot", "mermaid"])
def test_output_is_deterministic(fmt: str, in_root: None) -> None:
    first = render(Request("examples/incident_escalation.wf", fmt))
    assert all(render(Request("examples/incident_escalation.wf", fmt)) == first for _ in range(3))


def test_every_example_has_a_golden_file() -> None:
    assert len(EXAMPLES) >= 10
    assert "shared_types.wf" not in EXAMPLES  # a library: nothing to draw


# ----------------------------------------------------------------- images


@needs_dot
def test_svg_parses_as_xml(in_root: None) -> None:
    svg = render(Request("examples/document_review.wf", "svg"))
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert b"review_all" in svg


@needs_dot
def test_png_has_the_png_signature(
    in_root: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, _ = _render(
        "render", "examples/order_saga.wf", "--format", "png", capsys=capsysbinary
    )
    assert code == 0
    assert out.startswith(b"\x89PNG\r\n\x1a\n")


def test_missing_dot_is_a_clear_message_and_exit_2(
    in_root: None, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    code = main(["render", "examples/order_saga.wf", "--format", "svg"])
    err = capsysbinary.readouterr().err.decode("utf-8")
    assert code == 2
    assert "graphviz" in err and "apt-get install graphviz" in err and "brew install" in err
    assert "Traceback" not in err


def test_output_file(in_root: None, tmp_path: Path) -> None:
    target = tmp_path / "saga.mmd"
    assert main(["render", "examples/order_saga.wf", "--format", "mermaid", "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8").startswith("---\ntitle:")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["examples/shared_types.wf"], "no 'workflow NAME version N' header"),
        (["examples/nope.wf"], "cannot read"),
        (["examples/order_saga.wf", "--check", "--history", "x.json"], "one of --check"),
        ([], "name the .wf file"),
    ],
)
def test_usage_errors_exit_2(
    args: list[str], message: str, in_root: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["render", *args]) == 2
    assert message in capsysbinary.readouterr().err.decode("utf-8")


# ----------------------------------------------------------------- visual language


def test_every_node_class_has_a_kind_with_a_style() -> None:
    # every node kind is classified: tests/test_node_kinds.py
    for kind in ("start", "join", "missing"):
        assert kind in KINDS
    end = sp.EndNode(sp.Ident("e"), sp.Outcome.FAILED)
    assert classify(end)[0] == "end.failed"
    for outcome in sp.Outcome:
        assert f"end.{outcome.value}" in KINDS


def test_boundary_edges_leave_the_cluster_and_compensation_is_dotted(in_root: None) -> None:
    dot = render(Request("examples/incident_escalation.wf")).decode("utf-8")
    assert '"war_room-join" -> "work_incident" [style=dashed' in dot
    assert 'ltail="cluster_war_room"' in dot
    saga = render(Request("examples/order_saga.wf")).decode("utf-8")
    assert '"reserve" -> "release_stock" [style=dotted' in saga
    calls = render(Request("examples/document_review.wf")).decode("utf-8")
    assert "review_document v1" in calls


# ----------------------------------------------------------------- overlays


def test_check_overlay_marks_findings(in_root: None) -> None:
    dot = render(Request("tests/data/check/WF201-bad.wf", check=True)).decode("utf-8")
    assert dot.count("WF201 unreachable-node (line") == 2  # the legend
    pack = next(line for line in dot.splitlines() if line.strip().startswith('"pack" ['))
    assert "WF201" in pack and '#d32f2f"' in pack
    clean = render(Request("examples/order_saga.wf", check=True)).decode("utf-8")
    assert "wf check: clean" in clean


def test_diff_overlay_marks_added_removed_and_changed(in_root: None) -> None:
    old, new = "examples/order_saga.wf", "docs/diagrams/order_saga.v4.wf"
    dot = render(Request(None, diff=(old, new))).decode("utf-8")
    lines = {ln.split(" [")[0].strip(): ln for ln in dot.splitlines() if " [" in ln}
    assert '#2e7d32"' in lines['"fraud_check"']  # added
    assert "dashed" in lines['"not_reserved-removed"']  # removed, drawn as a ghost
    assert '#e68a00"' in lines['"ship"']  # changed (its timeout)
    assert "WF650" in lines['"ship"'] and "WF620" in lines['"not_reserved-removed"']
    assert "wf diff: 5 changes" in dot
    mermaid = render(Request(None, "mermaid", diff=(old, new))).decode("utf-8")
    assert "class n_fraud_check" in mermaid and "m_added" in mermaid


def test_history_overlay_marks_path_current_and_failed(in_root: None) -> None:
    history = str(DATA / "order-dead-lettered.json")
    dot = render(Request("examples/order_saga.wf", history=history)).decode("utf-8")
    lines = {ln.split(" [")[0].strip(): ln for ln in dot.splitlines() if " [" in ln}
    assert '#1565c0"' in lines['"reserve"']  # visited
    assert '#b71c1c"' in lines['"charge"']  # failed wins over current and visited
    assert "#1565c0" not in lines['"ship"']
    assert '"reserve" -> "charge" [color="#1565c0"' in dot
    assert "history of order-1: dead_lettered" in dot


@pytest.mark.parametrize(
    ("fixture", "message"),
    [
        ("unknown-node.json", "not in the workflow: teleport, warp"),
        ("not-a-history.json", "not a wflang history"),
    ],
)
def test_bad_history_exit_2(
    fixture: str, message: str, in_root: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code = main(["render", "examples/order_saga.wf", "--history", str(DATA / fixture)])
    assert code == 2
    assert message in capsysbinary.readouterr().err.decode("utf-8")


def test_history_of_another_version_is_refused(tmp_path: Path, in_root: None) -> None:
    text = (DATA / "order-dead-lettered.json").read_text().replace('"version": 3', '"version": 1')
    (tmp_path / "h.json").write_text(text)
    with pytest.raises(Exception, match="order_saga version 1, the file is order_saga version 3"):
        render(Request("examples/order_saga.wf", history=str(tmp_path / "h.json")))


# ----------------------------------------------------------------- escaping


HOSTILE = '"}; evil [label="x"] --> %%{init}%% <b>&amp;</b>\n{braces} # | `x` \\N'


def _labels(dot: str) -> str:
    """DOT without its tooltips: they hold the raw text, as an escaped DOT string."""
    return re.sub(r'tooltip="(?:[^"\\]|\\.)*"', "", dot)


def _model_of(spec: sp.WorkflowSpec) -> Model:
    parsed = ParseResult(spec.file, "", spec, ())
    module = Module(spec.file, parsed, ())
    return build_model(module, Program({spec.file: module}, (spec.file,), ()))


def test_hostile_names_and_labels_are_escaped() -> None:
    bad = sp.Ident(HOSTILE)
    guard = parse_bytes(
        b'workflow w version 1\nchoice c { when "' + b'\\"}-->' + b'" == "x" -> a else -> a }\n',
        "g.wf",
    )
    assert guard.spec is not None
    choice = guard.spec.nodes[0]
    assert isinstance(choice, sp.ChoiceNode)
    arm_guard = choice.arms[0].guard
    spec = sp.WorkflowSpec(
        "hostile.wf",
        sp.Header(sp.Ident(HOSTILE), 1),
        (
            sp.StartDecl(bad),
            sp.TaskNode(bad, sp.UserWork(), next=sp.Ident("c")),
            sp.ChoiceNode(
                sp.Ident("c"), (sp.ChoiceArm(arm_guard, bad), sp.ChoiceArm(None, sp.Ident("e")))
            ),
            sp.EndNode(sp.Ident("e"), sp.Outcome.COMPLETED),
        ),
    )
    d = build(_model_of(spec))
    dot = _labels(to_dot(d))
    mermaid = to_mermaid(d)
    assert "evil [label" not in dot and '"}; evil' not in mermaid  # no label ends early
    for text in (dot, mermaid):
        assert "<b>&amp;</b>" not in text
        assert "\n{braces}" not in text
    assert "%%{init" not in mermaid and "#37;#37;{init}#37;#37;" in mermaid
    assert "&lt;b&gt;&amp;amp;&lt;/b&gt;" in dot  # HTML of a name is text
    assert "#quot;}; evil" in mermaid
    assert mermaid.count("-->") == sum(1 for e in d.edges)  # no arrow from a label
    if shutil.which("dot") is not None:  # and Graphviz reads it as intended
        svg = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, check=True)
        root = ET.fromstring(svg.stdout)
        texts = "".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
        assert '"}; evil [label="x"]' in texts


def test_hostile_strings_from_source_are_escaped(in_root: None, tmp_path: Path) -> None:
    source = (
        "workflow w version 1\nstart t\n"
        'task t: user "<script>alert(1)</script> \\"}-->x %% a\\nb" { next c }\n'
        'choice c { when "\\"] --> evil" == "y" -> e\n else -> e }\nend e: completed\n'
    )
    path = tmp_path / "w.wf"
    path.write_text(source, encoding="utf-8")
    dot = _labels(render(Request(str(path))).decode("utf-8"))
    mermaid = render(Request(str(path), "mermaid")).decode("utf-8")
    assert "<script>" not in dot and "<script>" not in mermaid
    assert "&lt;script&gt;" in dot and "#lt;script#gt;" in mermaid
    assert '"] --> evil' not in mermaid
    assert mermaid.count("-->") == 4  # start, next, when, else


# ----------------------------------------------------------------- scale


def chain(n: int) -> str:
    """A workflow of ``n`` script tasks in a row and an end."""
    steps = "".join(f"task s{i}: script {{\n    next s{i + 1}\n}}\n\n" for i in range(n - 1))
    return f"workflow big version 1\n\nstart s0\n\n{steps}end s{n - 1}: completed\n"


def test_a_thousand_node_chain_renders_to_dot(tmp_path: Path) -> None:
    path = tmp_path / "big.wf"
    path.write_text(chain(1000), encoding="utf-8")
    dot = render(Request(str(path))).decode("utf-8")
    assert dot.count(" -> ") == 1000  # the start edge and 999 next edges
    assert render(Request(str(path), "mermaid")).count(b"-->") == 1000


def test_history_marks_only_the_edges_taken(
    in_root: None, tmp_path: Path, capsys: pytest.CaptureFixture[bytes]
) -> None:
    """A compensated order: the shipping error route to `undo` is marked, not the
    timeout beside it, nor charge's error route, nor the choice's other branch
    (issue 12: every edge between two visited nodes used to be marked)."""
    import json

    from wflang.compiler.compile import compile_workflow
    from wflang.dsl.parser import parse_file
    from wflang.render.command import diagram
    from wflang.runtime import codec
    from wflang.runtime.engine import Engine, Handler, TaskError
    from wflang.runtime.table import table_hash

    def rejected(**_: object) -> None:
        raise TaskError("AddressRejected", "no such street")

    handlers: dict[str, Handler] = {
        "inventory.reserve": lambda **_: {"reservation_id": "r-1"},
        "inventory.release": lambda **_: None,
        "payments.charge": lambda **_: {"charge_id": "c-1", "settled": True},
        "payments.refund": lambda **_: {"refund_id": "f-1"},
        "shipping.create": rejected,
        "shipping.cancel": lambda **_: None,
    }
    table = compile_workflow(parse_file("examples/order_saga.wf")).table
    assert table is not None
    engine = Engine([table], handlers)
    order = json.loads(Path("examples/order_input.json").read_text())
    iid = engine.start("order_saga", order)
    instance = engine.instance(iid)
    assert instance.status.value == "compensated"
    doc = codec.history_document(table, table_hash(table), instance, engine.history(iid))
    (tmp_path / "h.json").write_text(codec.dumps(doc))
    drawn = diagram(Request("examples/order_saga.wf", history=str(tmp_path / "h.json")))
    marked = sorted(e.key for e in drawn.edges if "visited" in e.marks)
    assert marked == [
        "charge/compensate",
        "charge/next",
        "express_fee/else",
        "price/next",
        "reserve/compensate",
        "reserve/next",
        "ship/on AddressRejected, CarrierUnavailable",
        "start",
    ]


@pytest.mark.parametrize(
    ("name", "starts"),
    [("out.png", b"\x89PNG"), ("out.svg", b"<?xml"), ("out.mmd", b"---\ntitle:")],
)
def test_the_format_follows_the_output_name(
    name: str,
    starts: bytes,
    in_root: None,
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """`-o out.png` without --format draws a PNG, never DOT text in a .png (issue 12)."""
    out = tmp_path / name
    code = main(["render", "examples/order_saga.wf", "-o", str(out)])
    err = capsysbinary.readouterr().err.decode()
    if name != "out.mmd" and shutil.which("dot") is None:  # no Graphviz: said, not faked
        assert code == 2 and "dot" in err and not out.exists()
        return
    assert code == 0 and out.read_bytes().startswith(starts), out.read_bytes()[:40]
