"""ClientTransport: how an ``McpClient`` reaches its server. The client is one class; what
differs between in-memory, Streamable HTTP, legacy SSE and stdio is the transport it is given.

Rules:

1. ``connect()`` opens one connection to the server and returns it as an engine ``Transport``
   (``engine/transport.py``: ``send`` a message, ``close``, and every inbound message delivered to
   the attached ``Dispatcher``). The client attaches its JSON-RPC engine to it, sends through it
   and closes it. ``connect()`` may be called again once that connection is closed (a new
   session, a server the probe broke and that is started again); each call opens a new one.
2. Everything else has a default that fits a plain transport, and is overridden only by a
   transport that differs there:

   - ``request``: one request and its result, over the connection (default: the engine's
     ``Connection.request``); the in-memory transport serves it in the caller's task instead.
   - ``probe``: how the ``server/discover`` probe is sent (default: as any request); stdio
     watches for a server the probe breaks, and restarts it.
   - ``can_be_stateless``: False when no server behind the transport can speak the stateless
     revision (the 2024-11-05 HTTP+SSE transport); an ``"auto"`` client then skips the probe.
   - ``identity``: the server's key in the era memo (``client/era_memo.py``), None for a
     server that has no identity outside its client (in memory).
   - ``holds_session`` and ``sibling()``: for the session fallback (``client/fallback.py``),
     whether the server keeps a session for this connection, and a second transport to the
     same server (None where there is no second way to reach it); ``owns_server``: the server
     serves this client alone (a child process over stdio), so the fallback moves this client
     itself onto a session of it instead.
   - ``tool_schema``: set by the client, the ``inputSchema`` of a tool by name from its last
     ``tools/list``, for transports that route by a call's arguments (Streamable HTTP's
     ``Mcp-Param-*`` headers).
3. A transport serves one client. It holds nothing across connections that needs closing: each
   connection releases what it opened when it is closed.
4. ``stream_closed``, set around a request, is awaited when the server closes that request's
   stream before its answer (SSE polling, SEP-1699) and the request goes on: the Streamable
   HTTP transport when the POST stream ends with an event id to resume from (it then resumes),
   the in-memory one when the server's tool calls ``context.close_sse_stream()`` (which returns
   what the handler returns). Each transport reads it when the request is sent; the in-memory
   one clears it for what the server does meanwhile, so a nested client's request never sees
   its caller's. A proxy sets it to close its own front request's stream the same way.

A transport of one's own: subclass ``ClientTransport``, return a ``Transport`` from
``connect()``, and pass it to ``McpClient``; ``engine.transports.register_transport`` makes
configs name it too.

>>> async def demo(server: McpServer) -> None:  # doctest: +SKIP
...     async with McpClient(InMemoryClientTransport(server)) as client:
...         print(await client.call_tool("add", {"a": 2, "b": 3}))
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeAlias

from ..engine.protocol import Connection, ProgressCallback
from ..engine.transport import Transport
from .era_memo import Identity

__all__ = ["ClientTransport", "ProbeAnswer", "StreamClosed", "ToolSchema", "stream_closed"]

ToolSchema: TypeAlias = Callable[[str], "dict[str, Any] | None"]
"""A tool's ``inputSchema`` by its name, None for a tool not listed."""

ProbeAnswer: TypeAlias = Callable[[], Awaitable[dict[str, Any]]]
"""Sends the ``server/discover`` probe and returns its result (``ClientTransport.probe``)."""

StreamClosed: TypeAlias = Callable[[], Awaitable[bool]]
"""Awaited when the server closed a request's stream mid-call; True when the callee closed a
stream of its own in turn (rule 4)."""

stream_closed: ContextVar[StreamClosed | None] = ContextVar("mcp_stream_closed", default=None)
"""What the requests sent in this context await when the server closes their stream (rule 4)."""


class ClientTransport(ABC):
    """How an ``McpClient`` reaches its server (rules in the module docstring)."""

    identity: Identity | None = None
    tool_schema: ToolSchema | None = None

    @abstractmethod
    async def connect(self) -> Transport:
        """Open a new connection to the server; raise (``McpConnectionError`` for one the server
        caused) when it cannot be opened."""

    async def request(
        self,
        connection: Connection,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
    ) -> dict[str, Any]:
        """Send one request over ``connection`` (the engine on a connection this transport
        opened) and return its result; McpError for an error reply, TimeoutError after
        ``timeout`` seconds."""
        return await connection.request(method, params, timeout=timeout, on_progress=on_progress)

    async def probe(self, ask: ProbeAnswer, *, mode: str, timeout: float) -> dict[str, Any] | None:
        """The ``server/discover`` probe: ``ask()`` sends it and returns its result, raising
        TimeoutError after ``timeout`` seconds. None when the probe broke the server and this
        transport ended that connection: the client connects again and performs ``initialize``.
        May raise the error the client's ``mode`` (a forced revision) calls for instead."""
        return await ask()

    @property
    def can_be_stateless(self) -> bool:
        """False when no server behind this transport can speak the stateless revision."""
        return True

    @property
    def holds_session(self) -> bool:
        """True when the server keeps a session for the current connection, so that it can ask
        the client something while serving a request (False only where it can tell it does not)."""
        return True

    @property
    def owns_server(self) -> bool:
        """True when the server behind this transport serves this client alone (a child process):
        the session fallback then moves the client onto a session of that server (re-initializing
        it, or starting it again) rather than opening a second connection beside this one."""
        return False

    def sibling(self) -> ClientTransport | None:
        """A new transport to the same server with the same settings, for a second connection
        beside this one; None when the server cannot be reached twice."""
        return None
