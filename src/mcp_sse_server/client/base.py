"""McpClient: one async interface to an MCP server, over the transport it is given.

The transport (``client/transport.py``) says how the server is reached: in memory, Streamable
HTTP, the legacy HTTP+SSE transport, stdio, or one of your own. Everything else is the client's,
on the same JSON-RPC engine the server uses, in one module per concern (``client/core.py``
lists them): the handshake and era, the stateless revision's requests, the session fallback,
the typed methods, change notifications. ``InMemoryClient``, ``StreamableHttpClient``,
``SseClient`` and ``StdioClient`` are McpClients over their transport, built from the same
arguments as the transport.

>>> async def demo(client: McpClient) -> None:  # doctest: +SKIP
...     async with client:
...         tools = await client.list_tools()
...         result = await client.call_tool("add", {"a": 2, "b": 3})
...         print(result.content[0].text)
"""

from __future__ import annotations

from typing import Any, cast

from .core import DEFAULT_LOG_LEVEL, MODES, Era, SessionExpiredError
from .elicitation import UrlElicitationRequiredError
from .fallback import SessionFallback
from .handshake import Handshake
from .listen import Listening
from .methods import ServerMethods
from .stateless import InputRoundsExceededError, UnsupportedProtocolVersionError
from .subscription import Subscription
from .transport import ClientTransport

__all__ = [
    "DEFAULT_LOG_LEVEL",
    "MODES",
    "Era",
    "InputRoundsExceededError",
    "McpClient",
    "SessionExpiredError",
    "Subscription",
    "UnsupportedProtocolVersionError",
    "UrlElicitationRequiredError",
]


class McpClient(Handshake, SessionFallback, ServerMethods, Listening):
    """The client side of MCP over ``transport`` (a ``ClientTransport``). Use it as an async
    context manager or call ``initialize()`` and ``close()`` yourself.

    Handlers for what the server may ask:
    - ``sampling_handler(request) -> result`` answers sampling/createMessage: ``request`` is a
      ``SamplingRequest`` (the params dict, with typed ``messages``, ``max_tokens``, ...), the
      result a ``CreateMessageResult`` (``CreateMessageResult.reply(text, model)``) or its dict;
    - ``elicitation_handler(request) -> answer`` answers elicitation/create: ``request`` is an
      ``ElicitRequest`` (the params dict, with ``message``, ``mode``, ``requested_schema``,
      ``url``), the answer a pydantic model or dataclass instance, ``Accept(...)``,
      ``Decline()``, ``Cancel()`` or the dict (``client/typed_handlers.py``);
    - ``roots`` (a list of ``Root``, or a function returning one, asked each time) answers roots/list;
    - ``on_log(message)`` receives notifications/message as a ``LogMessage`` (``level``, ``logger``,
      ``data``; still the params dict), from ``log_level`` up
      (``"info"`` when not given; see below);
    - ``on_elicitation_complete(params)`` receives notifications/elicitation/complete
      (else ``on_notification`` does);
    - ``on_notification(notification)`` receives every other notification.
    Capabilities are declared from which of these are set: an elicitation
    handler declares form mode, and URL mode too with ``elicitation_url=True``
    (the handler then also gets ``{"mode": "url", "url", "elicitationId",
    "message"}``); a sampling handler declares ``sampling.tools`` with
    ``sampling_tools=True`` (it then gets ``tools``/``toolChoice`` and may answer
    with an array of content blocks, passed through as it is).

    Results are typed, and ``raw=True`` gives the wire form (``client/methods.py``).
    An elicitation in a mode the client did not declare is refused with
    -32602 without asking the handler. An accepted form answer gets the
    schema's ``default`` for every field the handler left out. A request the
    server refuses until a URL elicitation is done raises
    ``UrlElicitationRequiredError`` (code -32042) listing them.

    Logs: servers send none, or any they like, until the client names a level,
    so a client that wants them asks: ``effective_log_level`` is ``log_level``,
    else ``"info"`` (``DEFAULT_LOG_LEVEL``) when ``on_log`` is set, else None
    (nothing is asked). On a session revision it is sent as
    ``logging/setLevel`` right after ``initialize`` (and after every new
    session) when the server declares the ``logging`` capability; in the
    stateless revision it goes in every request's ``_meta``. Pass
    ``log_level="debug"`` for everything; ``set_log_level`` changes it later.

    Protocol revisions (``mode``): ``"auto"`` (the default) probes for 2026-07-28, the
    stateless revision, and falls back to the ``initialize`` handshake and a session;
    ``"session"`` only does the handshake, ``"2026-07-28"`` only speaks that revision
    (``client/handshake.py`` has the rules, the era memo among them: ``remember_era=False``
    opts out; ``probe_timeout`` bounds the probe). ``era`` says which came out
    (``"stateless"`` or ``"session"``; ``stateless`` is True for the former) and
    ``protocol_version`` the revision. In the stateless revision every request carries the
    version, the capabilities above, ``client_info`` and the ``effective_log_level`` in
    ``_meta``; what the server asks of the client comes as ``input_required`` results,
    answered through the same handlers, at most ``max_input_rounds`` (10) rounds per call
    (``client/stateless_calls.py``); ``listen()`` receives change notifications; list results
    and discover are cached for the ``ttlMs`` the server allows (``cache``).

    Session fallback (``session_fallback``, on by default): a 2026-07-28 call whose server
    could not ask this client something it has a handler for is repeated on a session of the
    same server, where the server can reach back (``client/fallback.py``;
    ``fallback_session``); over stdio the client itself moves onto a session of its child
    (re-initialized, or started again) and the era memo remembers the command. The repeated
    call runs the tool a second time from the start; ``session_fallback=False`` keeps the
    failure instead.

    Event hooks (``event_hooks``, httpx's way): ``{"request": [...], "response": [...],
    "notification": [...], "server_request": [...]}``, each hook a plain or async callable of
    one small event (method, id, params or result/error, duration, transport name), on every
    transport and both eras (``client/hooks.py``). A request or response hook that raises
    fails the call; one on what the server sent is logged instead.

    OpenTelemetry (``telemetry``, off by default; the ``otel`` extra): ``telemetry=Telemetry()``
    (``mcp_sse_server.telemetry``; ``True`` for every default) makes a CLIENT span per request,
    named and attributed by the MCP semantic conventions, one per 2026-07-28 call across its
    ``input_required`` rounds, retries and session fallback, a SERVER span when the client
    answers the server, and the ``mcp.client.operation.duration`` and
    ``mcp.client.session.duration`` histograms; the span's context goes in a copy of each
    request's ``_meta`` (and the HTTP headers), so the server's spans join the caller's trace
    (``telemetry/client.py``). Off, nothing of OpenTelemetry is imported.

    MCP Apps (``apps=True``): the client declares the ``io.modelcontextprotocol/ui`` extension in
    both eras, for a host that renders apps; ``client/apps.py`` lists the tools that have one and
    reads them (``app_tools``, ``read_app``), ``client/app_host.py``'s ``AppHostSession`` drives a
    rendered one.
    """

    def _new_client(self, transport: ClientTransport, **options: Any) -> McpClient:
        return McpClient(transport, **options)

    @property
    def fallback_session(self) -> McpClient | None:
        """The session the session fallback opened (see the class), None until one is needed and
        when the server would not open one."""
        return cast("McpClient | None", self._fallback)
