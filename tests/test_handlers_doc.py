"""The Python examples of docs/handlers.md run (issue 17): each passes mypy --strict
against the generated examples/typed package, and the handlers they define serve the
order saga in the test kit. (Its console sessions run in tests/test_docs.py.)"""

from __future__ import annotations

import re
import shutil
import sys
from decimal import Decimal
from pathlib import Path

from tests.test_gen_python import mypy
from wflang.handlers import load
from wflang.runtime import codec
from wflang.runtime.engine import unregister
from wflang.runtime.outcome import TaskCall
from wflang.testing import WorkflowEnv

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "handlers.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)


def test_the_python_examples_of_the_handlers_doc_pass_mypy_and_serve_the_order_saga(
    tmp_path: Path,
) -> None:
    assert len(BLOCKS) == 2
    shutil.copytree(ROOT / "examples" / "typed", tmp_path / "typed")
    names = []
    for n, block in enumerate(BLOCKS):
        (tmp_path / f"doc_example_{n}.py").write_text(block)
        names.append(f"doc_example_{n}.py")
    checked = mypy(tmp_path, *names)
    assert checked.returncode == 0, checked.stdout
    sys.path.insert(0, str(tmp_path))
    try:
        orders = load([str(tmp_path / names[0])])
        env = WorkflowEnv.from_files(ROOT / "examples" / "order_saga.wf", handlers=orders)
        data = codec.loads((ROOT / "examples" / "order_input.json").read_text())
        iid = env.start("order_saga", data)
        assert env.status(iid) == "completed"
        assert env.instance(iid).output == {
            "order_id": "o-1001",
            "shipment_id": "shp-o-1001-GB",
            "status": "shipped",
        }
        charge = load([str(tmp_path / names[1])])
        assert list(charge) == ["payments.charge"]
        call = TaskCall("i", "charge", 1, "k-1")
        args = {"customer_id": "c", "amount": Decimal("2.5"), "currency": "EUR", "key": "k-1"}
        assert charge["payments.charge"](call, **args) == {"charge_id": "ch-k-1", "settled": True}
    finally:
        sys.path.remove(str(tmp_path))
        unregister("payments.charge")
        for name in [m for m in sys.modules if m.startswith(("doc_example_", "typed"))]:
            del sys.modules[name]
