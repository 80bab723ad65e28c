"""Fuzz test (issue 20): mutated examples and generated sources through the whole toolchain.

Each input goes parse → check → fmt → compile → run (see ``tests/fuzzing.py``).
No exception escapes any stage; ``wf fmt`` is idempotent and keeps the meaning
and the comments; and no input costs more than the stated bounds, which grow with
its size: ``SECONDS_BASE + SECONDS_PER_KB * KB`` of CPU time (process time, so a
busy machine does not count) and ``MB_BASE + MB_PER_KB * KB`` of peak memory
allocated by Python (tracemalloc).

In the suite it is bounded (a fixed set of examples, derandomized). The long run:

    python -m tests.test_fuzz --examples 20000 [--seed N]

(without hypothesis: seeded mutations of the same inputs; runs with different seeds
can share the work) prints the number of inputs, the failures (each with its reproducer saved under
``fuzz-failures/``) and the largest time and memory per KB seen.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from .fuzzing import (
    MB_BASE,
    MB_PER_KB,
    SECONDS_BASE,
    SECONDS_PER_KB,
    Cost,
    generated_pool,
    inputs,
    known,
    mutants,
    run_pipeline,
)

SUITE = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@SUITE
@given(mutants(), st.integers(0, 2**16))
def test_no_input_breaks_the_toolchain(source: tuple[str, str], seed: int) -> None:
    path, text = source
    try:
        cost: Cost = run_pipeline(path, text, seed)
    except Exception as err:
        if known(err):  # reported in issue 20 and being fixed elsewhere (fuzzing.KNOWN)
            reject()
        raise
    assert cost.seconds <= cost.seconds_allowed, f"{cost.seconds:.1f}s for {cost.kb:.1f} KB"
    assert cost.peak_mb <= cost.mb_allowed, f"{cost.peak_mb:.1f} MB for {cost.kb:.1f} KB"


def long_run(examples: int, seed: int, out: Path) -> int:
    """Run ``examples`` inputs, counting failures instead of stopping at the first."""
    figures = {"inputs": 0, "failures": 0, "known": 0, "ran": 0, "formatted": 0}
    worst = {"s_per_kb": 0.0, "mb_per_kb": 0.0, "seconds": 0.0, "mb": 0.0}
    kinds: dict[str, int] = {}
    for path, text, run_seed in inputs(examples, seed, generated_pool(200)):
        figures["inputs"] += 1
        if figures["inputs"] % 1000 == 0:
            print(f"... {figures['inputs']} inputs, {figures['failures']} failures", flush=True)
        try:
            cost = run_pipeline(path, text, run_seed)
            if cost.seconds > cost.seconds_allowed or cost.peak_mb > cost.mb_allowed:
                raise AssertionError(f"over budget: {cost}")
        except Exception as err:  # every failure is counted and kept
            item = known(err)
            if item:
                figures["known"] += 1
                kinds[f"known, issue {item}"] = kinds.get(f"known, issue {item}", 0) + 1
                continue
            figures["failures"] += 1
            frames = traceback.extract_tb(err.__traceback__)
            where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
            message = str(err).splitlines()[0][:100] if str(err) else ""
            kind = f"{type(err).__name__} at {where}: {message}"
            kinds[kind] = kinds.get(kind, 0) + 1
            out.mkdir(exist_ok=True)
            case = out / f"case-{seed}-{figures['failures']}.wf"
            case.write_text(text, encoding="utf-8", errors="surrogatepass")
            case.with_suffix(".txt").write_text(f"{path}\n{traceback.format_exc()}")
            continue
        figures["ran"] += "run" in cost.stages
        figures["formatted"] += "fmt" in cost.stages
        kb = max(cost.kb, 1.0)  # per KB, counting a small input as one KB
        worst["s_per_kb"] = max(worst["s_per_kb"], cost.seconds / kb)
        worst["mb_per_kb"] = max(worst["mb_per_kb"], cost.peak_mb / kb)
        worst["seconds"] = max(worst["seconds"], cost.seconds)
        worst["mb"] = max(worst["mb"], cost.peak_mb)
    print(
        f"seed {seed}: inputs {figures['inputs']}, failures {figures['failures']} "
        f"(and {figures['known']} of kinds already reported), "
        f"formatted {figures['formatted']}, ran {figures['ran']}\n"
        f"max CPU {worst['seconds']:.2f} s, max {worst['s_per_kb']:.3f} s/KB "
        f"(bound {SECONDS_BASE} s + {SECONDS_PER_KB} s/KB); "
        f"max peak {worst['mb']:.1f} MB, max {worst['mb_per_kb']:.2f} MB/KB "
        f"(bound {MB_BASE} MB + {MB_PER_KB} MB/KB)",
        flush=True,
    )
    for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6d}  {kind}")
    return 1 if figures["failures"] else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.test_fuzz", description=__doc__)
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0, help="runs with different seeds differ")
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    args = parser.parse_args(argv)
    return long_run(args.examples, args.seed, args.out)


if __name__ == "__main__":
    sys.exit(main())
