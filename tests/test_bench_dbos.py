"""bench/durable.py --peers dbos (issue 18): wflang's cases and DBOS's do the same work.

The benchmark runs on tiny sizes as a subprocess; each case reports the steps its
side recorded (wflang: history rows; DBOS: workflow_status + operation_outputs rows,
both checked by the script against the stores), and the two sides of each pair must
have recorded the same number: chain + 1 per workflow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="dbos is not installed (the bench and dev extras install it)")

ROOT = Path(__file__).resolve().parent.parent
PG_DSN = os.environ.get("WFLANG_TEST_PG_DSN", "")
CHAIN, ONE_AT_A_TIME, QUEUED = 3, 2, 4


def run_bench(cases: list[str], *extra: str) -> dict[str, Any]:
    command = [
        sys.executable,
        str(ROOT / "bench" / "durable.py"),
        "--peers=dbos",
        "--json",
        f"--chain={CHAIN}",
        f"--one-tx-instances={ONE_AT_A_TIME}",
        f"--instances={QUEUED}",
        "--repeat=1",
        "--floor-time=0.05",
        f"--cases={','.join(cases)}",
        *extra,
    ]
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    assert list(report["cases"]) == cases
    return report


def steps(report: dict[str, Any], case: str) -> int:
    [sample] = report["cases"][case]["samples"]
    assert sample["rate"] > 0
    return int(sample["steps"])


def test_sqlite_one_at_a_time_same_steps_on_both_sides() -> None:
    report = run_bench(["sqlite-1tx", "dbos-sqlite-1tx"], "--no-pg")
    want = ONE_AT_A_TIME * (CHAIN + 1)
    assert steps(report, "sqlite-1tx") == steps(report, "dbos-sqlite-1tx") == want
    assert "sqlite-1tx/dbos-sqlite-1tx" in report["ratios"]


def test_postgres_sequential_and_queued_same_steps_on_both_sides() -> None:
    if not PG_DSN:
        pytest.skip("WFLANG_TEST_PG_DSN is not set")
    cases = ["pg-1tx", "dbos-pg-1tx", "pg-2", "dbos-pg-2", "pg-signal"]
    report = run_bench(cases, f"--dsn={PG_DSN}", "--signals=3")
    assert steps(report, "pg-1tx") == steps(report, "dbos-pg-1tx") == ONE_AT_A_TIME * (CHAIN + 1)
    assert steps(report, "pg-2") == steps(report, "dbos-pg-2") == QUEUED * (CHAIN + 1)
    assert {"pg-1tx/dbos-pg-1tx", "pg-2/dbos-pg-2"} <= set(report["ratios"])
    # the signal latency ran its signals to their handlers (a figure, not judged here)
    [signal] = report["cases"]["pg-signal"]["samples"]
    assert signal["signals"] == 3
    assert 0 < signal["p50_ms"] <= signal["p99_ms"] <= signal["max_ms"]
