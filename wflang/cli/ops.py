"""``wf ops``: operator actions on instances (dead letters, retry, replay,
force-complete, skip, fire timers, cancel, purge, compact), each checked by the durable client
and recorded with its actor and reason."""

from __future__ import annotations

from typing import Any

from attrs import field, frozen

from wflang.cli.framework import Command, Group, Out, Result, UsageError, arg, flag_field, said
from wflang.cli.stores import (
    actor_field,
    client,
    json_field,
    json_text,
    listing,
    reason_field,
    store_field,
)
from wflang.cli.values import json_arg, parse_age, positive

#: ``store.retention.ENDED`` and ``PURGEABLE`` (a test keeps them equal).
ENDED = ("completed", "failed", "cancelled", "compensated")
PURGEABLE = (*ENDED, "dead_lettered")
#: ``runtime.history.DEFAULT_EVERY`` (a test keeps them equal; building the parser
#: imports no stage).
DEFAULT_EVERY = 1000


def _instance() -> Any:
    return field(metadata=arg(help="the instance id"))


@frozen(kw_only=True)
class DeadLetters:
    workflow: str | None = field(
        default=None, metadata=arg("--workflow", help="only this workflow")
    )
    json: bool = json_field()
    store: str | None = store_field()


def dead_letters(req: DeadLetters) -> Result:
    return listing(
        client(req.store).dead_letters(req.workflow),
        json=req.json,
        document=lambda r: {
            "instance": r.id,
            "workflow": r.workflow,
            "version": r.version,
            "error": r.instance.error if r.instance else None,
            "snapshot": r.instance.snapshot if r.instance else None,
        },
        empty="no dead-lettered instances",
        lines=lambda rows: (
            f"{r.id:40} {r.workflow} v{r.version}  {r.instance.error if r.instance else ''}"
            for r in rows
        ),
    ).done()


@frozen(kw_only=True)
class Retry:
    instance: str = _instance()
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def retry(req: Retry) -> Result:
    client(req.store, req.actor).retry(req.instance, reason=req.reason)
    return said(f"{req.instance}: retry requested; a worker resumes it from the failed step")


@frozen(kw_only=True)
class Replay:
    instance: str = _instance()
    step: str = field(metadata=arg("--from", required=True, help="the step to run again from"))
    input: str | None = field(
        default=None,
        metadata=arg(
            "--input", help="fields of the workflow input to change, as JSON or @file.json"
        ),
    )
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def replay(req: Replay) -> Result:
    data = None if req.input is None else json_arg(req.input, "--input")
    client(req.store, req.actor).replay_from(req.instance, req.step, input=data, reason=req.reason)
    return said(f"{req.instance}: replay from {req.step} requested")


@frozen(kw_only=True)
class ForceComplete:
    instance: str = _instance()
    step: str = field(metadata=arg(help="the step to complete"))
    output: str = field(
        default="{}", metadata=arg("--output", help="the step's output as JSON, or @file.json")
    )
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def force_complete(req: ForceComplete) -> Result:
    output = json_arg(req.output, "--output")
    durable = client(req.store, req.actor)
    durable.force_complete(req.instance, req.step, output, reason=req.reason)
    return said(f"{req.instance}: {req.step} will be completed with the given output")


@frozen(kw_only=True)
class Skip:
    instance: str = _instance()
    step: str = field(metadata=arg(help="the compensation's step"))
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def skip(req: Skip) -> Result:
    client(req.store, req.actor).skip_compensation(req.instance, req.step, reason=req.reason)
    return said(f"{req.instance}: compensation {req.step} will be skipped; the rest then run")


@frozen(kw_only=True)
class FireTimers:
    instance: str = _instance()
    timer: str | None = field(
        default=None,
        metadata=arg(
            "--timer",
            help="only this timer: its id, or its purpose as 'wf status' prints it "
            "(boundary:0, sleep, retry); default: all pending",
        ),
    )
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def fire_timers(req: FireTimers) -> Result:
    durable = client(req.store, req.actor)
    fired = durable.fire_timers(req.instance, timer=req.timer, reason=req.reason)
    return said(f"{req.instance}: firing {', '.join(fired)}")


@frozen(kw_only=True)
class Cancel:
    instance: str = _instance()
    compensate: bool = flag_field("--compensate", help="run the saga's compensations first")
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def cancel(req: Cancel) -> Result:
    client(req.store, req.actor).cancel(req.instance, compensate=req.compensate, reason=req.reason)
    how = "with compensation" if req.compensate else "without compensation"
    return said(f"{req.instance}: cancel requested ({how})")


@frozen(kw_only=True)
class Purge:
    older_than: str = field(
        metadata=arg(
            "--older-than",
            required=True,
            metavar="AGE",
            help="how long ago they ended: 30d, 12h, 1d12h, 90m, 0s",
        )
    )
    status: tuple[str, ...] = field(
        default=(),
        metadata=arg(
            "--status",
            action="append",
            choices=PURGEABLE,
            help=f"only instances with this status (repeatable; default: {', '.join(ENDED)})",
        ),
    )
    workflow: str | None = field(
        default=None, metadata=arg("--workflow", help="only instances of this workflow")
    )
    batch: int = field(
        default=500,
        metadata=arg("--batch", type=positive, help="instances per transaction (500)"),
    )
    dry_run: bool = flag_field("--dry-run", help="count what would go; delete nothing")
    json: bool = json_field()
    store: str | None = store_field()
    reason: str | None = reason_field()
    actor: str | None = actor_field()


def purge(req: Purge) -> Result:
    age = parse_age(req.older_than)
    durable = client(req.store, req.actor)
    try:
        purged = durable.purge(
            age,
            statuses=req.status or ENDED,
            workflow=req.workflow,
            dry_run=req.dry_run,
            batch=req.batch,
            reason=req.reason,
        )
    except ValueError as err:
        raise UsageError(str(err)) from err
    out = Out()
    if req.json:
        out.print(json_text({"dry_run": req.dry_run, "instances": list(purged.instances),
                             "rows": purged.rows}))  # fmt: skip
        return out.done()
    n = purged.rows.get("wf_instance", 0)
    verb = "would delete" if req.dry_run else "deleted"
    who = f"; by {durable.actor}" + (f": {req.reason}" if req.reason else "")
    out.print(f"{verb} {n} instance(s) that ended more than {req.older_than} ago"
              + _rows(purged.rows) + who)  # fmt: skip
    return out.done()


@frozen(kw_only=True)
class Compact:
    instance: str | None = field(
        default=None, metadata=arg(nargs="?", help="the instance id (or --all)")
    )
    all: bool = flag_field("--all", help="every started instance that keeps --min-steps steps")
    workflow: str | None = field(
        default=None, metadata=arg("--workflow", help="with --all: only this workflow's")
    )
    min_steps: int = field(
        default=DEFAULT_EVERY,
        metadata=arg(
            "--min-steps",
            type=positive,
            help=f"with --all: only those keeping this many steps ({DEFAULT_EVERY:,}, what "
            "a worker keeps at most under its default history policy)",
        ),
    )
    archive: bool = flag_field("--archive", help="move the steps to wf_history_archive")
    dry_run: bool = flag_field(
        "--dry-run", help="with --all: count what would be compacted; change nothing"
    )
    json: bool = json_field()
    store: str | None = store_field()
    actor: str | None = actor_field()
    reason: str | None = reason_field()


def compact(req: Compact) -> Result:
    if (req.instance is None) == (not req.all):
        raise UsageError("name one instance, or --all (not both)")
    if not req.all and (req.workflow is not None or req.dry_run):
        raise UsageError("--workflow and --dry-run go with --all")
    durable = client(req.store, req.actor)
    who = f"; by {durable.actor}" + (f": {req.reason}" if req.reason else "")
    out = Out()
    if req.all:
        try:
            many = durable.compact_all(min_steps=req.min_steps, workflow=req.workflow,
                                       archive=req.archive, dry_run=req.dry_run,
                                       reason=req.reason)  # fmt: skip
        except ValueError as err:
            raise UsageError(str(err)) from err
        if req.json:
            out.print(json_text({"dry_run": req.dry_run, "instances": list(many.instances),
                                 "rows": many.rows}))  # fmt: skip
            return out.done()
        verb = "would compact" if req.dry_run else "compacted"
        out.print(f"{verb} {len(many.instances)} instance(s) keeping {req.min_steps:,} steps "
                  f"or more" + _rows(many.rows) + who)  # fmt: skip
        return out.done()
    assert req.instance is not None
    done = durable.store.compact(req.instance, archive=req.archive)
    if req.json:
        out.print(json_text({"instance": done.instance_id, "checkpoint": done.checkpoint,
                             "rows": done.rows}))  # fmt: skip
        return out.done()
    out.print(f"{req.instance}: compacted to a checkpoint at step {done.checkpoint}"
              + _rows(done.rows) + who)  # fmt: skip
    return out.done()


def _rows(counts: dict[str, int]) -> str:
    """`` (history 6 rows, ...)``: the rows removed, by table; "" for none."""
    rows = ", ".join(f"{k.removeprefix('wf_')} {v}" for k, v in sorted(counts.items()) if v)
    return f" ({rows} rows)" if rows else ""


OPS = Group(
    ("ops",),
    help="operator actions: dead letters, retry, replay, force-complete, skip, cancel, "
    "fire timers, purge, compact",
    description="Operator actions. Each is checked (unknown ids, illegal actions and "
    "values of the wrong type are refused with nothing changed) and recorded in the "
    "instance's history with --actor and --reason (purge, which deletes histories, "
    "logs them instead).",
)
COMMANDS = (
    OPS,
    Command(
        ("ops", "dead-letters"),
        DeadLetters,
        dead_letters,
        help="list dead-lettered instances with their error",
        description="Instances parked after a step (or a compensation of their saga) "
        "failed for good, with the error and (--json) the context snapshot taken then. "
        "Act on one with retry, replay, force-complete, skip (a failed compensation) or "
        "cancel.",
    ),
    Command(
        ("ops", "retry"),
        Retry,
        retry,
        help="resume a dead-lettered instance from the failed step",
        description="Run the step that dead-lettered the instance again (a failed "
        "compensation too: the remaining ones follow), with fresh attempts and new "
        "idempotency keys. Refused unless the instance is dead-lettered.",
    ),
    Command(
        ("ops", "replay"),
        Replay,
        replay,
        help="re-run a dead-lettered instance from a step",
        description="Resume a dead-lettered instance from --from STEP (an earlier step, "
        "to redo work), optionally with fields of its input changed (--input, checked "
        "against the declared input).",
    ),
    Command(
        ("ops", "force-complete"),
        ForceComplete,
        force_complete,
        help="complete a waiting or dead-lettered step with a given output",
        description="Finish STEP as if it had completed with --output, and go on from "
        "there: a task, a human task or a call (the output checked against its declared "
        "result or form), a signal or message wait (checked against the signal's or "
        "message's payload, read as signal.x / message.x), or a dead-lettered step (a "
        "failed compensation: the remaining ones follow).",
    ),
    Command(
        ("ops", "skip"),
        Skip,
        skip,
        help="skip a failed compensation; the remaining ones run",
        description="Give up on the compensation at STEP of an instance dead-lettered in "
        "its saga (or still running it), without running it again or writing its "
        "output: say why with --reason (required, recorded in the history with --actor). "
        "The remaining compensations then run in reverse order, and the instance ends as "
        "its saga says (compensated, or cancelled).",
    ),
    Command(
        ("ops", "fire-timers"),
        FireTimers,
        fire_timers,
        help="fire an instance's pending timers now (skip a sleep, a backoff or a wait)",
        description="Fire the pending timers of a running instance now, as if they were "
        "due: a sleep ends, a retry backoff is over, a boundary timeout takes its path.",
    ),
    Command(
        ("ops", "cancel"),
        Cancel,
        cancel,
        help="cancel a running instance",
        description="Cancel a running instance (its open tasks, children and timers go "
        "with it), or give up on a dead-lettered one. --compensate runs the saga's "
        "compensations first, in reverse order: those of the steps that completed or "
        "were stopped in flight.",
    ),
    Command(
        ("ops", "purge"),
        Purge,
        purge,
        help="delete instances that ended long ago, with their history and rows",
        description="Delete the instances that ended more than --older-than ago, with "
        "their history, tasks, inbox rows and timers, a batch per transaction (workers "
        "go on meanwhile). Kept: running, pending and (unless named with --status) "
        "dead-lettered instances, instances whose parent or child is still active, and "
        "outbox rows not published yet. Try --dry-run first: it counts and deletes nothing.",
    ),
    Command(
        ("ops", "compact"),
        Compact,
        compact,
        help="checkpoint an instance (or --all) now and drop (or --archive) the history before it",
        description="Write the instance as it is now as its history's checkpoint and "
        "compact everything before it, as a worker does every N steps (docs/runtime.md, "
        "Bounded histories): the history rows (moved to wf_history_archive with "
        "--archive), older checkpoints, consumed inbox rows, acknowledged outbox events "
        "and finished tasks. Outbox events not acknowledged yet stay. Its history then "
        "replays from the checkpoint. The history records no compaction: it prints who "
        "did it and why. With --all, every started instance that keeps --min-steps steps "
        "or more (of --workflow), each in a transaction of its own; try --dry-run first.",
    ),
)
