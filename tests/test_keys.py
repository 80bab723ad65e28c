"""Keys and waits: each formatted in one place, and read back by its own parser."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wflang.runtime import keys
from wflang.runtime.waiting import Wait, Waiting, awaiting, completable, parse, takes

#: Node, signal and message names: identifiers (``NAME`` in the grammar).
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
#: Instance ids and correlation texts: any text, ``:`` included.
texts = st.text(max_size=12)
numbers = st.integers(0, 10**9)


@given(texts, names, numbers, numbers, numbers)
def test_a_task_key_parses_back(iid: str, node: str, visit: int, token: int, attempt: int) -> None:
    key = keys.task_key(iid, node, visit, token, attempt)
    assert keys.parse_task_key(key) == keys.TaskKey(iid, node, visit, token, attempt)
    assert keys.key_token(key) == token


def test_an_instance_id_with_colons() -> None:
    key = keys.task_key("a:b:1:2", "pay", 3, 4, 5)
    assert keys.parse_task_key(key) == keys.TaskKey("a:b:1:2", "pay", 3, 4, 5)
    assert keys.key_token(key) == 4


@pytest.mark.parametrize("junk", ["", "x", "a:b", "i:n:1:x:1", "i:n:1:2:x", "i:n:v:2:1"])
def test_junk_is_not_a_task_key(junk: str) -> None:
    assert keys.parse_task_key(junk) is None


@pytest.mark.parametrize("junk", ["", "x", "a:b", "i:n:1:x:1"])
def test_a_key_without_a_token_names_none(junk: str) -> None:
    assert keys.key_token(junk) is None


@given(numbers)
def test_a_boundary_purpose_parses_back(k: int) -> None:
    assert keys.boundary_index(keys.boundary(k)) == k


@pytest.mark.parametrize("purpose", [keys.SLEEP, keys.UNTIL, keys.RETRY, "boundary:", "boundary:x"])
def test_other_purposes_are_no_boundary(purpose: str) -> None:
    assert keys.boundary_index(purpose) is None


def test_a_timer_id_is_its_tokens_key_and_purpose() -> None:
    key = keys.task_key("i", "t", 1, 2, 3)
    assert keys.timer_id(key, keys.boundary(0)) == "i:t:1:2:3:boundary:0"


@given(st.sampled_from([k for k in Wait if k not in (Wait.SIGNAL, Wait.MESSAGE)]))
def test_a_plain_wait_parses_back(kind: Wait) -> None:
    assert awaiting(kind) == kind.value
    assert parse(awaiting(kind)) == Waiting(kind)


@given(names)
def test_a_signal_wait_parses_back(name: str) -> None:
    assert awaiting(Wait.SIGNAL, name) == f"signal:{name}"
    assert parse(awaiting(Wait.SIGNAL, name)) == Waiting(Wait.SIGNAL, name)


@given(names, texts)
def test_a_message_wait_parses_back(name: str, correlation: str) -> None:
    text = awaiting(Wait.MESSAGE, name, correlation)
    assert text == f"message:{name}:{correlation}"  # the stored form
    assert parse(text) == Waiting(Wait.MESSAGE, name, correlation)
    assert takes(text, "message", name, correlation)
    assert takes(text, "message", name, None)  # sent to the instance itself


@pytest.mark.parametrize("junk", ["tasks", "task:x", "join:", "nothing"])
def test_junk_is_not_a_wait(junk: str) -> None:
    with pytest.raises(ValueError, match="not a wait"):
        parse(junk)


def test_what_an_operator_may_complete() -> None:
    assert completable("task") and completable("") and completable("entering")
    assert completable("signal:go") and not completable("signal:go", signals=False)
    assert not completable("join") and not completable("timer")


@given(texts)
def test_a_task_delivery_parses_back(key: str) -> None:
    assert keys.parse_delivery(keys.task_delivery(key)) == (keys.Delivery.TASK, key)


@given(texts)
def test_a_timer_delivery_parses_back(timer: str) -> None:
    assert keys.parse_delivery(keys.timer_delivery(timer)) == (keys.Delivery.TIMER, timer)


@given(texts)
def test_a_child_delivery_parses_back(call_key: str) -> None:
    assert keys.parse_delivery(keys.child_delivery(call_key)) == (keys.Delivery.CHILD, call_key)


@given(numbers)
def test_a_publication_and_an_inbox_row_parse_back(n: int) -> None:
    assert keys.parse_delivery(keys.publication_delivery(n)) == (keys.Delivery.PUBLICATION, str(n))
    assert keys.parse_delivery(keys.inbox_row_delivery(n)) == (keys.Delivery.INBOX, str(n))


@given(st.sampled_from([keys.Delivery.SIGNAL, keys.Delivery.MESSAGE]), names, texts)
def test_a_keyed_delivery_parses_back(kind: keys.Delivery, name: str, key: str) -> None:
    assert keys.parse_delivery(keys.delivery_key(kind, name, key)) == (kind, f"{name}:{key}")


def test_the_stored_forms_of_deliveries() -> None:
    """The forms already in stores' inboxes and histories: changing one needs a migration."""
    assert keys.delivery_key("signal", "go", "k1") == "signal:go:k1"
    assert keys.delivery_key(keys.Delivery.MESSAGE, "paid", "k:2") == "message:paid:k:2"
    assert keys.publication_delivery(7) == "msg:7"
    assert keys.timer_delivery("i:t:1:2:3:sleep") == "timer:i:t:1:2:3:sleep"
    assert keys.task_delivery("i:t:1:2:3") == "task:i:t:1:2:3"
    assert keys.child_delivery("i:c:1:2:1") == "child:i:c:1:2:1"
    assert keys.PARENT_CANCEL_DELIVERY == "cancel:parent"
    assert keys.inbox_row_delivery(12) == "inbox:12"
    assert keys.parse_delivery(keys.PARENT_CANCEL_DELIVERY) == (keys.Delivery.CANCEL, "parent")


@pytest.mark.parametrize("junk", ["", "task", "tasks:x", "join:1", ":x"])
def test_junk_is_no_delivery(junk: str) -> None:
    assert keys.parse_delivery(junk) is None
