"""JsonLines: a ``RequestLog`` sink that appends each record to a file as one JSON line.

>>> from mcp_sse_server.middleware import RequestLog
>>> log = JsonLines("requests.jsonl")  # doctest: +SKIP
>>> RequestLog(sink=log)  # doctest: +SKIP

Rules, kept here and nowhere else:

1. A record is written as one line of JSON (orjson; a value JSON has no form for is written as
   its ``str``), in the order the requests ended.
2. Lines are buffered in memory and written together: when ``max_lines`` are waiting, when
   ``interval`` seconds have passed since the first of them (a timer on the running event loop),
   and on ``flush()`` and ``close()``. A crash loses at most what waited that long; the request
   path never waits for the disk.
3. A file given by path is opened for appending on the first record, created with it, and closed
   by ``close()``; a binary stream given by the caller is written and flushed, never closed.
4. A write that fails is logged once per failure (``mcp_sse_server.requests``) and its lines are
   dropped: a full disk never fails a request, nor grows the buffer without bound.

Through the ``logging`` module a record costs a ``LogRecord`` and the handler's formatting and
write, per request; this sink costs one ``orjson.dumps`` and an append (bench/middleware.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import IO, Any, Final

import orjson

__all__ = ["JsonLines"]

_logger: Final = logging.getLogger("mcp_sse_server.requests")


class JsonLines:
    """Append ``RequestLog`` records to ``target`` (a path, or a binary stream) as JSON lines,
    buffered: at most ``max_lines`` lines or ``interval`` seconds wait (the module's rules)."""

    def __init__(self, target: str | os.PathLike[str] | IO[bytes], *, max_lines: int = 256, interval: float = 1.0):
        if max_lines < 1 or interval <= 0:
            raise ValueError("JsonLines needs max_lines >= 1 and interval > 0")
        if isinstance(target, (str, os.PathLike)):
            self._path: str | None = os.fspath(target)
            self._stream: IO[bytes] | None = None
        else:
            self._path, self._stream = None, target
        self.max_lines = max_lines
        self.interval = interval
        self._lines: list[bytes] = []
        self._timer: asyncio.TimerHandle | None = None

    def __call__(self, record: dict[str, Any]) -> None:
        lines = self._lines
        lines.append(orjson.dumps(record, default=str, option=orjson.OPT_APPEND_NEWLINE))
        if len(lines) >= self.max_lines:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # (no loop: the next record, or flush(), writes it)
                return
            self._timer = loop.call_later(self.interval, self.flush)

    def flush(self) -> None:
        """Write the lines waiting now (rule 2)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._lines:
            return
        data, self._lines = b"".join(self._lines), []
        try:
            stream = self._stream
            if stream is None:
                assert self._path is not None
                stream = self._stream = open(self._path, "ab")  # noqa: SIM115 (closed by close())
            stream.write(data)
            stream.flush()
        except OSError:
            _logger.exception(
                "could not write %d request log lines to %s", data.count(b"\n"), self._path or "the stream"
            )

    def close(self) -> None:
        """Write what waits, and close the file this sink opened (rule 3)."""
        self.flush()
        if self._path is not None and self._stream is not None:
            self._stream.close()
            self._stream = None
