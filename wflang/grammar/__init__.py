"""The wflang grammar, shipped as package data: one LALR file, ``wflang.lark``."""

from pathlib import Path

GRAMMAR_FILE = "wflang.lark"


def grammar_text() -> str:
    """Return the text of the grammar, read from the installed package.

    Read as the file beside this module (the wheel installs ``wflang`` as files):
    ``importlib.resources`` would import its readers and ``zipfile`` on the path of
    every ``wf check``, about 10 ms of its startup (issue 13).
    """
    return Path(__file__).with_name(GRAMMAR_FILE).read_text(encoding="utf-8")
