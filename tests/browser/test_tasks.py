"""The human-task inbox in a real browser (issue 19): a task found by its assignee,
completed through the form made from its declared fields; a value of the wrong type
is refused with the form's message and nothing is stored."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from .harness import Shots
from .pages import Console

pytestmark = pytest.mark.parametrize("url", ["sqlite"], indirect=True)


def test_complete_a_human_task_through_its_form(console: Console, shots: Shots) -> None:
    console.sign_in("ann")
    console.open("/tasks")
    console.choose("f-assignee", "underwriters")
    console.click("f-assignee-apply")
    (row,) = console.browser.find_elements(By.CSS_SELECTOR, "tr.task")
    assert row.get_attribute("data-node") == "underwrite"
    shots.take(console.browser, "tasks")
    console.press(row.find_element(By.CSS_SELECTOR, "a.task-link"))
    assert console.by_id("task-node").text == "underwrite"

    console.choose("field-decision", "approve")
    console.fill("field-approved_amount", "lots")
    console.fill("field-rate", "4.2")
    console.fill("task-reason", "good history")
    console.click("task-submit")
    message = console.by_id("error").text
    assert "approved_amount" in message and "decimal" in message, message
    shots.take(console.browser, "task-refused", docs=True)
    (still,) = console.seeded.client.open_tasks("loan-1")  # nothing was stored
    assert still.node == "underwrite"

    console.choose("field-decision", "approve")
    console.fill("field-approved_amount", "35000")
    console.fill("field-rate", "4.2")
    console.click("task-submit")
    assert console.seeded.client.open_tasks("loan-1") == []
    console.seeded.run()  # the worker makes the offer; the loan waits for the answer
    console.instance("loan-1")
    tokens = console.browser.find_elements(By.CSS_SELECTOR, "#position .token")
    assert [t.get_attribute("data-node") for t in tokens] == ["await_response"]
