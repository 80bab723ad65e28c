"""What the console's tests share: signing in, the CSRF token of a page, and reading
elements of a page by their ids and data attributes."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from httpx2 import Response
from starlette.testclient import TestClient

TOKEN = "s3cret-operator-token"
HOSTILE = '<script>alert("x")</script>'


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "no CSRF token in the page"
    return found[1]


def sign_in(web: TestClient, name: str = "ann", token: str = TOKEN) -> None:
    page = web.get("/signin")
    answer = web.post(
        "/signin",
        data={"csrf": csrf_of(page.text), "name": name, "token": token},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text


def post(web: TestClient, path: str, data: dict[str, str], *, page: str = "/instances") -> Response:
    """A form posted with the CSRF token of ``page``, as a browser would."""
    token = csrf_of(web.get(page).text)
    return web.post(path, data={"csrf": token, **data}, follow_redirects=False)


class Elements(HTMLParser):
    """The elements of a page: each tag's attributes, in order."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.scripts = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))
        self.scripts += tag == "script"

    def with_attr(self, name: str) -> list[dict[str, str]]:
        return [a for _, a in self.found if name in a]

    def by_id(self, ident: str) -> dict[str, str] | None:
        return next((a for _, a in self.found if a.get("id") == ident), None)


def row_ids(html: str) -> list[str]:
    return [a["data-instance-id"] for a in Elements(html).with_attr("data-instance-id")]
