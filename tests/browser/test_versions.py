"""The versions and metrics pages in a real browser (issue 19): the deployed versions,
one version's diagram, the `wf diff` report between two, and the store's figures."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from .harness import Shots
from .pages import Console

pytestmark = pytest.mark.parametrize("url", ["sqlite"], indirect=True)


def test_versions_a_diagram_and_a_diff(console: Console, shots: Shots) -> None:
    console.open("/versions")
    listed = {
        (r.get_attribute("data-workflow"), r.get_attribute("data-version"))
        for r in console.browser.find_elements(By.CSS_SELECTOR, "tr.version")
    }
    assert {("order_saga", "3"), ("order_saga", "4"), ("pricing", "1")} <= listed
    shots.take(console.browser, "versions")

    row = console.browser.find_element(
        By.CSS_SELECTOR, "tr.version[data-workflow='order_saga'][data-version='4']"
    )
    console.press(row.find_element(By.CSS_SELECTOR, "a.version-link"))
    assert console.by_id("version-title").text == "order_saga v4"
    assert console.by_id("diagram").find_elements(By.TAG_NAME, "svg")
    shots.take(console.browser, "version")

    console.click("diff-submit")
    summary = console.by_id("diff-summary")
    assert summary.get_attribute("data-breaking") is not None
    assert console.by_id("diff-report").text
    shots.take(console.browser, "diff")


def test_metrics(console: Console, shots: Shots) -> None:
    console.open("/metrics-page")
    assert console.by_id("m-human").text == "1"  # the loan's underwriting
    assert "dead_lettered 2" in console.by_id("m-instances").text
    shots.take(console.browser, "metrics", docs=True)
