"""Two ``serve`` processes on one Redis behind a round-robin TCP proxy (each new connection goes to
the next backend; the clients send ``Connection: close``, so their requests alternate between
the processes): the official Python SDK client and ours complete a whole session."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as t
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fixtures.redis_cluster import indexed_sessions
from mcp_sse_server.client import StreamableHttpClient

from .serving import RoundRobinProxy, two_workers_on_redis

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

KEYS = "an-old-secret-of-32-bytes-or-so!,a-newer-secret-of-32-bytes-or-so!"


@pytest.fixture
def keys() -> str | None:
    """MCP_REQUEST_STATE_KEYS for both processes (None: unset)."""
    return KEYS


@pytest.fixture
def backends(redis_url: str, tmp_path: Path, keys: str | None) -> Iterator[tuple[RoundRobinProxy, str]]:
    env = {} if keys is None else {"MCP_REQUEST_STATE_KEYS": keys}
    with two_workers_on_redis(redis_url, tmp_path, env) as (a, b, url):
        proxy = RoundRobinProxy([a.port, b.port])
        try:
            yield proxy, url
        finally:
            proxy.close()


def live_sessions(url: str) -> int:
    return indexed_sessions(url)


def endpoint(proxy: RoundRobinProxy) -> str:
    return f"http://127.0.0.1:{proxy.port}/mcp"


async def test_the_sdk_client_completes_a_session_alternating_between_two_processes(
    backends: tuple[RoundRobinProxy, str],
) -> None:
    proxy, url = backends
    elicited: list[str] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def elicitation(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        elicited.append(params.message)
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    http = httpx2.AsyncClient(headers={"connection": "close"}, timeout=httpx2.Timeout(30.0, read=60.0))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with Client(
                streamable_http_client(endpoint(proxy), http_client=http),
                mode="legacy",
                elicitation_callback=elicitation,
            ) as sdk:
                assert sdk.protocol_version == "2025-11-25"
                names = [tool.name for tool in (await sdk.list_tools()).tools]
                assert {"add", "chatty", "elicit"} <= set(names)
                added = await sdk.call_tool("add", {"a": 20, "b": 22})
                assert added.content[0].text == "42"  # type: ignore[union-attr]
                chatty = await sdk.call_tool("chatty", {}, progress_callback=on_progress)
                assert chatty.content[0].text == "chatty done"  # type: ignore[union-attr]
                assert progress == [(1, 2, "half"), (2, 2, "done")]
                for _ in range(2):  # the answer goes out on a new connection: to the other process at least once
                    answered = await sdk.call_tool("elicit", {})
                    assert answered.content[0].text == "accept: Ada"  # type: ignore[union-attr]
                assert elicited == ["Your name?", "Your name?"]
                read = await sdk.read_resource("test://hello")
                assert read.contents[0].text == "Hello, world."  # type: ignore[union-attr]
                assert live_sessions(url) == 1
    finally:
        await http.aclose()
    assert min(proxy.per_backend) >= 4, proxy.per_backend  # both processes served this session
    assert live_sessions(url) == 0  # the SDK's DELETE on leaving ended it (on whichever process)


async def test_our_client_completes_a_session_alternating_between_two_processes(
    backends: tuple[RoundRobinProxy, str],
) -> None:
    proxy, url = backends
    progress: list[Any] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    client = StreamableHttpClient(
        endpoint(proxy), headers={"connection": "close"}, elicitation_handler=elicit, mode="session"
    )
    async with client:
        assert {"add", "chatty", "elicit"} <= {tool.name for tool in await client.list_tools()}
        added = await client.call_tool("add", {"a": 1, "b": 2})
        assert added.content[0].text == "3"  # type: ignore[union-attr]
        chatty = await client.call_tool("chatty", on_progress=lambda *p: progress.append(p))
        assert chatty.content[0].text == "chatty done"  # type: ignore[union-attr]
        assert progress == [(1, 2, "half"), (2, 2, "done")]
        for _ in range(2):
            answered = await client.call_tool("elicit")
            assert answered.content[0].text == "accept: Ada"  # type: ignore[union-attr]
        read = await client.read_resource("test://hello")
        assert read.contents[0].text == "Hello, world."  # type: ignore[union-attr]
        assert live_sessions(url) == 1
    assert min(proxy.per_backend) >= 4, proxy.per_backend
    assert live_sessions(url) == 0  # our client's DELETE on leaving ended it


async def _elicit_at_2026(proxy: RoundRobinProxy) -> str:
    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    async with StreamableHttpClient(
        endpoint(proxy), headers={"connection": "close"}, elicitation_handler=elicit
    ) as client:
        assert client.era == "stateless"
        answered = await client.call_tool("elicit")
        return str(answered.content[0].text)  # type: ignore[union-attr]


async def test_a_2026_retry_with_request_state_is_opened_by_the_other_process(
    backends: tuple[RoundRobinProxy, str],
) -> None:
    """MCP_REQUEST_STATE_KEYS is the key ring of both: the input_required round sealed by one
    process is opened by the other, which the retry reaches."""
    proxy, _ = backends
    for _ in range(2):  # whichever process takes the first attempt, the retry goes to the other
        assert await _elicit_at_2026(proxy) == "accept: Ada"


@pytest.mark.parametrize("keys", [None])
async def test_without_a_shared_key_ring_the_other_process_refuses_the_request_state(
    backends: tuple[RoundRobinProxy, str],
) -> None:
    proxy, _ = backends
    with pytest.raises(Exception, match="requestState"):
        await _elicit_at_2026(proxy)
