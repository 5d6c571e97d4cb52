"""RequestLog: one structured record per request, with its outcome and duration.

>>> from mcp_sse_server import McpServer
>>> server = McpServer("s", middleware=[RequestLog()])

Rules, kept here and nowhere else:

1. A record is a plain dict: ``method``; ``target`` (the tool or prompt name, resource URI or
   task id, else None); ``outcome`` (``"ok"``, ``"tool_error"`` for a tools/call result with
   ``isError``, ``"input_required"`` for a 2026-07-28 round that asked the client, ``"cancelled"``
   or ``"error"``); ``code`` (the JSON-RPC error code of an error, -32603 for an exception that
   is not an ``McpError``, else None); ``duration_ms``; ``principal`` (``caller.principal_hash``,
   never the token); ``session`` (the first 8 characters of the session id); ``request_id``.
2. No arguments and no results are recorded unless ``include_payloads=True`` (then ``params``
   and ``result``): they may hold what the caller would not have in a log.
3. The record goes to ``logger`` (default ``mcp_sse_server.requests``) at ``level`` as one line
   with the record under ``extra={"mcp": record}``, and to ``sink(record)`` when given. When
   the logger would drop the level and there is no sink, nothing is built.
4. ``subscriptions/listen`` is not timed (it lasts as long as the client listens). A failing
   handler is the logging module's business (``Handler.handleError``), a failing sink is
   logged: neither fails the request.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from ..engine.context import RequestContext
from ..engine.jsonrpc import INTERNAL_ERROR, McpError
from ..engine.middleware import CallNext, Middleware
from ..engine.stateless import InputRequired
from .caller import principal_hash, session_id, target_of

__all__ = ["DEFAULT_LOGGER", "RequestLog"]

DEFAULT_LOGGER: Final = "mcp_sse_server.requests"
"""The logger ``RequestLog`` writes to unless given another."""

_UNTIMED: Final = frozenset({"subscriptions/listen"})
_MESSAGE: Final = "%s %s %s%s %.3f ms"


class _RecordMaker:
    """LogRecords for one logger and level, made from a template: a named speed trick.

    ``Logger.makeRecord`` builds every field anew per record (the source file's base name and
    extension, the thread's and the process's names, the pid), then ``log()`` walks the stack
    for a caller that is always this module. Within one thread all of those are the same for
    every record this middleware writes, so they are taken once per thread from a record the
    logging module made itself, and each record copies them and sets the rest: the time, the
    message and its arguments, and ``mcp``. Every field a ``LogRecord`` documents is set, so
    handlers, filters and formatters see an ordinary record; the record factory the logging
    module was given (``setLogRecordFactory``) makes the template, so its additions are kept.
    Measured in bench/middleware.py ("Middleware" in bench/README.md).
    """

    __slots__ = ("_level", "_logger", "_templates")

    def __init__(self, logger: logging.Logger, level: int) -> None:
        self._logger = logger
        self._level = level
        self._templates: dict[int, tuple[dict[str, Any], float]] = {}

    def make(self, message: str, args: tuple[Any, ...], record: dict[str, Any]) -> logging.LogRecord:
        thread = threading.get_ident()
        found = self._templates.get(thread)
        if found is None:
            made = self._logger.makeRecord(self._logger.name, self._level, __file__, 0, "", (), None, func="on_request")
            # relativeCreated counts from the logging module's load: that moment, in ns.
            started_ns = made.created * 1e9 - made.relativeCreated * 1e6
            found = self._templates[thread] = (dict(made.__dict__), started_ns)
        template, started_ns = found
        now = time.time_ns()
        fields = dict(template)
        fields["msg"] = message
        fields["args"] = args
        fields["created"] = now / 1e9
        fields["msecs"] = float(now % 1_000_000_000 // 1_000_000)
        fields["relativeCreated"] = (now - started_ns) / 1e6
        fields["mcp"] = record
        made = _new_record(logging.LogRecord)
        made.__dict__ = fields
        return made


_new_record: Final = object.__new__


class RequestLog(Middleware):
    """Logs every request (the module's rules): ``RequestLog(logger=None, level=logging.INFO,
    include_payloads=False, sink=None)``."""

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        level: int = logging.INFO,
        include_payloads: bool = False,
        sink: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.logger = logger if logger is not None else logging.getLogger(DEFAULT_LOGGER)
        self.level = level
        self.include_payloads = include_payloads
        self.sink = sink
        self._clock = clock
        self._records = _RecordMaker(self.logger, level)

    async def on_request(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        method = context.method
        if method in _UNTIMED or (self.sink is None and not self.logger.isEnabledFor(self.level)):
            return await call_next(params)  # rule 3: nothing to build
        started = self._clock()
        outcome, result = "error", None
        code: int | None = INTERNAL_ERROR
        try:
            result = await call_next(params)
        except McpError as error:
            code = error.code
            raise
        except InputRequired:
            outcome, code = "input_required", None
            raise
        except asyncio.CancelledError:
            outcome, code = "cancelled", None
            raise
        else:
            outcome, code = ("tool_error" if result.get("isError") is True else "ok"), None
            return result
        finally:
            self._emit(context, params, result, outcome, code, (self._clock() - started) * 1000.0)

    def _emit(
        self,
        context: RequestContext,
        params: dict[str, Any],
        result: dict[str, Any] | None,
        outcome: str,
        code: int | None,
        duration_ms: float,
    ) -> None:
        identifier = session_id(context, params)
        record: dict[str, Any] = {
            "method": context.method,
            "target": target_of(context.method, params),
            "outcome": outcome,
            "code": code,
            "duration_ms": round(duration_ms, 3),
            "principal": principal_hash(context),
            "session": None if identifier is None else identifier[:8],
            "request_id": context.request_id,
        }
        if self.include_payloads:
            record["params"] = params
            record["result"] = result
        logger = self.logger
        if logger.isEnabledFor(self.level):
            summary = (
                record["method"],
                record["target"] or "-",
                outcome,
                "" if code is None else f" {code}",
                duration_ms,
            )
            logger.handle(self._records.make(_MESSAGE, summary, record))
        if self.sink is not None:
            try:
                self.sink(record)
            except Exception:  # rule 4: the request has its answer already
                self.logger.exception("the request log sink failed")
