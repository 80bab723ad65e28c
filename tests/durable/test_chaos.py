"""Chaos (issue 20): worker processes SIGKILLed at random moments while poisonous
instances are mixed in with healthy ones.

Two worker processes (a pool of four calls each) share the instances; one of them,
picked at random, is SIGKILLed after a random number of effects, its leases are let
run out and a new process takes its place, six times over; then the last ones finish.
Two kinds of poison are mixed in: a handler result that is no JSON value (an invalid
result: the workflow's error path) and an instance whose state cannot be stored once
its first call is back (the store's isolation: the instance is dead-lettered in a
careful pass, the rest of its batch commits). At the end:

* every healthy instance completed exactly once (one ``instance.finished`` event, no
  dead letter), with a gapless history that took no event twice;
* every poisonous instance is dead-lettered with its reason;
* no call ran twice in one process, a call ran again only after the process that ran it
  died, and its result was committed by the last process that ran it.

Bounded: a fixed seed and number of kills, every wait bounded.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from wflang.store import Store

from .helpers import (
    SUMMARY,
    committed_by,
    expire_leases,
    finish,
    fixture_table,
    history_gaps,
    start_worker,
)
from .worker_proc import EffectLog

HEALTHY = [f"ok-{i:02d}" for i in range(40)]
BAD_RESULT = [f"poison-result-{i}" for i in range(5)]  # step.one returns a datetime field
BAD_STATE = [f"poison-state-{i}" for i in range(5)]  # its state cannot be stored (seq 2)
#: The reason each kind of poison is dead-lettered with.
REASONS = {
    "poison-result": "'at' is a datetime, not a JSON value",
    "poison-state": "RuntimeError: poison: cannot store",
}
KILLS = 6
WORKERS = 2
SEED = 20


def _effects_reach(log: EffectLog, count: int, proc: subprocess.Popen[str]) -> None:
    """Wait (on the process, never sleeping) until the log holds ``count`` effects, the
    process exits or every instance is done."""
    for _ in range(3_000):  # 60 s at most
        if len(log.rows()) >= count:
            return
        try:
            proc.wait(timeout=0.02)
        except subprocess.TimeoutExpired:
            continue
        return


def test_random_kills_with_poisonous_instances(
    store_url: str, make_store: Callable[..., Store], tmp_path: Path
) -> None:
    store = make_store(store_url)
    store.deploy(fixture_table("two_step"))
    deployed = store.deployed("two_step")
    ids = sorted([*HEALTHY, *BAD_RESULT, *BAD_STATE])
    rng = random.Random(SEED)
    for iid in rng.sample(ids, len(ids)):
        store.create(deployed, {"id": iid}, iid)
    effects = tmp_path / "effects.db"
    log = EffectLog(effects)
    log.rows()  # create it before the processes race to

    def spawn() -> subprocess.Popen[str]:
        return start_worker(store_url, effects, "chaos", mode="run", concurrency=4, deadline_s=300)

    alive = [spawn() for _ in range(WORKERS)]
    order = [p.pid for p in alive]
    dead: list[int] = []
    for _ in range(KILLS):
        victim = rng.choice(alive)
        _effects_reach(log, len(log.rows()) + rng.randint(1, 12), victim)
        if victim.poll() is not None:  # it finished everything: nothing left to kill
            break
        os.kill(victim.pid, signal.SIGKILL)
        rc, out = finish(victim)
        assert rc == -9, out
        expire_leases(store, victim.pid)
        dead.append(victim.pid)
        alive.remove(victim)
        alive.append(spawn())
        order.append(alive[-1].pid)
    for proc in alive:
        rc, out = finish(proc, timeout=360)
        assert rc == 0, out

    problems: list[str] = []
    with store.backend.read() as tx:
        events = collections.Counter(
            (str(iid), str(kind))
            for iid, kind in tx.query("SELECT instance_id, kind FROM wf_outbox")
        )
    for iid in ids:
        info = store.instance(iid)
        error = info.instance.error if info.instance else None
        rows = store.history(iid)
        problems += history_gaps(store, iid, rows)
        keys = collections.Counter(r.idempotency_key for r in rows)
        problems += [f"{iid}: took {k} {n} times" for k, n in keys.items() if n > 1]
        if iid in HEALTHY:
            output = info.instance.output if info.instance is not None else None
            if info.status != "completed" or output != {"v": 2}:
                problems.append(f"{iid}: {info.status} ({error})")
            if events[iid, "instance.finished"] != 1 or events[iid, "instance.dead_lettered"]:
                problems.append(f"{iid}: outbox {events[iid, 'instance.finished']} finished")
        elif info.status != "dead_lettered":
            problems.append(f"{iid}: {info.status}, not dead-lettered")
        elif REASONS[iid.rsplit("-", 1)[0]] not in str(error):
            problems.append(f"{iid}: reason {error!r}")
    assert not problems, "\n".join(problems)

    by_key: dict[str, list[int]] = collections.defaultdict(list)
    for key, _service, _attempt, _epoch, pid in log.rows():
        by_key[key].append(pid)
    committed = committed_by(store, ids)
    assert set(committed) <= set(by_key), sorted(set(committed) - set(by_key))
    rerun = 0
    for key, pids in by_key.items():
        assert len(set(pids)) == len(pids), f"{key} ran twice in one process: {pids}"
        assert set(pids[:-1]) <= set(dead), f"{key} ran again after a live worker ran it"
        if key in committed:
            assert committed[key] == f"proc-{pids[-1]}", (key, pids, committed[key])
        rerun += len(pids) - 1
    assert rerun <= len(dead) * 4  # at most a pool's calls in flight per kill

    backend = store_url.split(":", 1)[0]
    counts = collections.Counter(store.instance(i).status for i in ids)
    line = (
        f"chaos {backend:10} instances={len(ids)} poisonous={len(BAD_RESULT) + len(BAD_STATE)} "
        f"kills={len(dead)} processes={len(order)} ends={dict(sorted(counts.items()))} "
        f"effects={sum(map(len, by_key.values()))} rerun_effects={rerun}"
    )
    SUMMARY.append(line)
    print(line)
