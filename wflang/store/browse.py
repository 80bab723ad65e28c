"""Pages of instances, filtered: what ``wf list`` and the console's instances page read.

One query serves both. A page is ordered by a time and the id (``created_at``, or
``updated_at`` for the stuck ones) and the next page starts after the last row's key
(keyset paging): page 1,000 costs what page 1 costs, and rows started meanwhile neither
shift nor repeat the pages. Migrations 4 to 6 give the orders their indexes
(``wf_instance_created``, ``wf_instance_flow_created``, ``wf_instance_status_created``,
``wf_instance_still``, ``wf_instance_waiting_on``); a search in the ids or in an input
field filters the rows met on such an index walk (no index holds them).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

from attrs import frozen

from wflang.runtime import codec
from wflang.store import rows
from wflang.store.backend import Dialect, Param, Tx
from wflang.store.records import InstanceInfo, StoreError
from wflang.store.status import IS_ACTIVE

#: A field of the input, or a path into it: ``customer.email``.
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@frozen(kw_only=True)
class InstanceQuery:
    """Which instances, in which order, from where. Every filter left None is off."""

    workflow: str | None = None
    version: int | None = None
    status: str | None = None
    #: a label of ``waiting.waiting_on`` (``signal:approval``, ``timer``, ...)
    waiting_on: str | None = None
    #: the active ones that have not moved since this time (stuck): ordered by it
    moved_before: int | None = None
    created_from: int | None = None  # started at or after (epoch ms)
    created_before: int | None = None  # started before (epoch ms)
    id_contains: str | None = None
    parent_id: str | None = None  # the children of this instance
    #: an input field (or a dotted path into the input) and the value it must hold:
    #: JSON (``42``, ``true``, ``"a"``) or, if it is not JSON, a string
    input_field: str | None = None
    input_value: str | None = None
    newest_first: bool = False
    after: str | None = None  # the ``next`` key of the page before
    limit: int = 100


@frozen
class InstancePage:
    instances: tuple[InstanceInfo, ...]
    #: the key of the page after this one (``InstanceQuery.after``); None: the last page
    next: str | None


def cursor(time: int, instance_id: str) -> str:
    return f"{time}:{instance_id}"


def _parse_cursor(text: str) -> tuple[int, str]:
    time, sep, iid = text.partition(":")
    if not sep or not re.fullmatch(r"-?[0-9]{1,19}", time):
        raise StoreError(f"not a page key: {text[:60]!r}")
    return int(time), iid


def _like(text: str) -> str:
    """``text`` for ``LIKE ... ESCAPE '\\'``: its own ``%`` and ``_`` taken literally."""
    return re.sub(r"([\\%_])", r"\\\1", text)


def _json_forms(value: str) -> list[str]:
    """The stored JSON texts an input field holding ``value`` may have: the value as a
    string (its other characters escaped, as the codec writes them, or not, as
    PostgreSQL's ``jsonb`` prints them), and, when it is a JSON number or boolean itself
    (``42``, ``2.50``, ``true``), that too."""
    forms = {json.dumps(value), json.dumps(value, ensure_ascii=False)}
    try:
        parsed = codec.loads(value)
    except ValueError:
        parsed = None
    if isinstance(parsed, (bool, int, Decimal)):
        forms.add(codec.dumps(parsed))
    return sorted(forms)


def _json_at(dialect: Dialect, path: str) -> tuple[str, str]:
    """The SQL of the JSON text at ``path`` in the input, and its parameter."""
    if dialect.name == "sqlite":
        return "(input -> ?)", "$." + path
    return "((input::jsonb #> ?::text[])::text)", "{" + path.replace(".", ",") + "}"


def instance_page(tx: Tx, dialect: Dialect, q: InstanceQuery) -> InstancePage:
    where: list[str] = []
    params: list[Param] = []

    def given(sql: str, *values: Param) -> None:
        where.append(sql)
        params.extend(values)

    if q.status:
        given("status = ?", q.status)
    if q.workflow:
        given("workflow = ?", q.workflow)
    if q.version is not None:
        given("version = ?", q.version)
    if q.waiting_on is not None:
        # one wait: the index's own value; several (the branches of a parallel): a word
        # of the text, read off the rows the partial index holds
        given(
            "waiting_on IS NOT NULL AND (waiting_on = ? "
            "OR ' ' || waiting_on || ' ' LIKE ? ESCAPE '\\')",
            q.waiting_on,
            f"% {_like(q.waiting_on)} %",
        )
    if q.moved_before is not None:  # the index wf_instance_still (the term its own)
        given(f"{IS_ACTIVE} AND updated_at <= ?", q.moved_before)
    if q.created_from is not None:
        given("created_at >= ?", q.created_from)
    if q.created_before is not None:
        given("created_at < ?", q.created_before)
    if q.parent_id is not None:
        given("parent_id = ?", q.parent_id)
    if q.id_contains:
        given("id LIKE ? ESCAPE '\\'", f"%{_like(q.id_contains)}%")
    if q.input_field:
        if not _PATH.fullmatch(q.input_field):
            raise StoreError(
                f"not an input field: {q.input_field[:60]!r} (a name, or a dotted path "
                "such as customer.email)"
            )
        sql, path = _json_at(dialect, q.input_field)
        forms = _json_forms(q.input_value or "")
        # the stored text holds the value as the codec wrote it: a LIKE on the text
        # leaves out most rows before the JSON of the rest is read
        texts = sorted({f.removeprefix('"').removesuffix('"') for f in forms})
        likes = " OR ".join(["input LIKE ? ESCAPE '\\'"] * len(texts))
        given(f"({likes})", *(f"%{_like(t)}%" for t in texts))
        given(f"{sql} IN ({', '.join('?' * len(forms))})", path, *forms)
    time = "updated_at" if q.moved_before is not None else "created_at"
    descending = q.newest_first and q.moved_before is None
    if q.after is not None:
        at, iid = _parse_cursor(q.after)
        given(f"({time}, id) {'<' if descending else '>'} (?, ?)", at, iid)
    way = " DESC" if descending else ""
    # The stuck ones, filtered by nothing an index of its own holds: one walk of
    # ``wf_instance_still`` in order (SQLite without statistics may read each active
    # status's range of an index led by the status and sort them all). A status filters
    # that walk: no index holds the stuck ones of one status by time.
    narrow = q.workflow or q.parent_id is not None or q.waiting_on is not None
    still = q.moved_before is not None and not narrow and bool(dialect.indexed_by)
    sql = (
        f"SELECT {rows.INSTANCE_COLUMNS} FROM wf_instance"
        + (dialect.indexed_by.format("wf_instance_still") if still else "")
        + (" WHERE " + " AND ".join(where) if where else "")
        + f" ORDER BY {time}{way}, id{way} LIMIT ?"
    )
    found = [rows.instance_info(r) for r in tx.query(sql, (*params, q.limit + 1))]
    page = found[: q.limit]
    more = len(found) > q.limit and page
    last = page[-1] if more else None
    return InstancePage(
        tuple(page),
        None
        if last is None
        else cursor(last.updated_at if time == "updated_at" else last.created_at, last.id),
    )
