"""The harness itself: Chromium loads a page the in-process server serves, a screenshot
is written, and the check that no injected script ran can fail."""

from __future__ import annotations

import html
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from .harness import DOCS_SHOTS, ROOT, WAIT_S, Shots, browser_paths, no_alert, serving

HOSTILE = '<script>alert("owned")</script>'

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Scope]]
Send = Callable[[Scope], Awaitable[None]]


def page(body: str) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """A bare ASGI application answering every request with ``body`` in a page."""
    text = f"<!doctype html><title>t</title><body><p id='v'>{body}</p></body>".encode()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no lifespan: uvicorn goes on without it
            return
        headers = [(b"content-type", b"text/html; charset=utf-8")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": text})

    return app


def test_an_escaped_script_shows_as_text_and_a_screenshot_is_written(
    browser: Any, shots: Shots
) -> None:
    with serving(page(html.escape(HOSTILE))) as url:
        browser.get(url + "/")
        shown = WebDriverWait(browser, WAIT_S).until(ec.visibility_of_element_located((By.ID, "v")))
        assert shown.text == HOSTILE
        no_alert(browser)
        path = shots.take(browser, "harness")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_unescaped_script_is_caught(browser: Any) -> None:
    with serving(page(HOSTILE)) as url:
        browser.get(url + "/")
        WebDriverWait(browser, WAIT_S).until(ec.alert_is_present())
        with pytest.raises(pytest.fail.Exception, match="the page ran a script"):
            no_alert(browser)


def test_the_docs_show_every_committed_screenshot_and_no_missing_one() -> None:
    """docs/console.md and the README show the pictures of docs/console/, all of them,
    and the tests that take them (``docs=True``) refresh exactly those."""
    docs = (ROOT / "docs" / "console.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(console/([\w-]+\.png)\)", docs))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown |= set(re.findall(r"\]\(docs/console/([\w-]+\.png)\)", readme))
    committed = {p.name for p in DOCS_SHOTS.glob("*.png")}
    taken = set()
    for test in Path(__file__).parent.glob("test_*.py"):
        text = test.read_text(encoding="utf-8")
        taken |= {f"{n}.png" for n in re.findall(r'take\([^,]+, "([\w-]+)", docs=True\)', text)}
    assert shown == committed == taken


def test_without_chromium_the_tests_skip_or_fail_when_it_is_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("shutil.which", lambda _: None)
    monkeypatch.delenv("WFLANG_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium and chromedriver are not"):
        browser_paths()
    monkeypatch.setenv("WFLANG_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="WFLANG_REQUIRE_BROWSER is set but"):
        browser_paths()
