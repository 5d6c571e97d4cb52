"""The engine's observation seam: what it tells an observer (OpenTelemetry) about the work it does.

Rules of this module:

* It names an interface only and imports nothing from OpenTelemetry; ``telemetry/`` implements it
  one floor up, so the engine never imports that package.
* Off is ``None``: a ``Connection`` whose ``observer`` is None takes exactly the path it took before
  the seam existed (one ``is not None`` test per request). Nothing here is built per request when off.
* Hooks must not raise into the engine: an implementation swallows its own failures, because a
  broken exporter must never fail a tool call.
* ``current_http`` is set by the HTTP transport, only when the server has an observer, for the
  duration of one POST: who is calling, over which HTTP version, and the trace headers it sent
  (and by the Redis coordinator while it hands over a 2024-11-05 POST another worker took).
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from .jsonrpc import JsonRpcNotification, JsonRpcRequest
    from .transport import Reply

__all__ = [
    "HttpOrigin",
    "Observation",
    "Observer",
    "OutboundObservation",
    "TaskObservation",
    "TelemetrySwitch",
    "current_http",
]


class HttpOrigin(NamedTuple):
    """The HTTP request an MCP message arrived in (network attributes and fallback trace context)."""

    client_address: str | None
    client_port: int | None
    http_version: str
    headers: dict[str, str]  # the W3C trace headers it carried, by lower-case name


current_http: contextvars.ContextVar[HttpOrigin | None] = contextvars.ContextVar("mcp_current_http", default=None)


class Observation(Protocol):
    """One inbound request under observation, from receipt until its reply is made."""

    def finish(self, reply: Reply | None, error: BaseException | None) -> None:
        """The request ended: with ``reply`` (None: cancelled, no reply), or by raising ``error``."""

    def failed(self, error: Exception) -> None:
        """The handler raised ``error``; the reply (``finish``) will say only "Internal error"."""

    def event(self, name: str, attributes: dict[str, Any], trace: dict[str, str] | None = None) -> None:
        """Something happened to the request (``trace``: the W3C context it came from, linked)."""


class OutboundObservation(Protocol):
    """One request this side sent its peer (elicitation, sampling, roots, ping), until its reply."""

    def finish(self, result: dict[str, Any] | None, error: BaseException | None) -> None:
        """The reply came (``result``), or the request failed with ``error`` (an ``McpError``
        reply, a timeout, a closed connection, a cancelled caller)."""

    def event(self, name: str, attributes: dict[str, Any], trace: dict[str, str] | None = None) -> None:
        """Something happened to the request (``trace``: the W3C context it came from, linked)."""


class TaskObservation(Protocol):
    """One task (``engine/tasks.py``) under observation, from its start to its terminal status."""

    def status(self, status: str, detail: str | None = None) -> None:
        """The task's status changed (``input_required``: ``detail`` is the method it asks)."""

    def ended(self, status: str, outcome: dict[str, Any] | None) -> None:
        """The task ended ``completed``, ``failed`` or ``cancelled`` with ``outcome`` (as stored)."""


class Observer(Protocol):
    """What the engine and the transports call when an observer is set (``McpServer(telemetry=...)``)."""

    def dormant(self) -> bool:
        """True while nothing would be recorded (no SDK installed): only trace context is passed on."""

    def inbound(self, request: JsonRpcRequest, connection: Any) -> Observation | None:
        """A request arrived on ``connection`` and is about to be dispatched, in the task that serves
        it (so a span made current here is the handler's parent); None: not observed."""

    def outbound(
        self, method: str, params: dict[str, Any] | None, connection: Any
    ) -> tuple[dict[str, Any] | None, OutboundObservation | None]:
        """A request is about to be sent to the peer on ``connection``: the params to send (the
        trace context in a copy of ``_meta``) and its observation (None: not observed)."""

    def current_trace(self) -> dict[str, str] | None:
        """The W3C trace context of the current span (a 2026-07-28 call's round, sealed in its
        ``requestState`` so that the later rounds' spans link to it); None without one."""

    def notification(self, notification: JsonRpcNotification, request: Observation | None) -> None:
        """A notification arrived; ``request`` is the in-flight request it cancels, if any."""

    def task_started(self, record: Any, core: bool) -> TaskObservation | None:
        """A tool call became the task ``record`` (a ``TaskRecord``; ``core``: 2025-11-25's kind),
        in the context of the request that made it."""

    def session_ended(self, session: Any, duration: float, error: str | None) -> None:
        """A session of ``duration`` seconds ended (``error``: why, when it ended abnormally)."""

    def rejected(self, reason: str) -> None:
        """A request was refused below JSON-RPC (``conventions.REJECT_REASONS``)."""

    def routed(
        self, message_type: str, trace: dict[str, str] | None, request: Observation | OutboundObservation | None
    ) -> None:
        """A message arrived from another worker (Redis) with the trace context it was sent in;
        ``request``: the in-flight request it is about, when this worker serves it (a cancel), or
        the request this worker sent that it answers (an answer)."""

    def forwarding(self, message_type: str, params: dict[str, Any] | None) -> dict[str, str] | None:
        """A message (``cancel``: a ``notifications/cancelled`` with ``params``; ``answer``) is about
        to be sent to the worker that needs it: the W3C trace context to send along."""


class TelemetrySwitch(Protocol):
    """What ``McpServer(telemetry=...)`` takes (``telemetry.Telemetry``): a maker of its observer."""

    def server_observer(self, server: Any) -> Observer:
        """The observer of ``server``; called once, when the server is built."""
