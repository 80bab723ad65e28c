"""The ``wf`` commands of durable execution: store, deploy, start, worker, signal,
tasks, status, history, list, versions and ops.

Each command opens the store named by ``--store`` (default ``$WFLANG_STORE``,
else ``sqlite:///.wflang/state.db``), checks its request through
``wflang.durable.client`` and prints the outcome. A refused request (unknown
id, a value of the wrong type, an illegal action) prints why and exits 1 with
nothing changed; a usage or connection problem exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wflang.dsl.spec import MAX_VERSION
from wflang.durable.worker import SETTINGS
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.ir import Value
from wflang.runtime.validate import MAX_VALUE_BYTES
from wflang.store import DEFAULT_URL, Store, default_url, open_store, sqlite_path
from wflang.store.backend import redact, redact_url, url_secrets
from wflang.store.records import InstanceInfo, StoreError
from wflang.store.retention import ENDED, PURGEABLE

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2
#: How values are written in JSON inputs, payloads and outputs (the help says it).
JSON_TYPES = (
    "decimals are JSON numbers, durations integer milliseconds, timestamps epoch milliseconds"
)

Compile = Callable[[str], Any]  # path -> Table (the CLI's compile, which prints findings)


class CliUsage(Exception):
    """A usage problem (exit 2): bad JSON, an unreadable file, no such module."""


# ----------------------------------------------------------------------- helpers


def _store(
    args: argparse.Namespace, *, check: bool = True, create: bool = False, timeout: float = 10.0
) -> Store:
    """The store of ``--store``; a one-shot command gives up on a database that does not
    answer within ``timeout`` seconds (a worker waits longer: it rides out outages).

    Only ``create`` (``wf store migrate``) makes a SQLite file or its folders: any other
    command on a file that is not there is refused and leaves nothing behind.
    """
    url = args.store or default_url()
    shown = redact_url(url)
    path = sqlite_path(url)
    if path and not create and not Path(path).exists():
        raise CliUsage(
            f"no store at {shown} (no such file): "
            f"create one with `wf store migrate --store {shown}`"
        )
    try:
        store = open_store(url, timeout=timeout)
    except StoreError as err:  # an unknown or unreadable URL: a usage problem
        raise CliUsage(str(err)) from None
    try:
        if check:
            store.check_schema()
        else:  # open it now: a file that is not a database says so here
            store.schema_version()
    except StoreError:
        raise
    except Exception as err:  # cannot connect, cannot open the file, not a database
        why = redact(str(err), url_secrets(url))
        raise CliUsage(f"cannot open the store {shown}: {why}") from None
    return store


def outcome_label(status: str) -> str:
    """What an instance's ``error`` field is called when printed: the error of a failed or
    dead-lettered instance, the reason a compensated or cancelled one ended so."""
    return "error" if status in ("failed", "dead_lettered") else "reason"


def bounded(low: int, high: int, unit: int = 1, units: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``, given in ``unit``s of
    it (``--lease`` in seconds, kept in milliseconds: 1000). Anything else (``nan``,
    ``inf``, ``1e999999999``, 40 digits) is a usage error before anything opens."""

    def parse(text: str) -> int:
        try:
            number = Decimal(text.strip()) * unit
            if unit != 1:  # a finer fraction than the unit kept is rounded away
                number = number.to_integral_value()
            fits = number.is_finite() and low <= number <= high and number % 1 == 0
        except ArithmeticError:  # not a number at all, or beyond any precision
            fits = False
        if not fits:
            if unit == 1:
                raise argparse.ArgumentTypeError(
                    f"'{text}' is not a whole number from {low:,} to {high:,}"
                )
            span = f"{low / unit:,g} to {high / unit:,g} {units}".rstrip()
            raise argparse.ArgumentTypeError(f"'{text}' is not a number from {span}")
        return int(number)

    return parse


#: A count or a batch: at least 1, and within the stores' 64-bit integers.
positive = bounded(1, 2**63 - 1)
#: A workflow version, as the language bounds it (what every store holds).
version_number = bounded(1, MAX_VERSION)


#: The most read from an ``@file`` of JSON: room for indentation around a value of the
#: largest size accepted (``MAX_VALUE_BYTES`` as compact JSON); a longer file, or a
#: device that never ends (``@/dev/zero``), is refused after reading this much.
MAX_JSON_FILE_BYTES = 16 * MAX_VALUE_BYTES


def json_arg(text: str, what: str) -> dict[str, Value]:
    """A JSON object from the command line, or from a file with ``@path``; decimals exact.
    Whatever the text holds, a problem with it is a usage error that says what."""
    if text.startswith("@"):
        path = text[1:]
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_JSON_FILE_BYTES + 1)
        except OSError as err:
            raise CliUsage(f"cannot read {path}: {err.strerror or err}") from err
        if len(data) > MAX_JSON_FILE_BYTES:
            raise CliUsage(f"{what}: {path} is longer than {MAX_JSON_FILE_BYTES:,} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            where = f"{err.reason} at byte {err.start}"
            raise CliUsage(f"{what}: {path} is not UTF-8 text ({where})") from None
    try:
        parsed = codec.loads(text)
    except RecursionError:
        raise CliUsage(f"{what} is nested too deeply") from None
    except ValueError as err:  # not JSON, or an integer beyond Python's digit limit
        reason = (
            str(err)
            if isinstance(err, json.JSONDecodeError)
            else f"a number has more than {sys.get_int_max_str_digits():,} digits"
        )
        raise CliUsage(f"{what} is not JSON: {reason}") from None
    if not isinstance(parsed, dict):
        raise CliUsage(f"{what} must be a JSON object, not {type(parsed).__name__}")
    return parsed


def import_handlers(name: str) -> None:
    """Import the module whose ``@handler`` functions serve the calls: by name
    (``order_handlers``, found on ``sys.path``) or by file (``examples/order_handlers.py``,
    whose folder is put on ``sys.path`` so that it imports its neighbours). A module
    that is missing or fails while it loads is a usage error naming what it raised."""
    try:
        if name.endswith(".py") or os.sep in name:
            path = Path(name)
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if not path.is_file() or spec is None or spec.loader is None:
                raise CliUsage(f"cannot import handlers {name!r}: no such Python file")
            sys.path.insert(0, str(path.resolve().parent))
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(name)
    except CliUsage:
        raise
    except Exception as err:  # whatever the module raised while loading
        raise CliUsage(f"cannot import handlers {name!r}: {type(err).__name__}: {err}") from err


def _print_json(data: object) -> None:
    print(codec.dumps(data, indent=2))


def _client(args: argparse.Namespace) -> Any:
    from wflang.durable.client import Client

    return Client(_store(args), getattr(args, "actor", None))


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


# ---------------------------------------------------------------------- commands


def cmd_store_migrate(args: argparse.Namespace) -> int:
    store = _store(args, check=False, create=True)
    applied = store.migrate()
    version = store.schema_version()
    if applied:
        print(f"migrated {store.url} to schema version {version} (applied {applied})")
    else:
        print(f"{store.url} is at schema version {version}: nothing to do")
    return EXIT_OK


def cmd_store_info(args: argparse.Namespace) -> int:
    store = _store(args, check=False)
    version = store.schema_version()
    print(f"store: {store.url}\nschema version: {version}")
    if version:
        s = store.stats()
        print(
            f"instances: {', '.join(f'{k} {v}' for k, v in sorted(s.instances.items())) or 'none'}"
        )
        print(
            f"tasks: {s.ready_tasks} ready, {s.running_tasks} running, "
            f"{s.open_human_tasks} human open; oldest ready waits {s.oldest_ready_ms} ms"
        )
        print(f"timers due: {s.due_timers}; inbox pending: {s.pending_events}")
    return EXIT_OK


def cmd_deploy(args: argparse.Namespace, compile_file: Compile) -> int:
    client = _client(args)
    tables = [(path, compile_file(path)) for path in args.files]
    if any(t is None for _, t in tables):
        return EXIT_REFUSED
    deployed = client.deploy_all([(t, path) for path, t in tables if t is not None])
    for d in deployed:  # all or none
        what = "deployed" if d.new else "already deployed (the same table)"
        print(f"{d.name} v{d.version} {what}: sha256:{d.hash[:16]}")
    return EXIT_OK


def cmd_start(args: argparse.Namespace) -> int:
    client = _client(args)
    data = json_arg(args.input, "--input")
    info = client.start(
        args.workflow, data, version=args.version, instance_id=args.id, reason=args.reason
    )
    if args.json:
        _print_json({"instance": info.id, "workflow": info.workflow, "version": info.version})
    else:
        print(info.id)
    return EXIT_OK


def cmd_versions(args: argparse.Namespace) -> int:
    store = _store(args)
    rows = store.versions(args.workflow)
    if args.json:
        _print_json([_attrs(r) for r in rows])
        return EXIT_OK
    if not rows:
        print("no workflow is deployed")
        return EXIT_OK
    print(f"{'workflow':24} {'version':>7} {'running':>8} {'finished':>9}  state     hash")
    for r in rows:
        state = "latest" if r.latest else ("draining" if r.running else "drained")
        print(
            f"{r.name:24} {r.version:>7} {r.running:>8} {r.finished:>9}  {state:9} "
            f"sha256:{r.hash[:12]}"
        )
    return EXIT_OK


def cmd_signal(args: argparse.Namespace) -> int:
    client = _client(args)
    payload = json_arg(args.payload, "--payload")
    kind = "message" if args.message else "signal"
    delivered = client.signal(
        args.instance, args.name, payload, key=args.key, kind=kind, reason=args.reason
    )
    if delivered:
        print(f"{kind} {args.name} sent to {args.instance}")
    else:
        print(f"{kind} {args.name} with key {args.key!r} was already sent: ignored")
    return EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    client = _client(args)
    payload = json_arg(args.payload, "--payload")
    ttl = 0 if args.ttl is None else parse_age(args.ttl, "--ttl")
    correlation: Value = args.correlation
    if args.int:
        if not re.fullmatch(r"[+-]?[0-9]+", args.correlation.strip()):
            raise CliUsage(f"--correlation: '{args.correlation}' is not an integer")
        correlation = int(args.correlation)
    done = client.publish(
        args.message, correlation, payload, key=args.key, ttl_ms=ttl, reason=args.reason
    )
    what = f"message {done.message} (correlation {done.correlation!r})"
    if done.duplicate:
        print(f"{what} with key {args.key!r} was already published: ignored")
        return EXIT_OK
    if done.delivered:
        print(f"{what} delivered to {len(done.delivered)} instance(s): "
              + ", ".join(done.delivered))  # fmt: skip
    else:
        print(f"{what}: no instance waits for it now")
    if done.kept_until is not None:
        print(f"kept for instances that start waiting for it until {_when(done.kept_until)}")
    elif not done.delivered:
        print("not kept (give --ttl to keep it for instances that wait later)")
    return EXIT_OK


def cmd_tasks_list(args: argparse.Namespace) -> int:
    client = _client(args)
    tasks = client.open_tasks(args.instance)
    if args.json:
        _print_json([_attrs(t) for t in tasks])
        return EXIT_OK
    if not tasks:
        print("no open human tasks")
    for t in tasks:
        who = f" for {t.assignee}" if t.assignee else ""
        form = f" form: {', '.join(t.form)}" if t.form else ""
        print(f"{t.key}  {t.service or 'user'} task {t.node}{who}{form}")
    return EXIT_OK


def cmd_tasks_complete(args: argparse.Namespace) -> int:
    client = _client(args)
    output = json_arg(args.output, "--output")
    task = client.complete_task(args.key, output, reason=args.reason)
    print(f"task {task.key} completed")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    store = _store(args)
    info = store.instance(args.instance)
    if args.json:
        _print_json(_status_json(store, info))
        return EXIT_OK
    print(f"instance: {info.id}")
    print(f"workflow: {info.workflow} v{info.version} (sha256:{info.table_hash[:12]})")
    print(f"status:   {info.status}")
    print(f"created:  {_when(info.created_at)}   updated: {_when(info.updated_at)}")
    inst = info.instance
    if inst is not None:
        table = store.table_for(info.table_hash)
        dead = inst.status is rt.Status.DEAD_LETTERED
        if not inst.status.finished or dead:
            for t in inst.tokens:
                if dead:  # where it stopped; a failed compensation waits for an operator
                    note = " (compensation: retry, force-complete or skip it)" * t.compensating
                else:
                    note = f" (waiting for {t.waiting})" if t.waiting else ""
                    note += " (compensation)" * t.compensating
                print(f"at:       {table.states[t.state].name}{note}")
            if any(t.compensating for t in inst.tokens) and inst.compensations:
                rest = ", ".join(table.states[s].name for s in reversed(inst.compensations))
                print(f"then:     {rest} (the compensations still to run, in this order)")
        if not inst.status.finished:  # each as `wf ops fire-timers --timer` takes it
            for timer in sorted(inst.timers, key=lambda t: (t.due, t.id)):
                print(f"timer:    {timer.purpose} at {_when(timer.due)} (id {timer.id})")
        if inst.output is not None:
            print("output:   " + codec.dumps(inst.output))
        if inst.error:
            print(f"{outcome_label(inst.status.value) + ':':10}{inst.error}")
        print(f"steps:    {inst.seq}")
    if info.unreadable:
        print(f"error:    {info.unreadable}")
    for task in store.tasks(instance_id=info.id, status="open"):
        print(f"open task: {task.key} ({task.node})")
    return EXIT_OK


def _status_json(store: Store, info: InstanceInfo) -> dict[str, Any]:
    inst = info.instance
    table = store.table_for(info.table_hash)
    return {
        "instance": info.id,
        "workflow": info.workflow,
        "version": info.version,
        "table_hash": info.table_hash,
        "status": info.status,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "current": [] if inst is None else codec.current_nodes(table, inst),
        "output": None if inst is None else inst.output,
        "error": info.unreadable if inst is None else inst.error,
        "steps": 0 if inst is None else inst.seq,
    }


def cmd_history(args: argparse.Namespace) -> int:
    client = _client(args)
    doc = client.history_document(args.instance)
    if args.json or args.compact:  # --compact is the JSON document on one line
        print(codec.dumps(doc, indent=None if args.compact else 1))
        return EXIT_OK
    for entry in doc["entries"]:
        event = entry["event"]
        label = "start" if event is None else event["type"]
        who = ""
        if entry.get("actor"):
            who = f"  by {entry['actor']}" + (f": {entry['reason']}" if entry.get("reason") else "")
        print(f"#{entry['seq']:<3} {_when(entry['at'])}  {label}{who}")
        for decision in entry["decisions"]:
            print(f"       {decision}")
    print(f"status: {doc['status']}")
    if doc.get("output") is not None:
        print("output: " + codec.dumps(doc["output"]))
    if doc.get("error"):
        print(f"{outcome_label(doc['status'])}: {doc['error']}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    rows = store.instances(status=args.status, workflow=args.workflow, limit=args.limit)
    if args.json:
        _print_json(
            [
                {
                    "instance": r.id,
                    "workflow": r.workflow,
                    "version": r.version,
                    "status": r.status,
                    "created_at": r.created_at,
                    "updated_at": r.updated_at,
                }
                for r in rows
            ]
        )
        return EXIT_OK
    if not rows:
        print("no instances")
        return EXIT_OK
    ids = max(len(r.id) for r in rows)
    flows = max(len(f"{r.workflow} v{r.version}") for r in rows)
    for r in rows:
        flow = f"{r.workflow} v{r.version}"
        print(f"{r.id:{ids}}  {flow:{flows}}  {r.status:14} {_when(r.updated_at)}")
    return EXIT_OK


def cmd_ops_dead_letters(args: argparse.Namespace) -> int:
    client = _client(args)
    rows = client.dead_letters(args.workflow)
    if args.json:
        _print_json(
            [
                {
                    "instance": r.id,
                    "workflow": r.workflow,
                    "version": r.version,
                    "error": r.instance.error if r.instance else None,
                    "snapshot": r.instance.snapshot if r.instance else None,
                }
                for r in rows
            ]
        )
        return EXIT_OK
    if not rows:
        print("no dead-lettered instances")
    for r in rows:
        error = r.instance.error if r.instance else ""
        print(f"{r.id:40} {r.workflow} v{r.version}  {error}")
    return EXIT_OK


def cmd_ops_retry(args: argparse.Namespace) -> int:
    _client(args).retry(args.instance, reason=args.reason)
    print(f"{args.instance}: retry requested; a worker resumes it from the failed step")
    return EXIT_OK


def cmd_ops_replay(args: argparse.Namespace) -> int:
    data = None if args.input is None else json_arg(args.input, "--input")
    _client(args).replay_from(args.instance, args.step, input=data, reason=args.reason)
    print(f"{args.instance}: replay from {args.step} requested")
    return EXIT_OK


def cmd_ops_force_complete(args: argparse.Namespace) -> int:
    output = json_arg(args.output, "--output")
    _client(args).force_complete(args.instance, args.step, output, reason=args.reason)
    print(f"{args.instance}: {args.step} will be completed with the given output")
    return EXIT_OK


def cmd_ops_skip(args: argparse.Namespace) -> int:
    _client(args).skip_compensation(args.instance, args.step, reason=args.reason)
    print(f"{args.instance}: compensation {args.step} will be skipped; the rest then run")
    return EXIT_OK


def cmd_ops_fire_timers(args: argparse.Namespace) -> int:
    fired = _client(args).fire_timers(args.instance, timer=args.timer, reason=args.reason)
    print(f"{args.instance}: firing {', '.join(fired)}")
    return EXIT_OK


def cmd_ops_cancel(args: argparse.Namespace) -> int:
    _client(args).cancel(args.instance, compensate=args.compensate, reason=args.reason)
    how = "with compensation" if args.compensate else "without compensation"
    print(f"{args.instance}: cancel requested ({how})")
    return EXIT_OK


_AGE_UNITS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_AGE = re.compile(r"(\d+)(ms|s|m|h|d|w)")
MAX_AGE_MS = 100 * 365 * 86_400_000  # ages and TTLs beyond are surely typos


def parse_age(text: str, option: str = "--older-than") -> int:
    """``30d``, ``12h``, ``1d12h``, ``90m``, ``0s``: milliseconds."""
    parts = _AGE.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise CliUsage(
            f"{option}: '{text}' is not a duration: write a number and a unit "
            "(ms, s, m, h, d, w), e.g. 30d, 12h or 1d12h"
        )
    total = sum(int(n) * _AGE_UNITS[u] for n, u in parts)
    if total > MAX_AGE_MS:
        raise CliUsage(f"{option}: '{text}' is longer than 100 years")
    return total


def cmd_ops_purge(args: argparse.Namespace) -> int:
    age = parse_age(args.older_than)
    client = _client(args)
    try:
        purged = client.purge(
            age,
            statuses=args.status or ENDED,
            workflow=args.workflow,
            dry_run=args.dry_run,
            batch=args.batch,
            reason=args.reason,
        )
    except ValueError as err:
        raise CliUsage(str(err)) from err
    if args.json:
        _print_json({"dry_run": args.dry_run, "instances": list(purged.instances),
                     "rows": purged.rows})  # fmt: skip
        return EXIT_OK
    n = purged.rows.get("wf_instance", 0)
    verb = "would delete" if args.dry_run else "deleted"
    rows = ", ".join(f"{k.removeprefix('wf_')} {v}" for k, v in sorted(purged.rows.items()) if v)
    who = f"; by {client.actor}" + (f": {args.reason}" if args.reason else "")
    print(f"{verb} {n} instance(s) that ended more than {args.older_than} ago"
          + (f" ({rows} rows)" if rows else "") + who)  # fmt: skip
    return EXIT_OK


def cmd_outbox(args: argparse.Namespace) -> int:
    store = _store(args)
    events = store.outbox(limit=args.limit, after=args.after)
    if args.json:
        _print_json([_attrs(e) for e in events])
    elif not events:
        print("no unpublished events")
    for e in events if not args.json else ():
        print(f"{e.id:>8}  {_when(e.created_at)}  {e.kind:18} {e.instance_id}  "
              f"{codec.dumps(e.payload)}")  # fmt: skip
    if args.ack and events:
        n = store.mark_published([e.id for e in events])
        print(f"acknowledged {n} event(s)", file=sys.stderr)
    return EXIT_OK


def cmd_worker(args: argparse.Namespace) -> int:
    from wflang.durable import logs
    from wflang.durable.worker import Worker
    from wflang.runtime.engine import at_most_once_services, registered_handlers

    logs.configure(args.log_format, args.log_level)
    for module in args.handlers:
        import_handlers(module)
    handlers = registered_handlers()  # none: the worker still runs timers, signals, tasks
    store = _store(args, timeout=30.0)
    worker = Worker(
        store,
        handlers,
        concurrency=args.concurrency,
        lease_ms=args.lease,
        batch=args.batch,
        poll_ms=args.poll,
        group_commit=not args.no_group_commit,
        at_most_once=at_most_once_services() | frozenset(args.at_most_once or ()),
    )
    if args.metrics_port:
        from wflang.durable.metrics import serve

        serve(worker, args.metrics_port)
    if args.once:
        n = worker.run_until_idle()
        print(f"worker {worker.id}: {n} transition{'' if n == 1 else 's'}, nothing more is due")
        return EXIT_OK

    def drain(signum: int, _frame: object) -> None:
        worker.stop()

    signal.signal(signal.SIGTERM, drain)
    signal.signal(signal.SIGINT, drain)
    with worker.woken_by_notify():
        worker.run()
    return EXIT_OK


def _attrs(value: object) -> dict[str, Any]:
    import attrs

    return attrs.asdict(value)  # type: ignore[arg-type]


# -------------------------------------------------------------------- the parser


if TYPE_CHECKING:
    Sub = argparse._SubParsersAction[argparse.ArgumentParser]


def store_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        metavar="URL",
        default=None,
        help=f"sqlite:///path.db or postgresql://user@host/db "
        f"(default: $WFLANG_STORE, else {DEFAULT_URL})",
    )


def ops_opts(p: argparse.ArgumentParser) -> None:
    store_opt(p)
    p.add_argument("--reason", help="why: recorded in the history with who did it")
    p.add_argument("--actor", help="who: recorded in the history (default $WF_ACTOR or login)")


def json_opt(p: argparse.ArgumentParser, what: str = "print JSON") -> None:
    p.add_argument("--json", action="store_true", help=what)


def register(sub: Sub, compile_file: Compile) -> None:
    """Add the durable commands to ``wf``'s subparsers."""
    _store_parsers(sub, compile_file)
    _worker_parser(sub)
    _people_parsers(sub)
    _ops_parser(sub)
    _outbox_parser(sub)


def _outbox_parser(sub: Sub) -> None:
    p = sub.add_parser(
        "outbox",
        help="events for other systems (instances finished or dead-lettered), oldest first",
        description="List the outbox: events written in the same transaction as the step "
        "that caused them (instance.finished once per instance, instance.dead_lettered "
        "each time one is dead-lettered; with the workflow, version, status, output and "
        "error), not yet acknowledged, oldest first. --ack acknowledges the events "
        "listed, after printing them: a consumer that must not miss one reads without "
        "--ack, handles them, then acknowledges them through the store API "
        "(Store.mark_published). Acknowledged events may be deleted by 'wf ops purge'.",
    )
    p.add_argument("--limit", type=positive, default=100, help="at most this many events (100)")
    p.add_argument("--after", type=int, default=0, metavar="ID", help="only events after ID")
    p.add_argument("--ack", action="store_true", help="acknowledge the events listed")
    json_opt(p)
    store_opt(p)
    p.set_defaults(func=cmd_outbox)


def _store_parsers(sub: Sub, compile_file: Compile) -> None:
    p = sub.add_parser(
        "store",
        help="create or upgrade a durable store's schema; show its state",
        description="Manage the durable store. 'migrate' applies the schema migrations "
        "(safe to run twice or from two processes at once); 'info' shows the schema "
        "version, instance counts and queue depth.",
    )
    ss = p.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    q = ss.add_parser("migrate", help="apply the missing schema migrations")
    store_opt(q)
    q.set_defaults(func=cmd_store_migrate)
    q = ss.add_parser("info", help="schema version, instances and queue depth")
    store_opt(q)
    q.set_defaults(func=cmd_store_info)

    p = sub.add_parser(
        "deploy",
        help="register compiled workflow versions in the store",
        description="Compile each file (refusing files with check errors) and register its "
        "version. Deploying the same version again is a no-op; the same name and version "
        "with different content is refused: give the change a new version number.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help=".wf files")
    store_opt(p)
    p.set_defaults(func=lambda a: cmd_deploy(a, compile_file))

    p = sub.add_parser(
        "start",
        help="start an instance of a deployed workflow",
        description="Start an instance on the latest deployed version (or --version), "
        "after checking the input against the declared input types. Prints the instance "
        "id; a worker takes it from there. Starting again with the same --id and input "
        "returns the same instance.",
    )
    p.add_argument("workflow", help="the workflow's name")
    p.add_argument("--input", default="{}", help=f"the input as JSON, or @file.json; {JSON_TYPES}")
    p.add_argument(
        "--version", type=version_number, help="a deployed version (default: the latest)"
    )
    p.add_argument("--id", help="the instance id (default: NAME-<random>)")
    json_opt(p)
    ops_opts(p)
    p.set_defaults(func=cmd_start)

    p = sub.add_parser(
        "versions",
        help="deployed versions and how many instances still run on each",
        description="List deployed versions with their running and finished instances: "
        "an older version is 'draining' while instances still run on it, then 'drained'.",
    )
    p.add_argument("workflow", nargs="?", help="one workflow (default: all)")
    json_opt(p)
    store_opt(p)
    p.set_defaults(func=cmd_versions)


def _worker_parser(sub: Sub) -> None:
    p = sub.add_parser(
        "worker",
        help="run a worker: step instances and call handlers, durably",
        description="Claim due work from the store and run it: instance transitions in "
        "short transactions, service calls in a pool of --concurrency threads under a "
        "lease renewed by heartbeat. SIGTERM or Ctrl-C drains: no new claims, running "
        "calls finish and commit, then it exits.",
    )
    p.add_argument(
        "--handlers",
        action="append",
        default=[],
        metavar="MODULE",
        help="import this module (a name on the Python path, or a .py file), whose "
        "@handler functions serve the calls (repeatable)",
    )
    p.add_argument(
        "--concurrency", type=bounded(*SETTINGS["concurrency"]), default=4,
        help="handler threads (default 4)",
    )  # fmt: skip
    p.add_argument(
        "--lease",
        type=bounded(*SETTINGS["lease_ms"], unit=1000, units="seconds"),
        default=30_000,
        metavar="SECONDS",
        help="the lease of a running call, in seconds, at least 0.1 (default 30); "
        "a heartbeat renews it every third",
    )
    p.add_argument(
        "--batch", type=bounded(*SETTINGS["batch"]), default=32,
        help="instances stepped per transaction (default 32)",
    )  # fmt: skip
    p.add_argument(
        "--poll", type=bounded(*SETTINGS["poll_ms"]), default=500,
        help="idle poll interval in ms (default 500)",
    )  # fmt: skip
    p.add_argument(
        "--no-group-commit",
        action="store_true",
        help="commit each handler result in its own transaction",
    )
    p.add_argument(
        "--at-most-once",
        action="append",
        metavar="SERVICE",
        help="never re-run this service after a crash (also @handler(..., at_most_once=True))",
    )
    p.add_argument(
        "--metrics-port", type=bounded(1, 65_535), help="serve Prometheus metrics on this port"
    )
    p.add_argument("--once", action="store_true", help="do what is due now, then exit")
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text lines for people, or one JSON object per line (default text)",
    )
    p.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    store_opt(p)
    p.set_defaults(func=cmd_worker)


def _people_parsers(sub: Sub) -> None:
    p = sub.add_parser(
        "signal",
        help="send a signal (or message) to an instance",
        description="Send a signal to an instance, after checking its name and payload "
        "against the workflow's declaration. With --key, sending the same key again is "
        "ignored; a signal sent before the instance waits for it is kept until it does.",
    )
    p.add_argument("instance", help="the instance id")
    p.add_argument("name", help="the signal's name")
    p.add_argument("--payload", default="{}", help="the payload as JSON, or @file.json")
    p.add_argument("--key", help="a deduplication key: a second signal with it is ignored")
    p.add_argument("--message", action="store_true", help="send a message instead")
    ops_opts(p)
    p.set_defaults(func=cmd_signal)

    p = sub.add_parser(
        "publish",
        help="publish a message to the instances waiting for it by correlation",
        description="Publish a message declared by a deployed workflow (its payload is "
        "checked against the declaration) to every instance waiting for it with "
        "`wait ...: message NAME correlate EXPR` where EXPR's value, when the wait began, "
        "equals --correlation (compared as text). With --ttl the message is also kept "
        "that long for instances that start waiting for it later; each instance gets it "
        "once. With --key, publishing the same key again is ignored. To send a message "
        "to one instance by its id, use 'wf signal ID NAME --message'.",
    )
    p.add_argument("message", help="the message's name")
    p.add_argument("--correlation", required=True, help="the correlation value")
    p.add_argument("--int", action="store_true", help="the correlation is an integer (checked)")
    p.add_argument("--payload", default="{}", help="the payload as JSON, or @file.json")
    p.add_argument("--key", help="a deduplication key: publishing it again is ignored")
    p.add_argument("--ttl", metavar="DURATION", help="keep it for later waiters: 10m, 2h, 7d")
    p.add_argument("--reason", help="why: recorded in the history with who did it")
    p.add_argument("--actor", help="who: recorded in the history (default $WF_ACTOR or login)")
    store_opt(p)
    p.set_defaults(func=cmd_publish)
    p = sub.add_parser(
        "tasks",
        help="list and complete human tasks",
        description="Human (user and manual) tasks waiting for a person.",
    )
    ts = p.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    q = ts.add_parser(
        "list",
        help="open human tasks",
        description="Human tasks waiting for a person, oldest first, with their key (for "
        "'wf tasks complete'), node, instance, assignee and form fields.",
    )
    q.add_argument("--instance", help="only this instance's")
    json_opt(q)
    store_opt(q)
    q.set_defaults(func=cmd_tasks_list)
    q = ts.add_parser(
        "complete",
        help="complete a human task with its form's values",
        description="Complete an open human task; the output is checked against its form.",
    )
    q.add_argument("key", help="the task key (from 'wf tasks list')")
    q.add_argument("--output", default="{}", help="the form's values as JSON, or @file.json")
    ops_opts(q)
    q.set_defaults(func=cmd_tasks_complete)

    p = sub.add_parser(
        "status",
        help="an instance's status, position and output",
        description="An instance's workflow and version, status, where its tokens are "
        "and what they wait for, its pending timers, and its output or error.",
    )
    p.add_argument("instance", help="the instance id")
    json_opt(p)
    store_opt(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser(
        "history",
        help="an instance's history of events and decisions",
        description="Print an instance's committed transitions. --json prints the "
        "wflang.history/1 document that 'wf render --history' and replay read.",
    )
    p.add_argument("instance", help="the instance id")
    json_opt(p, "print the wflang.history/1 document")
    p.add_argument("--compact", action="store_true", help="the JSON document on one line")
    store_opt(p)
    p.set_defaults(func=cmd_history)

    p = sub.add_parser(
        "list",
        help="list instances",
        description="Instances, oldest first, with their workflow, version, status and "
        "last change; filter by status and workflow.",
    )
    p.add_argument(
        "--status",
        choices=["pending", *(s.value for s in rt.Status)],
        help="only instances with this status",
    )
    p.add_argument("--workflow", help="only this workflow")
    p.add_argument("--limit", type=positive, default=100, help="at most this many (default 100)")
    json_opt(p)
    store_opt(p)
    p.set_defaults(func=cmd_list)


def _ops_parser(sub: Sub) -> None:
    p = sub.add_parser(
        "ops",
        help="operator actions: dead letters, retry, replay, force-complete, skip, cancel, "
        "fire timers, purge",
        description="Operator actions. Each is checked (unknown ids, illegal actions and "
        "values of the wrong type are refused with nothing changed) and recorded in the "
        "instance's history with --actor and --reason (purge, which deletes histories, "
        "logs them instead).",
    )
    os_ = p.add_subparsers(dest="ops_command", metavar="ACTION", required=True)
    q = os_.add_parser(
        "dead-letters",
        help="list dead-lettered instances with their error",
        description="Instances parked after a step (or a compensation of their saga) "
        "failed for good, with the error and (--json) the context snapshot taken then. Act "
        "on one with retry, replay, force-complete, skip (a failed compensation) or cancel.",
    )
    q.add_argument("--workflow", help="only this workflow")
    json_opt(q)
    store_opt(q)
    q.set_defaults(func=cmd_ops_dead_letters)
    q = os_.add_parser(
        "retry",
        help="resume a dead-lettered instance from the failed step",
        description="Run the step that dead-lettered the instance again (a failed "
        "compensation too: the remaining ones follow), with fresh attempts and new "
        "idempotency keys. Refused unless the instance is dead-lettered.",
    )
    q.add_argument("instance", help="the instance id")
    ops_opts(q)
    q.set_defaults(func=cmd_ops_retry)
    q = os_.add_parser(
        "replay",
        help="re-run a dead-lettered instance from a step",
        description="Resume a dead-lettered instance from --from STEP (an earlier step, "
        "to redo work), optionally with fields of its input changed (--input, checked "
        "against the declared input).",
    )
    q.add_argument("instance", help="the instance id")
    q.add_argument("--from", dest="step", required=True, help="the step to run again from")
    q.add_argument("--input", help="fields of the workflow input to change, as JSON or @file.json")
    ops_opts(q)
    q.set_defaults(func=cmd_ops_replay)
    q = os_.add_parser(
        "force-complete",
        help="complete a waiting or dead-lettered step with a given output",
        description="Finish STEP as if it had completed with --output, and go on from "
        "there: a task, a human task or a call (the output checked against its declared "
        "result or form), a signal or message wait (checked against the signal's or "
        "message's payload, read as signal.x / message.x), or a dead-lettered step (a "
        "failed compensation: the remaining ones follow).",
    )
    q.add_argument("instance", help="the instance id")
    q.add_argument("step")
    q.add_argument("--output", default="{}", help="the step's output as JSON, or @file.json")
    ops_opts(q)
    q.set_defaults(func=cmd_ops_force_complete)
    q = os_.add_parser(
        "skip",
        help="skip a failed compensation; the remaining ones run",
        description="Give up on the compensation at STEP of an instance dead-lettered in "
        "its saga (or still running it), without running it again or writing its "
        "output: say why with --reason (required, recorded in the history with --actor). "
        "The remaining compensations then run in reverse order, and the instance ends as "
        "its saga says (compensated, or cancelled).",
    )
    q.add_argument("instance", help="the instance id")
    q.add_argument("step", help="the compensation's step")
    ops_opts(q)
    q.set_defaults(func=cmd_ops_skip)
    q = os_.add_parser(
        "fire-timers",
        help="fire an instance's pending timers now (skip a sleep, a backoff or a wait)",
        description="Fire the pending timers of a running instance now, as if they were "
        "due: a sleep ends, a retry backoff is over, a boundary timeout takes its path.",
    )
    q.add_argument("instance", help="the instance id")
    q.add_argument(
        "--timer",
        help="only this timer: its id, or its purpose as 'wf status' prints it "
        "(boundary:0, sleep, retry); default: all pending",
    )
    ops_opts(q)
    q.set_defaults(func=cmd_ops_fire_timers)
    q = os_.add_parser(
        "cancel",
        help="cancel a running instance",
        description="Cancel a running instance (its open tasks, children and timers go "
        "with it), or give up on a dead-lettered one. --compensate runs the saga's "
        "compensations first, in reverse order: those of the steps that completed or "
        "were stopped in flight.",
    )
    q.add_argument("instance", help="the instance id")
    q.add_argument("--compensate", action="store_true", help="run the saga's compensations first")
    ops_opts(q)
    q.set_defaults(func=cmd_ops_cancel)
    q = os_.add_parser(
        "purge",
        help="delete instances that ended long ago, with their history and rows",
        description="Delete the instances that ended more than --older-than ago, with "
        "their history, tasks, inbox rows and timers, a batch per transaction (workers "
        "go on meanwhile). Kept: running, pending and (unless named with --status) "
        "dead-lettered instances, instances whose parent or child is still active, and "
        "outbox rows not published yet. Try --dry-run first: it counts and deletes nothing.",
    )
    q.add_argument("--older-than", required=True, metavar="AGE",
                   help="how long ago they ended: 30d, 12h, 1d12h, 90m, 0s")  # fmt: skip
    q.add_argument(
        "--status",
        action="append",
        choices=PURGEABLE,
        help=f"only instances with this status (repeatable; default: {', '.join(ENDED)})",
    )
    q.add_argument("--workflow", help="only instances of this workflow")
    q.add_argument("--batch", type=positive, default=500, help="instances per transaction (500)")
    q.add_argument("--dry-run", action="store_true", help="count what would go; delete nothing")
    json_opt(q)
    ops_opts(q)
    q.set_defaults(func=cmd_ops_purge)


def run_guarded(func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a durable command: refusals exit 1, usage problems exit 2."""
    try:
        return func(args)
    except StoreError as err:
        print(f"wf: error: {err}", file=sys.stderr)
        return EXIT_REFUSED
    except CliUsage as err:
        print(f"wf: error: {err}", file=sys.stderr)
        return EXIT_USAGE
