"""RequestContext: what a handler can do while it serves one request.

It sits low in the package: the engine that builds contexts (``protocol.py``)
imports it, and it names what it needs of that engine as ``Peer`` instead of
importing ``Connection`` back.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from typing import Any, Final, Protocol, cast

from . import downlevel
from .jsonrpc import INVALID_PARAMS, JsonRpcNotification, JsonRpcRequest, McpError, RequestId
from .tokens import AccessToken, current_access_token

__all__ = ["LOG_LEVELS", "Peer", "RequestContext", "ToolTask", "current_context"]

logger = logging.getLogger("mcp_sse_server")

_TOKEN_TYPES: Final = (str, int)  # a progress token's (a tuple: isinstance with str | int builds a union per call)

# RFC 5424 severities, lowest first, as logging/setLevel names them.
LOG_LEVELS: Final[dict[str, int]] = {
    name: rank
    for rank, name in enumerate(("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"))
}

current_context: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar(
    "mcp_current_context", default=None
)


class ToolTask(Protocol):
    """What a request asks of the task its tool call runs as (``tasks.RunningTask``)."""

    @property
    def in_task(self) -> bool:
        """True once the call is a task: its questions go to the task."""

    @property
    def related_meta(self) -> dict[str, Any] | None:
        """The ``_meta`` entries every notification tied to the task carries (2025-11-25's
        related-task); None where a task sends no progress or logs (the Tasks extension)."""

    async def start(self) -> None:
        """Make the call a task now (``RequestContext.start_task``)."""

    async def ask(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Ask the client through the task: one of its questions until the client answers it."""


class Peer(Protocol):
    """What a ``RequestContext`` asks of the engine that serves its request (``protocol.Connection``)."""

    @property
    def owner(self) -> Any:
        """Whom the connection serves: a ``ServerSession`` on a server, an ``McpClient`` on a client."""

    async def notify(
        self, method: str, params: dict[str, Any] | None = None, *, related_request_id: RequestId | None = None
    ) -> None:
        """Send a notification to the peer, on the stream of ``related_request_id`` when given."""

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = 300.0,
        related_request_id: RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request to the peer and wait for its result."""

    async def close_stream(self, request_id: RequestId) -> bool:
        """Close the stream ``request_id``'s messages travel on; False where streams cannot resume."""


def log_rank(level: str) -> int:
    """The rank of a log level name; unknown names are -32602."""
    rank = LOG_LEVELS.get(level)
    if rank is None:
        raise McpError(INVALID_PARAMS, f"Invalid log level {level!r}; expected one of: {', '.join(LOG_LEVELS)}")
    return rank


class RequestContext:
    """Passed to every handler with the request it serves.

    >>> async def handler(arguments, context):  # doctest: +SKIP
    ...     await context.report_progress(1, total=2, message="halfway")
    ...     context.throw_if_cancelled()
    ...     await context.log("info", {"step": 2})
    """

    __slots__ = (
        "_callbacks",
        "_last_progress",
        "_make_session",
        "_rounds",
        "_session",
        "_state",
        "cancel_reason",
        "cancelled",
        "connection",
        "done",
        "method",
        "progress_token",
        "request_id",
        "task",
        "tool_task",
    )

    _state: dict[str, Any]  # (both unset until first used: see ``state`` and ``rounds``)
    _rounds: int

    def __init__(self, connection: Peer, request: JsonRpcRequest) -> None:
        self.connection = connection
        self.request_id: RequestId = request.id
        self.method = request.method
        params = request.params
        token = None
        if params is not None and "_meta" in params:
            meta = params["_meta"]
            if type(meta) is dict:
                token = meta.get("progressToken")
                if not isinstance(token, _TOKEN_TYPES):
                    token = None
        self.progress_token: str | int | None = token
        self._last_progress: float | None = None
        self.cancelled = False
        self.cancel_reason: str | None = None
        self.done = False
        self._callbacks: list[Callable[[], Any]] | None = None
        self.task: asyncio.Task[Any] | None = None
        self.tool_task: ToolTask | None = None  # the task this tool call runs as (tasks.py), if it may be one
        self._session: Any = None  # a stateless request's own session, once made (bind_session)
        self._make_session: Callable[[], Any] | None = None

    # ``state`` and ``rounds`` live in slots left unset until used: most requests never ask,
    # and every request builds a context.

    @property
    def state(self) -> dict[str, Any]:
        """A dict of this request's own, made on first use: what middleware and the handler share."""
        try:
            return self._state
        except AttributeError:
            state: dict[str, Any] = {}
            self._state = state
            return state

    @property
    def rounds(self) -> int:
        """How many rounds of this call came before this one: 0 but on a stateless (2026-07-28)
        retry that answers ``input_required`` questions, where it is 1 for the first retry, and on."""
        try:
            return self._rounds
        except AttributeError:
            return 0

    @rounds.setter
    def rounds(self, value: int) -> None:
        self._rounds = value

    @classmethod
    def of_notification(cls, connection: Peer, notification: JsonRpcNotification) -> RequestContext:
        """The context a notification's middleware is given: its ``method``, no ``request_id`` (None)."""
        return cls(connection, JsonRpcRequest(cast(RequestId, None), notification.method, notification.params))

    @property
    def session(self) -> Any:
        """Whom the request came to: the ``ServerSession`` on a server (for a 2026-07-28 request, the
        request's own session, built from its ``_meta``), the ``McpClient`` on a client."""
        session = self._session
        if session is None:
            make = self._make_session
            if make is None:
                return self.connection.owner
            session = self._session = make()
        return session

    def bind_session(self, make: Callable[[], Any]) -> None:
        """Make ``make()`` the request's ``session`` in place of the connection's owner, built on
        first use: the stateless endpoint binds the session of a 2026-07-28 request's ``_meta``,
        which most handlers never ask for."""
        self._session = None
        self._make_session = make

    @property
    def server(self) -> Any:
        """The ``McpServer`` serving the request: ``context.session.server`` (the ``McpClient`` on
        a client, whose session is itself).

        Reach the client of this request through ``context.session`` (``create_message``,
        ``elicit``, ``list_roots``, ``ping``, ``client_capabilities``, ...).
        """
        # Read by name, not by type: this module sits below the session and imports none of it.
        session = self.session
        return getattr(session, "server", session)

    @property
    def auth(self) -> AccessToken | None:
        """The verified access token the request came with; None on a server without authorization."""
        return current_access_token.get()

    @property
    def is_cancelled(self) -> bool:
        return self.cancelled

    def throw_if_cancelled(self) -> None:
        """Raise ``asyncio.CancelledError`` when the request was cancelled."""
        if self.cancelled:
            raise asyncio.CancelledError(self.cancel_reason or "request cancelled")

    def on_cancelled(self, callback: Callable[[], Any]) -> None:
        """Run ``callback`` when the request is cancelled (at once if it already was)."""
        if self.cancelled:
            callback()
            return
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(callback)

    def cancel(self, reason: str | None = None) -> None:
        """Mark the request cancelled, run the callbacks and cancel its task."""
        if self.cancelled or self.done:
            return
        self.mark_cancelled(reason)
        if self.task is not None:
            self.task.cancel(reason)

    def mark_cancelled(self, reason: str | None) -> None:
        """Record a cancellation that is already under way (the task is being cancelled): run the callbacks."""
        if self.cancelled:
            return
        self.cancelled = True
        self.cancel_reason = reason
        for callback in self._callbacks or ():
            try:
                callback()
            except Exception:
                logger.exception("on_cancelled callback failed")

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send notifications/progress; a no-op without a progress token or once the request is done
        (except in a 2025-11-25 task, whose progress goes on, tied to the task; an extension task
        sends none).

        ``progress`` must increase with every call (ValueError otherwise).
        """
        if self.progress_token is None:
            return
        meta: dict[str, Any] | None = None
        task = self.tool_task  # (read directly: every progress report passes here)
        if task is not None and task.in_task:
            meta = task.related_meta
            if meta is None:
                return
        elif self.done:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            raise ValueError(f"progress must increase: {progress} after {self._last_progress}")
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and downlevel.progress_message(self.session.protocol):
            params["message"] = message
        if meta is not None:
            params["_meta"] = meta
        await self.connection.notify("notifications/progress", params, related_request_id=self.request_id)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send notifications/message unless it is below the level the client set."""
        await self.session.log(level, data, logger, related_request_id=self.request_id)

    async def close_sse_stream(self) -> bool:
        """Close the stream this request's messages travel on, while the request goes on.

        Over Streamable HTTP with a 2025-11-25 session the client reconnects
        after the ``retry`` interval and resumes the stream (GET +
        ``Last-Event-ID``), receiving what was sent meanwhile and the response:
        for long calls behind proxies that cut long responses. False (and
        nothing happens) where streams cannot be resumed.
        """
        return await self.connection.close_stream(self.request_id)

    async def start_task(self) -> None:
        """Make this tool call a task now (a tool registered with ``task_starts="in_handler"``):
        the request answers with the task, and the handler goes on in it. Questions asked before
        were the request's ``input_required`` rounds; those after are the task's. A call that
        does not run as a task goes on as it was (nothing happens)."""
        if self.tool_task is not None:
            await self.tool_task.start()

    def task_asking(self) -> ToolTask | None:
        """The task this call runs as, once it is one: where the session sends its questions."""
        task = self.tool_task
        return task if task is not None and task.in_task else None

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = 300.0
    ) -> dict[str, Any]:
        """A request to the peer that belongs to this request (same HTTP stream)."""
        return await self.connection.request(method, params, timeout=timeout, related_request_id=self.request_id)
