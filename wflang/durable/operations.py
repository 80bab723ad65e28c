"""What operators do to durable workflows (``wflang.durable.client``'s ``Client`` inherits
it): cancel, retry or replay a dead letter, force a step's completion, skip a failed
compensation, fire timers now, purge what ended. Each is checked before anything is
written; those that act on an instance travel through its inbox with who asked and why
(a second one is refused while the first waits for a worker).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from wflang.runtime import instance as rt
from wflang.runtime import validate
from wflang.runtime.ir import Value
from wflang.runtime.keys import timer_delivery
from wflang.runtime.table import Table
from wflang.runtime.validate import fit_forced, fit_input
from wflang.runtime.waiting import completable
from wflang.store.compaction import Compactions
from wflang.store.records import (
    IllegalAction,
    InstanceInfo,
    StoreError,
    UnknownInstance,
    UnknownWorkflow,
)
from wflang.store.retention import ENDED, Purged
from wflang.store.sql import Store
from wflang.store.status import FINISHED

log = logging.getLogger("wflang.client")
#: Instances read at a time by ``compact_all`` (``Store.compactable``'s page).
COMPACT_PAGE = 500


class InvalidValue(StoreError, validate.InvalidValue):
    """A value from outside does not fit the declared type; ``problems`` lists why (a
    refusal of the store's, and the runtime's ``InvalidValue`` the engine raises)."""


#: The longest TTL or age accepted: beyond it a number is surely a mistake.
LONGEST_MS = 100 * 365 * 86_400_000

#: Ops events, by what they ask for.
_OPS_EVENTS: dict[type, str] = {
    rt.RetryFrom: "retry (or replay)",
    rt.CompleteStep: "force-complete",
    rt.ForceComplete: "force-complete",
    rt.CancelRequested: "cancel",
    rt.SkipCompensation: "skip",
}


def refuse_finished(instance_id: str, status: str, action: str) -> None:
    if status in FINISHED:
        raise IllegalAction(f"instance '{instance_id}' is {status}: it cannot {action} any more")


def _compensations_at(info: InstanceInfo, table: Table) -> list[str]:
    """The steps where the instance's compensations wait (a failed one, when it is
    dead-lettered in its saga)."""
    tokens = info.instance.tokens if info.instance is not None else ()
    return [table.states[t.state].name for t in tokens if t.compensating and completable(t.waiting)]


class Operations:
    """The operators' requests of ``Client``."""

    store: Store
    actor: str

    def _running(self, instance_id: str, action: str) -> tuple[InstanceInfo, Table]:
        info = self.store.instance(instance_id)
        refuse_finished(instance_id, info.status, action)
        return info, self.store.table_for(info.table_hash)

    # -- ops ---------------------------------------------------------------------------

    def dead_letters(self, workflow: str | None = None) -> list[InstanceInfo]:
        return self.store.instances(status=rt.Status.DEAD_LETTERED.value, workflow=workflow)

    def cancel(self, instance_id: str, *, compensate: bool, reason: str | None) -> None:
        info = self.store.instance(instance_id)
        if info.status != rt.Status.DEAD_LETTERED.value:  # giving up on one is allowed
            info, _ = self._running(instance_id, "be cancelled")
        self._ops(
            info.id, rt.CancelRequested(compensate, reason or "cancelled by an operator"), reason
        )

    def retry(self, instance_id: str, *, reason: str | None) -> None:
        """Put a dead-lettered instance back to work from the step that failed."""
        self._dead_lettered(instance_id, "retried")
        self._ops(instance_id, rt.RetryFrom(None), reason)

    def replay_from(
        self,
        instance_id: str,
        step: str,
        *,
        input: Mapping[str, Value] | None = None,
        reason: str | None,
    ) -> None:
        """Re-run a dead-lettered instance from ``step``, optionally with changed input."""
        info = self._dead_lettered(instance_id, "replayed")
        table = self.store.table_for(info.table_hash)
        self._state(table, step)
        failed = _compensations_at(info, table)
        if failed and step not in failed:
            raise IllegalAction(
                f"instance '{instance_id}' is dead-lettered in its compensation "
                f"'{failed[0]}': retry it, force-complete it or skip it (replay only "
                f"from '{failed[0]}')"
            )
        if input is not None:
            merged = {**info.input, **(info.instance.input if info.instance else {}), **input}
            fitted, problems = fit_input(table, merged)  # ISO-8601 text of times as ms
            if problems:
                raise InvalidValue("the new input", problems)
            input = {name: fitted[name] for name in input}
        event = rt.RetryFrom(step, None if input is None else dict(input))
        self._ops(instance_id, event, reason)

    def force_complete(
        self, instance_id: str, step: str, output: Mapping[str, Value], *, reason: str | None
    ) -> None:
        """Finish a step that waits (or dead-lettered) as if it completed with ``output``."""
        info = self.store.instance(instance_id)
        table = self.store.table_for(info.table_hash)
        self._state(table, step)
        inst = info.instance
        dead = info.status == rt.Status.DEAD_LETTERED.value
        if not dead and info.status in FINISHED:
            raise IllegalAction(f"instance '{instance_id}' is {info.status}")
        waiting = (
            []
            if inst is None
            else [
                t
                for t in inst.tokens
                if table.states[t.state].name == step and completable(t.waiting)
            ]
        )
        if not waiting:
            now = sorted({table.states[t.state].name for t in inst.tokens}) if inst else []
            raise IllegalAction(
                f"nothing waits at '{step}' in instance '{instance_id}'"
                + (f" (it is at {', '.join(now)})" if now else "")
            )
        output, problems = fit_forced(table, step, waiting[0].waiting, output)  # ISO-8601
        if problems:
            raise InvalidValue(f"the output of {step}", problems)
        self._ops(instance_id, rt.CompleteStep(step, dict(output)), reason)

    def skip_compensation(self, instance_id: str, step: str, *, reason: str | None) -> None:
        """Give up on the failed (or waiting) compensation at ``step``, for a reason that
        is recorded; the remaining compensations then run, in order."""
        if not (reason or "").strip():
            raise IllegalAction("skipping a compensation needs a reason (--reason)")
        assert reason is not None
        info = self.store.instance(instance_id)
        table = self.store.table_for(info.table_hash)
        self._state(table, step)
        if info.status not in (rt.Status.DEAD_LETTERED.value, rt.Status.COMPENSATING.value):
            raise IllegalAction(
                f"instance '{instance_id}' is {info.status}: it runs no compensation to skip"
            )
        waiting = _compensations_at(info, table)
        if step not in waiting:
            raise IllegalAction(
                f"no compensation waits at '{step}' in instance '{instance_id}'"
                + (f" (it waits at {', '.join(waiting)})" if waiting else "")
            )
        self._ops(instance_id, rt.SkipCompensation(step, reason), reason)

    def fire_timers(
        self, instance_id: str, *, timer: str | None = None, reason: str | None
    ) -> list[str]:
        """Fire an instance's pending timers now (one, or all): skip a sleep or a backoff.

        The timer fires as it would have at its due time (a boundary timer takes
        its path, a sleep ends); firing it again later is a no-op.
        """
        info, _ = self._running(instance_id, "have its timers fired")
        timers = info.instance.timers if info.instance else ()
        pending = [t.id for t in timers]
        if timer is not None:
            # Its id, or what `wf status` prints of it: its purpose (`boundary:0`, `sleep`).
            chosen = [t.id for t in timers if timer == t.id] or [
                t.id for t in timers if timer == t.purpose
            ]
            if len(chosen) != 1:
                what = "several pending timers" if chosen else "no pending timer"
                raise IllegalAction(
                    f"instance '{instance_id}' has {what} '{timer}'"
                    + (f" (pending: {', '.join(pending)})" if pending else "")
                )
            pending = chosen
        if not pending:
            raise IllegalAction(f"instance '{instance_id}' has no pending timers")
        for tid in pending:
            self.store.deliver(
                instance_id,
                rt.TimerFired(tid),
                dedupe_key=timer_delivery(tid),
                actor=self.actor,
                reason=reason,
            )
        return pending

    def purge(
        self,
        older_than_ms: int,
        *,
        statuses: Sequence[str] = ENDED,
        workflow: str | None = None,
        dry_run: bool = False,
        batch: int = 500,
        reason: str | None = None,
    ) -> Purged:
        """Delete the instances that ended more than ``older_than_ms`` ago, with their
        rows, a batch per transaction (workers go on between batches); the totals."""
        if not 0 <= older_than_ms <= LONGEST_MS or batch < 1:
            raise ValueError("the age must be between 0 and 100 years and the batch >= 1")
        if workflow is not None and workflow not in {v.name for v in self.store.versions()}:
            raise UnknownWorkflow(f"no workflow '{workflow}' is deployed")
        before = self.store.now() - older_than_ms
        ids: list[str] = []
        rows: dict[str, int] = {}
        while True:
            part = self.store.purge(
                ended_before=before,
                statuses=statuses,
                workflow=workflow,
                limit=batch,
                dry_run=dry_run,
            )
            ids += part.instances
            for table, n in part.rows.items():
                rows[table] = rows.get(table, 0) + n
            if not part.more:
                log.info(
                    "purged" if not dry_run else "purge dry run",
                    extra={
                        "instances": rows.get("wf_instance", 0),
                        "actor": self.actor,
                        "reason": reason,
                    },
                )
                return Purged(tuple(ids), rows, more=False)

    def compact_all(
        self,
        *,
        min_steps: int,
        workflow: str | None = None,
        archive: bool = False,
        dry_run: bool = False,
        reason: str | None = None,
    ) -> Compactions:
        """Compact every started instance that keeps at least ``min_steps`` steps (of
        ``workflow``, if given) to a checkpoint of it as it is, each in a transaction of
        its own (workers go on meanwhile); ``dry_run`` changes nothing and counts the
        history rows that would go. An instance purged meanwhile is let be."""
        if min_steps < 1:
            raise ValueError("--min-steps must be at least 1")
        if workflow is not None and workflow not in {v.name for v in self.store.versions()}:
            raise UnknownWorkflow(f"no workflow '{workflow}' is deployed")
        ids: list[str] = []
        rows: dict[str, int] = {}
        after = ""
        while True:
            page = self.store.compactable(
                min_steps=min_steps, workflow=workflow, after=after, limit=COMPACT_PAGE
            )
            for iid, kept in page:
                if dry_run:
                    done = {"wf_history": kept}
                else:
                    try:
                        done = self.store.compact(iid, archive=archive).rows
                    except UnknownInstance:
                        continue
                ids.append(iid)
                for table, n in done.items():
                    rows[table] = rows.get(table, 0) + n
            if len(page) < COMPACT_PAGE:
                break
            after = page[-1][0]
        log.info(
            "compacted" if not dry_run else "compact dry run",
            extra={"instances": len(ids), "actor": self.actor, "reason": reason},
        )
        return Compactions(tuple(ids), rows)

    def _dead_lettered(self, instance_id: str, action: str) -> InstanceInfo:
        info = self.store.instance(instance_id)
        if info.status != rt.Status.DEAD_LETTERED.value:
            raise IllegalAction(
                f"instance '{instance_id}' is {info.status}; only dead-lettered instances "
                f"can be {action}"
            )
        return info

    @staticmethod
    def _state(table: Table, step: str) -> None:
        names = [s.name for s in table.states]
        if step not in names:
            raise IllegalAction(
                f"{table.workflow} v{table.version} has no step '{step}' "
                f"(steps: {', '.join(names)})"
            )

    def _ops(self, instance_id: str, event: rt.Event, reason: str | None) -> None:
        """Deliver an ops action, unless another is still waiting for a worker: the
        second would act on a state the first is about to change."""

        unreadable = self.store.instance(instance_id).unreadable
        if unreadable:  # no worker can step it: the delivery would wait forever
            raise IllegalAction(
                f"instance '{instance_id}' cannot be stepped ({unreadable}): repair its "
                "stored state, or purge it"
            )

        def refuse(waiting: rt.Event, actor: str | None) -> None:
            if type(waiting) in _OPS_EVENTS:
                raise IllegalAction(
                    f"instance '{instance_id}' already has a {_OPS_EVENTS[type(waiting)]} "
                    f"waiting for a worker (asked by {actor or 'someone'}): run a worker, "
                    "then look again"
                )

        self.store.deliver(
            instance_id, event, actor=self.actor, reason=reason, unless_pending=refuse
        )
