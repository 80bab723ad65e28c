"""Syntax errors in words: what was found, what was expected, and a hint.

Lark reports terminal names (``RBRACE``, ``__ANON_0``); people need ``'}'`` and
``'->'``, a did-you-mean for a misspelt keyword, and a nudge for the usual slips.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from attrs import frozen
from lark import Lark, Token
from lark.lexer import PatternStr

#: How the terminals that are not fixed strings read in a message.
TERMINAL_WORDS: dict[str, str] = {
    "NAME": "a name",
    "INT": "an integer",
    "DECIMAL": "a decimal number",
    "STRING": "a string",
    "DURATION": "a duration",
    "TIMESTAMP": "a timestamp",
    "COMP_OP": "a comparison",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*' or '/'",
    "END_KIND": "'completed', 'failed', 'cancelled' or 'compensated'",
    "$END": "end of file",
}
_END_KINDS = ("completed", "failed", "cancelled", "compensated")
#: Terminals that only continue an expression; listing them all buries the point.
_OPERATORS = frozenset(
    {"COMP_OP", "ADD_OP", "MUL_OP", "PERCENT", "OR", "AND", "IN", "NOT", "DOT", "LSQB", "SPREAD"}
)


@frozen
class Vocabulary:
    """The words of the grammar: each terminal's display form and the keywords."""

    words: dict[str, str]
    keywords: dict[str, str]  # keyword text -> terminal name

    @classmethod
    def of(cls, parser: Lark) -> Vocabulary:
        words = dict(TERMINAL_WORDS)
        keywords: dict[str, str] = {}
        for term in parser.terminals:
            pattern = term.pattern
            if isinstance(pattern, PatternStr):
                words.setdefault(term.name, f"'{pattern.value}'")
                if pattern.value.replace("_", "").replace("-", "").isalpha():
                    keywords[pattern.value] = term.name
        for kind in _END_KINDS:
            keywords[kind] = "END_KIND"
        return cls(words, keywords)

    def word(self, terminal: str) -> str:
        return self.words.get(terminal, terminal.lower())

    def expected(self, terminals: Iterable[str]) -> str:
        """``'->' or '{'``: the expected terminals in words, in a stable order."""
        names = set(terminals)
        if len(names & _OPERATORS) > 2:
            names = (names - _OPERATORS) | {"<operator>"}
        rendered = sorted(
            {"an operator" if n == "<operator>" else self.word(n) for n in names},
            key=lambda w: (not w.startswith("'"), w != "end of file", w),
        )
        if not rendered:
            return "nothing more"
        if len(rendered) == 1:
            return rendered[0]
        return ", ".join(rendered[:-1]) + " or " + rendered[-1]

    def found(self, token: Token) -> str:
        """How the offending token reads: ``name 'timout'``, ``'}'``, ``end of file``."""
        kind = token.type
        if kind == "$END":
            return "end of file"
        if kind in ("NAME", "INT", "DECIMAL", "DURATION", "TIMESTAMP"):
            return f"{self.word(kind)[self.word(kind).index(' ') + 1 :]} '{token}'"
        if kind == "STRING":
            return f"string {token}"
        return f"'{token}'"

    def keyword_suggestion(self, text: str, expected: Collection[str]) -> str | None:
        """The expected keyword closest to a misspelt word, if one is close."""
        candidates = {k: t for k, t in self.keywords.items() if t in expected}
        import difflib  # only on a syntax error: not on every parse's path

        match = difflib.get_close_matches(text, list(candidates), n=1, cutoff=0.7)
        return match[0] if match else None


def hint_for(vocab: Vocabulary, token: Token, expected: Collection[str]) -> str | None:
    """A hint for the common slips, or None."""
    value = str(token)
    if value == "reads" and "COMMA" in expected and "READS" not in expected:
        return "'reads' comes before 'raises': service s.f(...) -> { ... } reads raises E"
    if token.type == "EQUAL" and "COMP_OP" in expected:
        return "use '==' to compare; '=' only gives a field its default value"
    if token.type == "EQUAL" and "COLON" in expected:
        return "mappings and fields use ':' as in 'name: value'"
    if token.type == "$END":
        if "RBRACE" in expected:
            return "the file ended inside a block: is a '}' missing?"
        return None
    if token.type == "NAME":
        suggestion = vocab.keyword_suggestion(value, expected)
        if suggestion is not None and suggestion != value:
            return f"did you mean '{suggestion}'?"
        if "NEXT" in expected and token.type == "NAME":
            return f"a transition is written 'next {value}'"
    if token.type == "FAT_ARROW":
        return "'x => …' can only be an argument of any(), all(), filter() or map()"
    if token.type == "COLON" and "LBRACE" in expected:
        return "only task, wait, call and end nodes take ': kind' after their name"
    if token.type == "RBRACE" and "NAME" in expected and "ARROW" not in expected:
        return "a name is missing before the '}'"
    return None
