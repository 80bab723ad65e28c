"""``wf gen typescript`` (issue 17): the declarations compile with the real TypeScript
compiler (``tsc --strict``), a client written against them compiles, and one that
gives a field the wrong type, a wrong enum member, leaves a required field out or
adds one fails with tsc's own error. tsc is installed with npm into a cache folder the
first time (``.ci/run`` installs node and npm where they are missing)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_gen_json_schema import EVERYTHING, LIBRARY
from wflang.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wflang-tests"
TYPESCRIPT = "typescript@5"


@pytest.fixture(scope="session")
def tsc() -> list[str]:
    """The TypeScript compiler, installed into the cache folder once."""
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed (apt-get install -y nodejs npm)")
    folder = CACHE / "typescript"
    compiler = folder / "node_modules" / "typescript" / "bin" / "tsc"
    if not compiler.exists():
        folder.mkdir(parents=True, exist_ok=True)
        installed = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), TYPESCRIPT],
            capture_output=True,
            text=True,
            check=False,
        )
        assert installed.returncode == 0, f"npm could not install {TYPESCRIPT}:\n{installed.stderr}"
    return [node, str(compiler)]


def compile_ts(tsc: list[str], cwd: Path, *files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tsc, "--noEmit", "--strict", "--pretty", "false", *files],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples' declarations in ``gen/`` and the ``everything`` workflow's in ``all/``."""
    root = tmp_path_factory.mktemp("ts")
    assert main(["gen", "typescript", str(EXAMPLES), "-o", str(root / "gen")]) == 0
    (root / "lib.wf").write_text(LIBRARY, encoding="utf-8")
    (root / "everything.wf").write_text(EVERYTHING, encoding="utf-8")
    assert main(["gen", "typescript", str(root / "everything.wf"), "-o", str(root / "all")]) == 0
    return root


def test_every_example_gives_declarations_tsc_strict_accepts(tsc: list[str], package: Path) -> None:
    names = sorted(p.name for p in (package / "gen").glob("*.d.ts"))
    assert names == sorted(["_wflang.d.ts", *(f"{p.stem}.d.ts" for p in EXAMPLES.glob("*.wf"))])
    checked = compile_ts(tsc, package / "gen", *names)
    assert checked.returncode == 0, checked.stdout


GOOD = """\
import type * as all from "./all/everything";
import type * as lib from "./all/lib";

const corner: lib.Point = { x: 1, label: null };
export const input: all.EverythingInput = {
  name: "n",
  count: 3,
  prices: { a: 1.5, b: null },
  corner,
  wait: "PT10M",
  at: 1796119200000,
  due: "2026-12-01T10:00:00Z",
  speed: "slow",
  lines: [{ sku: "s", price: 2, box: { corner: { x: 2 }, size: "large", tags: [] } }],
  nested: [[corner, null]],
  tree: { kids: [{ kids: [] }] },
};
export const poke: all.PokeSignal = { at: "2026-12-01T10:00Z", boxes: {} };
export const ping: all.PingSignal = {};
export const form: all.CheckForm = { approved: true, speed: null };
export const refused: all.RefusedPayload = { reason: "no", retry_in: 600000 };
export const quote: all.QuoteGetResult = { sku: "s", price: 1 };
export const shipped: all.ShipItResult = { tracking: "t" };
"""

#: A mistake, and what tsc says of it (its code and words).
MISTAKES = {
    "count: 3,": ('count: "3",', "TS2322", "Type 'string' is not assignable to type 'number'"),
    'speed: "slow",': (
        'speed: "medium",',
        "TS2322",
        "Type '\"medium\"' is not assignable to type 'Speed | undefined'",
    ),
    'name: "n",\n': ("", "TS2741", "Property 'name' is missing in type"),
    "tree:": ("colour: 1, tree:", "TS2353", "'colour' does not exist in type 'EverythingInput'"),
    'wait: "PT10M",': (
        "wait: true,",
        "TS2322",
        "Type 'true' is not assignable to type 'Duration | undefined'",
    ),
    "export const ping: all.PingSignal = {};": (
        "export const ping: all.PingSignal = { loud: true };",
        "TS2322",
        "Type 'true' is not assignable to type 'never'",
    ),
}


def test_a_client_that_fits_compiles_and_each_mistake_is_named(
    tsc: list[str], package: Path
) -> None:
    (package / "good.ts").write_text(GOOD, encoding="utf-8")
    checked = compile_ts(tsc, package, "good.ts")
    assert checked.returncode == 0, checked.stdout
    names = []
    for n, (right, (wrong, _, _)) in enumerate(MISTAKES.items()):
        assert right in GOOD, right
        (package / f"bad_{n}.ts").write_text(GOOD.replace(right, wrong, 1), encoding="utf-8")
        names.append(f"bad_{n}.ts")
    checked = compile_ts(tsc, package, *names)
    assert checked.returncode != 0
    for name, (code, words) in zip(names, [(c, w) for _, c, w in MISTAKES.values()], strict=True):
        said = [line for line in checked.stdout.splitlines() if line.startswith(name)]
        assert len(said) == 1, (name, checked.stdout)
        assert f"error {code}: " in said[0] and words in said[0], said[0]


def test_the_declarations_follow_the_language(package: Path) -> None:
    text = (package / "all" / "everything.d.ts").read_text(encoding="utf-8")
    assert 'import type * as _lib from "./lib";' in text
    assert 'export type Speed = "slow" | "fast";' in text
    for line in [
        "  count: number;",
        "  /** Default when left out: 4.95. */\n  amount?: wf.Decimal;",
        "  /** Default when left out: 90m. */\n  wait?: wf.Duration;",
        "  due?: wf.Timestamp | null;",
        "  prices: Record<string, wf.Decimal | null>;",
        "  nested?: Array<Array<_lib.Point | null>> | null;",
        "  corner: _lib.Point;",
        "  tree?: Node | null;",
    ]:
        assert line in text, line
    assert "export type PingSignal = Record<string, never>;" in text
    assert "export type QuoteGetResult = Line;" in text
    scalars = (package / "all" / "_wflang.d.ts").read_text(encoding="utf-8")
    assert "export type Timestamp = string | number;" in scalars
    assert "export type Duration = string | number;" in scalars
    assert "export type Decimal = number;" in scalars


def test_check_exits_1_when_a_declaration_is_stale(
    package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = package / "everything.wf"
    out = tmp_path / "ts"
    assert main(["gen", "typescript", str(flow), "-o", str(out), "--check"]) == 1
    assert "everything.d.ts is stale: run 'wf gen typescript' again" in capsys.readouterr().out
    assert not out.exists()
    assert main(["gen", "typescript", str(flow), "-o", str(out)]) == 0
    assert main(["gen", "typescript", str(flow), "-o", str(out), "--check"]) == 0
    assert "3 files in" in capsys.readouterr().out.splitlines()[-1]
    again = tmp_path / "again"
    assert main(["gen", "typescript", str(flow), "-o", str(again)]) == 0
    for f in out.iterdir():
        assert f.read_bytes() == (again / f.name).read_bytes()


def test_the_examples_declarations_are_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/typescript is what `wf gen typescript examples -o examples/typescript`
    writes."""
    monkeypatch.chdir(ROOT)
    assert main(["gen", "typescript", "examples", "-o", "examples/typescript", "--check"]) == 0


def test_the_typescript_example_of_the_schemas_doc_compiles(tsc: list[str], tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "schemas.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```ts\n(.*?)^```", doc, re.M | re.S)
    shutil.copytree(EXAMPLES / "typescript", tmp_path / "typescript")
    (tmp_path / "client.ts").write_text(block.replace('"./examples/typescript/', '"./typescript/'))
    checked = compile_ts(tsc, tmp_path, "client.ts")
    assert checked.returncode == 0, checked.stdout
    said = doc.replace("\n", " ")
    for right, wrong in [('tier: "gold"', 'tier: "silver"'), ("amount: 12.5", 'amount: "12.5"')]:
        (tmp_path / "client.ts").write_text(
            block.replace('"./examples/typescript/', '"./typescript/').replace(right, wrong)
        )
        checked = compile_ts(tsc, tmp_path, "client.ts")
        (error,) = checked.stdout.splitlines()
        assert f"`{wrong}` makes tsc say `{error.split(': ', 2)[2].rstrip('.')}`" in said or (
            f"`{wrong}`, `{error.split(': ', 2)[2].rstrip('.')}`" in said
        ), error
