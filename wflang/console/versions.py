"""The versions page: every deployed workflow version with its instances still
running (a version that is no longer the latest drains while it has some), the
diagram of each, and the ``wf diff`` report between two versions of a workflow (the
same functions as the command: ``compiler.diff.diff_specs`` and its text, and whether
instances waiting at each node of the old version could go on on the new)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wflang.console.drawing import drawing, source_of
from wflang.console.security import Refused
from wflang.console.web import Console, page, safe
from wflang.store.records import StoreError, VersionInfo


def state(v: VersionInfo) -> str:
    """latest, draining (an older version with running instances) or drained."""
    if v.latest:
        return "latest"
    return "draining" if v.running else "drained"


def _version(text: str, name: str) -> int:
    if not (text.isdigit() and 0 < int(text) < 2**31):
        raise Refused(400, f"{name}: '{text}' is not a version number")
    return int(text)


def versions(console: Console, request: Request) -> Response:
    workflow = request.query_params.get("workflow") or None
    try:
        found = console.store.versions(workflow)
    except StoreError as err:
        raise Refused(404, str(err)) from None
    rows = [{"v": v, "state": state(v)} for v in found]
    return page(console, request, "versions.html", {"rows": rows, "workflow": workflow or ""})


def version(console: Console, request: Request) -> Response:
    name = request.query_params.get("name", "")
    number = _version(request.query_params.get("version", ""), "version")
    try:
        deployed = console.store.deployed(name, number)
    except StoreError as err:
        raise Refused(404, str(err)) from None
    drawn = drawing(console.store, deployed.hash)
    others = [v.version for v in console.store.versions(name) if v.version != number]
    context = {
        "deployed": deployed,
        "svg": None if drawn.svg is None else safe(drawn.svg),
        "diagram_problem": drawn.problem,
        "others": others,
    }
    return page(console, request, "version.html", context)


def diff_report(console: Console, name: str, old: int, new: int) -> dict[str, Any]:
    """What ``wf diff OLD NEW --format text`` and ``--instances`` print for two
    deployed versions, from the sources kept with them."""
    from wflang.compiler.diff import diff_specs
    from wflang.compiler.diff.migration import migrate
    from wflang.compiler.diff.migration import render_text as migration_text
    from wflang.compiler.diff.text import render_text
    from wflang.dsl.parser import parse_bytes

    parsed = []
    for number in (old, new):
        try:
            deployed = console.store.deployed(name, number)
        except StoreError as err:
            raise Refused(404, str(err)) from None
        found = source_of(console.store, deployed.hash)
        if isinstance(found, str):
            return {"problem": f"{name} v{number}: {found}"}
        data, path = found
        read = parse_bytes(data, f"{name} v{number}: {path}")
        if read.spec is None:
            return {"problem": f"{name} v{number}: its source no longer parses"}
        parsed.append(read)
    before, after = parsed
    assert before.spec is not None and after.spec is not None
    result = diff_specs(before.spec, after.spec)
    sources = {before.file: before.text, after.file: after.text}
    migration = migrate(before.spec, after.spec)
    return {
        "problem": None,
        "report": render_text(result, sources, color=False) or "No changes.",
        "breaking": len([c for c in result.changes if c.level.value == "breaking"]),
        "instances": migration_text(migration),
        "can_continue": migration.can_continue,
    }


def diff(console: Console, request: Request) -> Response:
    name = request.query_params.get("name", "")
    old = _version(request.query_params.get("old", ""), "old")
    new = _version(request.query_params.get("new", ""), "new")
    report = diff_report(console, name, old, new)
    return page(console, request, "diff.html", {"name": name, "old": old, "new": new, **report})


def routes(console: Console) -> list[Route]:
    return [
        Route("/versions", lambda r: versions(console, r), name="versions"),
        Route("/versions/version", lambda r: version(console, r), name="version"),
        Route("/versions/diff", lambda r: diff(console, r), name="diff"),
    ]
