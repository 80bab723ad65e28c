"""The console's security (issue 19, item 7): read-only unless signed in with the
configured token (none configured: nobody can act, and the page says why), a CSRF
token on every POST, every value from workflows, ids, payloads and histories shown as
text, and 127.0.0.1 unless told otherwise; on SQLite and PostgreSQL."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from starlette.requests import Request
from starlette.testclient import TestClient

from wflang.cli import main
from wflang.console import serve
from wflang.console.app import create_app
from wflang.console.security import Guard, hash_token
from wflang.durable.client import Client
from wflang.runtime import instance as rt
from wflang.store import Store

from ..store.kit import VirtualClock, opsflow
from ..store.test_ops import dead_at_b
from .kit import HOSTILE, TOKEN, Elements, csrf_of, post, row_ids, sign_in


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


#: Two operators, each with a token of their own (an operators file's content, hashed).
TOKENS = {"ada": "ada-token-7f3c", "bob lee": "bob-token-91ad"}


def operators_guard() -> Guard:
    return Guard.new(None, {name: hash_token(token) for name, token in TOKENS.items()})


@pytest.fixture
def operators_web(store: Store) -> Iterator[TestClient]:
    """The console with an operator per token (``wf console --operators``)."""
    with TestClient(create_app(store, operators_guard()), base_url="http://127.0.0.1") as client:
        yield client


def test_with_operators_each_signs_in_with_their_own_token_and_acts_as_themself(
    operators_web: TestClient, store: Store, clock: VirtualClock
) -> None:
    """Nobody acts under another's name: the name signed in with must be the one whose
    token is given, and it is the actor of what they do."""
    csrf = csrf_of(operators_web.get("/signin").text)
    for name, token in (("ada", TOKENS["bob lee"]), ("eve", TOKENS["ada"]), ("ada", "")):
        answer = operators_web.post("/signin", data={"csrf": csrf, "name": name, "token": token})
        assert answer.status_code == 403
        assert "That name and token are not a configured operator" in answer.text
    assert "wf_session" not in operators_web.cookies
    d, iid = dead_at_b(store, clock)
    sign_in(operators_web, "bob lee", TOKENS["bob lee"])
    page = operators_web.get("/instances").text
    assert ">bob lee<" in page
    done = post(operators_web, "/instance/retry", {"id": iid, "reason": "back"},
                page=f"/instance?id={iid}")  # fmt: skip
    assert done.status_code == 303
    d.run()
    retried = [
        (r.actor, r.reason) for r in store.history(iid) if r.entry.event.__class__ is rt.RetryFrom
    ]
    assert retried == [("bob lee", "back")]


def test_a_session_ends_when_the_operators_change(store: Store) -> None:
    """A session is signed with the operators' credentials: an operator removed (or a new
    token for one: a restart with another file) signs nobody in with an old cookie."""
    guard = operators_guard()
    with TestClient(create_app(store, guard), base_url="http://127.0.0.1") as web:
        sign_in(web, "ada", TOKENS["ada"])
        cookie = web.cookies["wf_session"]
    kept = attrs.evolve(guard, operators={"ada": guard.operators["ada"]})
    removed = attrs.evolve(guard, operators={"bob lee": guard.operators["bob lee"]})
    request = Request({"type": "http", "headers": [(b"cookie", f"wf_session={cookie}".encode())]})
    assert guard.operator(request) == "ada"
    assert kept.operator(request) is None  # another set of credentials: another key
    assert removed.operator(request) is None


def test_an_operators_file_is_read_strictly(tmp_path: Path) -> None:
    good = tmp_path / "operators"
    ada = hash_token("t1")
    good.write_text(f"# the on-call rota\n\nada {ada}\nBob Lee {hash_token('t2')}\n")
    assert sorted(serve.operators(str(good))) == ["Bob Lee", "ada"]
    cases = {
        "ada t1\n": "ada's credential is not a hashed token",  # a token, not its hash
        f"ada {ada}\nada {ada}\n": "the operator 'ada' is given twice",
        f"{ada}\n": "write an operator as NAME HASH",
        "# nobody\n": "names no operator",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad"
        bad.write_text(text)
        with pytest.raises(serve.ConfigError, match=message):
            serve.operators(str(bad))
    with pytest.raises(serve.ConfigError, match="cannot read the operators file"):
        serve.operators(str(tmp_path / "missing"))


def test_wf_console_hashes_a_token_and_refuses_two_kinds_of_credential(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a-token\n"))
    assert main(["console", "--hash-token"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("scrypt$") and "a-token" not in line
    operators = tmp_path / "operators"
    operators.write_text(f"ada {line}\n")
    guard = Guard.new(None, serve.operators(str(operators)))
    guard.sign_in("ada", "a-token")  # the hash printed is the token's
    token_file = tmp_path / "token"
    token_file.write_text("shared\n")
    served: list[object] = []
    monkeypatch.setattr(serve, "serve", lambda *a: served.append(a))
    code = main(["console", "--operators", str(operators), "--token-file", str(token_file),
                 "--store", f"sqlite:///{tmp_path / 's.db'}"])  # fmt: skip
    assert code == 2 and "give no shared one beside it" in capsys.readouterr().err
    monkeypatch.setenv("WFLANG_CONSOLE_TOKEN", "shared")
    code = main(["console", "--operators", str(operators),
                 "--store", f"sqlite:///{tmp_path / 's.db'}"])  # fmt: skip
    assert code == 2 and served == []
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert main(["console", "--hash-token"]) == 2
    assert "an empty token is no credential" in capsys.readouterr().err
