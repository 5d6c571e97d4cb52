"""An incremental Server-Sent Events parser (the WHATWG event-stream rules).

Bytes go in as they arrive, complete events come out. Lines end with CRLF, LF
or CR (a CR at the end of a chunk may be half of a CRLF split across chunks);
``data`` lines join with newlines; ``id`` persists across events and is
ignored when it contains NUL; ``retry`` is honoured only when it is all
digits; comments and unknown fields are skipped; an event without data is
not dispatched, and a half-received event at the end of the stream is
dropped.

>>> parser = SseParser()
>>> [(e.event, e.data, e.id) for e in parser.feed(b"id: 7\\ndata: a\\ndata: b\\n\\n")]
[('message', 'a\\nb', '7')]
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Final

__all__ = ["SseEvent", "SseParser"]

_LINE_END: Final = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event; ``id`` is the stream's last event id when it was dispatched."""

    event: str
    data: str
    id: str | None


class SseParser:
    """Feed it chunks of an event stream; it returns the events they complete.

    ``last_event_id`` (for ``Last-Event-ID`` on reconnect) and ``retry`` (the
    server's reconnection delay in milliseconds) track the stream as it goes,
    including ids carried by events that had no data.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial: list[str] = []  # pieces of a line whose end has not arrived yet
        self._skip_lf = False
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self.last_event_id: str | None = None
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        if not self._started and (text or self._partial):
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        events: list[SseEvent] = []
        start = 0
        # Only the new text is scanned, so a long line arriving in many chunks costs linear time.
        for match in _LINE_END.finditer(text):
            line = text[start : match.start()]
            if self._partial:
                self._partial.append(line)
                line = "".join(self._partial)
                self._partial.clear()
            start = match.end()
            if start == len(text) and match.group() == "\r":
                self._skip_lf = True
            self._line(line, events)
        if start < len(text):
            self._partial.append(text[start:])
        return events

    def _line(self, line: str, events: list[SseEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self.last_event_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self.retry = int(value)

    def _dispatch(self, events: list[SseEvent]) -> None:
        if self._data:
            events.append(SseEvent(self._event or "message", "\n".join(self._data), self.last_event_id))
        self._data = []
        self._event = ""
