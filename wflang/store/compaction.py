"""Bounded histories on a store (``runtime.history``): checkpoints and compaction.

Automatic: the transaction of a worker's step that carries an instance across a
multiple of the policy's ``every`` steps writes its state as a checkpoint
(``wf_checkpoint``, the document ``wf_instance.state`` gets in the same statement
batch) and compacts the instance to the checkpoint before it (``compact_to``). So a
checkpoint is written, and old rows deleted, once per ``every`` steps, never per
step, and nothing is read to decide it: the step knows its sequence numbers.

Compacting an instance to its checkpoint at step K removes what only the steps up to
K needed, and nothing anyone may still need:

* history rows up to K (moved to ``wf_history_archive`` under an archiving policy);
* checkpoints older than K;
* inbox rows consumed by a step up to K (a delivery made again with the key of one of
  them is taken into the inbox again, and its instance drops it as a duplicate: the
  instance's own record of the keys it took, ``Instance.seen_keys``, decides);
* outbox rows of steps up to K that were acknowledged (never one that was not: the
  outbox and ``wf ops purge`` rules are the same as without compaction);
* calls and human tasks that were done or cancelled before step K.

``wf ops compact ID`` (``compact_now``) does the same at once, to a checkpoint of the
instance's current state.
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.history import HistoryPolicy
from wflang.store import rows
from wflang.store.backend import Dialect, Tx
from wflang.store.records import HistoryRow, IllegalAction, UnknownInstance
from wflang.store.status import OF_INSTANCE, TaskStatus

_COLUMNS = (
    "instance_id, seq, at, event, input, decisions, commands, idempotency_key, actor, "
    "reason, worker, changes"
)
_ARCHIVE = (
    f"INSERT INTO wf_history_archive ({_COLUMNS}, archived_at) "
    f"SELECT {_COLUMNS}, ? FROM wf_history WHERE instance_id = ? AND seq <= ? "
    "ON CONFLICT (instance_id, seq) DO NOTHING"
)
_DONE_TASKS = f"'{TaskStatus.DONE}', '{TaskStatus.CANCELLED}'"
#: What compacting to a checkpoint at (seq, at) deletes, by table: a statement with the
#: parameters (instance id, seq, at) in the order its placeholders name them.
_DELETE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("wf_history", "instance_id = ? AND seq <= ?", ("id", "seq")),
    ("wf_checkpoint", "instance_id = ? AND seq < ?", ("id", "seq")),
    ("wf_inbox", "instance_id = ? AND consumed_seq <= ?", ("id", "seq")),
    ("wf_outbox", "instance_id = ? AND seq <= ? AND published_at IS NOT NULL", ("id", "seq")),
    (
        "wf_task",
        f"{OF_INSTANCE} AND status IN ({_DONE_TASKS}) AND updated_at < ?",
        ("id", "id", "id", "at"),
    ),
)


@frozen
class Compacted:
    """What compacting one instance removed: rows by table (``wf_history_archive``: the
    history rows moved there)."""

    instance_id: str
    checkpoint: int  # the step its kept history now begins after
    rows: dict[str, int]


@frozen
class Compactions:
    """What compacting many instances did (``wf ops compact --all``): the instances and
    the rows removed, by table (a dry run: the history rows it would remove)."""

    instances: tuple[str, ...]
    rows: dict[str, int]


@frozen
class KeptHistory:
    """An instance's history as a store keeps it: the steps kept, the checkpoint they
    replay from (None: the history is whole, from the start), and how many compacted
    steps the archive holds."""

    rows: list[HistoryRow]
    checkpoint: rt.Instance | None
    checkpoint_at: int | None
    archived: int

    def compacted(self) -> dict[str, Any] | None:
        """A history document's ``compacted`` part (``codec.compacted_part``), if any."""
        if self.checkpoint is None:
            return None
        return codec.compacted_part(self.checkpoint, self.checkpoint_at, self.archived)


def after_steps(
    tx: Tx,
    policy: HistoryPolicy | None,
    instance_id: str,
    before: int,
    after: rt.Instance,
    state: str,
    now: int,
) -> None:
    """In a step's transaction: if its steps (from sequence number ``before`` to
    ``after.seq``) cross a checkpoint, write ``state`` as one and compact the instance
    to the checkpoint before it."""
    if policy is None or before // policy.every >= after.seq // policy.every:
        return
    _write_checkpoint(tx, instance_id, after.seq, state, now)
    found = tx.query(
        "SELECT seq, at FROM wf_checkpoint WHERE instance_id = ? AND seq < ? "
        "ORDER BY seq DESC LIMIT 1",
        (instance_id, after.seq),
    )
    if found:
        seq, at = (rows.integer(x) for x in found[0])
        compact_to(tx, instance_id, seq, at, archive=policy.archive, now=now)


def compact_to(
    tx: Tx, instance_id: str, seq: int, at: int, *, archive: bool, now: int
) -> Compacted:
    """Remove what only the steps up to ``seq`` (at ``at``) needed (see the module)."""
    counts: dict[str, int] = {}
    if archive:
        counts["wf_history_archive"] = tx.execute(_ARCHIVE, (now, instance_id, seq))
    values: dict[str, str | int] = {"id": instance_id, "seq": seq, "at": at}
    for table, where, params in _DELETE:
        counts[table] = tx.execute(
            f"DELETE FROM {table} WHERE {where}", tuple(values[p] for p in params)
        )
    return Compacted(instance_id, seq, counts)


def compact_now(
    tx: Tx, dialect: Dialect, instance_id: str, *, archive: bool, now: int
) -> Compacted:
    """``wf ops compact``: a checkpoint of the instance as it is, and everything before it
    compacted (the instance row locked: no step runs meanwhile)."""
    found = tx.query(
        f"SELECT seq, state FROM wf_instance WHERE id = ?{dialect.lock}", (instance_id,)
    )
    if not found:
        raise UnknownInstance(instance_id)
    seq, state = found[0][0], found[0][1]
    if state is None:
        raise IllegalAction(f"instance '{instance_id}' has not started yet: nothing to compact")
    seq_ = rows.integer(seq)
    _write_checkpoint(tx, instance_id, seq_, rows.text(state), now)
    at = rows.integer(
        tx.query(
            "SELECT at FROM wf_checkpoint WHERE instance_id = ? AND seq = ?", (instance_id, seq_)
        )[0][0]
    )
    return compact_to(tx, instance_id, seq_, at, archive=archive, now=now)


def compactable(
    tx: Tx, *, min_steps: int, workflow: str | None, after: str, limit: int
) -> list[tuple[str, int]]:
    """Started instances keeping at least ``min_steps`` history rows (of ``workflow``,
    if given), with how many they keep, by id after ``after``: one walk of the history's
    key in order, which stops once ``limit`` are found."""
    of = " AND i.workflow = ?" if workflow is not None else ""
    found = tx.query(
        "SELECT h.instance_id, count(*) FROM wf_history h JOIN wf_instance i "
        f"ON i.id = h.instance_id WHERE h.instance_id > ? AND i.state IS NOT NULL{of} "
        "GROUP BY h.instance_id HAVING count(*) >= ? ORDER BY h.instance_id LIMIT ?",
        (after, *((workflow,) if workflow is not None else ()), min_steps, limit),
    )
    return [(rows.text(iid), rows.integer(n)) for iid, n in found]


def kept_history(tx: Tx, instance_id: str) -> KeptHistory:
    """The history kept, with the checkpoint it replays from, read in one snapshot."""
    found = tx.query(
        f"SELECT {rows.HISTORY_COLUMNS} FROM wf_history WHERE instance_id = ? ORDER BY seq",
        (instance_id,),
    )
    if not found and not tx.query("SELECT 1 FROM wf_instance WHERE id = ?", (instance_id,)):
        raise UnknownInstance(instance_id)
    kept = [rows.history_row(r) for r in found]
    archived = rows.scalar(
        tx.query("SELECT count(*) FROM wf_history_archive WHERE instance_id = ?", (instance_id,))
    )
    if kept and kept[0].entry.event is None:  # it begins with its start: whole
        return KeptHistory(kept, None, None, archived)
    first = kept[0].entry.seq if kept else None
    point = tx.query(
        "SELECT state, at FROM wf_checkpoint WHERE instance_id = ?"
        + ("" if first is None else " AND seq < ?")
        + " ORDER BY seq DESC LIMIT 1",
        (instance_id,) if first is None else (instance_id, first),
    )
    if not point:
        return KeptHistory(kept, None, None, archived)
    state, at = point[0]
    return KeptHistory(kept, codec.load_instance(rows.text(state)), rows.integer(at), archived)


def archived_history(tx: Tx, instance_id: str) -> list[HistoryRow]:
    """The steps compacted into the archive, in order."""
    found = tx.query(
        f"SELECT {rows.HISTORY_COLUMNS} FROM wf_history_archive WHERE instance_id = ? ORDER BY seq",
        (instance_id,),
    )
    return [rows.history_row(r) for r in found]


def _write_checkpoint(tx: Tx, instance_id: str, seq: int, state: str, now: int) -> None:
    tx.execute(
        "INSERT INTO wf_checkpoint (instance_id, seq, at, state) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (instance_id, seq) DO NOTHING",
        (instance_id, seq, now, state),
    )
