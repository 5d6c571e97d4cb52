"""``ObservedHttp``: what the HTTP endpoint tells a server's telemetry (``engine.observe``).

Rules of this module:

1. It is in the stack only when the app's server has an observer (``McpServer(telemetry=...)``);
   an app without one has no extra layer and sets no context variable.
2. For the duration of each HTTP request it sets ``observe.current_http``: the peer
   (``client.address``/``client.port``), the HTTP version, and the W3C trace headers
   (``traceparent``, ``tracestate``, ``baggage``), the fallback parent of the SERVER spans of
   the MCP messages in it. A POST's requests are dispatched in its task (and the 2024-11-05
   transport's in tasks made there), so they see it.
3. Refusals below JSON-RPC have no MCP span; they are counted by reason (``rejected``): a 403
   or 400 of the Origin/Host check (``origin``/``host``, told apart by the policy's cached
   verdict), 404 for a request naming a session (``session_not_found``), 413 (``size``),
   429 (``limit``), 503 (``unavailable``). Shed connections are counted where they are shed
   (``connections.py``), before any ASGI request exists.
4. While the observer is dormant (OpenTelemetry's API without an SDK: nothing is recorded), a
   request passes through untouched: no context variable, no count, and the trace headers are
   not read (a caller's ``_meta`` context is still passed on: telemetry/server.py rule 10).
"""

from __future__ import annotations

from typing import Final

from ...engine.observe import HttpOrigin, Observer, current_http
from .asgi import ASGIApp, Message, Receive, Scope, Send
from .security import OriginPolicy

__all__ = ["ObservedHttp"]

_TRACE_HEADERS: Final = frozenset((b"traceparent", b"tracestate", b"baggage"))
_BY_STATUS: Final = {413: "size", 429: "limit", 503: "unavailable"}


class ObservedHttp:
    """The outermost ASGI layer of an observed app (the rules are the module's)."""

    __slots__ = ("app", "observer", "policy")

    def __init__(self, app: ASGIApp, observer: Observer, policy: OriginPolicy) -> None:
        self.app = app
        self.observer = observer
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        observer = self.observer
        if observer.dormant():  # rule 4: nothing is recorded
            await self.app(scope, receive, send)
            return
        trace_headers: dict[str, str] = {}
        session = origin = host = None
        for name, value in scope["headers"]:
            if name in _TRACE_HEADERS:
                trace_headers[name.decode("latin-1")] = value.decode("latin-1")
            elif name == b"mcp-session-id":
                session = value
            elif name == b"origin":
                origin = value
            elif name == b"host":
                host = value
        token = current_http.set(_origin(scope, trace_headers))

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                if status in (400, 403):
                    refusal = self.policy.check(origin, host)
                    if refusal is not None:
                        observer.rejected("host" if "Host header" in refusal else "origin")
                elif status == 404 and session is not None:
                    observer.rejected("session_not_found")
                else:
                    reason = _BY_STATUS.get(status)
                    if reason is not None:
                        observer.rejected(reason)
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            current_http.reset(token)


def _origin(scope: Scope, trace_headers: dict[str, str]) -> HttpOrigin:
    client = scope.get("client")
    return HttpOrigin(
        client[0] if client else None, client[1] if client else None, scope.get("http_version", "1.1"), trace_headers
    )
