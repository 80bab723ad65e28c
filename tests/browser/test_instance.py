"""One instance in a real browser (issue 19): its diagram with the history drawn on
it, where it is, its children and its timeline; hostile values shown as text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from wflang.render.marks import MARKS

from .harness import Shots
from .pages import Console
from .seed import HOSTILE, HOSTILE_ID

pytestmark = pytest.mark.parametrize("url", ["sqlite"], indirect=True)


def node_fill(diagram: Any, name: str) -> str:
    """The fill of the diagram's node ``name`` (Graphviz titles each node's group)."""
    for group in diagram.find_elements(By.CSS_SELECTOR, "g.node"):
        if group.find_element(By.TAG_NAME, "title").get_attribute("textContent") == name:
            shape = group.find_element(By.CSS_SELECTOR, "polygon, ellipse, path")
            return str(shape.get_attribute("fill"))
    raise AssertionError(f"no node {name!r} in the diagram")


def test_an_instance_on_its_diagram_with_the_history_overlay(
    console: Console, shots: Shots
) -> None:
    console.instance("inv-2")
    assert console.by_id("status").text == "waiting"
    diagram = console.by_id("diagram")
    assert diagram.get_attribute("data-current") == "approve"
    assert diagram.find_elements(By.TAG_NAME, "svg")
    assert node_fill(diagram, "approve") == MARKS["current"].fill
    assert node_fill(diagram, "price") == MARKS["visited"].fill
    assert node_fill(diagram, "approved") not in {MARKS["current"].fill, MARKS["visited"].fill}
    token = console.browser.find_element(By.CSS_SELECTOR, "#position .token")
    assert token.get_attribute("data-node") == "approve"
    assert [t.get_attribute("data-timer-id") for t in console.browser.find_elements(
        By.CSS_SELECTOR, "#timers .timer")]  # fmt: skip
    assert len(console.history()) >= 2
    shots.take(console.browser, "instance", docs=True)


def test_a_parent_and_its_child(console: Console, shots: Shots) -> None:
    console.instance("loan-1")
    child = console.browser.find_element(By.CSS_SELECTOR, "#children .child")
    child_id = str(child.get_attribute("data-instance-id"))
    assert child_id.startswith("loan-1/")
    console.press(child.find_element(By.TAG_NAME, "a"))
    assert console.by_id("instance-id").text == child_id
    assert console.by_id("parent").text == "loan-1"
    shots.take(console.browser, "instance-child")


def test_hostile_values_show_as_text(console: Console) -> None:
    """An id, an input, a signal's payload in the history and an output holding a
    <script>: each is shown as its text and no script runs (Console.open and press
    fail on a dialog)."""
    console.instance(HOSTILE_ID)
    as_json = json.dumps(HOSTILE)  # values are shown as JSON
    assert as_json in console.by_id("input").text
    assert as_json in console.by_id("output").text
    assert as_json in console.by_id("timeline").text
    assert not console.browser.find_elements(By.CSS_SELECTOR, "main script")
