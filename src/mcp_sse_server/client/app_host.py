"""``AppHostSession``: the host half of the MCP Apps view-host protocol, over any message pipe.

A host renders an app (``client/apps.py``) in a sandboxed frame and relays the frame's JSON-RPC
messages here as plain dicts (a desktop webview's bridge, a WebSocket from a browser tab, a test's
queue): ``await session.receive(message)`` for each message from the view, and the session's
``send(message)`` for each message to it. The session answers the view, guards the order of what
the host tells it, and proxies the view's MCP requests to the server through an ``McpClient``.

>>> async def render(client, pipe):  # an McpClient, and whatever carries messages to the frame
...     host = AppHostSession(client, "add", send=pipe.send, host_info={"name": "my-host", "version": "1"})
...     pipe.on_message(host.receive)
...     await host.run_tool({"a": 20, "b": 22})  # tool-input, the call, tool-result: sent once initialized

Rules:

1. The view speaks first: ``ui/initialize`` (answered with protocol ``2026-01-26``, the host's
   info, its capabilities and the host context), then ``ui/notifications/initialized``. Until
   then the view's other requests get -32600 and nothing the host says is sent: it waits, in
   order, and goes out at ``initialized``.
2. ``tool_input`` once, before ``tool_result``; ``tool_input_partial`` only before ``tool_input``;
   then exactly one of ``tool_result`` and ``tool_cancelled``. Anything else is a RuntimeError
   for the embedding code (a host bug, not the view's).
3. A view's ``tools/call`` runs only a tool of this server whose visibility includes ``"app"``
   (``_meta.ui.visibility``; both when absent); any other is refused with -32602 naming the tool,
   and never reaches the server: visibility is the host's check to make. ``tools/list`` shows the
   view only those tools. ``resources/read``, ``resources/list``,
   ``resources/templates/list`` and ``ping`` are proxied as they are; the server's errors come back
   as JSON-RPC errors.
4. ``ui/open-link``, ``ui/message``, ``ui/update-model-context``, ``ui/request-display-mode``
   and ``ui/download-file`` go to their handler and are declared in ``hostCapabilities`` only with
   one; without it, and for every other method, -32601. ``ui/notifications/size-changed`` goes to
   ``on_size``, ``notifications/message`` to ``on_log``, ``ui/notifications/request-teardown``
   to ``on_teardown_request``; the sandbox proxy's own ``ui/notifications/sandbox-*`` are ignored.
5. A message that is not a JSON-RPC object gets -32600 when it has an id and is dropped (logged)
   otherwise: a view cannot crash the host. A handler's exception is -32603 to the view.
6. ``teardown(timeout=...)`` sends ``ui/resource-teardown`` and waits for the view's answer at
   most ``timeout`` seconds: True when it answered, False when it did not.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ..engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, McpError
from ..engine.types import CallToolResult, Tool, call_tool_result_from_dict
from .apps import tool_visibility

if TYPE_CHECKING:
    from .base import McpClient

__all__ = ["VIEW_PROTOCOL_VERSION", "AppHostSession"]

logger = logging.getLogger("mcp_sse_server.client")

VIEW_PROTOCOL_VERSION: Final = "2026-01-26"
"""The view-host protocol revision this host speaks (the stable MCP Apps specification)."""

Send = Callable[[dict[str, Any]], "Awaitable[None] | None"]
Handler = Callable[[dict[str, Any]], Any]
# Requests from the view that go to the server as they are (rule 3).
_PROXIED: Final = frozenset({"resources/read", "resources/list", "resources/templates/list"})
# Requests from the view with an optional host handler, and the capability each declares (rule 4).
_HANDLED: Final = {
    "ui/open-link": ("on_open_link", "openLinks"),
    "ui/message": ("on_message", "message"),
    "ui/update-model-context": ("on_update_model_context", "updateModelContext"),
    "ui/request-display-mode": ("on_request_display_mode", None),
    "ui/download-file": ("on_download_file", "downloadFile"),
}


class AppHostSession:
    """One rendered app of ``tool`` (its name or the ``Tool``), driven over ``send`` (the
    module's rules). Handlers take the request's params and return its result (a dict; None is
    ``{}``), plain or async."""

    def __init__(
        self,
        client: McpClient,
        tool: Tool | str,
        *,
        send: Send,
        host_info: Mapping[str, Any],
        host_context: Mapping[str, Any] | None = None,
        on_open_link: Handler | None = None,
        on_message: Handler | None = None,
        on_update_model_context: Handler | None = None,
        on_request_display_mode: Handler | None = None,
        on_download_file: Handler | None = None,
        on_size: Callable[[dict[str, Any]], Any] | None = None,
        on_log: Callable[[dict[str, Any]], Any] | None = None,
        on_teardown_request: Callable[[], Any] | None = None,
    ) -> None:
        self.client = client
        self.tool_name = tool if isinstance(tool, str) else tool.name
        self._send = send
        self.host_info = dict(host_info)
        self.host_context: dict[str, Any] = dict(host_context or {})
        self.handlers: dict[str, Handler | None] = {
            "on_open_link": on_open_link,
            "on_message": on_message,
            "on_update_model_context": on_update_model_context,
            "on_request_display_mode": on_request_display_mode,
            "on_download_file": on_download_file,
        }
        self.on_size = on_size
        self.on_log = on_log
        self.on_teardown_request = on_teardown_request
        self.view_info: dict[str, Any] | None = None  # the view's appInfo, from ui/initialize
        self.asked_to_initialize = False
        self.initialized = False
        self._waiting: list[dict[str, Any]] = []  # host -> view, held until initialized (rule 1)
        self._input_sent = False
        self._finished = False  # tool-result or tool-cancelled sent (rule 2)
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}

    # --- what the host says to the view (rule 2) -------------------------------------------

    @property
    def host_capabilities(self) -> dict[str, Any]:
        """What ``ui/initialize`` declares: the proxied server methods, logs, and each handler set."""
        capabilities: dict[str, Any] = {"serverTools": {}, "serverResources": {}, "logging": {}}
        for attribute, capability in _HANDLED.values():
            if capability is not None and self.handlers[attribute] is not None:
                capabilities[capability] = {}
        return capabilities

    async def tool_input_partial(self, arguments: Mapping[str, Any]) -> None:
        """Arguments still being written (best effort), before ``tool_input``."""
        if self._input_sent:
            raise RuntimeError("tool-input-partial comes before tool-input")
        await self._notify("ui/notifications/tool-input-partial", {"arguments": dict(arguments)})

    async def tool_input(self, arguments: Mapping[str, Any]) -> None:
        """The call's complete arguments: once, before the result."""
        if self._input_sent:
            raise RuntimeError("tool-input is sent once")
        self._input_sent = True
        await self._notify("ui/notifications/tool-input", {"arguments": dict(arguments)})

    async def tool_result(self, result: CallToolResult | Mapping[str, Any]) -> None:
        """The call's result (the whole ``CallToolResult``): after ``tool_input``, once."""
        self._finish("tool-result")
        await self._notify(
            "ui/notifications/tool-result", result.to_dict() if isinstance(result, CallToolResult) else dict(result)
        )

    async def tool_cancelled(self, reason: str | None = None) -> None:
        """The call will not have a result."""
        self._finish("tool-cancelled", need_input=False)
        await self._notify("ui/notifications/tool-cancelled", {} if reason is None else {"reason": reason})

    async def run_tool(self, arguments: Mapping[str, Any]) -> CallToolResult:
        """``tool_input``, the call through the client, then ``tool_result`` (or ``tool_cancelled``
        when the call fails, which is then raised)."""
        await self.tool_input(arguments)
        try:
            result = await self.client.call_tool(self.tool_name, dict(arguments), raw=True)
        except BaseException as error:
            await self.tool_cancelled(str(error) or type(error).__name__)
            raise
        await self.tool_result(result)
        return call_tool_result_from_dict(result)

    async def context_changed(self, changes: Mapping[str, Any]) -> None:
        """Tell the view part of the host context changed (theme, size, ...); it merges them."""
        self.host_context.update(changes)
        await self._notify("ui/notifications/host-context-changed", dict(changes))

    async def teardown(self, reason: str | None = None, *, timeout: float = 5.0) -> bool:
        """Ask the view to wrap up before its frame goes (rule 6); True when it answered in time."""
        if not self.initialized:
            return False
        request_id = f"host-{next(self._ids)}"
        answered = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answered
        params = {} if reason is None else {"reason": reason}
        await self._write({"jsonrpc": "2.0", "id": request_id, "method": "ui/resource-teardown", "params": params})
        try:
            await asyncio.wait_for(answered, timeout)
        except TimeoutError:
            return False
        finally:
            self._pending.pop(request_id, None)
        return True

    def _finish(self, what: str, *, need_input: bool = True) -> None:
        if self._finished:
            raise RuntimeError(f"{what}: the call already has its tool-result or tool-cancelled")
        if need_input and not self._input_sent:
            raise RuntimeError(f"{what} comes after tool-input")
        self._finished = True

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if self.initialized:
            await self._write(message)
        else:
            self._waiting.append(message)

    async def _write(self, message: dict[str, Any]) -> None:
        sent = self._send(message)
        if inspect.isawaitable(sent):
            await sent

    # --- what the view says (rules 1, 3-5) --------------------------------------------------

    async def receive(self, message: Any) -> None:
        """Handle one message from the view (a parsed JSON-RPC object)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            await self._refuse(message, "not a JSON-RPC 2.0 object")
            return
        method = message.get("method")
        if method is None and "id" in message:  # an answer to the host's request (teardown)
            waiting = self._pending.get(message["id"])
            if waiting is not None and not waiting.done():
                waiting.set_result(message.get("result", message.get("error")))
            return
        params = message.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            await self._refuse(message, 'a request needs a string "method" and object "params"')
            return
        if "id" not in message:
            await self._notification(method, params)
            return
        request_id = message["id"]
        try:
            result = await self._request(method, params)
        except McpError as error:
            await self._write({"jsonrpc": "2.0", "id": request_id, "error": _error_object(error)})
        except Exception as error:  # a handler's bug: the view gets an error, the host goes on
            logger.exception("app host: %s from the view failed", method)
            failure = McpError(INTERNAL_ERROR, f"{method} failed: {type(error).__name__}")
            await self._write({"jsonrpc": "2.0", "id": request_id, "error": _error_object(failure)})
        else:
            await self._write({"jsonrpc": "2.0", "id": request_id, "result": {} if result is None else result})

    async def _refuse(self, message: Any, why: str) -> None:
        if isinstance(message, dict) and isinstance(message.get("id"), str | int):
            error = _error_object(McpError(INVALID_REQUEST, f"Invalid message from the view: {why}"))
            await self._write({"jsonrpc": "2.0", "id": message["id"], "error": error})
        else:
            logger.warning("app host: dropped a message from the view (%s)", why)

    async def _notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "ui/notifications/initialized":
            if not self.asked_to_initialize or self.initialized:
                return  # (out of order or repeated: nothing to release)
            self.initialized = True
            waiting, self._waiting = self._waiting, []
            for message in waiting:
                await self._write(message)
            return
        hook: Callable[..., Any] | None = None
        if method == "ui/notifications/size-changed":
            hook = self.on_size
        elif method == "notifications/message":
            hook = self.on_log
        elif method == "ui/notifications/request-teardown":
            if self.on_teardown_request is not None:
                await _maybe_await(self.on_teardown_request())
            return
        if hook is not None:
            await _maybe_await(hook(params))

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        if method == "ui/initialize":
            self.asked_to_initialize = True
            info = params.get("appInfo")
            self.view_info = info if isinstance(info, dict) else None
            return {
                "protocolVersion": VIEW_PROTOCOL_VERSION,
                "hostInfo": self.host_info,
                "hostCapabilities": self.host_capabilities,
                "hostContext": self.host_context,
            }
        if method == "ping":
            return {}
        if not self.asked_to_initialize:
            raise McpError(INVALID_REQUEST, f"{method} before ui/initialize")
        if method == "tools/call":
            return await self._call_tool(params)
        if method == "tools/list":
            return {"tools": await self._app_tools()}
        if method in _PROXIED:
            return await self.client.request(method, params)
        handled = _HANDLED.get(method)
        handler = self.handlers[handled[0]] if handled is not None else None
        if handler is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return await _maybe_await(handler(params))

    async def _app_tools(self) -> list[dict[str, Any]]:
        """The server's tools a view may see and call (their tools/list entries)."""
        return [tool for tool in await self.client.list_tools(raw=True) if "app" in tool_visibility(tool)]

    async def _call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        """Rule 3: only a tool the view may call reaches the server."""
        name = params.get("name")
        if not isinstance(name, str):
            raise McpError(INVALID_PARAMS, 'tools/call needs a string "name"')
        if name not in {tool.get("name") for tool in await self._app_tools()}:
            raise McpError(INVALID_PARAMS, f"Tool {name} is not available to apps (visibility)")
        arguments = params.get("arguments", {})
        return await self.client.call_tool(name, arguments if isinstance(arguments, dict) else {}, raw=True)


def _error_object(error: McpError) -> dict[str, Any]:
    out: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        out["data"] = error.data
    return out


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
