"""``Accept`` header evaluation with RFC 9110 media-range precedence.

The most specific range that matches a media type decides its quality, so
``text/*;q=0, */*`` refuses ``text/event-stream`` rather than letting the
wildcard accept it. Results are cached per header value: clients send the
same ``Accept`` on every request.

>>> accepts_json_and_sse(b"application/json, text/event-stream")
(True, True)
>>> accepts_json_and_sse(b"text/*;q=0, */*")
(True, False)
"""

from __future__ import annotations

from typing import Final

__all__ = ["MediaRange", "accepts_json_and_sse", "parse_accept", "quality"]

# (type, subtype, number of parameters other than q, q)
MediaRange = tuple[str, str, int, float]

JSON: Final = ("application", "json")
SSE: Final = ("text", "event-stream")

_CACHE_SIZE: Final = 256
_cache: dict[bytes, tuple[bool, bool]] = {}


def _split_outside_quotes(text: str, separator: str) -> list[str]:
    if '"' not in text:
        return text.split(separator)
    parts: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == separator and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def _parse_q(value: str) -> float | None:
    # RFC 9110 qvalue: 0(.ddd) or 1(.000); anything else makes the range unusable.
    value = value.strip()
    if not value or len(value) > 5 or value[0] not in "01":
        return None
    if len(value) > 1 and (value[1] != "." or (not value[2:].isdigit() and value[2:] != "")):
        return None
    q = float(value)
    return q if q <= 1.0 else None


def parse_accept(header: str) -> list[MediaRange]:
    """The media ranges of an Accept header; malformed members are skipped."""
    ranges: list[MediaRange] = []
    for member in _split_outside_quotes(header, ","):
        pieces = _split_outside_quotes(member, ";")
        media = pieces[0].strip().lower()
        type_, slash, subtype = media.partition("/")
        type_, subtype = type_.strip(), subtype.strip()
        if not slash or not type_ or not subtype or (type_ == "*" and subtype != "*"):
            continue
        q: float | None = 1.0
        params = 0
        for piece in pieces[1:]:
            name, equals, value = piece.partition("=")
            name = name.strip().lower()
            if not name:
                continue
            if name == "q" and equals:
                # Parameters after q are accept-extensions, not media type parameters.
                q = _parse_q(value)
                break
            params += 1
        if q is None:
            continue
        ranges.append((type_, subtype, params, q))
    return ranges


def quality(ranges: list[MediaRange], type_: str, subtype: str) -> float:
    """The q a media type gets from the most specific range matching it (0 when none does)."""
    best_rank = -1
    best_q = 0.0
    for range_type, range_subtype, params, q in ranges:
        if range_type == "*":
            rank = 0
        elif range_type != type_:
            continue
        elif range_subtype == "*":
            rank = 1
        elif range_subtype != subtype:
            continue
        else:
            # Parameters make a range more specific; we do not compare their values
            # (application/json;charset=utf-8 still means JSON to us).
            rank = 2 + min(params, 1)
        if rank > best_rank:
            best_rank, best_q = rank, q
        elif rank == best_rank and q > best_q:
            best_q = q
    return best_q


def accepts_json_and_sse(header: bytes | None) -> tuple[bool, bool]:
    """Whether an Accept header value allows application/json and text/event-stream.

    No header at all means any media type (RFC 9110 section 12.5.1).
    """
    if header is None:
        return True, True
    cached = _cache.get(header)
    if cached is not None:
        return cached
    ranges = parse_accept(header.decode("latin-1"))
    result = (quality(ranges, *JSON) > 0, quality(ranges, *SSE) > 0)
    if len(_cache) >= _CACHE_SIZE:
        _cache.clear()  # a peer cycling through distinct values gains nothing but a re-parse
    _cache[header] = result
    return result
