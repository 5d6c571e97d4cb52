"""AppHostSession (client/app_host.py): the host half of the view-host protocol, between a view
played by the test over an in-process pipe and a real server reached through InMemoryClient."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from apps.test_server_apps import SCHEMA, build_server
from mcp_sse_server import InMemoryClient, McpServer
from mcp_sse_server.client.app_host import VIEW_PROTOCOL_VERSION, AppHostSession
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND

WAIT = 5.0  # only catches a hang


class View:
    """The view's end of the pipe: what the host sent, and requests written by the test."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.host: AppHostSession | None = None
        self.ids = 0

    async def send(self, message: dict[str, Any]) -> None:  # the host's ``send``
        json.dumps(message)  # what crosses a pipe is JSON
        await self.inbox.put(message)

    async def next(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.inbox.get(), WAIT)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.host is not None
        self.ids += 1
        await self.host.receive({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}})
        answer = await self.next()
        assert answer["id"] == self.ids, answer
        return answer

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        assert self.host is not None
        await self.host.receive({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def start(self) -> dict[str, Any]:
        answer = await self.request(
            "ui/initialize",
            {"appInfo": {"name": "view", "version": "1"}, "appCapabilities": {}, "protocolVersion": "2026-01-26"},
        )
        await self.notify("ui/notifications/initialized")
        return answer


@pytest.fixture
async def counted() -> AsyncIterator[tuple[McpServer, list[str]]]:
    server = build_server()
    ran: list[str] = []

    @server.tool(name="danger", app="ui://calc/view.html", visibility=["model"])
    def danger() -> str:
        ran.append("danger")
        return "done"

    yield server, ran


def host_for(client: InMemoryClient, view: View, **options: Any) -> AppHostSession:
    host = AppHostSession(client, "add", send=view.send, host_info={"name": "test-host", "version": "1"}, **options)
    view.host = host
    return host


async def test_nothing_reaches_the_view_before_initialized_then_input_and_result_in_order() -> None:
    view = View()
    async with InMemoryClient(build_server()) as client:
        host = host_for(client, view, host_context={"theme": "dark"})
        await host.tool_input_partial({"a": 20})
        running = asyncio.create_task(host.run_tool({"a": 20, "b": 22}))
        await asyncio.sleep(0)
        assert view.inbox.empty()
        answer = await view.start()
        assert answer["result"]["protocolVersion"] == VIEW_PROTOCOL_VERSION
        assert answer["result"]["hostContext"] == {"theme": "dark"}
        partial, complete, result = await view.next(), await view.next(), await view.next()
        assert partial["method"] == "ui/notifications/tool-input-partial"
        assert complete == {
            "jsonrpc": "2.0",
            "method": "ui/notifications/tool-input",
            "params": {"arguments": {"a": 20, "b": 22}},
        }
        assert result["method"] == "ui/notifications/tool-result"
        assert result["params"]["structuredContent"] == {"sum": 42, "apps": False}
        assert (await asyncio.wait_for(running, WAIT)).structured_content == {"sum": 42, "apps": False}
        await host.context_changed({"theme": "light"})
        assert (await view.next())["params"] == {"theme": "light"}


async def test_the_order_of_what_the_host_says_is_enforced() -> None:
    async with InMemoryClient(build_server()) as client:
        host = host_for(client, View())
        with pytest.raises(RuntimeError, match="after tool-input"):
            await host.tool_result({"content": []})
        await host.tool_input({})
        with pytest.raises(RuntimeError, match="once"):
            await host.tool_input({})
        with pytest.raises(RuntimeError, match="before tool-input"):
            await host.tool_input_partial({})
        await host.tool_cancelled("user closed it")
        with pytest.raises(RuntimeError, match="already has"):
            await host.tool_result({"content": []})


async def test_a_view_calls_app_tools_and_is_refused_a_model_only_one(counted: tuple[McpServer, list[str]]) -> None:
    server, ran = counted
    view = View()
    async with InMemoryClient(server) as client:
        host_for(client, view)
        refused = await view.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert refused["error"]["code"] == INVALID_REQUEST  # before ui/initialize
        await view.start()
        added = await view.request("tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}})
        assert added["result"]["structuredContent"] == {"sum": 42, "apps": False}
        denied = await view.request("tools/call", {"name": "danger", "arguments": {}})
        assert denied["error"]["code"] == INVALID_PARAMS and "danger" in denied["error"]["message"]
        assert ran == []  # refused by the host: the server never ran it
        assert "danger" in {tool.name for tool in await client.list_tools()}  # (the model may call it)
        assert (await client.call_tool("danger")).content and ran == ["danger"]
        listed = await view.request("tools/list")
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["add", "refresh"]
        read = await view.request("resources/read", {"uri": "ui://calc/view.html"})
        assert read["result"]["contents"][0]["mimeType"] == "text/html;profile=mcp-app"
        missing = await view.request("resources/read", {"uri": "ui://calc/none.html"})
        assert "error" in missing


async def test_handlers_declare_capabilities_and_unknown_methods_are_refused() -> None:
    opened: list[str] = []
    sizes: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    view = View()
    async with InMemoryClient(build_server()) as client:
        host_for(
            client,
            view,
            on_open_link=lambda params: opened.append(params["url"]),
            on_size=sizes.append,
            on_log=logs.append,
        )
        answer = await view.start()
        capabilities = answer["result"]["hostCapabilities"]
        assert capabilities == {"serverTools": {}, "serverResources": {}, "logging": {}, "openLinks": {}}
        assert (await view.request("ui/open-link", {"url": "https://example.com"}))["result"] == {}
        assert opened == ["https://example.com"]
        for method in ("ui/message", "ui/no-such-thing", "sampling/createMessage"):
            assert (await view.request(method, {}))["error"]["code"] == METHOD_NOT_FOUND
        await view.notify("ui/notifications/size-changed", {"height": 240})
        await view.notify("notifications/message", {"level": "info", "data": "hello"})
        await view.notify("ui/notifications/sandbox-proxy-ready")
        assert sizes == [{"height": 240}] and logs == [{"level": "info", "data": "hello"}]
        assert (await view.request("ping"))["result"] == {}


async def test_bad_messages_get_an_error_or_are_dropped_never_a_crash() -> None:
    view = View()
    async with InMemoryClient(build_server()) as client:
        host = host_for(client, view)
        junks: list[Any] = ["text", 7, None, [], {"jsonrpc": "1.0"}, {"jsonrpc": "2.0", "method": 3}]
        for junk in junks:
            await host.receive(junk)
        assert view.inbox.empty()
        await host.receive({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": "no"})
        assert (await view.next())["error"]["code"] == INVALID_REQUEST
        await host.receive({"jsonrpc": "2.0", "id": 10, "method": 5})
        assert (await view.next())["error"]["code"] == INVALID_REQUEST

        def broken(params: dict[str, Any]) -> None:
            raise KeyError("oops")

        host.handlers["on_message"] = broken
        await view.start()
        failed = await view.request("ui/message", {"role": "user", "content": []})
        assert failed["error"]["code"] == -32603


async def test_teardown_waits_for_the_view_and_gives_up_when_it_is_silent() -> None:
    view = View()
    async with InMemoryClient(build_server()) as client:
        host = host_for(client, view)
        assert await host.teardown() is False  # not initialized: nothing to tear down
        await view.start()

        async def answer() -> None:
            request = await view.next()
            assert request["method"] == "ui/resource-teardown" and request["params"] == {"reason": "closing"}
            await host.receive({"jsonrpc": "2.0", "id": request["id"], "result": {}})

        answering = asyncio.create_task(answer())
        assert await host.teardown("closing", timeout=WAIT) is True
        await answering
        assert await host.teardown(timeout=0.05) is False  # the view never answers this one
        assert (await view.next())["method"] == "ui/resource-teardown"


async def test_what_the_host_sends_validates_against_the_extension_schema() -> None:
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    if not SCHEMA.is_file():
        pytest.skip(f"the ext-apps package is not installed ({SCHEMA})")
    definitions = json.loads(SCHEMA.read_text())["$defs"]

    def validate(name: str, value: Any) -> None:
        jsonschema_rs.validator_for(definitions[name]).validate(value)  # (each is self-contained)

    view = View()
    async with InMemoryClient(build_server()) as client:
        host = host_for(client, view, on_open_link=lambda params: None, host_context={"theme": "dark"})
        validate("McpUiInitializeResult", (await view.start())["result"])
        await host.run_tool({"a": 1, "b": 2})
        for name in ("McpUiToolInputNotification", "McpUiToolResultNotification"):
            message = await view.next()
            assert message.pop("jsonrpc") == "2.0"  # (the schema's messages leave the envelope out)
            validate(name, message)
