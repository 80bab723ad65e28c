"""Reading and driving the console's pages in the browser: by the stable ids and data
attributes its templates give (``data-instance-id`` on a row, ``id="notice"``, ...),
always waiting on a condition, never for a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from .harness import WAIT_S, no_alert
from .seed import Seeded


def gone(element: WebElement) -> bool:
    """Whether ``element``'s document was replaced: asking about it fails (stale, or the
    browser's context of the old document is gone while the new one loads)."""
    try:
        element.is_enabled()
    except WebDriverException:  # StaleElementReferenceException among them
        return True
    return False


class Console:
    """The console under test: its base URL, the browser, and the seeded store."""

    TOKEN = "browser-operator-token"

    def __init__(self, base: str, browser: Any, seeded: Seeded) -> None:
        self.base, self.browser, self.seeded = base, browser, seeded

    def open(self, path: str) -> None:
        self.browser.get(self.base + path)
        self.wait_for(By.TAG_NAME, "main")
        no_alert(self.browser)

    def wait_for(self, by: str, what: str) -> WebElement:
        found: WebElement = WebDriverWait(self.browser, WAIT_S).until(
            ec.visibility_of_element_located((by, what))
        )
        return found

    def until(self, condition: Callable[[Any], Any], message: str = "") -> Any:
        return WebDriverWait(self.browser, WAIT_S).until(condition, message)

    def by_id(self, ident: str) -> WebElement:
        return self.wait_for(By.ID, ident)

    def fill(self, ident: str, text: str) -> None:
        box = self.by_id(ident)
        box.clear()
        box.send_keys(text)

    def choose(self, ident: str, value: str) -> None:
        """Selects the option whose value is ``value`` (an option without a value
        attribute has its text for its value)."""
        select = Select(self.by_id(ident))
        for option in select.options:
            if (option.get_attribute("value") or option.text) == value:
                option.click()
                return
        raise AssertionError(f"#{ident} has no option {value!r}")

    def click(self, ident: str) -> None:
        """Clicks ``ident`` and waits for the page it leads to (the old one goes stale)."""
        self.press(self.by_id(ident))

    def press(self, element: WebElement) -> None:
        """Clicks ``element`` and waits for the page it leads to."""
        old = self.browser.find_element(By.TAG_NAME, "html")
        element.click()
        self.until(lambda _: gone(old), "the click loaded no page")
        self.wait_for(By.TAG_NAME, "main")
        no_alert(self.browser)

    def sign_in(self, name: str = "ann") -> None:
        self.open("/signin")
        self.fill("signin-name", name)
        self.fill("signin-token", self.TOKEN)
        self.click("signin-submit")
        assert self.by_id("operator").text == name

    def instance(self, instance_id: str) -> None:
        """Opens an instance's page from its row in the list of instances."""
        self.open("/instances")
        row = self.browser.find_element(By.CSS_SELECTOR, f"tr[data-instance-id='{instance_id}']")
        self.press(row.find_element(By.TAG_NAME, "a"))
        assert self.by_id("instance-id").text == instance_id

    def history(self) -> list[tuple[str, str, str]]:
        """The instance's timeline: each entry's event kind, actor and reason."""
        rows = self.wait_for(By.ID, "timeline").find_elements(By.CSS_SELECTOR, "tr.entry")

        def cell(row: WebElement, css: str) -> str:
            found = row.find_elements(By.CSS_SELECTOR, css)
            return str(found[0].text) if found else ""

        return [
            (str(r.get_attribute("data-event")), cell(r, ".actor"), cell(r, ".reason"))
            for r in rows
        ]

    def row_ids(self) -> list[str]:
        """The instances listed, in order."""
        self.wait_for(By.ID, "instances")
        rows = self.browser.find_elements(By.CSS_SELECTOR, "tr[data-instance-id]")
        return [str(r.get_attribute("data-instance-id")) for r in rows]

    def text(self) -> str:
        return str(self.browser.find_element(By.TAG_NAME, "body").text)
