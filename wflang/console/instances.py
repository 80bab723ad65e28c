"""The instances page: filters, search and keyset paging over ``Store.browse``."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wflang.cli.framework import UsageError
from wflang.cli.values import parse_age
from wflang.console.security import Refused
from wflang.console.web import Console, page
from wflang.runtime.waiting import LABELS, wait_label
from wflang.store.browse import InstanceQuery
from wflang.store.records import StoreError
from wflang.store.status import INSTANCE_STATUSES

PAGE_SIZE = 50
#: The filters of the page, as the query string names them.
FILTERS = ("workflow", "version", "status", "waiting_on", "stuck", "started_from",
           "started_to", "id", "field", "value")  # fmt: skip


def _time(text: str, name: str) -> int:
    """A time of the form's date-time inputs (UTC unless it says otherwise): epoch ms."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise Refused(
            400, f"{name}: '{text}' is not a date and time (2026-03-02T09:00, UTC)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def query_of(console: Console, params: dict[str, str]) -> InstanceQuery:
    """The query a page's filters ask for; a filter that makes no sense is refused."""
    version = params.get("version", "").strip()
    if version and not (version.isdigit() and 0 < int(version) < 2**31):
        raise Refused(400, f"version: '{version}' is not a version number")
    status = params.get("status") or None
    if status is not None and status not in INSTANCE_STATUSES:
        raise Refused(400, f"status: '{status}' is none of {', '.join(INSTANCE_STATUSES)}")
    waiting = params.get("waiting_on", "").strip()
    try:
        label = wait_label(waiting) if waiting else None
        stuck = params.get("stuck", "").strip()
        still = parse_age(stuck, "stuck for more than") if stuck else None
    except (ValueError, UsageError) as err:
        raise Refused(400, str(err)) from None
    started_from, started_to = params.get("started_from", ""), params.get("started_to", "")
    field = params.get("field", "").strip()
    return InstanceQuery(
        workflow=params.get("workflow") or None,
        version=int(version) if version else None,
        status=status,
        waiting_on=label,
        moved_before=None if still is None else console.store.now() - still,
        created_from=_time(started_from, "started from") if started_from.strip() else None,
        created_before=_time(started_to, "started before") if started_to.strip() else None,
        id_contains=params.get("id", "").strip() or None,
        input_field=field or None,
        input_value=params.get("value", "") if field else None,
        newest_first=True,
        after=params.get("after") or None,
        limit=PAGE_SIZE,
    )


def instances(console: Console, request: Request) -> Response:
    params = {k: request.query_params[k] for k in (*FILTERS, "after") if k in request.query_params}
    context: dict[str, object] = {
        "filters": {k: params.get(k, "") for k in FILTERS},
        "statuses": INSTANCE_STATUSES,
        "waits": LABELS,
        "workflows": console.store.workflows(),
        "rows": (),
        "next": None,
        "error": None,
        "first": "after" not in params,
    }
    try:
        found = console.store.browse(query_of(console, params))
    except Refused as refused:
        return page(console, request, "instances.html", {**context, "error": refused.message},
                    status=refused.status)  # fmt: skip
    except StoreError as err:
        return page(console, request, "instances.html", {**context, "error": str(err)},
                    status=400)  # fmt: skip
    context.update(rows=found.instances, next=found.next)
    return page(console, request, "instances.html", context)


def routes(console: Console) -> list[Route]:
    return [Route("/instances", lambda r: instances(console, r), name="instances")]
