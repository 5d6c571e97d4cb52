"""StreamableHttpClient and revision 2026-07-28 against a scripted server: how the probe
decides between the stateless revision and the handshake, what every stateless request
carries, input_required rounds, the ttlMs cache, and the errors a user sees."""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.stateless import (
    InputRoundsExceededError,
    UnsupportedProtocolVersionError,
    encode_header_value,
    invalid_x_mcp_header,
    param_headers,
)
from mcp_sse_server.engine.jsonrpc import JsonRpcNotification, McpError

from .asgi_server import serve

MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
DISCOVERED = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {"listChanged": True}},
    "instructions": "be nice",
    "ttlMs": 0,
    "cacheScope": "private",
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "9"}},
}
Reply = tuple[int, Any]  # HTTP status and a JSON body (a str is sent as text/plain)


def ok(message: dict[str, Any], result: dict[str, Any]) -> Reply:
    return 200, {"jsonrpc": "2.0", "id": message["id"], "result": result}


def error(message: dict[str, Any], code: int, text: str, data: Any = None, status: int = 400) -> Reply:
    body: dict[str, Any] = {"code": code, "message": text}
    if data is not None:
        body["data"] = data
    return status, {"jsonrpc": "2.0", "id": message.get("id"), "error": body}


class Server:
    """Records every HTTP request; ``script(message, headers)`` answers the POSTs it wants to,
    the rest get a stateless-server default (discover, tools/list, an empty tools/call result)."""

    def __init__(self, script: Callable[[dict[str, Any], dict[str, str]], Reply | None] | None = None) -> None:
        self.script = script
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.tools: list[dict[str, Any]] = [{"name": "add", "inputSchema": {"type": "object"}}]
        self.app = Starlette(routes=[Route("/mcp", self._endpoint, methods=["POST", "GET", "DELETE"])])

    def posted(self, method: str) -> list[tuple[dict[str, str], dict[str, Any]]]:
        return [(headers, body) for verb, headers, body in self.requests if verb == "POST" and body["method"] == method]

    @property
    def methods(self) -> list[str]:
        return [body.get("method", "?") for verb, _, body in self.requests if verb == "POST"]

    async def _endpoint(self, request: Request) -> Response:
        headers = {key.lower(): value for key, value in request.headers.items()}
        if request.method != "POST":
            self.requests.append((request.method, headers, None))
            return Response(status_code=405)
        message = orjson.loads(await request.body())
        self.requests.append(("POST", headers, message))
        if "id" not in message:
            return Response(status_code=202)
        reply = self.script(message, headers) if self.script is not None else None
        if reply is None:
            reply = self._default(message)
        status, body = reply
        if isinstance(body, str):
            return PlainTextResponse(body, status_code=status)
        return JSONResponse(body, status_code=status)

    def _default(self, message: dict[str, Any]) -> Reply:
        method = message["method"]
        if method == "server/discover":
            return ok(message, DISCOVERED)
        if method == "initialize":
            return ok(message, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old"}})
        if method == "tools/list":
            return ok(message, {"resultType": "complete", "tools": self.tools, "ttlMs": 0, "cacheScope": "private"})
        if method == "resources/read":
            return ok(message, {"resultType": "complete", "contents": [], "ttlMs": 0, "cacheScope": "private"})
        if method == "prompts/get":
            return ok(message, {"resultType": "complete", "messages": []})
        return ok(message, {"resultType": "complete", "content": [{"type": "text", "text": method}]})


@pytest.fixture
async def scripted() -> AsyncIterator[Callable[..., Any]]:
    """``async with scripted(script) as (server, url)``."""
    urls: list[Any] = []

    def make(script: Callable[[dict[str, Any], dict[str, str]], Reply | None] | None = None) -> Any:
        server = Server(script)
        context = serve(server.app)

        class Open:
            async def __aenter__(self) -> tuple[Server, str]:
                base = await context.__aenter__()
                return server, f"{base}/mcp"

            async def __aexit__(self, *exc: Any) -> None:
                await context.__aexit__(*exc)

        urls.append(server)
        return Open()

    yield make


# --- the probe --------------------------------------------------------------------------------


async def test_a_stateless_server_is_spoken_to_statelessly(scripted: Callable[..., Any]) -> None:
    """Discover listing 2026-07-28: no initialize, no session, no GET stream, no DELETE; every
    request carries the envelope and the routing headers."""
    async with scripted() as (server, url):
        async with StreamableHttpClient(url, client_name="probe", client_version="1") as client:
            assert (client.era, client.protocol_version, client.stateless) == ("stateless", MODERN, True)
            assert client.server_info == {"name": "scripted", "version": "9"}
            assert client.instructions == "be nice"
            assert await client.initialize() == {
                "protocolVersion": MODERN,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "scripted", "version": "9"},
                "instructions": "be nice",
            }
            await client.list_tools()
            await client.call_tool("add", {"a": 1})
        verbs = [verb for verb, _, _ in server.requests]
        assert verbs == ["POST"] * 3, server.requests  # no GET, no DELETE
        assert server.methods == ["server/discover", "tools/list", "tools/call"]
        for _, headers, body in server.requests:
            assert "mcp-session-id" not in headers
            assert headers["mcp-protocol-version"] == MODERN
            assert headers["mcp-method"] == body["method"]
            meta = body["params"]["_meta"]
            assert meta[META_VERSION] == MODERN
            assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
            assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "probe", "version": "1"}
            assert "io.modelcontextprotocol/logLevel" not in meta
        ((headers, _),) = server.posted("tools/call")
        assert headers["mcp-name"] == "add"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (lambda m: error(m, -32600, "Bad Request: Missing session ID"), "a session server's 400 about the session"),
        (lambda m: (404, "Not Found"), "a bare 404"),
        (lambda m: (405, "Method Not Allowed"), "a bare 405"),
        (lambda m: (400, "bad request"), "a 400 with an unrecognised body"),
        (lambda m: error(m, -32601, "Method not found", status=200), "method not found"),
        (lambda m: ok(m, {**DISCOVERED, "supportedVersions": ["2025-11-25"]}), "discover without a stateless version"),
        (lambda m: error(m, -32022, "Unsupported", {"supported": ["2025-11-25"]}), "-32022 naming only handshakes"),
        (lambda m: error(m, -32001, "Session not found"), "-32001, which is not a stateless code"),
    ],
)
async def test_anything_but_a_stateless_answer_falls_back_to_the_handshake(
    scripted: Callable[..., Any], answer: Callable[[dict[str, Any]], Reply], why: str
) -> None:
    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        return answer(message) if message["method"] == "server/discover" else None

    async with scripted(script) as (server, url):
        async with StreamableHttpClient(url) as client:
            assert (client.era, client.protocol_version) == ("session", "2025-11-25"), why
            await client.call_tool("add")
        assert server.methods[:3] == ["server/discover", "initialize", "notifications/initialized"], why
        ((headers, body),) = server.posted("tools/call")
        assert "_meta" not in body["params"] and headers["mcp-protocol-version"] == "2025-11-25"


@pytest.mark.parametrize(
    ("code", "data", "message"),
    [
        (-32020, None, "mcp-method header missing"),
        (-32021, {"requiredCapabilities": {"elicitation": {}}}, "Missing capability"),
        (-32602, None, "params._meta must be an object carrying the required envelope keys"),
    ],
)
async def test_a_recognised_stateless_error_keeps_the_client_stateless(
    scripted: Callable[..., Any], code: int, data: Any, message: str
) -> None:
    def script(request: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        return error(request, code, message, data) if request["method"] == "server/discover" else None

    async with scripted(script) as (server, url):
        async with StreamableHttpClient(url) as client:
            assert client.era == "stateless"
        assert "initialize" not in server.methods


async def test_minus_32022_naming_a_mutual_revision_is_retried_at_it(scripted: Callable[..., Any]) -> None:
    refused: list[int] = []

    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] == "server/discover" and not refused:
            refused.append(1)
            return error(message, -32022, "Unsupported protocol version", {"supported": [MODERN]})
        return None

    async with scripted(script) as (server, url):
        async with StreamableHttpClient(url) as client:
            assert client.protocol_version == MODERN
        assert server.methods == ["server/discover", "server/discover"]


async def test_minus_32022_without_a_mutual_revision_names_the_supported_ones(scripted: Callable[..., Any]) -> None:
    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        data = {"supported": ["2099-01-01"], "requested": MODERN}
        return error(message, -32022, "Unsupported protocol version", data)

    async with scripted(script) as (_, url):
        with pytest.raises(UnsupportedProtocolVersionError) as caught:
            await StreamableHttpClient(url).initialize()
    assert caught.value.supported == ["2099-01-01"]
    assert str(caught.value) == "Unsupported protocol version (asked for 2026-07-28); the server supports: 2099-01-01"


async def test_mode_session_never_probes_and_mode_stateless_never_initializes(scripted: Callable[..., Any]) -> None:
    async with scripted() as (server, url):
        async with StreamableHttpClient(url, mode="session") as client:
            assert client.era == "session"
        assert "server/discover" not in server.methods
    refuse = lambda m, h: error(m, -32601, "Method not found", status=404)  # noqa: E731
    async with scripted(refuse) as (server, url):
        with pytest.raises(McpError):
            await StreamableHttpClient(url, mode=MODERN).initialize()
        assert server.methods == ["server/discover"]
    with pytest.raises(ValueError, match="mode must be one of"):
        StreamableHttpClient("http://127.0.0.1:1/mcp", mode="2030-01-01")


# --- what every stateless request carries -------------------------------------------------------------


async def test_capabilities_log_level_and_routing_headers(scripted: Callable[..., Any]) -> None:
    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async with scripted() as (server, url):
        server.tools = [
            {
                "name": "wëather",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "opts": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
                        "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                    },
                },
            },
            {
                "name": "bad",
                "inputSchema": {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}},
            },
        ]
        client = StreamableHttpClient(
            url, elicitation_handler=elicit, elicitation_url=True, sampling_handler=sample, sampling_tools=True
        )
        client.roots = []
        async with client:
            assert [tool.name for tool in await client.list_tools()] == ["wëather"]  # "bad" is dropped
            await client.set_log_level("warning")
            await client.call_tool("wëather", {"region": "eu west ", "opts": {"n": 7}, "flag": None})
            await client.read_resource("file:///ä.txt")
            await client.get_prompt("greet")
        assert "logging/setLevel" not in server.methods
        ((headers, body),) = server.posted("tools/call")
        assert body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {
            "sampling": {"tools": {}},
            "elicitation": {"form": {}, "url": {}},
            "roots": {},
        }
        assert body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "warning"
        assert headers["mcp-name"] == "=?base64?" + base64.b64encode("wëather".encode()).decode() + "?="
        assert headers["mcp-param-region"] == encode_header_value("eu west ")
        assert headers["mcp-param-n"] == "7"
        assert "mcp-param-flag" not in headers  # null values are left out
        ((headers, _),) = server.posted("resources/read")
        assert headers["mcp-name"] == encode_header_value("file:///ä.txt")
        ((headers, _),) = server.posted("prompts/get")
        assert headers["mcp-name"] == "greet"


def test_x_mcp_header_rules() -> None:
    def schema(**field: Any) -> dict[str, Any]:
        return {"type": "object", "properties": {"p": field}}

    assert invalid_x_mcp_header(schema(type="string", **{"x-mcp-header": "Ok-1"})) is None
    assert invalid_x_mcp_header(schema(type="string", **{"x-mcp-header": "Bad Name"})) is not None
    assert invalid_x_mcp_header(schema(type="string", **{"x-mcp-header": ""})) is not None
    assert invalid_x_mcp_header(schema(type="number", **{"x-mcp-header": "N"})) is not None
    in_items = schema(type="array", items={"type": "string", "x-mcp-header": "I"})
    assert "not reached through properties" in (invalid_x_mcp_header(in_items) or "")
    twice = {
        "type": "object",
        "properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}},
    }
    assert "twice" in (invalid_x_mcp_header(twice) or "")
    assert param_headers(schema(type="integer", **{"x-mcp-header": "N"}), {"p": 2**53}) == {}
    assert param_headers(schema(type="boolean", **{"x-mcp-header": "B"}), {"p": True}) == {"Mcp-Param-B": "true"}
    assert encode_header_value("=?base64?abc?=") == "=?base64?PT9iYXNlNjQ/YWJjPz0=?="


# --- input_required rounds --------------------------------------------------------------------------


async def test_input_required_rounds_answer_every_request_and_echo_the_state(scripted: Callable[..., Any]) -> None:
    state = '{"opaque": "s\\u00e9 1"}  '  # echoed byte for byte, never parsed
    rounds: list[dict[str, Any]] = []
    both_running = asyncio.Event()
    running = itertools.count(1)

    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] != "tools/call":
            return None
        rounds.append(message)
        params = message["params"]
        if len(rounds) == 1:
            requests = {
                "who": {
                    "method": "elicitation/create",
                    "params": {
                        "message": "Name?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}, "n": {"type": "integer", "default": 3}},
                        },
                    },
                },
                "llm": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
                "where": {"method": "roots/list"},
            }
            return ok(message, {"resultType": "input_required", "inputRequests": requests, "requestState": state})
        if len(rounds) == 2:  # only state: the server is still busy
            assert params["requestState"] == state
            return ok(message, {"resultType": "input_required", "requestState": "second"})
        return ok(message, {"content": [{"type": "text", "text": f"done {params['requestState']}"}]})  # no resultType

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        if next(running) == 2:
            both_running.set()
        await asyncio.wait_for(both_running.wait(), 5)  # both handlers run at once
        return {"action": "accept", "content": {"name": "Ada"}}

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        if next(running) == 2:
            both_running.set()
        await asyncio.wait_for(both_running.wait(), 5)
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    from mcp_sse_server.engine.types import Root

    async with scripted(script) as (_, url):
        client = StreamableHttpClient(
            url, elicitation_handler=elicit, sampling_handler=sample, roots=[Root("file:///r")]
        )
        async with client:
            result = await client.call_tool("ask", {"x": 1})
    assert result.content[0].text == "done second"  # type: ignore[union-attr]
    first, second, third = (message["params"] for message in rounds)
    assert len({message["id"] for message in rounds}) == 3  # a new id each round
    assert "inputResponses" not in first and "requestState" not in first
    assert second["arguments"] == {"x": 1} and second["name"] == "ask"
    assert second["requestState"] == state
    assert second["inputResponses"] == {
        "who": {"action": "accept", "content": {"name": "Ada", "n": 3}},  # the default filled in
        "llm": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
        "where": {"roots": [{"uri": "file:///r"}]},
    }
    assert "inputResponses" not in third and third["requestState"] == "second"


async def test_the_round_cap_and_unknown_result_types(scripted: Callable[..., Any]) -> None:
    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        name = message["params"].get("name")
        if name == "forever":
            return ok(message, {"resultType": "input_required", "requestState": "again"})
        if name == "task":
            return ok(message, {"resultType": "task", "taskId": "t1"})
        return None

    async with scripted(script) as (server, url), StreamableHttpClient(url, max_input_rounds=2) as client:
        with pytest.raises(InputRoundsExceededError, match="after 2 rounds"):
            await client.call_tool("forever")
        assert len(server.posted("tools/call")) == 3  # the call and two retries
        with pytest.raises(McpError, match="unrecognised resultType 'task'"):
            await client.call_tool("task")


async def test_an_input_request_without_a_handler_fails_the_call(scripted: Callable[..., Any]) -> None:
    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] == "tools/call":
            requests = {"q": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {}}}}
            return ok(message, {"resultType": "input_required", "inputRequests": requests})
        return None

    async with scripted(script) as (server, url):
        async with StreamableHttpClient(url) as client:
            with pytest.raises(McpError, match="Method not found: elicitation/create"):
                await client.call_tool("ask")
        assert len(server.posted("tools/call")) == 1


# --- errors and the cache ---------------------------------------------------------------------------


async def test_minus_32022_mid_session_is_retried_once_then_shown(scripted: Callable[..., Any]) -> None:
    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] == "tools/call":
            return error(message, -32022, "Unsupported protocol version", {"supported": ["2026-07-28", "2025-11-25"]})
        return None

    async with scripted(script) as (server, url):
        async with StreamableHttpClient(url) as client:
            with pytest.raises(UnsupportedProtocolVersionError, match="supports: 2026-07-28, 2025-11-25"):
                await client.call_tool("add")
        assert len(server.posted("tools/call")) == 2


async def test_minus_32020_on_a_call_relists_the_tools_and_retries_once(scripted: Callable[..., Any]) -> None:
    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] == "tools/call":
            return error(message, -32020, "Mcp-Param-Region header does not match")
        return None

    async with scripted(script) as (server, url):
        async with StreamableHttpClient(url) as client:
            with pytest.raises(McpError, match="does not match"):
                await client.call_tool("add")
        assert server.methods[1:] == ["tools/call", "tools/list", "tools/call"]


async def test_list_results_are_cached_for_their_ttl_until_a_list_changed(scripted: Callable[..., Any]) -> None:
    def script(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] == "tools/list":
            return ok(message, {"resultType": "complete", "tools": [], "ttlMs": 60_000, "cacheScope": "private"})
        if message["method"] == "resources/read":
            contents = [{"uri": message["params"]["uri"], "text": "x"}]
            return ok(
                message, {"resultType": "complete", "contents": contents, "ttlMs": 60_000, "cacheScope": "public"}
            )
        if message["method"] == "prompts/list":
            return ok(message, {"resultType": "complete", "prompts": [], "ttlMs": 0, "cacheScope": "public"})
        return None

    async with scripted(script) as (server, url):
        async with StreamableHttpClient(url) as client:
            for _ in range(3):
                await client.list_tools()
                await client.read_resource("file:///a")
                await client.list_prompts()  # ttlMs 0: never cached
            assert len(server.posted("tools/list")) == 1
            assert len(server.posted("resources/read")) == 1
            assert len(server.posted("prompts/list")) == 3
            client.handle_notification(JsonRpcNotification("notifications/tools/list_changed", {}))
            client.handle_notification(JsonRpcNotification("notifications/resources/updated", {"uri": "file:///a"}))
            await client.list_tools()
            await client.read_resource("file:///a")
            assert len(server.posted("tools/list")) == 2
            assert len(server.posted("resources/read")) == 2
        async with StreamableHttpClient(url, cache=False) as client:
            await client.list_tools()
            await client.list_tools()
        assert len(server.posted("tools/list")) == 4


# --- subscriptions/listen ---------------------------------------------------------------------------


def sse(*messages: dict[str, Any]) -> bytes:
    return b"".join(b"event: message\ndata: " + orjson.dumps(message) + b"\n\n" for message in messages)


async def test_listen_acks_demuxes_and_listens_again_after_an_unexpected_close() -> None:
    """The first stream is acknowledged then drops without the closing result: the client
    listens again (a new subscription id); the second ends gracefully and ends the iteration.
    A notification for another subscription id is not delivered."""
    listens: list[dict[str, Any]] = []

    async def endpoint(request: Request) -> Response:
        message = orjson.loads(await request.body())
        if message["method"] == "server/discover":
            return JSONResponse(ok(message, DISCOVERED)[1])
        listens.append(message)
        sid = message["id"]
        meta = {"io.modelcontextprotocol/subscriptionId": sid}
        ack = {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": meta, "notifications": {"toolsListChanged": True}},
        }
        changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": meta}}
        stray = {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {**meta, "io.modelcontextprotocol/subscriptionId": "other"}},
        }
        if len(listens) == 1:
            body = sse(ack, changed)  # then the stream ends without the result
        else:
            body = sse(
                ack, stray, changed, {"jsonrpc": "2.0", "id": sid, "result": {"resultType": "complete", "_meta": meta}}
            )
        return Response(body, media_type="text/event-stream")

    app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])
    async with serve(app) as base, StreamableHttpClient(f"{base}/mcp") as client:
        async with client.listen(tools_list_changed=True) as subscription:
            received = [notification async for notification in subscription]
        assert subscription.acknowledged == {"toolsListChanged": True}
    assert [notification.method for notification in received] == ["notifications/tools/list_changed"] * 2
    assert len(listens) == 2 and listens[0]["id"] != listens[1]["id"]
    assert listens[0]["params"]["notifications"] == {"toolsListChanged": True}
    assert listens[0]["params"]["_meta"][META_VERSION] == MODERN


async def test_listen_gives_up_after_max_relistens() -> None:
    posts: list[str] = []

    async def endpoint(request: Request) -> Response:
        message = orjson.loads(await request.body())
        posts.append(message["method"])
        if message["method"] == "server/discover":
            return JSONResponse(ok(message, DISCOVERED)[1])
        meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
        ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"_meta": meta}}
        return Response(sse(ack), media_type="text/event-stream")

    app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])
    failure: BaseException | None = None
    async with (
        serve(app) as base,
        StreamableHttpClient(f"{base}/mcp") as client,
        client.listen(resource_subscriptions=["file:///a"], max_relistens=2) as subscription,
    ):
        try:
            async for _ in subscription:
                pass
        except McpError as error:
            failure = error
    assert failure is not None and "without answering" in str(failure)
    assert posts.count("subscriptions/listen") == 3


async def test_a_handshake_refused_for_a_stateless_revision_probes_again() -> None:
    """The first discover gets no answer in time; the fallback initialize is refused with
    -32022 naming 2026-07-28, so the client asks discover once more and speaks it."""
    methods: list[str] = []

    async def endpoint(request: Request) -> Response:
        message = orjson.loads(await request.body())
        methods.append(message["method"])
        if message["method"] == "server/discover":
            if methods.count("server/discover") == 1:
                await asyncio.sleep(2)
            return JSONResponse(ok(message, DISCOVERED)[1])
        status, body = error(message, -32022, "Unsupported protocol version", {"supported": [MODERN]})
        return JSONResponse(body, status_code=status)

    app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])
    async with serve(app) as base, StreamableHttpClient(f"{base}/mcp", probe_timeout=0.2) as client:
        assert client.protocol_version == MODERN
    assert methods == ["server/discover", "initialize", "server/discover"]


async def test_a_broken_stream_is_reissued_once_except_for_tools_call() -> None:
    """No resumption at 2026-07-28: a list whose stream ends without the answer is sent again
    with a new id; a tools/call is not (it may have side effects), it fails."""
    posts: list[dict[str, Any]] = []

    async def endpoint(request: Request) -> Response:
        message = orjson.loads(await request.body())
        posts.append(message)
        if message["method"] == "server/discover":
            return JSONResponse(ok(message, DISCOVERED)[1])
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
        if len([post for post in posts if post["method"] == message["method"]]) == 1:
            return Response(sse(progress), media_type="text/event-stream")  # ends without the answer
        return JSONResponse(ok(message, {"resultType": "complete", "tools": [], "content": []})[1])

    app = Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])
    async with serve(app) as base, StreamableHttpClient(f"{base}/mcp") as client:
        assert await client.list_tools() == []
        with pytest.raises(McpError, match="without answering"):
            await client.call_tool("add")
    lists = [post for post in posts if post["method"] == "tools/list"]
    assert len(lists) == 2 and lists[0]["id"] != lists[1]["id"]
    assert len([post for post in posts if post["method"] == "tools/call"]) == 1
