"""wf diff --instances: whether instances waiting at each old node could continue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.compiler.diff.migration import migrate, render_text
from wflang.dsl.parser import parse_bytes
from wflang.dsl.spec import WorkflowSpec

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "diff"


def spec(text: str, name: str = "w.wf") -> WorkflowSpec:
    parsed = parse_bytes(text.encode("utf-8"), name)
    assert parsed.spec is not None, parsed.diagnostics
    return parsed.spec


def pair(folder: str) -> tuple[WorkflowSpec, WorkflowSpec]:
    old, new = (
        spec((DATA / folder / f"{v}.wf").read_text(encoding="utf-8"), f"{v}.wf")
        for v in ("old", "new")
    )
    return old, new


def stuck(folder: str) -> dict[str, tuple[str, ...]]:
    return {n.node: n.reasons for n in migrate(*pair(folder)).nodes if not n.can_continue}


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.wf")), ids=lambda p: p.stem)
def test_example_migrates_onto_itself(path: Path) -> None:
    s = spec(path.read_text(encoding="utf-8"), path.name)
    m = migrate(s, s)
    assert m.can_continue
    assert len(m.nodes) >= len(s.nodes)  # nested nodes are listed too


def test_removed_node_cannot_continue() -> None:
    assert stuck("WF640") == {"notify": ("the node is gone",)}


def test_kind_changed() -> None:
    assert stuck("WF642") == {"refund": ("it is now a manual task",)}


def test_removed_context_field_blocks_the_nodes_before_its_reads() -> None:
    # decide reads context.approved; charge and approve come before it, refund never
    # does; nobody waits at decide itself (a choice decides at once)
    assert stuck("WF646") == dict.fromkeys(
        ("charge", "approve"), ("context field 'approved' was removed",)
    )


def test_retyped_context_field() -> None:
    why = ("context field 'approved' changed from bool to string",)
    assert stuck("WF647") == {"charge": why, "approve": why}


def test_events_must_stay_the_same() -> None:
    assert stuck("WF644") == {"charge": ("event 'on Declined' is gone",)}


def test_new_steps_and_retries_do_not_block() -> None:
    assert stuck("WF648") == {}
    assert stuck("WF649") == {}


def test_text_table() -> None:
    out = render_text(migrate(*pair("WF640")))
    assert out.splitlines()[0].split() == ["node", "kind", "continue", "why", "not"]
    assert "notify" in out and "drain the old version" in out


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    old, new = (str(DATA / "WF646" / f"{v}.wf") for v in ("old", "new"))
    assert main(["diff", "--instances", old, new]) == 1
    assert "2 of 8 nodes cannot continue" in capsys.readouterr().out
    assert main(["diff", "--instances", "--format", "json", old, new]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["can_continue"] is False
    by_node = {n["node"]: n for n in doc["nodes"]}
    assert by_node["approve"]["reasons"] == ["context field 'approved' was removed"]
    assert by_node["decide"]["can_continue"] is True  # a choice: nobody waits there
    assert by_node["refund"]["can_continue"] is True
    assert main(["diff", "--instances", "--format", "json", old, old]) == 0
    assert json.loads(capsys.readouterr().out)["can_continue"] is True


def test_compensations_of_earlier_steps_count() -> None:
    old_text = (DATA / "WF646" / "old.wf").read_text(encoding="utf-8")
    new_text = old_text.replace("charge_id: string?,", "charge_id: int?,", 1)
    assert new_text != old_text
    m = migrate(spec(old_text, "old.wf"), spec(new_text, "new.wf"))
    got = {n.node for n in m.nodes if not n.can_continue}
    # 'approve' reads nothing itself, but charge's compensation 'refund' reads charge_id
    assert "approve" in got and "refund" in got
    assert not m.can_continue


def test_a_rename_is_named_and_a_declared_rename_is_followed() -> None:
    old_text = (DATA / "WF646" / "old.wf").read_text(encoding="utf-8")
    renamed = old_text.replace("wait approve:", "wait sign_off:").replace(
        "next approve", "next sign_off"
    )
    assert renamed != old_text
    got = stuck_between(old_text, renamed)
    assert got["approve"] == (
        "it was renamed to 'sign_off' (an instance follows a rename only when the new "
        "node says 'renamed from approve')",
    )
    declared = renamed.replace(
        "output { approved: signal.approved }",
        "renamed from approve\n    output { approved: signal.approved }",
    )
    assert "approve" not in stuck_between(old_text, declared)


def stuck_between(old_text: str, new_text: str) -> dict[str, tuple[str, ...]]:
    m = migrate(spec(old_text, "old.wf"), spec(new_text, "new.wf"))
    return {n.node: n.reasons for n in m.nodes if not n.can_continue}
