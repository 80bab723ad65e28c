"""What the store did lately, by interval: instances started and finished, how long
the finished ones took, and how many service calls were open (queue depth) at the end
of each interval. The console's metrics page reads it; it is computed from the rows
(no sampler runs between requests), so it covers what the rows still tell: a purged
instance or task is not counted.

Started instances are read off ``wf_instance_created``, finished ones off
``wf_instance_ended`` (by the time they last moved: when they ended);
the queue from the service calls still open or closed within the window.
"""

from __future__ import annotations

from attrs import frozen

from wflang.store import rows
from wflang.store.backend import Dialect, Tx
from wflang.store.status import IS_FINISHED, IS_LIVE, LIVE, TaskKind


@frozen
class Interval:
    start: int  # epoch ms; the interval is [start, start + its length)
    started: int
    finished: int
    failed: int  # of the finished: failed or dead-lettered
    #: how long the instances that finished in it ran, start to end (ms): the median
    #: and the 95th percentile, None when none finished
    p50_ms: int | None
    p95_ms: int | None
    #: service calls open (ready, running or waiting) at the interval's end
    queue: int


def _percentile(sorted_ms: list[int], fraction: float) -> int | None:
    if not sorted_ms:
        return None
    return sorted_ms[min(len(sorted_ms) - 1, int(fraction * len(sorted_ms)))]


def activity(
    tx: Tx, dialect: Dialect, *, now: int, window_ms: int, interval_ms: int
) -> tuple[Interval, ...]:
    count = max(1, window_ms // interval_ms)
    since = now - count * interval_ms
    starts = [since + i * interval_ms for i in range(count)]

    def at(ms: int) -> int:
        return min(count - 1, max(0, (ms - since) // interval_ms))

    started = [0] * count
    for (created,) in tx.query(
        "SELECT created_at FROM wf_instance WHERE created_at >= ? AND created_at <= ?",
        (since, now),
    ):
        started[at(rows.integer(created))] += 1
    finished: list[list[int]] = [[] for _ in range(count)]
    failed = [0] * count
    bad = ("failed", "dead_lettered")
    for status, created, updated in tx.query(
        # by ``wf_instance_ended`` (SQLite without statistics would read every finished
        # instance off the index by status)
        "SELECT status, created_at, updated_at FROM wf_instance"
        f"{dialect.indexed_by.format('wf_instance_ended')} "
        f"WHERE {IS_FINISHED} AND updated_at >= ? AND updated_at <= ?",
        (since, now),
    ):
        i = at(rows.integer(updated))
        finished[i].append(rows.integer(updated) - rows.integer(created))
        failed[i] += rows.text(status) in bad
    calls = [
        (rows.integer(created), rows.text(status), rows.integer(updated))
        for created, status, updated in tx.query(
            "SELECT created_at, status, updated_at FROM wf_task WHERE kind = ? "
            f"AND created_at <= ? AND ({IS_LIVE} OR updated_at >= ?)",
            (TaskKind.SERVICE.value, now, since),
        )
    ]
    live = {s.value for s in LIVE}
    found = []
    for i, start in enumerate(starts):
        end = start + interval_ms
        queue = sum(1 for c, s, u in calls if c <= end and (s in live or u > end))
        took = sorted(finished[i])
        found.append(
            Interval(
                start,
                started[i],
                len(took),
                failed[i],
                _percentile(took, 0.5),
                _percentile(took, 0.95),
                queue,
            )
        )
    return tuple(found)
