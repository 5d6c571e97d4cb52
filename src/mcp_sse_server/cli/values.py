"""Option values read from the command line: durations, sizes and KEY=VALUE words."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import click

_QUANTITY: Final = r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*"
_DURATION_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_SIZE_UNITS: Final = {
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
}


def _quantity(text: str, what: str, units: Mapping[str, float], bare: str, usage: str) -> float:
    """A number with an optional unit (``bare`` when none is written), scaled to the base unit."""
    match = re.fullmatch(_QUANTITY, text)
    factor = units.get(match.group(2).lower() or bare) if match is not None else None
    if match is None or factor is None:
        raise ValueError(f"{text!r} is not a {what}; use {usage}")
    value = float(match.group(1)) * factor
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is too large for a {what}")
    return value


def parse_duration(text: str) -> float:
    """Seconds from ``"90"``, ``"90s"``, ``"30m"``, ``"12h"``, ``"1.5d"`` or ``"500ms"``.

    >>> parse_duration("30m"), parse_duration("12h"), parse_duration("2.5")
    (1800.0, 43200.0, 2.5)
    """
    seconds = _quantity(text, "duration", _DURATION_UNITS, "s", "seconds or a unit: 500ms, 90s, 30m, 12h, 1d")
    if seconds <= 0:
        raise ValueError(f"{text!r}: a duration must be positive")
    return seconds


def parse_size(text: str) -> int:
    """Bytes from ``"4194304"``, ``"4M"``/``"4MiB"`` (binary) or ``"4MB"`` (decimal).

    >>> parse_size("4M"), parse_size("64kb"), parse_size("100")
    (4194304, 64000, 100)
    """
    size = int(_quantity(text, "size", _SIZE_UNITS, "b", "bytes or a unit: 64K, 4M, 4MB, 1G"))
    if size <= 0:
        raise ValueError(f"{text!r}: a size must be positive")
    return size


class _Parsed(click.ParamType):  # type: ignore[type-arg, unused-ignore]  # generic only in newer click
    def __init__(self, name: str, parse: Callable[[str], Any]) -> None:
        self.name = name
        self._parse = parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self._parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


DURATION: Final = _Parsed("duration", parse_duration)
SIZE: Final = _Parsed("size", parse_size)


def split_pair(word: str) -> tuple[str, str] | None:
    """``(key, value)`` for ``"key=value"``; None for a word without ``=`` or without a key."""
    key, sep, value = word.partition("=")
    return (key, value) if sep and key else None


def pairs(values: Sequence[str]) -> dict[str, str]:
    """``["K=V", ...]`` as a dict; a usage error for an item without ``=``."""
    out: dict[str, str] = {}
    for item in values:
        pair = split_pair(item)
        if pair is None:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE")
        out[pair[0]] = pair[1]
    return out
