"""The console's security (issue 19, item 7): read-only unless signed in with the
configured token (none configured: nobody can act, and the page says why), a CSRF
token on every POST, every value from workflows, ids, payloads and histories shown as
text, and 127.0.0.1 unless told otherwise; on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from starlette.testclient import TestClient

from wflang.cli import main
from wflang.console import serve
from wflang.console.security import Guard
from wflang.durable.client import Client
from wflang.store import Store

from ..store.kit import opsflow
from .kit import HOSTILE, TOKEN, Elements, csrf_of, row_ids, sign_in


def test_without_a_configured_token_nobody_can_act_and_the_page_says_why(
    read_only: TestClient,
) -> None:
    page = read_only.get("/instances")
    reason = Elements(page.text).by_id("read-only-reason")
    assert reason is not None and "No operator token is configured" in page.text
    assert "WFLANG_CONSOLE_TOKEN" in page.text
    signin = read_only.get("/signin")
    assert Elements(signin.text).by_id("signin-form") is None
    assert "csrf" not in signin.text  # no form to send
    answer = read_only.post("/signin", data={"csrf": "", "name": "ann", "token": ""})
    assert answer.status_code == 403
    assert "wf_session" not in read_only.cookies


def test_signing_in_needs_the_token_and_the_csrf_token(web: TestClient) -> None:
    token = csrf_of(web.get("/signin").text)
    wrong = web.post("/signin", data={"csrf": token, "name": "ann", "token": "guess"})
    assert wrong.status_code == 403 and "not the configured one" in wrong.text
    no_csrf = web.post("/signin", data={"name": "ann", "token": TOKEN})
    assert no_csrf.status_code == 403 and "CSRF token is missing or wrong" in no_csrf.text
    forged = web.post("/signin", data={"csrf": "0" * 64, "name": "ann", "token": TOKEN})
    assert forged.status_code == 403
    assert "wf_session" not in web.cookies
    nameless = web.post("/signin", data={"csrf": token, "name": " ", "token": TOKEN})
    assert nameless.status_code == 400 and "Give your name" in nameless.text
    sign_in(web, "ann")
    page = web.get("/instances")
    assert Elements(page.text).by_id("operator") is not None and ">ann<" in page.text
    out = web.post("/signout", data={"csrf": csrf_of(page.text)}, follow_redirects=False)
    assert out.status_code == 303
    assert Elements(web.get("/instances").text).by_id("signin-link") is not None


def test_a_forged_session_cookie_is_not_a_sign_in(web: TestClient) -> None:
    sign_in(web, "ann")
    value = web.cookies["wf_session"]
    data, _, mac = value.partition(".")
    web.cookies.set("wf_session", f"{data}.{'0' * len(mac)}", domain="127.0.0.1")
    assert Elements(web.get("/instances").text).by_id("operator") is None
    other = Guard.new(TOKEN)  # another process (or a restart): another key
    assert other.secret != b""


def test_every_answer_has_the_security_headers(web: TestClient) -> None:
    for path in ("/instances", "/signin", "/static/console.css", "/nothing-here"):
        headers = web.get(path).headers
        assert "script-src" not in headers["content-security-policy"]  # no script at all
        assert "default-src 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"


def test_hostile_names_ids_and_payloads_are_shown_as_text(web: TestClient, store: Store) -> None:
    client = Client(store, actor=HOSTILE)
    hostile = attrs.evolve(opsflow(1), workflow=HOSTILE)
    client.deploy(hostile)
    client.start(HOSTILE, {"id": HOSTILE}, instance_id=f"id-{HOSTILE}")
    for params in ({}, {"workflow": HOSTILE}, {"id": HOSTILE}, {"field": "id", "value": HOSTILE}):
        page = web.get("/instances", params=params)
        assert page.status_code == 200
        assert row_ids(page.text) == [f"id-{HOSTILE}"], params
        assert "<script>" not in page.text and Elements(page.text).scripts == 0
        assert "&lt;script&gt;" in page.text


def test_wf_console_binds_to_this_machine_unless_told_and_says_so(
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    served: list[tuple[str, int, str | None]] = []
    monkeypatch.setattr(
        serve, "serve", lambda st, guard, bind, port: served.append((bind, port, guard.token))
    )
    monkeypatch.delenv(serve.TOKEN_ENV, raising=False)
    url = store.backend.url
    assert main(["console", "--store", url]) == 0
    said = capsys.readouterr().err
    assert served == [("127.0.0.1", 8080, None)]
    assert "on http://127.0.0.1:8080/" in said and "warning" not in said
    assert "read-only: no operator token configured" in said
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    assert main(["console", "--store", url, "--bind", "0.0.0.0", "--port", "9000",
                 "--token-file", str(token_file)]) == 0  # fmt: skip
    said = capsys.readouterr().err
    assert served[-1] == ("0.0.0.0", 9000, TOKEN)
    assert "warning: bound to 0.0.0.0, beyond this machine" in said
    token_file.write_text("\n")
    assert main(["console", "--store", url, "--token-file", str(token_file)]) == 2
    assert "is empty: no empty credentials" in capsys.readouterr().err
    assert len(served) == 2  # nothing served with an unusable configuration
    assert serve.loopback("::1") and serve.loopback("localhost") and not serve.loopback("10.0.0.1")
