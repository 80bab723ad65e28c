"""The console's guards in a real browser (issue 19): nothing to act with until an
operator signs in, and a form whose CSRF token was tampered with is refused and
changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from wflang.compiler.compile import compile_workflow
from wflang.dsl.parser import parse_file

from .harness import Shots
from .pages import Console

pytestmark = pytest.mark.parametrize("url", ["sqlite"], indirect=True)


def test_read_only_until_an_operator_signs_in(console: Console, shots: Shots) -> None:
    console.instance("pr-dead-1")
    assert console.by_id("actions-disabled").text
    assert not console.browser.find_elements(By.CSS_SELECTOR, "form.action")
    console.open("/signin")
    shots.take(console.browser, "signin")
    console.sign_in("ann")
    console.instance("pr-dead-1")
    assert console.by_id("retry-form")


def test_a_tampered_csrf_token_is_refused(console: Console) -> None:
    console.sign_in("ann")
    console.instance("pr-dead-1")
    form = console.by_id("retry-form")
    console.browser.execute_script(
        "arguments[0].querySelector('input[name=csrf]').value = 'forged'", form
    )
    console.fill("retry-reason", "forged")
    console.click("retry-submit")
    assert "CSRF" in console.text()
    console.seeded.run()
    assert console.seeded.status("pr-dead-1") == "dead_lettered"
    assert not [e for e in console.seeded.store.history("pr-dead-1") if e.actor == "ann"]


HOSTILE_GUARD = """\
workflow hostile_guard version 1

input { note: string }

start decide

choice decide {
    when input.note == "<script>alert('guard')</script>" -> flagged
    else -> done
}

end flagged: completed
end done: completed
"""


def test_a_hostile_string_in_a_workflow_is_text_on_its_diagram(
    console: Console, tmp_path: Path
) -> None:
    """A guard's string is drawn on the diagram's edge: the inline SVG shows it as text
    and runs nothing (Console.open and press fail on a dialog)."""
    source = tmp_path / "hostile_guard.wf"
    source.write_text(HOSTILE_GUARD, encoding="utf-8")
    table = compile_workflow(parse_file(str(source))).table
    assert table is not None
    seeded = console.seeded
    seeded.client.deploy(table, str(source))
    seeded.start("hostile_guard", {"note": "<script>alert('guard')</script>"}, "guarded")
    console.instance("guarded")
    assert console.by_id("status").text == "completed"
    diagram = console.by_id("diagram")
    labels = [t.get_attribute("textContent") for t in diagram.find_elements(By.TAG_NAME, "text")]
    assert "\"<script>alert('guard')</script>\"" in labels
    assert not console.browser.find_elements(By.CSS_SELECTOR, "main script, svg script")
