"""Source text to typed spec: the one entry point of the language front end.

``parse(text, file)`` never raises for bad input: it returns a ``ParseResult``
holding the spec (None when the file has errors) and every diagnostic. Syntax
errors are recovered from with Lark's LALR ``on_error`` hook, so one run reports
every error in a file: a misspelt keyword is replaced, a missing token such as
``->`` or ``}`` is inserted, and otherwise tokens are skipped until the parse
can go on (errors while skipping are not reported, to avoid cascades).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from attrs import frozen
from lark import Lark, Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lexer import LexerThread
from lark.parsers.lalr_analysis import Shift

from wflang.dsl import diagnostics as diag
from wflang.dsl import spec as sp
from wflang.dsl.build import BuildContext, SpecBuilder
from wflang.dsl.parser_cache import cached_parser, save_patterns
from wflang.dsl.source import MAX_SOURCE_BYTES, SourceError, read_source
from wflang.dsl.span import Span
from wflang.dsl.syntax import Vocabulary, hint_for
from wflang.grammar import grammar_text

#: Past this many syntax errors in one file the parse stops; the rest is noise.
MAX_SYNTAX_ERRORS = 50
#: Tokens tried, in order, when repairing a syntax error by inserting one token.
_INSERTABLE: tuple[tuple[str, str], ...] = (
    ("ARROW", "->"),
    ("RBRACE", "}"),
    ("RPAR", ")"),
    ("RSQB", "]"),
    ("COLON", ":"),
    ("COMMA", ","),
    ("NEXT", "next"),
    ("LBRACE", "{"),
    ("NAME", "_"),
)
_SUPPRESSION = re.compile(r"//\s*wf:\s*ignore(-file)?(?:\[([^\]]*)\]|\s*$)")


@frozen
class ParseResult:
    """The outcome of parsing one source: spec (None on error), findings, text.

    ``text`` is the source with every line break as ``\n`` (spans count lines in it);
    ``normalized`` says that the source had ``\r\n`` or ``\r`` line breaks.
    """

    file: str
    text: str
    spec: sp.WorkflowSpec | None
    diagnostics: tuple[diag.Diagnostic, ...]
    normalized: bool = False

    @property
    def ok(self) -> bool:
        return self.spec is not None


_BUILDER = SpecBuilder()


def _on_comment(tok: Token) -> Token:
    ctx = _BUILDER.ctx
    span = Span(ctx.file, tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0)
    ctx.comments.append(sp.Comment(str(tok), span=span))
    return tok


def make_parser(transformer: SpecBuilder | None = None) -> Lark:
    """The LALR parser for the wflang grammar.

    With ``transformer`` it is tree-less and collects comments into the parse's
    context; without, it is the plain tree-building parser (used as a reference).
    """
    callbacks = {"LINE_COMMENT": _on_comment, "BLOCK_COMMENT": _on_comment} if transformer else {}
    options = {
        "parser": "lalr",
        "lexer": "contextual",
        "propagate_positions": True,
        "maybe_placeholders": True,
        "transformer": transformer,
        "lexer_callbacks": callbacks,
    }
    return cached_parser(grammar_text(), options)  # built once per grammar, then loaded


@cache
def _parser() -> tuple[Lark, Vocabulary]:
    lark = make_parser(_BUILDER)
    return lark, Vocabulary.of(lark)


def vocabulary() -> Vocabulary:
    """The words of the grammar as the parser knows them: its keywords and terminals."""
    return _parser()[1]


@cache
def _every_terminal_lexer() -> Any:
    return make_parser()._build_lexer(dont_ignore=True)  # Lark has no public way to it


def lex(text: str) -> Iterator[Token]:
    """Every token of ``text`` in order, blanks and comments included (for tools that
    work on tokens). Raises Lark's ``UnexpectedCharacters`` where the text stops lexing."""
    thread = LexerThread.from_text(_every_terminal_lexer(), text)
    tokens: Iterator[Token] = thread.lex(None)  # type: ignore[no-untyped-call]  # Lark's lexer is untyped
    return tokens


def parse(text: str, file: str = "<string>") -> ParseResult:
    """Parse wflang source text into a spec and diagnostics; never raises on bad input."""
    if len(text) > MAX_SOURCE_BYTES:
        return _refuse(file, text, f"the file is {len(text):,} characters; the limit is "
                       f"{MAX_SOURCE_BYTES:,}")  # fmt: skip
    # \r\n and a lone \r end a line as \n does (else a `//` comment in a file with
    # old Mac line breaks would run to the end of the file).
    normalized = "\r" in text
    if normalized:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lark, vocab = _parser()
    ctx = BuildContext(file=file, diagnostics=[], comments=[], depth={})
    recovery = _Recovery(ctx, vocab, text)
    _BUILDER.begin(ctx)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the parse makes many small objects and no cycles
    spec: sp.WorkflowSpec | None = None
    try:
        result = lark.parse(text, on_error=recovery)
        if isinstance(result, sp.WorkflowSpec):
            spec = result
    except UnexpectedInput as err:
        recovery.last(err)
    except (LarkError, RecursionError) as err:  # pragma: no cover - defensive
        recovery.internal(err)
    finally:
        _BUILDER.end()
        if gc_was_enabled:
            gc.enable()
    save_patterns(lark)  # the scanners of states no parse had met before
    found = _dedupe(_trusted(ctx.diagnostics))
    if any(d.severity is diag.Severity.ERROR for d in found) or spec is None:
        return ParseResult(file, text, None, found, normalized)
    comments = tuple(ctx.comments)
    spec = sp.WorkflowSpec(
        spec.file,
        spec.header,
        spec.items,
        suppressions=suppressions_of(comments),
        comments=comments,
        span=spec.span,
    )
    return ParseResult(file, text, spec, found, normalized)


def parse_bytes(data: bytes, file: str) -> ParseResult:
    """Decode UTF-8 (reporting the first bad byte by line and column), then parse."""
    if len(data) > MAX_SOURCE_BYTES:  # it may have been read only this far
        return _refuse(file, "", f"the file is too large: the limit is {MAX_SOURCE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        good = data[: err.start].decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        line = good.count("\n") + 1
        column = len(good) - good.rfind("\n")  # in code points, as in every span
        bad = data[err.start : err.start + 1].hex()
        return _refuse(
            file,
            good,
            f"the file is not valid UTF-8: byte 0x{bad} at line {line}, column {column}",
            Span(file, line, column, line, column + 1),
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse(text, file)


def parse_file(path: str | Path) -> ParseResult:
    """Read and parse a .wf file; I/O errors become a WF005 diagnostic."""
    try:
        data = read_source(path, regular_only=False)
    except SourceError as err:
        return _refuse(str(path), "", f"cannot read the file: {err}")
    return parse_bytes(data, str(path))


def _refuse(file: str, text: str, message: str, span: Span | None = None) -> ParseResult:
    where = span or Span(file, 1, 1, 1, 1)
    d = diag.Diagnostic.of(diag.INVALID_SOURCE, message, where)
    return ParseResult(file, text, None, (d,))


#: Findings of the builder that stay true after a syntax-error repair upstream.
_LOCAL_CODES = frozenset({diag.INVALID_LITERAL.id, diag.UNKNOWN_FUNCTION.id})


def _trusted(found: list[diag.Diagnostic]) -> list[diag.Diagnostic]:
    """Drop what the builder said about code after the first syntax error.

    Recovery inserts and skips tokens, so structural findings past that point
    (a clause 'given twice') may be artefacts of the repair, not of the source.
    """
    syntax = [d.span for d in found if d.code == diag.SYNTAX_ERROR.id]
    if not syntax:
        return found
    first = min((s.line, s.column) for s in syntax)
    return [
        d
        for d in found
        if d.code == diag.SYNTAX_ERROR.id
        or d.code in _LOCAL_CODES
        or (d.span.end_line, d.span.end_column) < first
    ]


def _dedupe(found: list[diag.Diagnostic]) -> tuple[diag.Diagnostic, ...]:
    seen: set[tuple[str, int, int, str]] = set()
    unique = []
    for d in found:
        key = (d.code, d.span.line, d.span.column, d.message)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return diag.sorted_diagnostics(unique)


def suppressions_of(comments: tuple[sp.Comment, ...]) -> tuple[sp.Suppression, ...]:
    """The ``// wf: ignore[…]`` comments among a file's comments."""
    found = []
    for c in comments:
        m = _SUPPRESSION.match(c.text)
        if m:
            codes = tuple(x.strip() for x in (m.group(2) or "").split(",") if x.strip())
            found.append(sp.Suppression(codes, bool(m.group(1)), c.span.line, span=c.span))
    return tuple(found)


class _Recovery:
    """Lark's ``on_error`` callback: report the error, repair or skip, go on."""

    def __init__(self, ctx: BuildContext, vocab: Vocabulary, text: str) -> None:
        self.ctx = ctx
        self.vocab = vocab
        self.text = text
        self.errors = 0
        self.stopped = False  # past MAX_SYNTAX_ERRORS: the parse ends where it is
        self.skipping_after: int | None = None  # end offset of the last skipped token
        self.last_line = 0  # line of the last reported error

    def __call__(self, err: UnexpectedInput) -> bool:
        if isinstance(err, UnexpectedCharacters):
            if not self._same_line(err.line):
                self.report(err)
            return not self.stopped
        if not isinstance(err, UnexpectedToken):
            return False
        token = err.token
        ip = err.interactive_parser
        at_end = token.type == "$END"
        repair = None if at_end else self._replacement(err) or self._insertion(err)
        closes = at_end or (repair is not None and repair[0].type == "RBRACE")
        if not self._continues_skip(token) and not self._same_line(err.line):
            self.report(err, _innermost_open_brace(ip) if closes else None)
        if self.stopped:
            return False
        if at_end:
            return self._close_blocks(ip)
        if repair is not None:
            self.skipping_after = None
            for t in repair:
                ip.feed_token(t)
            return True
        self.skipping_after = token.end_pos
        return True  # Lark drops the token and goes on

    # -- repairs ---------------------------------------------------------------

    def _replacement(self, err: UnexpectedToken) -> tuple[Token, ...] | None:
        """A misspelt keyword: feed the keyword it was probably meant to be."""
        token = err.token
        if token.type != "NAME":
            return None
        choices = _choices(err.interactive_parser)
        word = self.vocab.keyword_suggestion(str(token), choices)
        if word is None:
            return None
        fixed = Token.new_borrow_pos(self.vocab.keywords[word], word, token)
        return (fixed,) if _would_take(err.interactive_parser, [fixed.type]) else None

    def _insertion(self, err: UnexpectedToken) -> tuple[Token, ...] | None:
        """A missing token: insert one after which the offending token fits."""
        choices = _choices(err.interactive_parser)
        for kind, value in _INSERTABLE:
            if kind in choices and _would_take(err.interactive_parser, [kind, err.token.type]):
                return (Token.new_borrow_pos(kind, value, err.token), err.token)
        return None

    def _close_blocks(self, ip: object) -> bool:
        """At end of file, close open blocks so that the parse can finish."""
        close = Token("RBRACE", "}")
        for _ in range(256):
            choices = _choices(ip)
            if "$END" in choices:
                return True
            if "RBRACE" not in choices:
                return False
            try:
                ip.feed_token(close)  # type: ignore[attr-defined]
            except LarkError:
                return False
        return False

    def _continues_skip(self, token: Token) -> bool:
        """True when nothing was parsed since the last skipped token (a cascade)."""
        if self.skipping_after is None:
            return False
        if token.type == "$END":
            return _only_trivia(self.text[self.skipping_after :])
        if token.start_pos is None:
            return False
        return _only_trivia(self.text[self.skipping_after : token.start_pos])

    def _same_line(self, line: int) -> bool:
        """One error per line: a second one on the same line is most often a cascade."""
        return line > 0 and line == self.last_line

    # -- reporting -------------------------------------------------------------

    def last(self, err: UnexpectedInput) -> None:
        """The error that ended the parse: reported unless it continues a cascade."""
        token = getattr(err, "token", None)
        if self.stopped:
            return
        if self.errors and isinstance(token, Token) and self._continues_skip(token):
            return
        if self.errors and token is not None and token.type == "$END":
            return  # recovery already reported why the file ends unfinished
        self.report(err)

    def report(self, err: UnexpectedInput, open_brace: Token | None = None) -> None:
        """Report a syntax error; ``open_brace`` is the '{' of a block it leaves open."""
        file = self.ctx.file
        line, column = err.line if err.line > 0 else 1, err.column if err.column > 0 else 1
        if self.errors >= MAX_SYNTAX_ERRORS:
            self.stopped = True
            note = (
                f"stopped after {MAX_SYNTAX_ERRORS} syntax errors; "
                "the rest of the file is not checked"
            )
            self.ctx.diagnostics.append(
                diag.Diagnostic.of(
                    diag.SYNTAX_ERROR,
                    note,
                    Span(file, line, column, line, column),
                    hint="fix these errors first",
                    severity=diag.Severity.INFO,
                )
            )
            return
        self.errors += 1
        self.last_line = err.line
        if isinstance(err, UnexpectedToken):
            token = err.token
            expected = _expected(err)
            found = self.vocab.found(token)
            if token.type == "$END":
                line, column = _end_position(self.text)
                span = Span(file, line, column, line, column)
            else:
                span = Span(
                    file, line, column, token.end_line or line, token.end_column or column + 1
                )
            message = f"unexpected {found}; expected {self.vocab.expected(expected)}"
            hint = hint_for(self.vocab, token, expected)
            start = token.start_pos
            if token.type == "NAME" and start and self.text[start - 1].isdigit():
                hint = "durations are written like 500ms, 90s, 15m, 2h, 3d, 1w or P1DT2H"
        elif isinstance(err, UnexpectedCharacters):
            pos = int(getattr(err, "pos_in_stream", 0) or 0)
            char = self.text[pos] if pos < len(self.text) else ""
            shown = repr(char)[1:-1] if char.isprintable() else f"\\u{ord(char):04x}"
            message = f"unexpected character '{shown}'; expected {self.vocab.expected(err.allowed)}"
            span = Span(file, line, column, line, column + 1)
            hint = _char_hint(char)
        else:
            message = str(err).splitlines()[0]
            span = Span(file, line, column, line, column + 1)
            hint = None
        related: tuple[diag.Related, ...] = ()
        if open_brace is not None:
            at = Span(file, open_brace.line or 1, open_brace.column or 1,
                      open_brace.end_line or 1, open_brace.end_column or 2)  # fmt: skip
            related = (diag.Related(at, "unclosed '{'"),)
            hint = hint or f"is a '}}' missing? The '{{' on line {at.line} is not closed"
        self.ctx.diagnostics.append(
            diag.Diagnostic.of(diag.SYNTAX_ERROR, message, span, hint=hint, related=related)
        )

    def internal(self, err: BaseException) -> None:  # pragma: no cover - defensive
        message = f"the parser could not continue: {type(err).__name__}"
        self.ctx.diagnostics.append(
            diag.Diagnostic.of(diag.INVALID_SOURCE, message, Span(self.ctx.file, 1, 1, 1, 1))
        )


def _would_take(ip: object, kinds: list[str]) -> bool:
    """Whether the parser would take tokens of these kinds, one after the other.

    Runs the LALR table over the state stack without copying it (states pushed go on
    a small list of their own) and builds no values. Lark's own trial copy deep-copies
    the value stack, which holds everything parsed so far, so each repair cost time in
    proportion to the file before it (quadratic recovery).
    """
    state: Any = ip.parser_state  # type: ignore[attr-defined]
    states = state.parse_conf.states
    below: list[Any] = state.state_stack
    kept = len(below)  # entries of ``below`` not yet popped
    pushed: list[Any] = []
    for kind in kinds:
        while True:
            row = states[pushed[-1] if pushed else below[kept - 1]]
            if kind not in row:
                return False
            action, arg = row[kind]
            if action is Shift:
                pushed.append(arg)
                break
            size = len(arg.expansion)  # reduce by the rule ``arg``, then take its goto
            from_pushed = min(size, len(pushed))
            del pushed[len(pushed) - from_pushed :]
            kept -= size - from_pushed
            pushed.append(states[pushed[-1] if pushed else below[kept - 1]][arg.origin.name][1])
    return True


def _innermost_open_brace(ip: object) -> Token | None:
    """The '{' of the innermost open block: the last one still on the value stack."""
    state: Any = ip.parser_state  # type: ignore[attr-defined]
    for value in reversed(state.value_stack):
        if isinstance(value, Token) and value.type == "LBRACE":
            return value
    return None


def _choices(ip: object) -> dict[str, object]:
    """The terminals (and rules) the parser can take next, from its LALR table row."""
    choices: dict[str, object] = ip.choices()  # type: ignore[attr-defined]
    return choices


def _expected(err: UnexpectedToken) -> set[str]:
    try:
        accepts = err.accepts
    except (LarkError, AttributeError, TypeError):
        accepts = None
    return set(accepts or err.expected)


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


#: Possessive: ``(\s+|...)*`` backtracked exponentially over a long run of blanks.
_TRIVIA = re.compile(r"(?:\s++|//[^\n]*+|/\*.*?\*/)*+", re.S)


def _only_trivia(text: str) -> bool:
    return _TRIVIA.fullmatch(text) is not None


def _char_hint(char: str) -> str | None:
    if char == "'":
        return 'strings are written in double quotes: "text"'
    if char in "&|":
        return "use 'and' / 'or'"
    if char == "!":
        return "use 'not' to negate, or '!=' to compare"
    if char == "#":
        return "comments start with '//'"
    if char == '"':
        return 'a string must end with " on the same line'
    if char == ";":
        return "statements need no ';'"
    return None
