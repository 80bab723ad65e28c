"""The wflang grammar, shipped as package data: one LALR file, ``wflang.lark``."""

from importlib.resources import files

GRAMMAR_FILE = "wflang.lark"


def grammar_text() -> str:
    """Return the text of the grammar, read from the installed package."""
    return files(__name__).joinpath(GRAMMAR_FILE).read_text(encoding="utf-8")
