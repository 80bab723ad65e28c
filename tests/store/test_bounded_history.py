"""Bounded histories on both stores (issue 18 item 4): a loop that never ends keeps a
checkpoint and the steps after it, so its stored size stays under a bound however long
it runs; replay still works on what is kept.

The year of minute timers: 525,600 firings through a store take minutes (a transaction
each), so the test runs the last windows of the year through the real worker instead.
Nothing an instance stores depends on how many steps it took except the digits of its
counters (sequence number, visits, timer ids, its own ``ticks``): ``year_scale`` builds
the instance as the worker leaves it after K firings (checked against a real run for a
small K, value for value) and puts it in the store as a worker would have; then every
firing of the last windows is real, and its size is measured after each one.
"""

from __future__ import annotations

import pytest
from attrs import evolve

from wflang.durable.worker import Worker
from wflang.runtime import codec
from wflang.runtime import instance as rt
from wflang.runtime.history import CompactedError, HistoryPolicy
from wflang.runtime.replay import replay
from wflang.runtime.values import identical
from wflang.store import Store
from wflang.store.records import IllegalAction, UnknownInstance

from .kit import DAY, MINUTE, Durable, VirtualClock, data_table

YEAR = 365 * 24 * 60  # minute timers in a year: 525,600
TICKER = data_table("ticker")
#: The tables an instance has rows in (``retention._OWNED`` and its own row).
OWNED = ("wf_history", "wf_task", "wf_inbox", "wf_timer", "wf_subscription", "wf_outbox",
         "wf_checkpoint", "wf_history_archive")  # fmt: skip

#: The bound stated in docs/runtime.md ("Bounded histories"): a loop of one timer keeps at
#: most 2 * every + 1 history rows of at most ROW bytes, two checkpoints and its instance
#: row of at most STATE bytes each, and its one timer row.
ROW, STATE, TIMER = 400, 600, 100


def bound(every: int) -> int:
    return (2 * every + 1) * ROW + 3 * STATE + TIMER


def stored_bytes(store: Store, iid: str) -> tuple[int, dict[str, int]]:
    """The bytes of every value the store holds for an instance (each as its text: a
    number as its digits), and its rows by table."""
    total, counts = 0, {}
    with store.backend.read() as tx:
        for table in (*OWNED, "wf_instance"):
            key = "id" if table == "wf_instance" else "instance_id"
            found = tx.query(f"SELECT * FROM {table} WHERE {key} = ?", (iid,))
            counts[table] = len(found)
            total += sum(len(str(v)) for row in found for v in row if v is not None)
    return total, counts


def fire_next(store: Store, clock: VirtualClock, policy: HistoryPolicy | None) -> None:
    """Move the clock to the instance's next timer and let a worker fire it."""
    (info,) = store.instances(limit=2)
    assert info.wake_at is not None
    clock.ms = info.wake_at
    assert store.advance("w", history=policy).transitions == 1


def start(store: Store, clock: VirtualClock, policy: HistoryPolicy | None) -> str:
    store.deploy(TICKER)
    store.create(store.deployed("ticker"), {"id": "t"}, "t-1")
    store.advance("w", history=policy)
    return "t-1"


def year_scale(inst: rt.Instance, fired: int, first: rt.Instance, at: int) -> rt.Instance:
    """The ticker as a worker leaves it after ``fired`` firings, from ``inst`` after one
    firing (``first``): its counters moved on, its timer due a minute after ``at``."""
    (token,) = inst.tokens
    (timer,) = inst.timers
    seq = first.seq + fired - 1
    return evolve(
        inst,
        context={"ticks": fired},
        seq=seq,
        tokens=(evolve(token, visit=seq),),
        timers=(evolve(timer, id=timer.id.replace(f":{token.visit}:", f":{seq}:"), due=at),),
    )


def test_year_scale_builds_what_a_worker_leaves(store: Store, clock: VirtualClock) -> None:
    iid = start(store, clock, None)
    fire_next(store, clock, None)
    first = store.instance(iid).instance
    for _ in range(36):
        fire_next(store, clock, None)
    real = store.instance(iid)
    assert real.instance is not None and first is not None and real.wake_at is not None
    assert identical(year_scale(first, 37, first, real.wake_at), real.instance)


def test_a_year_of_minute_timers_stays_under_the_bound(store: Store, clock: VirtualClock) -> None:
    every = 50
    policy = HistoryPolicy(every=every)
    iid = start(store, clock, policy)
    fire_next(store, clock, policy)
    first = store.instance(iid).instance
    assert first is not None
    # The year but its last 8 windows, as the worker would have left it (see the module).
    fired = YEAR - 8 * every
    clock.ms += (fired - 1) * MINUTE
    jumped = year_scale(first, fired, first, clock.ms + MINUTE)
    with store.backend.transaction() as tx:
        tx.execute(
            "UPDATE wf_instance SET state = ?, seq = ?, wake_at = ? WHERE id = ?",
            (codec.dump_instance(jumped), jumped.seq, clock.ms + MINUTE, iid),
        )
        tx.execute(
            "UPDATE wf_timer SET timer_id = ?, due_at = ? WHERE instance_id = ?",
            (jumped.timers[0].id, clock.ms + MINUTE, iid),
        )
    sizes = []
    for _ in range(8 * every):
        fire_next(store, clock, policy)
        size, counts = stored_bytes(store, iid)
        sizes.append(size)
        assert size <= bound(every), (size, counts)
        assert counts["wf_history"] <= 2 * every + 1 and counts["wf_checkpoint"] <= 2
        assert counts["wf_timer"] == 1 and counts["wf_history_archive"] == 0
    info = store.instance(iid)
    assert info.instance is not None and info.instance.context == {"ticks": YEAR}
    # Flat: the last windows hold no more than the first ones after compaction began.
    assert max(sizes[-3 * every :]) <= max(sizes[2 * every : 4 * every])
    # The kept steps replay from their checkpoint to the stored instance.
    kept = store.kept_history(iid)
    assert kept.checkpoint is not None and len(kept.rows) > every
    got = replay(TICKER, iid, [r.entry for r in kept.rows], info.instance.seed,
                 checkpoint=kept.checkpoint)  # fmt: skip
    assert got.reproduces(info.instance)


PINGER = data_table("pinger")


def ping(n: int) -> dict[str, int]:
    return {"n": n + 1}


def pinger(store: Store, clock: VirtualClock, policy: HistoryPolicy | None) -> Durable:
    d = Durable(store, clock, {"svc.ping": ping}, PINGER)
    d.worker = Worker(store, {"svc.ping": ping}, worker_id="w-test", history=policy)
    return d


def rounds(d: Durable, iid: str, n: int, first: int = 0) -> None:
    """``n`` rounds of the loop: a signal (with a key) every other one, else the timer."""
    for i in range(first, first + n):
        if i % 2:
            d.signal(iid, "poke", {"by": "ann"}, key=f"k{i}")
        else:
            d.advance(MINUTE)


def test_compaction_keeps_what_may_still_be_needed(store: Store, clock: VirtualClock) -> None:
    d = pinger(store, clock, HistoryPolicy(every=10))
    iid = d.start("pinger", {"id": "p"}, "p-1")
    rounds(d, iid, 10)
    early = [e.id for e in store.outbox(limit=1000) if e.instance_id == iid]
    assert store.mark_published(early[: len(early) // 2]) > 0  # a consumer took half
    rounds(d, iid, 30, first=10)
    kept = store.kept_history(iid)
    assert kept.checkpoint is not None
    base = kept.checkpoint.seq
    assert kept.rows[0].entry.seq == base + 1 and len(kept.rows) <= 2 * 10 + 4
    with store.backend.read() as tx:

        def count(sql: str) -> int:
            return int(str(tx.query(sql, (iid, base))[0][0]))

        # Consumed deliveries of compacted steps go; acknowledged events of them go;
        # events nobody acknowledged stay, whatever their step.
        assert count("SELECT count(*) FROM wf_inbox WHERE instance_id = ? "
                     "AND consumed_seq <= ?") == 0  # fmt: skip
        assert count("SELECT count(*) FROM wf_outbox WHERE instance_id = ? AND seq <= ? "
                     "AND published_at IS NOT NULL") == 0  # fmt: skip
        unacked = count("SELECT count(*) FROM wf_outbox WHERE instance_id = ? AND seq <= ? "
                        "AND published_at IS NULL")  # fmt: skip
    assert unacked >= len(early) - len(early) // 2 > 0
    assert len(store.tasks(instance_id=iid)) < 20  # done calls of compacted steps went
    assert d.instance(iid).context == {"n": 40}
    info = store.instance(iid)
    assert info.instance is not None
    got = replay(PINGER, iid, [r.entry for r in kept.rows], info.instance.seed,
                 checkpoint=kept.checkpoint)  # fmt: skip
    assert got.reproduces(info.instance)
    # A delivery made again with a key of a compacted step is taken, and dropped.
    assert d.signal(iid, "poke", {"by": "ann"}, key="k1")
    assert d.instance(iid).context == {"n": 40}


def test_an_archiving_policy_moves_the_steps(store: Store, clock: VirtualClock) -> None:
    d = pinger(store, clock, HistoryPolicy(every=10, archive=True))
    iid = d.start("pinger", {"id": "p"}, "p-1")
    rounds(d, iid, 25)
    archived = store.archived_history(iid)
    kept = store.kept_history(iid)
    assert kept.archived == len(archived) > 0
    whole = [r.entry for r in archived + kept.rows]
    assert [e.seq for e in whole] == list(range(1, whole[-1].seq + 1))
    info = store.instance(iid)
    assert info.instance is not None
    # the archive and the kept steps are the whole history
    assert replay(PINGER, iid, whole, info.instance.seed).reproduces(info.instance)


def test_purge_takes_checkpoints_and_archive(store: Store, clock: VirtualClock) -> None:
    d = pinger(store, clock, HistoryPolicy(every=10, archive=True))
    iid = d.start("pinger", {"id": "p"}, "p-1")
    rounds(d, iid, 25)
    d.client.cancel(iid, compensate=False, reason="done with it")
    d.run()
    events = [e.id for e in store.outbox(limit=1000) if e.instance_id == iid]
    store.mark_published(events)
    clock.advance(2 * DAY)
    assert d.client.purge(DAY).instances == (iid,)
    assert stored_bytes(store, iid) == (0, dict.fromkeys((*OWNED, "wf_instance"), 0))


def test_ops_compact_checkpoints_now(store: Store, clock: VirtualClock) -> None:
    d = pinger(store, clock, None)
    iid = d.start("pinger", {"id": "p"}, "p-1")
    rounds(d, iid, 6)
    before = d.instance(iid)
    done = store.compact(iid)
    assert done.checkpoint == before.seq and done.rows["wf_history"] == before.seq
    kept = store.kept_history(iid)
    assert kept.rows == [] and kept.checkpoint is not None
    assert identical(kept.checkpoint, before)
    rounds(d, iid, 3)
    kept = store.kept_history(iid)
    after = d.instance(iid)
    got = replay(PINGER, iid, [r.entry for r in kept.rows], 0, checkpoint=kept.checkpoint)
    assert got.reproduces(after)
    # Without its checkpoint, or from another one, the kept history is refused.
    first = before.seq + 1
    with pytest.raises(CompactedError, match=f"begins at step {first}: the steps before it"):
        replay(PINGER, iid, [r.entry for r in kept.rows], 0)
    with pytest.raises(CompactedError, match="its checkpoint is at step 3"):
        replay(PINGER, iid, [r.entry for r in kept.rows], 0, checkpoint=evolve(before, seq=3))


def test_ops_compact_refusals_change_nothing(store: Store, clock: VirtualClock) -> None:
    with pytest.raises(UnknownInstance):
        store.compact("nobody")
    d = pinger(store, clock, None)
    d.client.start("pinger", {"id": "p"}, instance_id="p-1")  # no worker took it yet
    with pytest.raises(IllegalAction, match="has not started yet: nothing to compact"):
        store.compact("p-1")
    assert stored_bytes(store, "p-1")[1]["wf_checkpoint"] == 0
