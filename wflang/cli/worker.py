"""``wf worker``: claim due work from the store and run it, durably."""

from __future__ import annotations

from attrs import field, frozen

from wflang.cli.framework import EXIT_FINDINGS, Command, Out, Result, UsageError, arg, flag_field
from wflang.cli.stores import open_cli_store, store_field
from wflang.cli.values import (
    allow_missing_field,
    allow_unused_field,
    bounded,
    limit_field,
    limits,
    load_handlers,
)

#: ``durable.worker.SETTINGS``: the bounds of each setting (a test keeps them equal).
SETTINGS: dict[str, tuple[int, int]] = {
    "concurrency": (1, 10_000),
    "lease_ms": (100, 86_400_000),
    "batch": (1, 10_000),
    "poll_ms": (1, 3_600_000),
}
#: ``runtime.history``: DEFAULT_EVERY and the bounds of ``every`` (a test keeps them equal).
HISTORY_EVERY = (1000, 10, 2**31)


@frozen(kw_only=True)
class Worker:
    handlers: tuple[str, ...] = field(
        default=(),
        metadata=arg(
            "--handlers",
            action="append",
            metavar="MODULE",
            help="import this module (a name on the Python path, or a .py file), whose "
            "@handler functions serve the calls (repeatable)",
        ),
    )
    allow_missing_handlers: bool = allow_missing_field()
    allow_unused_handlers: bool = allow_unused_field()
    concurrency: int = field(
        default=4,
        metadata=arg(
            "--concurrency",
            type=bounded(*SETTINGS["concurrency"]),
            help="handler threads (default 4)",
        ),
    )
    lease: int = field(
        default=30_000,
        metadata=arg(
            "--lease",
            type=bounded(*SETTINGS["lease_ms"], unit=1000, units="seconds"),
            metavar="SECONDS",
            help="the lease of a running call, in seconds, at least 0.1 (default 30); "
            "a heartbeat renews it every third",
        ),
    )
    batch: int = field(
        default=32,
        metadata=arg(
            "--batch",
            type=bounded(*SETTINGS["batch"]),
            help="instances stepped per transaction (default 32)",
        ),
    )
    poll: int = field(
        default=500,
        metadata=arg(
            "--poll",
            type=bounded(*SETTINGS["poll_ms"]),
            help="idle poll interval in ms (default 500)",
        ),
    )
    no_group_commit: bool = flag_field(
        "--no-group-commit", help="commit each handler result in its own transaction"
    )
    at_most_once: tuple[str, ...] = field(
        default=(),
        metadata=arg(
            "--at-most-once",
            action="append",
            metavar="SERVICE",
            help="never re-run this service after a crash (also @handler(..., at_most_once=True))",
        ),
    )
    lifecycle_outbox: str = field(
        default="instances",
        metadata=arg(
            "--lifecycle-outbox",
            choices=("all", "instances", "none"),
            help="which status changes are also outbox rows: the instances' (default), "
            "all (the tasks' too: two a step), or none; on_status hooks hear them all",
        ),
    )
    metrics_port: int | None = field(
        default=None,
        metadata=arg(
            "--metrics-port", type=bounded(1, 65_535), help="serve Prometheus metrics on this port"
        ),
    )
    once: bool = flag_field("--once", help="do what is due now, then exit")
    log_format: str = field(
        default="text",
        metadata=arg(
            "--log-format",
            choices=("text", "json"),
            help="text lines for people, or one JSON object per line (default text)",
        ),
    )
    log_level: str = field(
        default="info",
        metadata=arg(
            "--log-level",
            choices=("debug", "info", "warning", "error"),
            help="the least severe log records written (default: info)",
        ),
    )
    history_every: int = field(
        default=HISTORY_EVERY[0],
        metadata=arg(
            "--history-every",
            type=bounded(*HISTORY_EVERY[1:]),
            metavar="N",
            help="a checkpoint of each instance every N steps; the steps before the "
            f"checkpoint before it go (default {HISTORY_EVERY[0]}: at most about twice "
            "as many kept)",
        ),
    )
    archive_history: bool = flag_field(
        "--archive-history",
        help="move the steps that go to wf_history_archive instead of deleting them",
    )
    keep_all_history: bool = flag_field("--keep-all-history", help="never compact any history")
    max_string_chars: int = limit_field("string_chars")
    max_list_items: int = limit_field("list_items")
    max_list_elements: int = limit_field("list_elements")
    max_context_chars: int = limit_field("context_chars")
    store: str | None = store_field()


def worker(req: Worker) -> Result:
    import signal

    from wflang.durable import logs
    from wflang.durable.worker import Worker as DurableWorker
    from wflang.handlers.verify import HandlersRefused
    from wflang.runtime.history import HistoryPolicy
    from wflang.store.status import StatusRows

    if req.keep_all_history and (req.archive_history or req.history_every != HISTORY_EVERY[0]):
        raise UsageError("--keep-all-history compacts nothing: leave out --history-every and "
                         "--archive-history")  # fmt: skip
    history = HistoryPolicy(req.history_every, req.archive_history)
    logs.configure(req.log_format, req.log_level)
    handlers = load_handlers(req.handlers)  # none: the worker still runs timers, signals, tasks
    store = open_cli_store(req.store, timeout=30.0)
    try:
        running = DurableWorker(
            store,
            handlers,
            concurrency=req.concurrency,
            lease_ms=req.lease,
            batch=req.batch,
            poll_ms=req.poll,
            group_commit=not req.no_group_commit,
            at_most_once=frozenset(req.at_most_once),
            lifecycle_outbox=StatusRows(req.lifecycle_outbox),
            limits=limits(
                req.max_string_chars,
                req.max_list_items,
                req.max_context_chars,
                req.max_list_elements,
            ),
            allow_missing_handlers=req.allow_missing_handlers,
            allow_unused_handlers=req.allow_unused_handlers,
            history=None if req.keep_all_history else history,
        )
    except HandlersRefused as refused:  # before anything is claimed
        store.close()
        out = Out()
        for problem in refused.problems:
            out.print(f"wf: error: {problem}", err=True)
        return out.done(EXIT_FINDINGS)
    if req.metrics_port:
        from wflang.durable.metrics import serve

        serve(running, req.metrics_port)
    out = Out()
    if req.once:
        n = running.run_until_idle()
        out.print(
            f"worker {running.id}: {n} transition{'' if n == 1 else 's'}, nothing more is due"
        )
        return out.done()

    def drain(signum: int, _frame: object) -> None:
        running.stop()

    signal.signal(signal.SIGTERM, drain)
    signal.signal(signal.SIGINT, drain)
    with running.woken_by_notify():
        running.run()
    return out.done()


WORKER = Command(
    ("worker",),
    Worker,
    worker,
    help="run a worker: step instances and call handlers, durably",
    description="Claim due work from the store and run it: instance transitions in "
    "short transactions, service calls in a pool of --concurrency threads under a "
    "lease renewed by heartbeat. SIGTERM or Ctrl-C drains: no new claims, running "
    "calls finish and commit, then it exits.",
)

#: This module's commands, groups before their actions (``app.HOMES`` orders them).
COMMANDS = (WORKER,)
