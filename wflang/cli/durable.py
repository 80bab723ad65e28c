"""``wf store``, ``wf deploy``, ``wf start``, ``wf versions`` and ``wf outbox``: a
durable store's schema, the workflow versions it holds, new instances, and the
events it keeps for other systems."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from attrs import field, frozen

from wflang.cli.compile import Refused, compiled
from wflang.cli.files import use_color
from wflang.cli.framework import EXIT_FINDINGS, Command, Group, Out, Result, arg, flag_field
from wflang.cli.stores import (
    actor_field,
    client,
    json_field,
    json_text,
    listing,
    open_cli_store,
    reason_field,
    store_field,
)
from wflang.cli.values import JSON_TYPES, json_arg, positive, version_number, when

if TYPE_CHECKING:
    from wflang.store.records import VersionInfo


@frozen(kw_only=True)
class StoreMigrate:
    store: str | None = store_field()


def store_migrate(req: StoreMigrate) -> Result:
    store = open_cli_store(req.store, check=False, create=True)
    applied = store.migrate()
    version = store.schema_version()
    out = Out()
    if applied:
        out.print(f"migrated {store.url} to schema version {version} (applied {applied})")
    else:
        out.print(f"{store.url} is at schema version {version}: nothing to do")
    return out.done()


@frozen(kw_only=True)
class StoreInfo:
    store: str | None = store_field()


def store_info(req: StoreInfo) -> Result:
    store = open_cli_store(req.store, check=False)
    version = store.schema_version()
    out = Out()
    out.print(f"store: {store.url}\nschema version: {version}")
    if version:
        s = store.stats()
        counts = ", ".join(f"{k} {v}" for k, v in sorted(s.instances.items())) or "none"
        out.print(f"instances: {counts}")
        out.print(
            f"tasks: {s.ready_tasks} ready, {s.running_tasks} running, "
            f"{s.open_human_tasks} human open; oldest ready waits {s.oldest_ready_ms} ms"
        )
        out.print(f"timers due: {s.due_timers}; inbox pending: {s.pending_events}")
    return out.done()


@frozen(kw_only=True)
class Deploy:
    files: tuple[str, ...] = field(metadata=arg(nargs="+", metavar="FILE", help=".wf files"))
    store: str | None = store_field()


def deploy(req: Deploy) -> Result:
    durable = client(req.store)
    out = Out()
    tables = []
    for path in req.files:  # every file's findings, then none deployed if one has errors
        try:
            tables.append((compiled(path, color=use_color("auto")), path))
        except Refused as refused:
            out.write(refused.report)
    if len(tables) < len(req.files):
        return out.done(EXIT_FINDINGS)
    for d in durable.deploy_all(tables):  # all or none
        what = "deployed" if d.new else "already deployed (the same table)"
        out.print(f"{d.name} v{d.version} {what}: sha256:{d.hash[:16]}")
    return out.done()


@frozen(kw_only=True)
class Start:
    workflow: str = field(metadata=arg(help="the workflow's name"))
    input: str = field(
        default="{}",
        metadata=arg("--input", help=f"the input as JSON, or @file.json; {JSON_TYPES}"),
    )
    version: int | None = field(
        default=None,
        metadata=arg(
            "--version", type=version_number, help="a deployed version (default: the latest)"
        ),
    )
    id: str | None = field(
        default=None, metadata=arg("--id", help="the instance id (default: NAME-<random>)")
    )
    json: bool = json_field()
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def start(req: Start) -> Result:
    durable = client(req.store, req.actor)
    data = json_arg(req.input, "--input")
    info = durable.start(
        req.workflow, data, version=req.version, instance_id=req.id, reason=req.reason
    )
    out = Out()
    if req.json:
        out.print(
            json_text({"instance": info.id, "workflow": info.workflow, "version": info.version})
        )
    else:
        out.print(info.id)
    return out.done()


@frozen(kw_only=True)
class Versions:
    workflow: str | None = field(
        default=None, metadata=arg(nargs="?", help="one workflow (default: all)")
    )
    json: bool = json_field()
    store: str | None = store_field()


def versions(req: Versions) -> Result:
    return listing(
        open_cli_store(req.store).versions(req.workflow),
        json=req.json,
        empty="no workflow is deployed",
        lines=_version_lines,
    ).done()


def _version_lines(rows: Sequence[VersionInfo]) -> Iterator[str]:
    yield f"{'workflow':24} {'version':>7} {'running':>8} {'finished':>9}  state     hash"
    for r in rows:
        state = "latest" if r.latest else ("draining" if r.running else "drained")
        yield (
            f"{r.name:24} {r.version:>7} {r.running:>8} {r.finished:>9}  {state:9} "
            f"sha256:{r.hash[:12]}"
        )


#: The kinds of outbox event, for ``--kind``: ``store.status.OutboxKind`` (a test keeps
#: them equal; the parser imports no store).
OUTBOX_KINDS = (
    "instance.finished", "instance.dead_lettered", "instance.status", "task.status",
    "signal.sent", "message.sent",
)  # fmt: skip


@frozen(kw_only=True)
class Outbox:
    limit: int = field(
        default=100,
        metadata=arg("--limit", type=positive, help="at most this many events (100)"),
    )
    after: int = field(
        default=0,
        metadata=arg("--after", type=int, metavar="ID", help="only events after ID"),
    )
    kind: tuple[str, ...] = field(
        default=(),
        metadata=arg(
            "--kind",
            action="append",
            choices=OUTBOX_KINDS,
            help="only events of this kind (repeatable)",
        ),
    )
    ack: bool = flag_field("--ack", help="acknowledge the events listed")
    json: bool = json_field()
    store: str | None = store_field()


def outbox(req: Outbox) -> Result:
    from wflang.runtime import codec

    store = open_cli_store(req.store)
    events = store.outbox(limit=req.limit, after=req.after, kinds=req.kind or ())
    out = listing(
        events,
        json=req.json,
        empty="no unpublished events",
        lines=lambda events: (
            f"{e.id:>8}  {when(e.created_at)}  {e.kind:18} {e.instance_id}  "
            f"{codec.dumps(e.payload)}"
            for e in events
        ),
    )
    if req.ack and events:
        with out.kept_on_error():  # the events were listed before the acknowledgement failed
            n = store.mark_published([e.id for e in events])
        out.print(f"acknowledged {n} event(s)", err=True)
    return out.done()


STORE = Group(
    ("store",),
    help="create or upgrade a durable store's schema; show its state",
    description="Manage the durable store. 'migrate' applies the schema migrations "
    "(safe to run twice or from two processes at once); 'info' shows the schema "
    "version, instance counts and queue depth.",
)
STORE_MIGRATE = Command(
    ("store", "migrate"), StoreMigrate, store_migrate, help="apply the missing schema migrations"
)
STORE_INFO = Command(
    ("store", "info"), StoreInfo, store_info, help="schema version, instances and queue depth"
)
DEPLOY = Command(
    ("deploy",),
    Deploy,
    deploy,
    help="register compiled workflow versions in the store",
    description="Compile each file (refusing files with check errors) and register its "
    "version. Deploying the same version again is a no-op; the same name and version "
    "with different content is refused: give the change a new version number.",
)
START = Command(
    ("start",),
    Start,
    start,
    help="start an instance of a deployed workflow",
    description="Start an instance on the latest deployed version (or --version), "
    "after checking the input against the declared input types. Prints the instance "
    "id; a worker takes it from there. Starting again with the same --id and input "
    "returns the same instance.",
)
VERSIONS = Command(
    ("versions",),
    Versions,
    versions,
    help="deployed versions and how many instances still run on each",
    description="List deployed versions with their running and finished instances: "
    "an older version is 'draining' while instances still run on it, then 'drained'.",
)
OUTBOX = Command(
    ("outbox",),
    Outbox,
    outbox,
    help="events for other systems (status changes, instances finished or dead-lettered), "
    "oldest first",
    description="List the outbox: events written in the same transaction as the step "
    "that caused them (instance.finished once per instance, instance.dead_lettered "
    "each time one is dead-lettered; with the workflow, version, status, output and "
    "error; instance.status and task.status at every status change of an instance or "
    "of one of its tasks), not yet acknowledged, oldest first; --kind K only those of "
    "kind K. --ack acknowledges the events "
    "listed, after printing them: a consumer that must not miss one reads without "
    "--ack, handles them, then acknowledges them through the store API "
    "(Store.mark_published). Acknowledged events may be deleted by 'wf ops purge'.",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (STORE, STORE_MIGRATE, STORE_INFO, DEPLOY, START, VERSIONS, OUTBOX)
