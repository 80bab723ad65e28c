"""Runtime benchmark: the step function and the in-memory engine against ``transitions``.

Run from the repository root::

    .venv/bin/python bench/runtime.py [--size 100] [--repeat 7] [--json]

It needs the ``transitions`` library, a bench-only dependency (the ``bench`` extra:
``.venv/bin/pip install -e '.[bench]'``).

Three generated workflows, each compiled once (``compile_workflow``, not timed):

* ``chain``: ``--size`` service tasks in a row, ``t1 -> t2 -> ... -> done``;
* ``loop``: ``--size`` iterations of a service task ``work`` and a choice ``check``
  whose guard reads a context counter (``when context.n < SIZE -> work``,
  ``else -> done``);
* ``fanout``: one parallel with ``--size`` branches, each one service task and an
  ``end``, joined with ``join all -> done``.

Every service task runs the same trivial service: ``args { n: context.n }``,
``output { n: context.n + result.value }``, and the result is always ``{value: 1}``,
so each workflow ends with ``n == SIZE``.

**A step** is one call of the step function delivering one event: ``st.start``
(the input) and then one ``st.step`` per ``TaskCompleted``, so each workflow takes
``SIZE + 1`` steps. A step moves tokens through one or more nodes; those node
transitions (the ``enter ...`` decisions of the step) are counted and reported too.

Paths measured, per workflow:

* ``step``: ``st.start`` and ``st.step`` driven directly: every ``ScheduleTask``
  command is answered with ``TaskCompleted(key, {"value": 1})``, first in, first out;
* ``engine``: ``Engine([table], handlers={"svc.op": lambda **kw: {"value": 1}})`` and
  ``engine.start(...)``, which calls the handler and applies every command and keeps
  the history (one history entry per step);
* ``reference``: a ``transitions.Machine`` with the workflow's states, firing one
  guarded transition (``conditions=`` a callable guard on a counter, ``after=`` a
  callable action on it) per wflang step: ``SIZE + 1`` transitions.

Each timed sample runs the whole workflow ``runs`` times in a row (``runs`` chosen in
the warm-up so that one sample takes at least ``--min-time`` seconds) and is timed with
``time.perf_counter`` (``--clock cpu``: ``time.process_time``, the process's CPU
time, for a machine shared with other work) after a ``gc.collect()``; the figures are medians of
``--repeat`` samples, per run of the workflow. GC stays as Python has it. All nine
cases (three workflows, three paths) take turns, one sample each per round, so that a
change of load on a shared machine falls on all of them alike; the ratio of each
round is reported too (its median and range), to show the noise, and the fan-out's
cost against the chain's per round as well as from the medians.

Targets: the step function at least 1.0x the reference's rate (steps/s over the
reference's transitions/s), the engine at least 0.5x, and the cost per step of the
fan-out at most 2x the chain's (per path).

``--profile WORKFLOW:PATH`` prints a cProfile of the path instead (top 25 by own
time); ``--sweep`` adds the cost per step of the fan-out at several widths;
``--emit WORKFLOW`` prints a generated workflow.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import math
import pstats
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchlib  # the folder of this script is on sys.path when it runs

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wflang.compiler.compile import compile_workflow  # noqa: E402
from wflang.dsl.diagnostics import Severity  # noqa: E402
from wflang.dsl.parser import parse  # noqa: E402
from wflang.runtime import instance as rt  # noqa: E402
from wflang.runtime import step as st  # noqa: E402
from wflang.runtime.engine import Engine  # noqa: E402
from wflang.runtime.instance import Status  # noqa: E402
from wflang.runtime.table import Table  # noqa: E402

DEFAULT_SIZE = 100
WORKFLOWS = ("chain", "loop", "fanout")
PATHS = ("step", "engine", "reference")
SWEEP_WIDTHS = (10, 25, 50, 100, 200, 400)
#: Targets: rate ratios against the reference, and fan-out / chain cost per step.
STEP_TARGET = 1.0
ENGINE_TARGET = 0.5
FANOUT_TARGET = 2.0

SERVICE = "svc.op"
RESULT: dict[str, Any] = {"value": 1}
MISSING_TRANSITIONS = """\
bench/runtime.py needs the 'transitions' library as its reference (a bench-only
dependency, not needed by wflang itself). Install it with

    .venv/bin/pip install -e '.[bench]'      (or: .venv/bin/pip install transitions)
"""

# ------------------------------------------------------------------ workflows

HEADER = """\
workflow {name} version 1

context {{ n: int = 0 }}

output {{ n: int }}

service svc.op(n: int) -> {{ value: int }}

start {start}
"""

TASK = """\
{indent}task {name}: service svc.op {{
{indent}    args {{ n: context.n }}
{indent}    output {{ n: context.n + result.value }}
{indent}    next {next}
{indent}}}
"""

DONE = """\
end done: completed {
    output { n: context.n }
}
"""


def chain_source(size: int) -> str:
    parts = [HEADER.format(name="chain", start="t1")]
    for i in range(1, size + 1):
        nxt = f"t{i + 1}" if i < size else "done"
        parts.append(TASK.format(indent="", name=f"t{i}", next=nxt))
    parts.append(DONE)
    return "\n".join(parts)


def loop_source(size: int) -> str:
    choice = f"""\
choice check {{
    when context.n < {size} -> work
    else -> done
}}
"""
    return "\n".join(
        (
            HEADER.format(name="loop", start="work"),
            TASK.format(indent="", name="work", next="check"),
            choice,
            DONE,
        )
    )


def fanout_source(size: int) -> str:
    branches = []
    for i in range(1, size + 1):
        task = TASK.format(indent="        ", name=f"w{i}", next=f"e{i}")
        branches.append(f"    branch b{i} {{\n{task}        end e{i}: completed\n    }}\n")
    body = "".join(branches)
    fan = f"parallel fan {{\n{body}    join all -> done\n}}\n"
    return "\n".join((HEADER.format(name="fanout", start="fan"), fan, DONE))


SOURCES: dict[str, Callable[[int], str]] = {
    "chain": chain_source,
    "loop": loop_source,
    "fanout": fanout_source,
}


def compile_table(workflow: str, size: int) -> tuple[Table, int]:
    """The table of a generated workflow, and the number of warnings the checker gave."""
    source = SOURCES[workflow](size)
    compiled = compile_workflow(parse(source, f"{workflow}.wf"))
    if compiled.table is None:
        for d in compiled.check.diagnostics:
            print(d, file=sys.stderr)
        raise SystemExit(f"{workflow}: the generated workflow does not compile")
    warnings = sum(1 for d in compiled.check.diagnostics if d.severity is not Severity.ERROR)
    return compiled.table, warnings


# ------------------------------------------------------------------ the paths


def drive_steps(table: Table, decisions: list[str] | None = None) -> tuple[rt.Instance, int]:
    """Run a workflow on the pure step function; return the final instance and the steps.

    Every ``ScheduleTask`` is answered with ``TaskCompleted(key, RESULT)`` in the order
    the commands were emitted. ``decisions`` (if given) collects every decision.
    """
    start, step, completed, schedule = st.start, st.step, rt.TaskCompleted, rt.ScheduleTask
    s = start(table, "bench", {}, 0)
    inst = s.instance
    steps = 1
    pending: deque[str] = deque()
    append, popleft = pending.append, pending.popleft
    while True:
        for c in s.commands:  # a plain loop: a generator per step cost more than the rest
            if type(c) is schedule:
                append(c.key)
        if decisions is not None:
            decisions.extend(s.decisions)
        if not pending:
            return inst, steps
        s = step(table, inst, completed(popleft(), RESULT), 0)
        inst = s.instance
        steps += 1


def _handler(**kw: Any) -> dict[str, Any]:
    return RESULT


HANDLERS = {SERVICE: _handler}


def drive_engine(table: Table) -> tuple[Engine, str]:
    """Run a workflow to the end on a fresh in-memory engine with a trivial handler."""
    engine = Engine([table], handlers=HANDLERS)
    return engine, engine.start(table.workflow, {})


class Model:
    """The reference's model: a counter the guards read and the actions write."""

    state: str

    def __init__(self, size: int) -> None:
        self.size = size
        self.n = 0
        self.remaining = 0


def reference(workflow: str, size: int) -> tuple[Callable[[], int], Model, Any]:
    """A ``transitions`` machine equivalent to the workflow, and a function that runs it.

    The run fires ``size + 1`` guarded transitions, each with an action: ``start``
    (``new`` to the first state) and one ``complete`` per wflang task completion.
    """
    from transitions import Machine  # imported here: missing is reported in main()

    m = Model(size)

    def ready() -> bool:
        return m.size > 0

    def init() -> None:
        m.n = 0
        m.remaining = m.size

    def below() -> bool:
        return m.n < m.size

    def again() -> bool:
        return m.n < m.size - 1

    def more() -> bool:
        return m.remaining > 1

    def inc() -> None:
        m.n += 1

    def dec() -> None:
        m.remaining -= 1

    def tr(source: str, dest: str, guard: Any, action: Any, trigger: str = "complete") -> Any:
        t = {"trigger": trigger, "source": source, "dest": dest, "after": action}
        return t if guard is None else {**t, "conditions": guard}

    if workflow == "chain":
        names = [f"t{i}" for i in range(1, size + 1)]
        states = ["new", *names, "done"]
        transitions = [tr("new", "t1", ready, init, "start")]
        transitions += [
            tr(name, names[i + 1] if i + 1 < size else "done", below, inc)
            for i, name in enumerate(names)
        ]
    elif workflow == "loop":  # the task and its choice: one guarded transition, and else
        states = ["new", "work", "done"]
        transitions = [
            tr("new", "work", ready, init, "start"),
            tr("work", "work", again, inc),
            tr("work", "done", None, inc),
        ]
    else:  # the parallel counts its branches down: one guarded transition, and else
        states = ["new", "fan", "done"]
        transitions = [
            tr("new", "fan", ready, init, "start"),
            tr("fan", "fan", more, dec),
            tr("fan", "done", None, dec),
        ]
    machine = Machine(
        model=m, states=states, transitions=transitions, initial="new", auto_transitions=False
    )
    start: Callable[[], bool] = m.start  # type: ignore[attr-defined]
    complete: Callable[[], bool] = m.complete  # type: ignore[attr-defined]
    set_state = machine.set_state

    def run() -> int:
        set_state("new")
        fired = int(start())
        for _ in range(size):
            fired += complete()
        return fired

    return run, m, machine


# ------------------------------------------------------------------ measuring


class Case:
    """One workflow on one path: its run function, its steps and node transitions."""

    def __init__(self, workflow: str, path: str, size: int) -> None:
        self.workflow, self.path, self.size = workflow, path, size
        self.warnings = 0
        self.run: Callable[[], object]
        if path == "reference":
            run, model, _ = reference(workflow, size)
            fired = run()
            final = model.n if workflow != "fanout" else size - model.remaining
            if fired != size + 1 or model.state != "done" or final != size:
                raise SystemExit(f"{workflow}/reference: fired {fired}, ended in {model.state}")
            self.steps = self.transitions = fired
            self.run = run
            return
        table, self.warnings = compile_table(workflow, size)
        if path == "step":
            decisions: list[str] = []
            inst, steps = drive_steps(table, decisions)
            self.run = lambda: drive_steps(table)
        else:
            engine, iid = drive_engine(table)
            inst = engine.instance(iid)
            history = engine.history(iid)
            steps = len(history)
            decisions = [d for h in history for d in h.decisions]
            self.run = lambda: drive_engine(table)
        if inst.status is not Status.COMPLETED or inst.output != {"n": size}:
            raise SystemExit(f"{workflow}/{path}: ended {inst.status.value}, {inst.output}")
        if steps != size + 1:
            raise SystemExit(f"{workflow}/{path}: {steps} steps, expected {size + 1}")
        self.steps = steps
        self.transitions = sum(1 for d in decisions if d.startswith("enter "))


#: The clock samples are timed with: ``perf_counter`` (wall time, the default) or, with
#: ``--clock cpu``, ``process_time`` (the CPU time of this process: on a machine shared
#: with other work it leaves out the time the benchmark waited for a CPU).
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
TIMING: dict[str, Callable[[], float]] = {"clock": time.perf_counter}  # set by main()


def calibrate(run: Callable[[], object], min_time: float) -> int:
    """Warm up, then the number of runs that makes one sample last ``min_time``."""
    for _ in range(3):
        run()
    gc.collect()
    clock = TIMING["clock"]
    t0 = clock()
    run()
    once = max(clock() - t0, 1e-7)
    return max(1, math.ceil(min_time / once))


def sample(run: Callable[[], object], runs: int) -> float:
    """Seconds per run of one sample of ``runs`` runs."""
    gc.collect()
    clock = TIMING["clock"]
    t0 = clock()
    for _ in range(runs):
        run()
    return (clock() - t0) / runs


def measure(case: Case, repeat: int, min_time: float) -> dict[str, Any]:
    runs = calibrate(case.run, min_time)
    return summarize(case, runs, [sample(case.run, runs) for _ in range(repeat)])


def summarize(case: Case, runs: int, times: list[float]) -> dict[str, Any]:
    med = statistics.median(times)
    return {
        "steps": case.steps,
        "transitions": case.transitions,
        "checker_warnings": case.warnings,
        "runs_per_sample": runs,
        "median_s": med,
        "min_s": min(times),
        "times_s": times,
        "steps_per_s": case.steps / med,
        "transitions_per_s": case.transitions / med,
        "us_per_step": med / case.steps * 1e6,
    }


def run_bench(
    size: int, repeat: int, min_time: float, sweep: bool, log: Callable[[str], None]
) -> dict[str, Any]:
    cases = {(w, path): Case(w, path, size) for w in WORKFLOWS for path in PATHS}
    for (workflow, path), case in cases.items():
        log(
            f"{workflow}/{path}: {case.steps} steps, {case.transitions} transitions, "
            f"{case.warnings} checker warnings"
        )
    runs = {key: calibrate(case.run, min_time) for key, case in cases.items()}
    # Every case takes its turn in every round (chain step, engine, reference, loop
    # step, ...), so that a change of load on a shared machine falls on all of them
    # alike: on the paths of a workflow and on the workflows compared.
    log(f"timing {repeat} rounds of the {len(cases)} cases")
    times: dict[tuple[str, str], list[float]] = {key: [] for key in cases}
    for _ in range(repeat):
        for key, case in cases.items():
            times[key].append(sample(case.run, runs[key]))
    rows: dict[str, dict[str, Any]] = {}
    for workflow in WORKFLOWS:
        rows[workflow] = {
            path: summarize(cases[workflow, path], runs[workflow, path], times[workflow, path])
            for path in PATHS
        }
        ref = rows[workflow]["reference"]
        for path in ("step", "engine"):
            r = rows[workflow][path]
            r["ratio"] = r["steps_per_s"] / ref["steps_per_s"]
            r["transition_ratio"] = r["transitions_per_s"] / ref["transitions_per_s"]
            # the ratio within each round (same steps per run on both sides), for the spread
            paired = [
                (cases[workflow, path].steps / t) / (cases[workflow, "reference"].steps / t_ref)
                for t, t_ref in zip(
                    times[workflow, path], times[workflow, "reference"], strict=True
                )
            ]
            r["round_ratios"] = paired
            r["round_ratio_median"] = statistics.median(paired)
    fan_vs_chain = {
        path: rows["fanout"][path]["us_per_step"] / rows["chain"][path]["us_per_step"]
        for path in PATHS
    }
    # the same within each round (the two workflows timed moments apart)
    fan_vs_chain_rounds = {
        path: statistics.median(
            (f / cases["fanout", path].steps) / (c / cases["chain", path].steps)
            for f, c in zip(times["fanout", path], times["chain", path], strict=True)
        )
        for path in PATHS
    }
    report: dict[str, Any] = {
        "machine": {
            **benchlib.machine("transitions", "attrs"),
            "wflang": benchlib.source_state(RUNTIME, "runtime"),
        },
        "size": size,
        "repeat": repeat,
        "min_time_s": min_time,
        "clock": "cpu (process_time)"
        if TIMING["clock"] is time.process_time
        else "wall (perf_counter)",
        "rows": rows,
        "fanout_vs_chain": fan_vs_chain,
        "fanout_vs_chain_round_median": fan_vs_chain_rounds,
    }
    if sweep:
        report["sweep"] = run_sweep(repeat, min_time, log)
    report["targets"] = targets(report)
    return report


def run_sweep(repeat: int, min_time: float, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The cost per step of the fan-out, and of a chain of as many tasks, by width."""
    out = []
    for width in SWEEP_WIDTHS:
        row: dict[str, Any] = {"width": width}
        for workflow in ("chain", "fanout"):
            for path in ("step", "engine"):
                log(f"sweep {workflow}/{path} at {width}")
                r = measure(Case(workflow, path, width), repeat, min_time)
                row[f"{workflow}_{path}_us_per_step"] = r["us_per_step"]
        for path in ("step", "engine"):
            row[f"{path}_ratio"] = (
                row[f"fanout_{path}_us_per_step"] / row[f"chain_{path}_us_per_step"]
            )
        out.append(row)
    return out


def targets(report: dict[str, Any]) -> dict[str, Any]:
    rows = report["rows"]
    return {
        "step_ratio_ge_1": all(rows[w]["step"]["ratio"] >= STEP_TARGET for w in WORKFLOWS),
        "engine_ratio_ge_0.5": all(rows[w]["engine"]["ratio"] >= ENGINE_TARGET for w in WORKFLOWS),
        "fanout_step_cost_le_2x_chain": report["fanout_vs_chain"]["step"] <= FANOUT_TARGET,
        "fanout_engine_cost_le_2x_chain": report["fanout_vs_chain"]["engine"] <= FANOUT_TARGET,
    }


# ------------------------------------------------------------------ reporting


#: What the runtime paths run: the step function, the engine and the tables.
RUNTIME = ("wflang/runtime",)


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    size = report["size"]
    out = [
        f"wflang runtime benchmark  {m['date']}",
        f"machine: {m['platform']} ({m['processor']}), {m['cpu_count']} CPUs",
        f"python:  {m['python']}, attrs {m['attrs']}, transitions {m['transitions']}; "
        f"wflang {m['wflang']}",
        f"median of {report['repeat']} samples, each >= {report['min_time_s']} s of whole runs; "
        f"clock: {report['clock']}",
        "",
        "step = one call of st.start / st.step delivering one event (the input, then one",
        f"TaskCompleted per service task): {size + 1} per workflow. trans = node transitions",
        "(the 'enter' decisions); for the reference, the guarded transitions it fired.",
        "",
        f"{'workflow':<8} {'path':<9} {'steps':>5} {'trans':>5} {'runs':>5} {'ms/run':>8} "
        f"{'us/step':>8} {'steps/s':>9} {'trans/s':>9} {'ratio':>6} {'t-ratio':>7}",
        "-" * 90,
    ]
    for workflow in WORKFLOWS:
        for path in PATHS:
            r = report["rows"][workflow][path]
            ratio = f"{r['ratio']:.2f}" if "ratio" in r else ""
            t_ratio = f"{r['transition_ratio']:.2f}" if "ratio" in r else ""
            out.append(
                f"{workflow:<8} {path:<9} {r['steps']:>5} {r['transitions']:>5} "
                f"{r['runs_per_sample']:>5} {r['median_s'] * 1000:>8.3f} "
                f"{r['us_per_step']:>8.2f} {r['steps_per_s']:>9,.0f} "
                f"{r['transitions_per_s']:>9,.0f} {ratio:>6} {t_ratio:>7}"
            )
    fc = report["fanout_vs_chain"]
    out += ["", "ratio per round (median, min..max):"]
    for workflow in WORKFLOWS:
        for path in ("step", "engine"):
            r = report["rows"][workflow][path]
            rr = r["round_ratios"]
            out.append(
                f"  {workflow:<8} {path:<7} {r['round_ratio_median']:.2f} "
                f"({min(rr):.2f}..{max(rr):.2f})"
            )
    out += [
        "",
        "ratio = steps/s of the path / transitions/s of the reference on the same workflow",
        "(the target); t-ratio = node transitions/s of the path / the same (for information).",
        f"fan-out us/step / chain us/step: step {fc['step']:.2f}, engine {fc['engine']:.2f}, "
        f"reference {fc['reference']:.2f}",
        "  the same per round (median): "
        + ", ".join(f"{p} {report['fanout_vs_chain_round_median'][p]:.2f}" for p in PATHS),
    ]
    if "sweep" in report:
        out += [
            "",
            "cost per step by width (us/step; ratio = fan-out / chain of as many tasks):",
            f"{'width':>6} {'chain step':>10} {'fan step':>9} {'ratio':>6} "
            f"{'chain eng':>10} {'fan eng':>9} {'ratio':>6}",
        ]
        for row in report["sweep"]:
            out.append(
                f"{row['width']:>6} {row['chain_step_us_per_step']:>10.1f} "
                f"{row['fanout_step_us_per_step']:>9.1f} {row['step_ratio']:>6.2f} "
                f"{row['chain_engine_us_per_step']:>10.1f} "
                f"{row['fanout_engine_us_per_step']:>9.1f} {row['engine_ratio']:>6.2f}"
            )
    t = report["targets"]
    out += [
        "",
        f"target step function >= {STEP_TARGET}x reference (every workflow): "
        + _met(t["step_ratio_ge_1"]),
        f"target engine >= {ENGINE_TARGET}x reference (every workflow): "
        + _met(t["engine_ratio_ge_0.5"]),
        f"target fan-out cost per step <= {FANOUT_TARGET}x chain: step "
        + _met(t["fanout_step_cost_le_2x_chain"])
        + ", engine "
        + _met(t["fanout_engine_cost_le_2x_chain"]),
    ]
    return "\n".join(out)


def profile(workflow: str, path: str, size: int, runs: int) -> str:
    """cProfile of ``runs`` runs of one workflow on one path: the top 25 by own time."""
    case = Case(workflow, path, size)
    case.run()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(runs):
        case.run()
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(25)
    head = f"{workflow}/{path}, size {size}: {runs} runs of {case.steps} steps\n"
    return head + buf.getvalue()


def _workflow_path(text: str) -> tuple[str, str]:
    workflow, _, path = text.partition(":")
    if workflow not in WORKFLOWS or path not in PATHS:
        raise argparse.ArgumentTypeError(
            f"expected WORKFLOW:PATH with WORKFLOW in {', '.join(WORKFLOWS)} "
            f"and PATH in {', '.join(PATHS)}"
        )
    return workflow, path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=DEFAULT_SIZE, help="tasks, iterations, branches")
    ap.add_argument("--repeat", type=int, default=7, help="timed samples per workflow and path")
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds one sample lasts at least")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="wall (default) or cpu time"
    )
    ap.add_argument("--sweep", action="store_true", help="also the fan-out cost at many widths")
    ap.add_argument("--emit", choices=WORKFLOWS, help="print a generated workflow")
    ap.add_argument(
        "--profile", type=_workflow_path, metavar="WORKFLOW:PATH", help="profile one path"
    )
    ap.add_argument("--profile-runs", type=int, default=50, help="runs under the profiler")
    args = ap.parse_args(argv)
    TIMING["clock"] = CLOCKS[args.clock]
    if args.emit:
        sys.stdout.write(SOURCES[args.emit](args.size))
        return 0
    if args.size < 2 or args.repeat < 1 or args.min_time < 0:
        ap.error("--size must be >= 2, --repeat >= 1 and --min-time >= 0")
    needs_reference = args.profile is None or args.profile[1] == "reference"
    if needs_reference and benchlib.version("transitions") == "missing":
        print(MISSING_TRANSITIONS, file=sys.stderr, end="")
        return 2
    if args.profile:
        print(profile(*args.profile, args.size, args.profile_runs))
        return 0

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    report = run_bench(args.size, args.repeat, args.min_time, args.sweep, log)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
