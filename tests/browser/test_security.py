"""The console's guards in a real browser (issue 19): nothing to act with until an
operator signs in, and a form whose CSRF token was tampered with is refused and
changes nothing."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

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
