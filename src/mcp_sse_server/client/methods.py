"""ServerMethods: the MCP methods a client calls, each typed (``Tool``, ``CallToolResult``,
``ResourceInfo``, ``ResourceTemplateInfo``, ``ReadResourceResult``, ``PromptInfo``,
``GetPromptResult``, ``CompleteResult``; the readers are in ``engine/types.py`` and
``client/results.py``).

Rules:

1. Each method takes ``raw=True`` to return the wire form instead, as the server sent it (for a
   list, the items of every page), unparsed: for members this package does not model, or a
   server whose answer a reader refuses (ValueError).
2. Lists are read across all their pages (at most ``MAX_PAGES``: a server that never stops
   paging must not hang the client). At 2026-07-28 they and ``resources/read`` are cached for
   the ``ttlMs`` the server allows (``ClientCore._remember``), until a list_changed or
   resources/updated notification says otherwise; tools with invalid ``x-mcp-header``
   annotations are dropped from ``list_tools()`` with a warning.
3. Where a revision has no such method, the nearest one stands in: ``ping()`` asks
   ``server/discover`` at 2026-07-28, ``set_log_level`` keeps the level client-side there.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final, Literal, overload

from ..engine.jsonrpc import INTERNAL_ERROR, METHOD_NOT_FOUND, McpError
from ..engine.protocol import ProgressCallback
from ..engine.types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    PromptRef,
    ReadResourceResult,
    ResourceInfo,
    ResourceTemplateRef,
    Tool,
    call_tool_result_from_dict,
    complete_result_from_dict,
    read_resource_result_from_dict,
    resource_info_from_dict,
    tool_from_dict,
)
from .results import (
    PromptInfo,
    ResourceTemplateInfo,
    get_prompt_result_from_dict,
    prompt_info_from_dict,
    resource_template_info_from_dict,
)
from .skills import Skills
from .stateless import invalid_x_mcp_header
from .stateless_calls import StatelessCalls
from .tasks import TaskHandle

__all__ = ["MAX_PAGES", "ServerMethods"]

logger = logging.getLogger("mcp_sse_server.client")

MAX_PAGES: Final = 1000


class ServerMethods(StatelessCalls):
    """The typed MCP methods (see the module)."""

    async def ping(self) -> None:
        """ping; the stateless revision has none, so there it asks server/discover instead."""
        await self.request("server/discover" if self.stateless else "ping")

    async def _all_pages(self, method: str, key: str) -> list[dict[str, Any]]:
        """Every item of a paginated list; cached (stateless revision) for the shortest ``ttlMs``
        of its pages, until a list_changed notification says otherwise."""
        cached = self._recall(method, "")
        if cached is not None:
            return list(cached)
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        ttls: list[Any] = []
        for _ in range(MAX_PAGES):
            result = await self.request(method, {"cursor": cursor} if cursor is not None else None)
            page = result.get(key)
            if not isinstance(page, list):
                raise McpError(METHOD_NOT_FOUND if page is None else INTERNAL_ERROR, f"malformed {method} result")
            items.extend(page)
            ttls.append(result.get("ttlMs"))
            next_cursor = result.get("nextCursor")
            if not isinstance(next_cursor, str) or not next_cursor:
                if all(type(ttl) is int for ttl in ttls):
                    self._remember(method, "", {"ttlMs": min(ttls)}, list(items))
                return items
            cursor = next_cursor
        raise RuntimeError(f"{method} returned more than {MAX_PAGES} pages")

    @overload
    async def list_tools(self, *, raw: Literal[False] = False) -> list[Tool]: ...
    @overload
    async def list_tools(self, *, raw: Literal[True]) -> list[dict[str, Any]]: ...

    async def list_tools(self, *, raw: bool = False) -> list[Tool] | list[dict[str, Any]]:
        """Every tool, across all pages; ``raw=True``: their tools/list entries (``tools`` is then
        left as it was)."""
        items = await self._all_pages("tools/list", "tools")
        if self.stateless:
            kept = []
            for item in items:
                problem = invalid_x_mcp_header(item.get("inputSchema")) if isinstance(item, dict) else None
                if problem is None:
                    kept.append(item)
                else:
                    logger.warning("dropping tool %r from tools/list: %s", item.get("name"), problem)
            items = kept
        if raw:
            return items
        tools = [tool_from_dict(item) for item in items]
        self._tools_cache = tools
        return tools

    async def _relist_tools(self) -> None:
        await self.list_tools()

    @property
    def tools(self) -> list[Tool] | None:
        """The tools from the last ``list_tools()``."""
        return self._tools_cache

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | bool | None = True,
        raw: Literal[False] = False,
    ) -> CallToolResult: ...
    @overload
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | bool | None = True,
        raw: Literal[True],
    ) -> dict[str, Any]: ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | bool | None = True,
        raw: bool = False,
    ) -> CallToolResult | dict[str, Any]:
        """Call a tool. Cancelling the awaiting task (or a timeout) sends notifications/cancelled.
        ``raw=True``: the CallToolResult as sent."""
        result = await self.request(
            "tools/call", {"name": name, "arguments": arguments or {}}, timeout=timeout, on_progress=on_progress
        )
        return result if raw else call_tool_result_from_dict(result)

    async def call_tool_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        ttl_ms: int | None = None,
        timeout: float | bool | None = True,
    ) -> TaskHandle:
        """Call a tool as a task: a handle on it (``refresh()`` and ``status``, ``result()``,
        ``answer()``, ``cancel()``, async iteration over its status changes; the rules are in
        ``client/tasks.py``). ``timeout`` bounds the creating call, not the task.

        On a 2025-11-25 session the call asks for a task (``params.task``, with ``ttl_ms``)
        when the server declares tasks for tools/call and the tool allows them; at 2026-07-28
        it declares the Tasks extension and the server decides (and its ttl: ``ttl_ms`` is not
        sent). A call the server ran inline gives a handle that has ended already, with its
        result."""
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        if not self.stateless and self._may_ask_task(name):
            params["task"] = {} if ttl_ms is None else {"ttl": ttl_ms}
        return TaskHandle(self, await self.task_request("tools/call", params, timeout))

    def _may_ask_task(self, tool: str) -> bool:
        """True when this session's server takes ``params.task`` on tools/call for ``tool`` (as far as
        the last tools/list tells: a tool not listed yet is asked)."""
        tasks = (self.server_capabilities or {}).get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        if not isinstance(tools, dict) or not isinstance(tools.get("call"), dict):
            return False
        listed = next((entry for entry in self._tools_cache or () if entry.name == tool), None)
        return listed is None or listed.task_support != "forbidden"

    @property
    def skills(self) -> Skills:
        """The server's skills (the skills extension): ``list()``, ``get(uri)``, ``read(entry, file)``
        and ``load(entry)`` verifying every file against its entry, ``read_directory(uri)``; the
        rules are in ``client/skills.py``. Nothing is read until asked."""
        return Skills(self)

    @overload
    async def list_resources(self, *, raw: Literal[False] = False) -> list[ResourceInfo]: ...
    @overload
    async def list_resources(self, *, raw: Literal[True]) -> list[dict[str, Any]]: ...

    async def list_resources(self, *, raw: bool = False) -> list[ResourceInfo] | list[dict[str, Any]]:
        """Every resource, across all pages; ``raw=True``: their resources/list entries."""
        items = await self._all_pages("resources/list", "resources")
        return items if raw else [resource_info_from_dict(item) for item in items]

    @overload
    async def list_resource_templates(self, *, raw: Literal[False] = False) -> list[ResourceTemplateInfo]: ...
    @overload
    async def list_resource_templates(self, *, raw: Literal[True]) -> list[dict[str, Any]]: ...

    async def list_resource_templates(self, *, raw: bool = False) -> list[ResourceTemplateInfo] | list[dict[str, Any]]:
        """Every resource template, across all pages; ``raw=True``: their resources/templates/list entries."""
        items = await self._all_pages("resources/templates/list", "resourceTemplates")
        return items if raw else [resource_template_info_from_dict(item) for item in items]

    @overload
    async def read_resource(self, uri: str, *, raw: Literal[False] = False) -> ReadResourceResult: ...
    @overload
    async def read_resource(self, uri: str, *, raw: Literal[True]) -> dict[str, Any]: ...

    async def read_resource(self, uri: str, *, raw: bool = False) -> ReadResourceResult | dict[str, Any]:
        """resources/read; cached (stateless revision) for its ``ttlMs`` until the resource
        is reported updated. ``raw=True``: the ReadResourceResult as sent."""
        result = self._recall("resources/read", uri)
        if result is None:
            result = await self.request("resources/read", {"uri": uri})
            self._remember("resources/read", uri, result)
        return dict(result) if raw else read_resource_result_from_dict(result)

    @overload
    async def list_prompts(self, *, raw: Literal[False] = False) -> list[PromptInfo]: ...
    @overload
    async def list_prompts(self, *, raw: Literal[True]) -> list[dict[str, Any]]: ...

    async def list_prompts(self, *, raw: bool = False) -> list[PromptInfo] | list[dict[str, Any]]:
        """Every prompt, across all pages; ``raw=True``: their prompts/list entries."""
        items = await self._all_pages("prompts/list", "prompts")
        return items if raw else [prompt_info_from_dict(item) for item in items]

    @overload
    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, raw: Literal[False] = False
    ) -> GetPromptResult: ...
    @overload
    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, raw: Literal[True]
    ) -> dict[str, Any]: ...

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, raw: bool = False
    ) -> GetPromptResult | dict[str, Any]:
        """prompts/get; ``raw=True``: the GetPromptResult as sent (``{"description"?, "messages": [...]}``)."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = arguments
        result = await self.request("prompts/get", params)
        return result if raw else get_prompt_result_from_dict(result)

    @overload
    async def complete(
        self,
        ref: PromptRef | ResourceTemplateRef | dict[str, Any],
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
        *,
        raw: Literal[False] = False,
    ) -> CompleteResult: ...
    @overload
    async def complete(
        self,
        ref: PromptRef | ResourceTemplateRef | dict[str, Any],
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
        *,
        raw: Literal[True],
    ) -> dict[str, Any]: ...

    async def complete(
        self,
        ref: PromptRef | ResourceTemplateRef | dict[str, Any],
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
        *,
        raw: bool = False,
    ) -> CompleteResult | dict[str, Any]:
        """completion/complete: values for ``argument`` of the prompt or resource template ``ref``
        (``PromptRef(name)``, ``ResourceTemplateRef(uri_template)``, or the wire dict) starting
        with ``value``; ``context``: the arguments already chosen. A ``CompleteResult`` (``values``,
        ``total``, ``has_more``); ``raw=True``: the wire form (``{"completion": {...}}``)."""
        if isinstance(ref, PromptRef | ResourceTemplateRef):
            ref = ref.to_dict()
        elif not isinstance(ref, dict):
            raise TypeError(f"ref must be a PromptRef, a ResourceTemplateRef or a dict, not {type(ref).__name__}")
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
        result = await self.request("completion/complete", params)
        return result if raw else complete_result_from_dict(result)

    async def set_log_level(self, level: str) -> None:
        """logging/setLevel, and ``log_level`` for later sessions; in the stateless revision the
        level is kept here and stamped on every request instead (the server sends logs only for
        requests that carry one)."""
        self.log_level = level
        if not self.stateless:
            await self.request("logging/setLevel", {"level": level})

    async def notify_roots_changed(self) -> None:
        """notifications/roots/list_changed (the stateless revision has none: the server asks for
        roots when it needs them)."""
        if not self.stateless:
            await self.notify("notifications/roots/list_changed")
