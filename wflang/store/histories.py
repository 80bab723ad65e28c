"""What a store keeps of its instances' pasts: their steps, the events not taken yet,
checkpoints, and compacting (``Histories``, a base of ``sql.Store``)."""

from __future__ import annotations

from wflang.store import compaction, queries
from wflang.store.records import HistoryRow, PendingEvent
from wflang.store.requests import Requests


class Histories(Requests):
    """The history requests of a ``Store``, each one transaction."""

    def history(self, instance_id: str) -> list[HistoryRow]:
        """The steps kept (all of them, or those after a checkpoint: ``kept_history``)."""
        return self._read(lambda tx: queries.history(tx, instance_id))

    def pending(self, instance_id: str) -> list[PendingEvent]:
        """The events delivered to an instance that no step has taken yet."""
        return self._read(lambda tx: queries.pending(tx, instance_id))

    def kept_history(self, instance_id: str) -> compaction.KeptHistory:
        """The steps kept and the checkpoint they replay from, in one snapshot."""
        return self._read(lambda tx: compaction.kept_history(tx, instance_id))

    def archived_history(self, instance_id: str) -> list[HistoryRow]:
        """The steps compacted into ``wf_history_archive`` (an archiving policy's)."""
        return self._read(lambda tx: compaction.archived_history(tx, instance_id))

    def compact(self, instance_id: str, *, archive: bool = False) -> compaction.Compacted:
        """Checkpoint an instance as it is now and compact its history to it (``wf ops
        compact``; see ``wflang.store.compaction``); ``archive`` keeps the steps in
        ``wf_history_archive``."""
        return self._write(
            lambda tx: compaction.compact_now(
                tx, self.dialect, instance_id, archive=archive, now=self.now(tx)
            )
        )

    def compactable(
        self, *, min_steps: int, workflow: str | None = None, after: str = "", limit: int = 500
    ) -> list[tuple[str, int]]:
        """Started instances that keep at least ``min_steps`` steps, with how many they
        keep, by id after ``after`` (a page of ``limit``): ``wf ops compact --all``."""
        return self._read(
            lambda tx: compaction.compactable(
                tx, min_steps=min_steps, workflow=workflow, after=after, limit=limit
            )
        )
