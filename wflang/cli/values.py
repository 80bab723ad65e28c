"""Values read from the command line: bounded numbers, durations, JSON objects, the
handler modules to import; and how times and outcomes are printed."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from attrs import field

from wflang.cli.framework import UsageError, arg, flag_field

if TYPE_CHECKING:
    from wflang.handlers.registry import Registry
    from wflang.runtime.ir import Value
    from wflang.runtime.limits import Limits

#: How values are written in JSON inputs, payloads and outputs (the help says it).
JSON_TYPES = (
    "decimals are JSON numbers, durations integer milliseconds, timestamps epoch milliseconds"
)
#: The highest workflow version (``runtime.versions.MAX_VERSION``; a test keeps them equal).
MAX_VERSION = 2**31 - 1
#: The largest value accepted (``runtime.validate.MAX_VALUE_BYTES``; kept equal by a test).
MAX_VALUE_BYTES = 256 * 1024


def bounded(low: int, high: int, unit: int = 1, units: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high``, given in ``unit``s of
    it (``--lease`` in seconds, kept in milliseconds: 1000). Anything else (``nan``,
    ``inf``, ``1e999999999``, 40 digits) is a usage error before anything opens."""

    def parse(text: str) -> int:
        try:
            number = Decimal(text.strip()) * unit
            if unit != 1:  # a finer fraction than the unit kept is rounded away
                number = number.to_integral_value()
            fits = number.is_finite() and low <= number <= high and number % 1 == 0
        except ArithmeticError:  # not a number at all, or beyond any precision
            fits = False
        if not fits:
            if unit == 1:
                raise argparse.ArgumentTypeError(
                    f"'{text}' is not a whole number from {low:,} to {high:,}"
                )
            span = f"{low / unit:,g} to {high / unit:,g} {units}".rstrip()
            raise argparse.ArgumentTypeError(f"'{text}' is not a number from {span}")
        return int(number)

    return parse


#: A count or a batch: at least 1, and within the stores' 64-bit integers.
positive = bounded(1, 2**63 - 1)
#: A workflow version, as the language bounds it (what every store holds).
version_number = bounded(1, MAX_VERSION)

#: ``runtime.limits.Limits()``: the defaults of the limits on the values an instance
#: computes, for the help (a test keeps them equal).
LIMITS = {
    "string_chars": 1_000_000,
    "list_items": 100_000,
    "list_elements": 1_000_000,
    "context_chars": 16_000_000,
}
_LIMIT_HELP = {
    "string_chars": "the longest string an expression may build, in characters",
    "list_items": "the most items a list an expression builds may hold",
    "list_elements": "the most list items one evaluation of an expression may touch",
    "context_chars": "the largest context of an instance, in characters of JSON",
}


def limit_field(name: str) -> Any:
    """``--max-string-chars N`` and its kin: a field of ``runtime.limits.Limits``."""
    default = LIMITS[name]
    return field(
        default=default,
        metadata=arg(
            f"--max-{name.replace('_', '-')}",
            type=positive,
            metavar="N",
            help=f"{_LIMIT_HELP[name]} (default {default:,}; see Limits in docs/runtime.md)",
        ),
    )


def limits(string_chars: int, list_items: int, context_chars: int, list_elements: int) -> Limits:
    """The ``Limits`` the options name."""
    from wflang.runtime.limits import Limits

    return Limits(
        string_chars=string_chars,
        list_items=list_items,
        context_chars=context_chars,
        list_elements=list_elements,
    )


#: The most read from an ``@file`` of JSON: room for indentation around a value of the
#: largest size accepted (``MAX_VALUE_BYTES`` as compact JSON); a longer file, or a
#: device that never ends (``@/dev/zero``), is refused after reading this much.
MAX_JSON_FILE_BYTES = 16 * MAX_VALUE_BYTES


def json_arg(text: str, what: str) -> dict[str, Value]:
    """A JSON object from the command line, or from a file with ``@path``; decimals exact.
    Whatever the text holds, a problem with it is a usage error that says what."""
    import json

    from wflang.runtime import codec

    if text.startswith("@"):
        path = text[1:]
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_JSON_FILE_BYTES + 1)
        except OSError as err:
            raise UsageError(f"cannot read {path}: {err.strerror or err}") from err
        if len(data) > MAX_JSON_FILE_BYTES:
            raise UsageError(f"{what}: {path} is longer than {MAX_JSON_FILE_BYTES:,} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            where = f"{err.reason} at byte {err.start}"
            raise UsageError(f"{what}: {path} is not UTF-8 text ({where})") from None
    try:
        parsed = codec.loads(text)
    except RecursionError:
        raise UsageError(f"{what} is nested too deeply") from None
    except ValueError as err:  # not JSON, or an integer beyond Python's digit limit
        reason = (
            str(err)
            if isinstance(err, json.JSONDecodeError)
            else f"a number has more than {sys.get_int_max_str_digits():,} digits"
        )
        raise UsageError(f"{what} is not JSON: {reason}") from None
    if not isinstance(parsed, dict):
        raise UsageError(f"{what} must be a JSON object, not {type(parsed).__name__}")
    return parsed


def load_handlers(names: Sequence[str]) -> Registry:
    """The handlers of the modules named: by name (``order_handlers``, found on
    ``sys.path``) or by file (``examples/order_handlers.py``, whose folder is put on
    ``sys.path`` so that it imports its neighbours). A module that is missing or fails
    while it loads is a usage error naming what it raised."""
    from wflang.handlers.load import HandlersError, load

    try:
        return load(names)
    except HandlersError as err:
        raise UsageError(str(err)) from err


def allow_missing_field() -> Any:
    return flag_field(
        "--allow-missing-handlers",
        help=(
            "start even if a service the workflows call has no handler (its calls "
            "fail with NoHandler)"
        ),
    )


def allow_unused_field() -> Any:
    return flag_field(
        "--allow-unused-handlers", help="start even if a handler serves a service no workflow calls"
    )


_AGE_UNITS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_AGE = re.compile(r"(\d+)(ms|s|m|h|d|w)")
MAX_AGE_MS = 100 * 365 * 86_400_000  # ages and TTLs beyond are surely typos


def parse_age(text: str, option: str = "--older-than") -> int:
    """``30d``, ``12h``, ``1d12h``, ``90m``, ``0s``: milliseconds."""
    parts = _AGE.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise UsageError(
            f"{option}: '{text}' is not a duration: write a number and a unit "
            "(ms, s, m, h, d, w), e.g. 30d, 12h or 1d12h"
        )
    total = sum(int(n) * _AGE_UNITS[u] for n, u in parts)
    if total > MAX_AGE_MS:
        raise UsageError(f"{option}: '{text}' is longer than 100 years")
    return total


def when(ms: int | None) -> str:
    """A time in milliseconds since the epoch, for people (UTC)."""
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def outcome_label(status: str) -> str:
    """What an instance's ``error`` field is called when printed: the error of a failed or
    dead-lettered instance, the reason a compensated or cancelled one ended so."""
    from wflang.runtime.instance import Status  # loaded: the caller shows an instance

    return "error" if status in (Status.FAILED.value, Status.DEAD_LETTERED.value) else "reason"
