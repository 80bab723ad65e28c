"""Literal values as the builder reads them: bounded integers, durations, string escapes.

Integers (and durations, in milliseconds) are 64-bit at run time and decimals exact
with at most 34 significant digits; a literal outside is reported (WF002), never held.
"""

from __future__ import annotations

import re
from decimal import Decimal

#: Integers (and durations, in milliseconds) are 64-bit at run time; larger literals are WF002.
MAX_INT = 2**63 - 1
_TOO_BIG = MAX_INT + 1
#: Decimals are exact with at most 34 significant digits at run time (IEEE 754 decimal128,
#: ``wflang.runtime.numbers``); a literal with more could never be held, so it is WF002.
DECIMAL_DIGITS = 34
DECIMAL_EMIN = -6143

_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_UNITS_MS["w"] = 7 * _DURATION_UNITS_MS["d"]
_SIMPLE_DURATION = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_ISO_DATE_PART = re.compile(r"([0-9]+)([YMWD])")
_ISO_TIME_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)([HMS])")
_ISO_TIME_MS = {"H": 3_600_000, "M": 60_000, "S": 1000}
_ISO_DATE_MS = {"W": 7 * 86_400_000, "D": 86_400_000}
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_ESCAPE = re.compile(r"\\(u\{[0-9A-Fa-f]{1,6}\}|.)")


def bounded_int(digits: str) -> int:
    """The value of a run of decimal digits, or any value over MAX_INT when it is larger.

    Python's ``int()`` refuses more than 4,300 digits, and a literal that long is out
    of range anyway, so it is never converted whole.
    """
    digits = digits.lstrip("0")
    return _TOO_BIG if len(digits) > len(str(MAX_INT)) else min(int(digits or "0"), _TOO_BIG)


def parse_duration(text: str) -> int | None:
    """Milliseconds of a duration literal (over MAX_INT when too long), or None when it
    is not a fixed duration."""
    if not text.startswith("P"):
        parts = _SIMPLE_DURATION.finditer(text)
        return min(sum(bounded_int(m[1]) * _DURATION_UNITS_MS[m[2]] for m in parts), _TOO_BIG)
    date, _, time = text[1:].partition("T")
    total = Decimal(0)
    for m in _ISO_DATE_PART.finditer(date):
        if m[2] not in _ISO_DATE_MS:  # years and months have no fixed length
            return None
        total += bounded_int(m[1]) * _ISO_DATE_MS[m[2]]
    for m in _ISO_TIME_PART.finditer(time):
        whole, _, fraction = m[1].partition(".")
        total += Decimal(f"{bounded_int(whole)}.{fraction or 0}") * _ISO_TIME_MS[m[2]]
    return min(int(total), _TOO_BIG)


def unescape(body: str) -> str | None:
    """The value of a string literal's body, or None if it holds an unknown escape."""
    bad = False

    def one(m: re.Match[str]) -> str:
        nonlocal bad
        esc = m.group(1)
        if esc.startswith("u{"):
            code = int(esc[2:-1], 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                bad = True
                return ""
            return chr(code)
        if esc in _ESCAPES:
            return _ESCAPES[esc]
        bad = True
        return ""

    value = _ESCAPE.sub(one, body) if "\\" in body else body
    return None if bad else value


def shown(text: str) -> str:
    """A literal as a message quotes it: whole when short, else its start and its length."""
    return text if len(text) <= 30 else f"{text[:20]}... ({len(text):,} characters)"
