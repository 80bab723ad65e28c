"""Operators' actions in a real browser (issue 19): signing in, retrying a dead letter
until it finishes, force-completing a step with a reason, each recorded with the
operator and the reason in the history."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from .harness import Shots
from .pages import Console

pytestmark = pytest.mark.parametrize("url", ["sqlite"], indirect=True)


def test_retry_a_dead_letter_and_see_it_finish(console: Console, shots: Shots) -> None:
    console.sign_in("ann")
    console.open("/dead-letters")
    rows = console.browser.find_elements(By.CSS_SELECTOR, "tr.dead-letter")
    assert sorted(str(r.get_attribute("data-instance-id")) for r in rows) == [
        "pr-dead-1",
        "pr-dead-2",
    ]
    assert "RiskEngineDown" in console.by_id("dead-letters").text
    shots.take(console.browser, "dead-letters", docs=True)

    row = console.browser.find_element(By.CSS_SELECTOR, "tr[data-instance-id='pr-dead-1']")
    row.find_element(By.NAME, "reason").send_keys("the risk engine is back")
    console.seeded.risk_fixed()
    console.press(row.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    assert console.by_id("notice").text
    console.seeded.run()  # a worker takes the retried step

    console.instance("pr-dead-1")
    assert console.by_id("status").text == "completed"
    assert ("RetryFrom", "ann", "the risk engine is back") in console.history()
    shots.take(console.browser, "instance-retried")


def test_force_complete_with_a_reason(console: Console, shots: Shots) -> None:
    console.sign_in("bob")
    console.instance("pr-dead-2")
    console.choose("force-step", "score")
    console.fill("force-output", '{"score": "ten"}')
    console.fill("force-reason", "scored by hand")
    console.click("force-submit")
    assert "score" in console.by_id("error").text  # refused, saying which field
    assert console.seeded.status("pr-dead-2") == "dead_lettered"

    console.instance("pr-dead-2")
    console.choose("force-step", "score")
    console.fill("force-output", '{"score": 10}')
    console.fill("force-reason", "scored by hand")
    console.click("force-submit")
    console.seeded.run()
    console.instance("pr-dead-2")
    assert console.by_id("status").text == "completed"
    assert ("CompleteStep", "bob", "scored by hand") in console.history()
    shots.take(console.browser, "instance-forced", docs=True)
