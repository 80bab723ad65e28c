"""Where the startup of ``wf check`` goes: CPU time per phase, in fresh processes (issue 13).

One command, from the repository root::

    .venv/bin/python bench/startup_phases.py            # 9 processes
    .venv/bin/python bench/startup_phases.py --runs 21 --json

``bench/cli.py`` gives the ratio to a bare Python; this script splits one
``wf check examples/order_saga.wf`` into the phases it goes through, each timed
with ``time.process_time`` inside a fresh process (median over the runs): the
imports in the order the command makes them, loading the cached parser, the
first parse (which builds the lexer's scanners for the parser states it meets)
and the check itself. It also counts, over the whole command, the attrs classes
built and the time attrs spends on them, of which compiling the methods it
generates; and the scanners that Lark's lexer builds. The counting hooks wrap
attrs' and Lark's private functions: they are for this measurement only.

Runs with compiled bytecode, as ``bench/cli.py`` does (a fresh, shared
``PYTHONPYCACHEPREFIX`` filled by a warm-up run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, machine, source_state

#: Run in the measured process: prints one JSON object of milliseconds.
PROBE = r"""
import time
start = time.process_time()
import builtins, contextlib, io, json

import attr._make as attrs_make

counts = {"classes": 0, "class_ms": 0.0, "compile_ms": 0.0, "scanners": 0, "scanner_ms": 0.0}
build_class, compile_ = attrs_make._ClassBuilder.build_class, builtins.compile

def timed_build(self):
    t = time.process_time()
    try:
        return build_class(self)
    finally:
        counts["classes"] += 1
        counts["class_ms"] += 1000 * (time.process_time() - t)

def timed_compile(source, filename, *args, **kwargs):
    t = time.process_time()
    try:
        return compile_(source, filename, *args, **kwargs)
    finally:
        if str(filename).startswith("<attrs generated"):
            counts["compile_ms"] += 1000 * (time.process_time() - t)

attrs_make._ClassBuilder.build_class = timed_build
builtins.compile = timed_compile
phases = {"interpreter": 1000 * start}
mark = start

def phase(name):
    global mark
    now = time.process_time()
    phases[name] = 1000 * (now - mark)
    mark = now

import attrs; phase("attrs")  # imported above, by the hooks
import wflang.cli.app, wflang.cli.source; phase("wflang.cli")
import lark; phase("lark")
import lark.lexer as lark_lexer
build_scanner = lark_lexer.BasicLexer._build_scanner

def timed_scanner(self):
    t = time.process_time()
    try:
        return build_scanner(self)
    finally:
        counts["scanners"] += 1
        counts["scanner_ms"] += 1000 * (time.process_time() - t)

lark_lexer.BasicLexer._build_scanner = timed_scanner
mark = time.process_time()
import wflang.dsl; phase("wflang.dsl")
import wflang.compiler.check, wflang.compiler.report; phase("wflang.compiler")
from wflang.dsl.parser import _parser, parse_file
_parser(); phase("load parser")
parse_file("examples/order_saga.wf"); phase("first parse")
from wflang.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["check", "--no-cache", "examples/order_saga.wf"])
    except SystemExit:
        pass
phase("check (a second parse and the rules)")
phases["total"] = 1000 * time.process_time()
print(json.dumps({"phases": phases, "counts": counts}))
"""


def run_probe(env: dict[str, str]) -> dict[str, dict[str, float]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result: dict[str, dict[str, float]] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wf-phases-") as pyc:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pyc
        run_probe(env)  # warm the bytecode and the parser cache
        runs = [run_probe(env) for _ in range(args.runs)]
    medians = {
        group: {
            key: round(statistics.median(r[group][key] for r in runs), 1) for key in runs[0][group]
        }
        for group in ("phases", "counts")
    }
    source = source_state(("wflang", "bench"), "wflang or bench")
    report = {"machine": machine("lark", "attrs"), "source": source, "runs": args.runs, **medians}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"wf check examples/order_saga.wf: CPU ms per phase, median of {args.runs} processes")
    for name, ms in medians["phases"].items():
        print(f"  {name:<40} {ms:8.1f}")
    c = medians["counts"]
    print(f"  attrs classes built: {c['classes']:.0f}, {c['class_ms']:.1f} ms "
          f"(compiling their methods {c['compile_ms']:.1f} ms)")  # fmt: skip
    print(f"  scanners built by the parses: {c['scanners']:.0f}, {c['scanner_ms']:.1f} ms")


if __name__ == "__main__":
    main()
