"""The ASGI types this package uses (kept loose: servers pass plain dicts)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final, TypeAlias

__all__ = ["WHOLE_RESPONSE", "ASGIApp", "Message", "Receive", "Scope", "Send"]

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]
ASGIApp: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]

WHOLE_RESPONSE: Final = "mcp_sse_server.whole_response"
"""A message type some ``send`` callables take besides ASGI's: a complete response in one message,
``{"type": WHOLE_RESPONSE, "status": int, "headers": [...], "body": bytes}``, the server adding
``content-length`` (so ``headers`` names no ``content-length``, ``transfer-encoding`` or
``connection``). A ``send`` that takes it says so with a true attribute of that name
(``getattr(send, WHOLE_RESPONSE, False)``); the fast path's does (``fast_protocol.py``), and every
other ``send`` gets the usual two messages (``streams.send_whole``). One message instead of two is
one call, one dict and one header pass fewer on every answered request."""
