"""The instances page in a real browser (issue 19): the list, its filters, and a
search, on SQLite and PostgreSQL."""

from __future__ import annotations

from decimal import Decimal

import pytest
from selenium.webdriver.common.by import By

from ..store.kit import MINUTE
from .harness import Shots
from .pages import Console
from .seed import DEAD, HOSTILE_ID, INVOICES


@pytest.mark.parametrize("url", ["sqlite", "postgresql"], indirect=True)
def test_list_and_filter_instances(console: Console, shots: Shots) -> None:
    console.open("/instances")
    listed = console.row_ids()
    assert {"order-1", "loan-1", *INVOICES, *DEAD, HOSTILE_ID} <= set(listed)
    assert any(i.startswith("loan-1/") for i in listed)  # the loan's kyc_check child
    # the hostile id is a link's text, no script ran (Console.open checks for a dialog)
    link = console.browser.find_element(By.CSS_SELECTOR, f"tr[data-instance-id='{HOSTILE_ID}'] a")
    assert link.text == HOSTILE_ID
    shots.take(console.browser, "instances", docs=True)

    console.choose("f-workflow", "invoice_approval")
    console.choose("f-status", "waiting")
    console.click("f-apply")
    assert sorted(console.row_ids()) == sorted(INVOICES)
    assert "status=waiting" in console.browser.current_url
    shots.take(console.browser, "instances-filtered")

    console.click("f-clear")
    console.fill("f-id", "dead")
    console.click("f-apply")
    assert sorted(console.row_ids()) == sorted(DEAD)

    console.click("f-clear")
    console.fill("f-field", "invoice_id")
    console.fill("f-value", "i-3")
    console.click("f-apply")
    assert console.row_ids() == ["inv-3"]


def test_a_filter_that_makes_no_sense_says_why(console: Console) -> None:
    console.open("/instances")
    console.fill("f-version", "two")
    console.click("f-apply")
    assert "'two' is not a version number" in console.by_id("error").text
    assert console.row_ids() == []


def test_pages_of_instances_follow_each_other(console: Console) -> None:
    """More instances than a page holds: the next page's link leads on from the last
    row, with none repeated or left out, and the last page has no next link."""
    seeded = console.seeded
    for n in range(5, 5 + 45):
        seeded.advance(MINUTE)
        seeded.client.start(
            "invoice_approval",
            {"invoice_id": f"i-{n}", "amount": Decimal(n)},
            instance_id=f"inv-{n}",
        )
    total = len(seeded.store.instances(limit=1000))
    console.open("/instances")
    first = console.row_ids()
    console.click("next-page")
    second = console.row_ids()
    assert not console.browser.find_elements(By.ID, "next-page")
    assert len(first) == 50 and len(first) + len(second) == total
    assert not set(first) & set(second)
    assert first[0] == "inv-49"  # newest first
