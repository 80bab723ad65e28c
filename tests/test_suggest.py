"""Hints for misspelt names stay right and near-linear with thousands of typos
(issue 12, checker item 6): the results are asserted here, never the time."""

from __future__ import annotations

import pytest

from wflang.compiler.check import check
from wflang.compiler.config import Config
from wflang.compiler.registry import Preset
from wflang.compiler.suggest import SCAN_ALL, NearNames
from wflang.compiler.symbols import did_you_mean
from wflang.dsl.parser import parse


def typos(n: int) -> str:
    """n tasks in a chain, each naming the next with a letter too many."""
    tasks = "".join(
        f"task step_{i:04d}: script {{\n    next stepp_{i + 1:04d}\n}}\n\n" for i in range(n - 1)
    )
    return (
        f"workflow big version 1\n\nstart step_0000\n\n{tasks}"
        f"task step_{n - 1:04d}: script {{\n    next done\n}}\n\nend done: completed\n"
    )


def test_thousands_of_typos_each_get_the_name_they_meant() -> None:
    n = 3000
    result = check([parse(typos(n), "big.wf")], Config(Preset.RECOMMENDED))
    found = [d for d in result.diagnostics if d.code == "WF102"]
    assert [(d.message, d.hint) for d in found] == [
        (f"unknown node 'stepp_{i:04d}'", f"did you mean 'step_{i:04d}'?") for i in range(1, n)
    ]


NAMES = [f"charge_card_{i}" for i in range(SCAN_ALL * 3)] + ["ship_order", "refund_payment"]


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("shipp_order", "ship_order"),  # a letter added
        ("shp_order", "ship_order"),  # dropped
        ("shop_order", "ship_order"),  # changed
        ("hsip_order", "ship_order"),  # two swapped
        ("refund_paymnet", "refund_payment"),
        ("charge_card_17x", "charge_card_17"),
        ("ship_order", "ship_order"),
        ("nothing_like_it", None),
    ],
)
def test_a_large_set_finds_the_name_one_edit_away(typo: str, meant: str | None) -> None:
    hint = NearNames(NAMES).hint(typo)
    assert hint == (None if meant is None else f"did you mean '{meant}'?")


@pytest.mark.parametrize("typo", ["shipp", "chrge", "refnd", "x", "done_", "ship_it_now"])
def test_a_small_set_weighs_every_name_as_before(typo: str) -> None:
    names = ["ship", "charge", "refund", "done", "ship_it"]
    assert NearNames(names).hint(typo) == did_you_mean(typo, names)
