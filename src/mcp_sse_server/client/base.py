"""McpClient: one async interface to an MCP server, whatever the transport.

Subclasses only say how to open a transport (``_open``); the handshake,
requests, pagination, progress, cancellation and the handlers for what the
server asks of the client live here, on the same JSON-RPC engine the server
uses.

>>> async def demo(client: McpClient) -> None:  # doctest: +SKIP
...     async with client:
...         tools = await client.list_tools()
...         result = await client.call_tool("add", {"a": 2, "b": 3})
...         print(result.content[0].text)
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Final

from .. import versions
from ..context import RequestContext
from ..jsonrpc import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    JsonRpcError,
    JsonRpcMessage,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
)
from ..protocol import Connection, ProgressCallback
from ..transport.base import Transport
from ..types import (
    CallToolResult,
    CompleteResult,
    ReadResourceResult,
    ResourceInfo,
    Root,
    Tool,
    call_tool_result_from_dict,
    complete_result_from_dict,
    read_resource_result_from_dict,
    resource_info_from_dict,
    tool_from_dict,
)
from .elicitation import (
    URL_ELICITATION_REQUIRED,
    UrlElicitationRequiredError,
    check_mode,
    complete_answer,
)

__all__ = ["McpClient", "SessionExpiredError", "UrlElicitationRequiredError"]

logger = logging.getLogger("mcp_sse_server.client")

DEFAULT_REQUEST_TIMEOUT: Final = 300.0
MAX_PAGES: Final = 1000  # a server that never stops paging must not hang the client

SamplingHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
ElicitationHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
LogHandler = Callable[[dict[str, Any]], Any]
ElicitationCompleteHandler = Callable[[dict[str, Any]], Any]
NotificationHandler = Callable[[JsonRpcNotification], Any]


class SessionExpiredError(Exception):
    """The server no longer knows this client's session (HTTP 404); re-initialize."""


class McpClient(ABC):
    """The client side of MCP. Use it as an async context manager or call
    ``initialize()`` and ``close()`` yourself.

    Handlers for what the server may ask:
    - ``sampling_handler(params) -> result`` answers sampling/createMessage;
    - ``elicitation_handler(params) -> result`` answers elicitation/create;
    - ``roots`` (a list of ``Root``) answers roots/list;
    - ``on_log(params)`` receives notifications/message;
    - ``on_elicitation_complete(params)`` receives notifications/elicitation/complete
      (else ``on_notification`` does);
    - ``on_notification(notification)`` receives every other notification.
    Capabilities are declared from which of these are set: an elicitation
    handler declares form mode, and URL mode too with ``elicitation_url=True``
    (the handler then also gets ``{"mode": "url", "url", "elicitationId",
    "message"}``); a sampling handler declares ``sampling.tools`` with
    ``sampling_tools=True`` (it then gets ``tools``/``toolChoice`` and may answer
    with an array of content blocks, passed through as it is).

    An elicitation in a mode the client did not declare is refused with
    -32602 without asking the handler. An accepted form answer gets the
    schema's ``default`` for every field the handler left out. A request the
    server refuses until a URL elicitation is done raises
    ``UrlElicitationRequiredError`` (code -32042) listing them.
    """

    def __init__(
        self,
        *,
        client_name: str = "mcp-sse-server",
        client_version: str = "0.1.0",
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        roots: Sequence[Root] | None = None,
        on_log: LogHandler | None = None,
        on_notification: NotificationHandler | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        elicitation_url: bool = False,
        sampling_tools: bool = False,
        on_elicitation_complete: ElicitationCompleteHandler | None = None,
    ) -> None:
        self.client_info = {"name": client_name, "version": client_version}
        self.sampling_handler = sampling_handler
        self.elicitation_handler = elicitation_handler
        self.roots = list(roots) if roots is not None else None
        self.on_log = on_log
        self.on_notification = on_notification
        self.request_timeout = request_timeout
        self.elicitation_url = elicitation_url
        self.sampling_tools = sampling_tools
        self.on_elicitation_complete = on_elicitation_complete
        self.server_info: dict[str, Any] | None = None
        self.server_capabilities: dict[str, Any] | None = None
        self.instructions: str | None = None
        self.protocol_version: str | None = None
        self.connection: Connection | None = None
        self._tools_cache: list[Tool] | None = None
        self._initialize_result: dict[str, Any] | None = None

    # --- what subclasses provide --------------------------------------------------

    @abstractmethod
    async def _open(self) -> Transport:
        """Open the transport to the server."""

    # --- lifecycle ----------------------------------------------------------------

    @property
    def capabilities(self) -> dict[str, Any]:
        capabilities: dict[str, Any] = {}
        if self.sampling_handler is not None:
            capabilities["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.elicitation_handler is not None:
            capabilities["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        return capabilities

    @property
    def elicitation_modes(self) -> tuple[str, ...]:
        """The elicitation modes this client declares (none without a handler)."""
        if self.elicitation_handler is None:
            return ()
        return ("form", "url") if self.elicitation_url else ("form",)

    async def initialize(self) -> dict[str, Any]:
        """Open the transport and perform the handshake; returns the InitializeResult.

        On a client that is already initialized and connected this returns the
        handshake's result again without repeating it.
        """
        if self._initialize_result is not None and self.connection is not None and not self.connection.closed:
            return self._initialize_result
        return await self._handshake()

    async def _handshake(self) -> dict[str, Any]:
        if self.connection is None or self.connection.closed:
            self.connection = Connection(await self._open(), self)
        self._initialize_result = None
        offer = {
            "protocolVersion": versions.CLIENT_OFFERS,
            "capabilities": self.capabilities,
            "clientInfo": self.client_info,
        }
        result = await self.request("initialize", offer, retry_expired=False)
        answered = result.get("protocolVersion")
        if not isinstance(answered, str) or not versions.client_accepts(answered):
            await self.close()
            raise McpError(
                INTERNAL_ERROR,
                f"The server answered protocol revision {answered!r}, which this client does not speak "
                f"(it speaks {', '.join(versions.CLIENT_ACCEPTED)})",
            )
        self.protocol_version = answered
        self.server_info = result.get("serverInfo")
        self.server_capabilities = result.get("capabilities") or {}
        self.instructions = result.get("instructions")
        await self.notify("notifications/initialized")
        self._initialize_result = result
        return result

    async def close(self) -> None:
        """End the session and release the transport (idempotent)."""
        if self.connection is not None:
            await self.connection.close()

    async def __aenter__(self) -> McpClient:
        await self.initialize()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    def _live(self) -> Connection:
        if self.connection is None:
            raise RuntimeError("the client is not initialized: call initialize() or use 'async with'")
        return self.connection

    # --- requests -----------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | bool | None = True,
        on_progress: ProgressCallback | None = None,
        retry_expired: bool = True,
    ) -> dict[str, Any]:
        """Send any request and return its result; McpError for an error reply.

        ``timeout`` defaults to ``request_timeout``; None waits forever. When the
        server has forgotten the session, the client initializes a new one and
        retries once.
        """
        limit = self.request_timeout if timeout is True else (None if timeout is False else timeout)
        try:
            try:
                return await self._send_request(method, params, limit, on_progress)
            except SessionExpiredError:
                if not retry_expired:
                    raise
                logger.info("session expired; initializing a new one")
                await self._reinitialize()
                return await self._send_request(method, params, limit, on_progress)
        except McpError as error:
            if error.code == URL_ELICITATION_REQUIRED and not isinstance(error, UrlElicitationRequiredError):
                raise UrlElicitationRequiredError(error.message, error.data) from None
            raise

    async def _send_request(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, on_progress: ProgressCallback | None
    ) -> dict[str, Any]:
        return await self._live().request(method, params, timeout=timeout, on_progress=on_progress)

    async def _reinitialize(self) -> None:
        await self._handshake()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._live().notify(method, params)

    async def send_message(self, message: JsonRpcMessage) -> JsonRpcMessage | None:
        """Send a raw message. A request returns its response (or error) message; others return None."""
        if isinstance(message, JsonRpcRequest):
            try:
                result = await self.request(message.method, message.params)
            except McpError as error:
                return JsonRpcError(message.id, error.code, error.message, error.data)
            return JsonRpcResponse(message.id, result)
        if isinstance(message, JsonRpcNotification):
            await self.notify(message.method, message.params)
            return None
        await self._live().transport.send(message)
        return None

    async def ping(self) -> None:
        await self.request("ping")

    async def _all_pages(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = await self.request(method, {"cursor": cursor} if cursor is not None else None)
            page = result.get(key)
            if not isinstance(page, list):
                raise McpError(METHOD_NOT_FOUND if page is None else INTERNAL_ERROR, f"malformed {method} result")
            items.extend(page)
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                return items
            cursor = next_cursor
        raise RuntimeError(f"{method} returned more than {MAX_PAGES} pages")

    async def list_tools(self) -> list[Tool]:
        """Every tool, across all pages."""
        tools = [tool_from_dict(item) for item in await self._all_pages("tools/list", "tools")]
        self._tools_cache = tools
        return tools

    @property
    def tools(self) -> list[Tool] | None:
        """The tools from the last ``list_tools()``."""
        return self._tools_cache

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | bool | None = True,
    ) -> CallToolResult:
        """Call a tool. Cancelling the awaiting task (or a timeout) sends notifications/cancelled."""
        result = await self.request(
            "tools/call", {"name": name, "arguments": arguments or {}}, timeout=timeout, on_progress=on_progress
        )
        return call_tool_result_from_dict(result)

    async def list_resources(self) -> list[ResourceInfo]:
        return [resource_info_from_dict(item) for item in await self._all_pages("resources/list", "resources")]

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        return await self._all_pages("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return read_resource_result_from_dict(await self.request("resources/read", {"uri": uri}))

    async def subscribe_resource(self, uri: str) -> None:
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self) -> list[dict[str, Any]]:
        return await self._all_pages("prompts/list", "prompts")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> dict[str, Any]:
        """The GetPromptResult as sent: ``{"description"?, "messages": [...]}``."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return await self.request("prompts/get", params)

    async def complete(
        self,
        ref: dict[str, Any],
        argument_name: str,
        argument_value: str,
        context_arguments: dict[str, str] | None = None,
    ) -> CompleteResult:
        """completion/complete; ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``."""
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument_name, "value": argument_value}}
        if context_arguments:
            params["context"] = {"arguments": context_arguments}
        return complete_result_from_dict(await self.request("completion/complete", params))

    async def set_log_level(self, level: str) -> None:
        await self.request("logging/setLevel", {"level": level})

    async def notify_roots_changed(self) -> None:
        await self.notify("notifications/roots/list_changed")

    # --- what the server asks of the client (ConnectionOwner) ---------------------------

    async def handle_request(self, request: JsonRpcRequest, context: RequestContext) -> dict[str, Any]:
        method = request.method
        params = request.params or {}
        if method == "ping":
            return {}
        if method == "sampling/createMessage" and self.sampling_handler is not None:
            return await self.sampling_handler(params)
        if method == "elicitation/create" and self.elicitation_handler is not None:
            mode = check_mode(params, self.elicitation_modes)
            return complete_answer(params, mode, await self.elicitation_handler(params))
        if method == "roots/list" and self.roots is not None:
            return {"roots": [{"uri": r.uri, **({"name": r.name} if r.name else {})} for r in self.roots]}
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def handle_notification(self, notification: JsonRpcNotification) -> None:
        if notification.method == "notifications/message" and self.on_log is not None:
            self.on_log(notification.params or {})
        elif notification.method == "notifications/elicitation/complete" and self.on_elicitation_complete is not None:
            self.on_elicitation_complete(notification.params or {})
        elif self.on_notification is not None:
            self.on_notification(notification)

    def connection_closed(self) -> None:
        return None
