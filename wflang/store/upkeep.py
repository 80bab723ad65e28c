"""What consumers and operators ask of a store besides its instances: the outbox,
retention, stats and activity (``Upkeep``, a base of ``sql.Store``)."""

from __future__ import annotations

from collections.abc import Sequence

from wflang.store import activity, ops, queries, retention
from wflang.store.instance_cache import InstanceCache
from wflang.store.records import OutboxEvent, Stats
from wflang.store.requests import Requests


class Upkeep(Requests):
    """The outbox, retention and stats requests of a ``Store``, each one transaction
    (and the store's ``cache``, which a purge updates)."""

    cache: InstanceCache

    # -------------------------------------------------------------------- outbox

    def outbox(
        self, *, limit: int = 100, after: int = 0, kinds: Sequence[str] = ()
    ) -> list[OutboxEvent]:
        """Events not published yet, oldest first (ids above ``after``; of these
        ``kinds`` only, ``status.OutboxKind``, if any are given): what a consumer reads,
        handles, then acknowledges with ``mark_published``."""
        return self._read(lambda tx: queries.outbox(tx, limit=limit, after=after, kinds=kinds))

    def mark_published(self, ids: Sequence[int]) -> int:
        """Acknowledge outbox events; how many were still unpublished (a second
        acknowledgement of the same event changes nothing)."""
        return self._write(lambda tx: ops.mark_published(tx, ids, self.now(tx)))

    # ----------------------------------------------------------------- retention

    def purge(
        self,
        *,
        ended_before: int,
        statuses: Sequence[str] = retention.ENDED,
        workflow: str | None = None,
        limit: int = 500,
        dry_run: bool = False,
    ) -> retention.Purged:
        """Delete up to ``limit`` instances that ended before ``ended_before`` (epoch ms)
        with their history, tasks, inbox rows and timers, in one transaction (see
        ``wflang.store.retention``); ``dry_run`` counts and changes nothing."""
        purged = self._write(
            lambda tx: retention.purge_batch(
                tx, self.dialect, ended_before=ended_before, statuses=statuses,
                workflow=workflow, limit=limit, dry_run=dry_run,
            )
        )  # fmt: skip
        self.cache.forget(purged.instances)
        return purged

    # --------------------------------------------------------------------- stats

    def stats(self) -> Stats:
        return self._read(lambda tx: queries.stats(tx, self.now(tx)))

    def activity(
        self, *, window_ms: int = 3_600_000, interval_ms: int = 300_000
    ) -> tuple[activity.Interval, ...]:
        """Instances started and finished, their run times and the queue's depth, by
        interval over the last ``window_ms`` (see ``wflang.store.activity``)."""
        return self._read(
            lambda tx: activity.activity(
                tx, self.dialect, now=self.now(tx), window_ms=window_ms, interval_ms=interval_ms
            )
        )
