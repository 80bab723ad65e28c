"""Timestamps and durations written as text in JSON from outside (issue 14, item 4).

The runtime keeps a ``timestamp`` as epoch milliseconds and a ``duration`` as
milliseconds, and JSON may give either so. A person or another system may also write
them as text, as the language writes its literals: a timestamp in ISO-8601 with an
offset (``2026-12-01T10:00:00Z``, ``2026-12-01T11:00:00+01:00``), a duration in
ISO-8601 without years or months (``PT10M``, ``P1DT12H``) or in the language's own form
(``10m``, ``1h30m``, ``250ms``). The walk of a value from outside (``runtime.fit``)
reads such text in a field declared with one of these types as the milliseconds before
the value goes anywhere: the instance, its history and the stores hold only the
integers. Text that reads as neither is refused there, with the field's path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_SIMPLE = re.compile(r"(?:[0-9]+(?:ms|s|m|h|d|w))+")
_SIMPLE_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_SIMPLE_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_ISO = re.compile(
    r"P(?:([0-9]+)W)?(?:([0-9]+)D)?"
    r"(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+)(?:\.([0-9]{1,3}))?S)?)?"
)
_ISO_MS = (604_800_000, 86_400_000, 3_600_000, 60_000, 1000)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INT64 = 2**63
#: How the runtime's time types may be written in JSON, for the refusals' words.
FORMS = {
    "timestamp": "epoch milliseconds or ISO-8601 text such as 2026-12-01T10:00:00Z",
    "duration": "integer milliseconds or text such as PT10M or 10m",
}


def timestamp_ms(text: str) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp with an offset (a finer fraction cut
    off towards the past), or None when the text is not one."""
    if _TIMESTAMP.fullmatch(text) is None:
        return None
    try:
        return (datetime.fromisoformat(text) - _EPOCH) // timedelta(milliseconds=1)
    except ValueError:  # not a real date (2026-02-30)
        return None


def duration_ms(text: str) -> int | None:
    """Milliseconds of a duration (``PT10M``, ``P1DT12H``, ``10m``, ``1h30m``), or None
    when the text is not a fixed duration that fits 64 bits."""
    if _SIMPLE.fullmatch(text):
        total = sum(int(n) * _SIMPLE_MS[unit] for n, unit in _SIMPLE_PART.findall(text))
    else:
        m = _ISO.fullmatch(text)
        if m is None or text in ("P", "PT") or text.endswith("T"):
            return None
        *parts, fraction = m.groups()
        total = sum(int(n) * ms for n, ms in zip(parts, _ISO_MS, strict=True) if n)
        total += int((fraction or "0").ljust(3, "0"))
    return total if total < _INT64 else None


#: The reader of each time type's text: its milliseconds, or None.
READERS: dict[str, Callable[[str], int | None]] = {
    "timestamp": timestamp_ms,
    "duration": duration_ms,
}


def timestamp_text(ms: int) -> str | None:
    """An instant for people: ISO-8601 in UTC (``2026-12-01T10:00:00Z``, with ``.250``
    when it has milliseconds), as the language writes it; None past what ISO-8601
    writes (years 1 to 9999)."""
    try:
        moment = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None
    fraction = f".{ms % 1000:03d}" if ms % 1000 else ""
    return moment.replace(tzinfo=None).isoformat(timespec="seconds") + fraction + "Z"


#: The units of the language's durations, largest first (no weeks: ``14d`` reads at once).
_UNITS_DOWN = tuple((unit, _SIMPLE_MS[unit]) for unit in ("d", "h", "m", "s", "ms"))


def duration_text(ms: int) -> str:
    """A duration for people, as the language writes it: ``1h30m``, ``250ms``, ``0s``
    (``-`` before a negative one, which a difference of timestamps may be)."""
    if ms == 0:
        return "0s"
    left, parts = abs(ms), []
    for unit, size in _UNITS_DOWN:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return ("-" if ms < 0 else "") + "".join(parts)
