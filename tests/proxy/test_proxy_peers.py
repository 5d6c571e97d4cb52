"""proxy() in front of real MCP servers nobody here wrote (issue 40, test plan P1, P2, P4 and the
1.2.1 row): server-everything and server-filesystem over stdio, the official SDK 2.3 and fastmcp
servers over Streamable HTTP, the official SDK 1.2.1 over stdio (2024-11-05). Front clients: ours,
at a session revision and at 2026-07-28, and the official SDK 2.3 client over HTTP."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as t
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fixtures.node import require_node
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.engine.jsonrpc import JsonRpcNotification
from mcp_sse_server.proxy import ProxyServer, proxy
from mcp_sse_server.transport.http import HttpSettings, McpHttpServer

ROOT = Path(__file__).resolve().parents[2]
BOUND = 60.0  # catches hangs only


def npm_server(package: str) -> list[str]:
    """``node <the package's entry point>``; skips when node or the package is not set up."""
    node, modules = require_node()
    entry = Path(modules) / "@modelcontextprotocol" / package / "dist" / "index.js"
    if not entry.is_file():
        pytest.skip(f"@modelcontextprotocol/{package} is not set up: run `source scripts/setup.sh && setup_node`")
    return [node, str(entry)]


@pytest.fixture
async def everything() -> AsyncIterator[ProxyServer]:
    front = proxy([*npm_server("server-everything"), "stdio"], name="everything")
    try:
        yield front
    finally:
        await front.close()


async def sample(request: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "sampled-by-front"}, "model": "front-model"}


async def elicit(request: Any) -> dict[str, Any]:
    schema = request["requestedSchema"]
    return {"action": "accept", "content": {name: "x" for name in schema.get("required", [])}}


async def until(condition: Any, what: str) -> None:
    for _ in range(int(BOUND * 20)):  # bounded
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not seen within {BOUND} s: {what}")


@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
async def test_server_everything_through_the_proxy(everything: ProxyServer, mode: str) -> None:
    progress: list[float] = []
    async with InMemoryClient(everything, mode=mode, sampling_handler=sample, elicitation_handler=elicit) as client:
        assert client.stateless == (mode != "session")
        names = {tool.name for tool in await client.list_tools()}
        assert {"get-sum", "trigger-long-running-operation", "trigger-sampling-request"} <= names
        assert "trigger-elicitation-request" in names  # listed: the front declared elicitation
        summed = await client.call_tool("get-sum", {"a": 1, "b": 2})
        assert "3" in summed.content[0].text  # type: ignore[union-attr]
        done = await client.call_tool(
            "trigger-long-running-operation",
            {"duration": 1, "steps": 3},
            on_progress=lambda p, t, m: progress.append(p),
        )
        assert "completed" in done.content[0].text  # type: ignore[union-attr]
        assert progress == sorted(set(progress)) and len(progress) == 3  # on the front token, increasing
        sampled = await asyncio.wait_for(client.call_tool("trigger-sampling-request", {"prompt": "hi"}), BOUND)
        assert "sampled-by-front" in sampled.content[0].text  # type: ignore[union-attr]
        elicited = await asyncio.wait_for(client.call_tool("trigger-elicitation-request", {}), BOUND)
        assert "provided the requested information" in elicited.content[0].text  # type: ignore[union-attr]
        structured = await client.call_tool("get-structured-content", {"location": "New York"})
        assert structured.structured_content is not None and "temperature" in structured.structured_content
        prompts = {prompt.name for prompt in await client.list_prompts()}
        assert "completable-prompt" in prompts
        completed = await client.complete({"type": "ref/prompt", "name": "completable-prompt"}, "department", "E")
        assert completed.values == ["Engineering"]
        resources = await client.list_resources()
        assert any(resource.uri.startswith("demo://resource/") for resource in resources)
        read = await client.read_resource(resources[0].uri)
        assert read.contents
        unknown = await client.call_tool("no-such-tool", {})  # the backend's own answer, passed through
        assert unknown.is_error and "no-such-tool not found" in unknown.content[0].text  # type: ignore[union-attr]


async def test_server_everything_roots_subscriptions_and_logs_reach_a_session_front(everything: ProxyServer) -> None:
    seen: list[JsonRpcNotification] = []
    levels: list[str] = []
    async with InMemoryClient(
        everything,
        mode="session",
        roots=[{"uri": "file:///front-root", "name": "front"}],
        on_notification=seen.append,
        on_log=lambda message: levels.append(message.level),
        log_level="error",  # (asked for at the handshake: the front filters from the start)
    ) as client:
        roots = await client.call_tool("get-roots-list", {})
        assert "file:///front-root" in roots.content[0].text  # type: ignore[union-attr]
        uri = "demo://resource/dynamic/text/1"
        await client.request("resources/subscribe", {"uri": uri})
        await client.call_tool("toggle-subscriber-updates", {})
        await client.call_tool("toggle-simulated-logging", {})

        def updates() -> list[Any]:
            return [(n.params or {}).get("uri") for n in seen if n.method == "notifications/resources/updated"]

        await until(lambda: updates() and levels, "a resource update and a log line")
        assert set(updates()) == {uri}
        assert set(levels) <= {"error", "critical", "alert", "emergency"}  # the front's level filters


@pytest.mark.parametrize("sdk_mode", ["legacy", "auto"])  # auto: 2026-07-28, input_required rounds
async def test_server_everything_behind_an_http_front_for_the_official_client(
    everything: ProxyServer, sdk_mode: str
) -> None:
    asked: list[str] = []

    async def sampling(context: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        asked.append("sampling")
        return t.CreateMessageResult(
            role="assistant", content=t.TextContent(type="text", text="sdk-sampled"), model="sdk-model"
        )

    async def elicitation(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        asked.append("elicitation")
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    reported: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    http = await McpHttpServer.bind(everything, settings=HttpSettings())
    client = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=60.0))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with Client(
                streamable_http_client(http.endpoint, http_client=client),
                mode=sdk_mode,
                sampling_callback=sampling,
                elicitation_callback=elicitation,
            ) as sdk:
                assert (sdk.protocol_version == "2026-07-28") == (sdk_mode == "auto")
                names = {tool.name for tool in (await sdk.list_tools()).tools}
                assert {"get-sum", "trigger-sampling-request", "trigger-elicitation-request"} <= names
                sampled = await sdk.call_tool("trigger-sampling-request", {"prompt": "hi"})
                assert "sdk-sampled" in sampled.content[0].text  # type: ignore[union-attr]
                elicited = await sdk.call_tool("trigger-elicitation-request", {})
                assert "Ada" in str(elicited.content)
                await sdk.call_tool(
                    "trigger-long-running-operation", {"duration": 1, "steps": 2}, progress_callback=on_progress
                )
                assert reported == [1, 2]
    finally:
        await client.aclose()
        await http.close()
    assert asked == ["sampling", "elicitation"]


async def test_server_filesystem_sees_the_front_roots_and_their_changes(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "a.txt").write_text("in first")
    current = [{"uri": first.as_uri(), "name": "first"}]
    front = proxy([*npm_server("server-filesystem"), str(tmp_path)], name="files")
    try:
        async with InMemoryClient(front, mode="session", roots=lambda: current) as client:

            async def allowed() -> str:
                listed = await client.call_tool("list_allowed_directories", {})
                return str(listed.content[0].text)  # type: ignore[union-attr]

            # The backend asks for roots right after its handshake (the front's answer replaces
            # its arguments when it comes).
            for _ in range(int(BOUND * 10)):  # bounded
                if str(first) in await allowed():
                    break
                await asyncio.sleep(0.1)
            text = await allowed()
            assert str(first) in text and str(second) not in text
            read = await client.call_tool("read_text_file", {"path": str(first / "a.txt")})
            assert "in first" in read.content[0].text  # type: ignore[union-attr]
            refused = await client.call_tool("read_text_file", {"path": str(first / ".." / "second" / "x")})
            assert refused.is_error  # traversal refused by the backend
            current[:] = [{"uri": second.as_uri(), "name": "second"}]
            await client.notify_roots_changed()
            for _ in range(int(BOUND * 10)):  # bounded: the backend re-asks in its own time
                if str(second) in await allowed():
                    break
                await asyncio.sleep(0.1)
            assert str(second) in await allowed()
    finally:
        await front.close()


@pytest.fixture(params=["sdk", "fastmcp"])
def http_peer(request: pytest.FixtureRequest) -> Any:
    from client.test_peer_matrix import running

    with running(str(request.param), "stateful") as url:
        yield url


@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
async def test_python_sdk_servers_over_http_through_the_proxy(http_peer: str, mode: str) -> None:
    front = proxy(http_peer, name="peer")
    try:
        async with InMemoryClient(front, mode=mode, sampling_handler=sample) as client:
            names = {tool.name for tool in await client.list_tools()}
            assert {"echo", "sample"} <= names
            echoed = await client.call_tool("echo", {"text": "hello"})
            assert echoed.content[0].text == "hello"  # type: ignore[union-attr]
            sampled = await asyncio.wait_for(client.call_tool("sample", {"prompt": "capital?"}), BOUND)
            assert "sampled-by-front" in str(sampled.content)
            read = await client.read_resource("memo://note")
            assert read.contents[0].text == "a note"  # type: ignore[union-attr]
            prompt = await client.get_prompt("greet", {"name": "Alice"})
            assert "Alice" in str(prompt.messages[0].content)
    finally:
        await front.close()


def old_sdk_python() -> str:
    """The python of the official SDK 1.2.1's virtualenv; skips when it is not set up."""
    python = os.environ.get("MCP_TEST_OLD_SDK_PYTHON") or str(ROOT / ".tools" / "mcp-1.2.1" / "bin" / "python")
    if not os.path.isfile(python):
        pytest.skip("the official SDK 1.2.1 is not set up: run `source scripts/setup.sh && setup_old_sdk`")
    return python


@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
async def test_the_old_sdk_stdio_server_through_the_proxy(mode: str) -> None:
    python = old_sdk_python()
    peer = str(ROOT / "tests" / "client" / "old_sdk_peer.py")
    front = proxy({"type": "stdio", "command": python, "args": [peer, "stdio"]}, mode="session", name="old")
    try:
        async with InMemoryClient(front, mode=mode) as client:
            assert {tool.name for tool in await client.list_tools()} == {"add", "echo"}
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.content[0].text == "5"  # type: ignore[union-attr]
    finally:
        await front.close()


async def test_a_stdio_backend_killed_mid_call_fails_that_call_and_is_restarted(everything: ProxyServer) -> None:
    everything.first_delay = 0.05
    started = asyncio.Event()
    async with InMemoryClient(everything, mode="session") as client:
        call = asyncio.create_task(
            client.call_tool(
                "trigger-long-running-operation",
                {"duration": 30, "steps": 30},
                on_progress=lambda p, t, m: started.set(),
            )
        )
        await asyncio.wait_for(started.wait(), BOUND)
        backend = next(iter(everything._fronts.values()))[0].started
        assert backend is not None and backend.connection is not None
        process = backend.connection.transport.process  # type: ignore[attr-defined]
        process.kill()
        failed = await asyncio.wait_for(call, BOUND)
        assert failed.is_error
        assert failed.content[0].text.startswith("Backend everything is unavailable")  # type: ignore[union-attr]
        assert "Traceback" not in failed.content[0].text  # type: ignore[union-attr]
        for _ in range(int(BOUND * 10)):  # bounded: refused at once until the backoff ends
            summed = await asyncio.wait_for(client.call_tool("get-sum", {"a": 2, "b": 2}), BOUND)
            if not summed.is_error:
                break
            assert "starting again in" in summed.content[0].text  # type: ignore[union-attr]
            await asyncio.sleep(0.1)
        assert not summed.is_error and "4" in summed.content[0].text  # type: ignore[union-attr]


@pytest.fixture
def sdk_peer(request: pytest.FixtureRequest) -> Any:
    from fixtures.peers import Peer

    peer = Peer(*request.param)
    try:
        yield peer
    finally:
        peer.kill()


@pytest.mark.parametrize("sdk_peer", [("sse",)], indirect=True)
@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
async def test_a_legacy_sse_backend_through_the_proxy(sdk_peer: Any, mode: str) -> None:
    front = proxy(f"{sdk_peer.base}/sse", name="legacy")
    try:
        async with InMemoryClient(front, mode=mode, sampling_handler=sample) as client:
            assert {"add", "slow", "ask_model"} <= {tool.name for tool in await client.list_tools()}
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.content[0].text == "5"  # type: ignore[union-attr]
            asked = await asyncio.wait_for(client.call_tool("ask_model", {"question": "capital?"}), BOUND)
            assert "sampled-by-front" in str(asked.content)
    finally:
        await front.close()


@pytest.mark.parametrize("sdk_peer", [("http",)], indirect=True)
@pytest.mark.parametrize("mode", ["session", "2026-07-28"])
async def test_cancelling_the_front_call_reaches_an_http_backend(sdk_peer: Any, mode: str) -> None:
    cancelled = sdk_peer.watch("SLOW-CANCELLED")
    started = asyncio.Event()
    front = proxy(f"{sdk_peer.base}/mcp", name="sdk")
    try:
        async with InMemoryClient(front, mode=mode) as client:
            call = asyncio.create_task(
                client.call_tool("slow", {"steps": 2000}, on_progress=lambda p, t, m: started.set())
            )
            await asyncio.wait_for(started.wait(), BOUND)
            call.cancel()
            await asyncio.wait_for(cancelled.wait(), BOUND)
            added = await client.call_tool("add", {"a": 1, "b": 1})
            assert added.content[0].text == "2"  # type: ignore[union-attr]
    finally:
        await front.close()
