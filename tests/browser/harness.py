"""The browser tests' harness (issue 19): a real headless Chromium driven through
Selenium, an ASGI application served in-process on a free port, and screenshots.

Chromium and its WebDriver are Debian's ``chromium`` and ``chromium-driver``. Without
them the tests skip, saying so, unless ``WFLANG_REQUIRE_BROWSER`` is set: CI
(``.ci/run``) installs them and sets it, so there they fail instead. Nothing sleeps:
the server's socket is bound and listening before the server thread starts (a request
waits in its backlog until the server accepts it), and the tests wait on conditions
with Selenium's explicit waits.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the screenshots committed for docs/console.md, refreshed by ``make console-screenshots``
DOCS_SHOTS = ROOT / "docs" / "console"
#: set (to anything) to write the screenshots the tests mark for the docs into DOCS_SHOTS
REFRESH_ENV = "WFLANG_UPDATE_SCREENSHOTS"
#: how long a condition may take to hold in the browser before the test fails: a busy
#: machine's page load, not a margin on a measured time
WAIT_S = 30.0

ASGIApp = Callable[..., Any]


def browser_paths() -> tuple[str, str]:
    """Chromium and chromedriver, or the test skips (fails under WFLANG_REQUIRE_BROWSER)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        reason = (
            "chromium and chromedriver are not installed (.ci/run installs Debian's "
            "chromium and chromium-driver)"
        )
        if os.environ.get("WFLANG_REQUIRE_BROWSER"):
            pytest.fail(f"WFLANG_REQUIRE_BROWSER is set but {reason}")
        pytest.skip(reason)
    return chromium, driver


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium under Selenium's WebDriver, quit afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        # as root (CI) Chromium refuses to start sandboxed
        "--no-sandbox",
        # a container's /dev/shm is small; Chromium then crashes on big pages
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
    ):
        options.add_argument(flag)
    # a dialog an injected script opens stays open for no_alert to find and report
    options.unhandled_prompt_behavior = "ignore"
    # the driver's path is given: Selenium Manager downloads nothing
    browser = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        yield browser
    finally:
        browser.quit()


def free_socket() -> socket.socket:
    """A listening socket on 127.0.0.1 at a port the system picked."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    """``app`` served by uvicorn in a thread; yields its base URL (no trailing slash).

    The socket listens before the thread starts, so the first request waits in the
    backlog rather than failing: nothing polls for the server to come up."""
    import uvicorn

    sock = free_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


class Shots:
    """Screenshots of pages: every one into the session's folder; the ones named for the
    docs also into docs/console/ when WFLANG_UPDATE_SCREENSHOTS is set."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.taken: list[Path] = []

    def take(self, browser: Any, name: str, *, docs: bool = False) -> Path:
        path = self.folder / f"{name}.png"
        # the whole page, not the window (Chromium's DevTools draw beyond the viewport)
        shot = browser.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        self.taken.append(path)
        if docs and os.environ.get(REFRESH_ENV):
            DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS_SHOTS / path.name)
        return path


def no_alert(browser: Any) -> None:
    """Fails if the page opened a JavaScript dialog (an injected script ran)."""
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = browser.switch_to.alert
    except NoAlertPresentException:
        return
    text = alert.text
    alert.dismiss()
    pytest.fail(f"the page ran a script: an alert said {text!r}")
