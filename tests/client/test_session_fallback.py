"""The session fallback (McpClient's class docstring; ``stateless.missing_back_channel``) against
real servers of other SDKs: the official Python SDK's (tests/client/sdk_peer.py, whose
``ask_model``, ``ask_user`` and ``ask_roots`` tools ask the client directly, which 2026-07-28
cannot carry) and the TypeScript SDK v2's (tests/client/ts_stateless_peer.mjs: ``direct_sample``
the same way, 2026-07-28 only or also serving handshake clients each request on its own).

Our client's default mode lands on 2026-07-28 with both; the fallback must repeat such a call on
one session and only then: with a handler for what was asked, when the server keeps a session,
and never for an ordinary failure."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures.node import running_ts_stateless_peer
from fixtures.peers import WAIT, Peer
from mcp_sse_server.client import StreamableHttpClient
from mcp_sse_server.client.stateless import missing_back_channel
from mcp_sse_server.engine.jsonrpc import McpError
from mcp_sse_server.engine.types import Root

MODERN = "2026-07-28"
OPENED = "Created new transport with session ID"  # what the SDK's server logs for each new session
NO_BACK_CHANNEL = "no back-channel for server-initiated requests"


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test-model"}


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"colour": "teal"}}


ROOTS = [Root("file:///work/project", "project"), Root("file:///work/notes")]


def client(url: str, **options: Any) -> StreamableHttpClient:
    options.setdefault("request_timeout", 20.0)
    return StreamableHttpClient(url, **options)


def sessions_opened(peer: Peer) -> int:
    return sum(OPENED in line for line in peer.stderr)


@pytest.fixture(scope="module")
def ts_modern_only() -> Iterator[str]:
    yield from running_ts_stateless_peer()


@pytest.fixture(scope="module")
def ts_dual() -> Iterator[str]:
    yield from running_ts_stateless_peer("--legacy", "stateless")


async def test_sampling_asked_directly_is_repeated_on_one_session_that_later_calls_reuse(fresh_sdk_http: Peer) -> None:
    async with client(f"{fresh_sdk_http.base}/mcp", sampling_handler=sample) as ours:
        assert ours.protocol_version == MODERN and ours.fallback_session is None
        first = await ours.call_tool("ask_model", {"question": "Capital of France?"})
        assert not first.is_error and first.content[0].text == "model said: Paris"  # type: ignore[union-attr]
        session = ours.fallback_session
        assert session is not None and session.protocol_version != MODERN and session.transport.session_id  # type: ignore[attr-defined]
        second = await ours.call_tool("ask_model", {"question": "Again?"})
        assert second.content[0].text == "model said: Paris"  # type: ignore[union-attr]
        assert ours.fallback_session is session and sessions_opened(fresh_sdk_http) == 1
        assert ours.stateless  # the client still speaks 2026-07-28; only those calls went to the session
        added = await ours.call_tool("add", {"a": 2, "b": 3})
        assert added.structured_content == {"result": 5}
        assert sessions_opened(fresh_sdk_http) == 1


async def test_elicitation_and_roots_asked_directly_reach_the_clients_handlers(sdk_http: Peer) -> None:
    roots = list(ROOTS)
    async with client(f"{sdk_http.base}/mcp", elicitation_handler=elicit, roots=roots) as ours:
        answered = await ours.call_tool("ask_user")
        assert answered.content[0].text == "accept: teal"  # type: ignore[union-attr]
        listed = await ours.call_tool("ask_roots")
        assert listed.content[0].text == "file:///work/project,file:///work/notes"  # type: ignore[union-attr]
        ours.roots = [Root("file:///elsewhere")]  # the session answers with the roots as they are now
        again = await ours.call_tool("ask_roots")
        assert again.content[0].text == "file:///elsewhere"  # type: ignore[union-attr]


async def test_with_the_fallback_off_the_servers_failure_is_what_the_caller_gets(fresh_sdk_http: Peer) -> None:
    async with client(f"{fresh_sdk_http.base}/mcp", sampling_handler=sample, session_fallback=False) as ours:
        with pytest.raises(McpError, match=NO_BACK_CHANNEL):
            await ours.call_tool("ask_model", {"question": "Capital of France?"})
        assert ours.fallback_session is None and sessions_opened(fresh_sdk_http) == 0


async def test_without_a_handler_for_what_was_asked_nothing_is_repeated(fresh_sdk_http: Peer) -> None:
    async with client(f"{fresh_sdk_http.base}/mcp", elicitation_handler=elicit) as ours:  # no sampling handler
        with pytest.raises(McpError, match="sampling/createMessage"):
            await ours.call_tool("ask_model", {"question": "Capital of France?"})
        assert ours.fallback_session is None and sessions_opened(fresh_sdk_http) == 0


async def test_an_ordinary_tool_error_is_not_repeated(fresh_sdk_http: Peer) -> None:
    async with client(f"{fresh_sdk_http.base}/mcp", sampling_handler=sample, roots=ROOTS) as ours:
        divided = await ours.call_tool("divide", {"a": 1, "b": 0})
        assert divided.is_error
        unknown = await ours.call_tool("no_such_tool")  # the SDK reports an unknown tool as a tool error
        assert unknown.is_error
        assert ours.fallback_session is None and sessions_opened(fresh_sdk_http) == 0


async def test_close_ends_the_fallback_session(fresh_sdk_http: Peer) -> None:
    ended = fresh_sdk_http.watch("Terminating session")
    ours = client(f"{fresh_sdk_http.base}/mcp", sampling_handler=sample)
    async with ours:
        await ours.call_tool("ask_model", {"question": "Capital of France?"})
        assert ours.fallback_session is not None
    assert ours.fallback_session is None
    await asyncio.wait_for(ended.wait(), WAIT)


async def test_a_server_that_refuses_the_handshake_gives_its_own_failure_once(ts_modern_only: str) -> None:
    async with client(ts_modern_only, sampling_handler=sample) as ours:
        assert ours.protocol_version == MODERN
        for _ in range(2):  # the refusal is remembered: the second failure asks no handshake
            failed = await ours.call_tool("direct_sample")
            assert failed.is_error and "Server-to-client requests are not available" in failed.content[0].text  # type: ignore[union-attr]
            assert ours.fallback_session is None
        assert ours._fallback_refused
        added = await ours.call_tool("add", {"a": 1, "b": 2})
        assert not added.is_error


async def test_a_handshake_that_keeps_no_session_is_not_used(ts_dual: str) -> None:
    # Answering each handshake-era request on its own, the server could not route our answer to
    # the handler that asked: repeating the call would only wait for its timeout.
    async with client(ts_dual, sampling_handler=sample) as ours:
        assert ours.protocol_version == MODERN
        failed = await ours.call_tool("direct_sample")
        assert failed.is_error and "'sampling/createMessage' cannot be sent" in failed.content[0].text  # type: ignore[union-attr]
        assert ours.fallback_session is None and ours._fallback_refused
        answered = await ours.call_tool("ask_model")  # the input_required way works on 2026-07-28 itself
        assert answered.content[0].text == "model said: Paris"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("failure", "wanted"),
    [
        (
            McpError(-32600, "Cannot send 'roots/list': this transport context has no back-channel for ..."),
            "roots/list",
        ),
        (
            {
                "isError": True,
                "content": [
                    {
                        "type": "text",
                        "text": "Error calling tool 'x': Cannot send "
                        "'sampling/createMessage': this transport context has no back-channel for ...",
                    }
                ],
            },
            "sampling/createMessage",
        ),
        (
            {
                "isError": True,
                "content": [
                    {
                        "type": "text",
                        "text": "elicitation via server-initiated requests is unavailable on 2026-07-28 connections.",
                    }
                ],
            },
            "elicitation/create",
        ),
        (
            {
                "isError": True,
                "content": [
                    {
                        "type": "text",
                        "text": "Server-to-client requests are not available on "
                        "protocol revision 2026-07-28: 'elicitation/create' cannot be sent while serving a request",
                    }
                ],
            },
            "elicitation/create",
        ),
        # not a server-to-client method, not an error result, an ordinary failure: nothing to repeat
        (McpError(-32600, "Cannot send 'tools/call': this transport context has no back-channel"), None),
        (
            {
                "isError": False,
                "content": [
                    {"type": "text", "text": "Cannot send 'roots/list': this transport context has no back-channel"}
                ],
            },
            None,
        ),
        (McpError(-32602, "Unknown tool: ask"), None),
    ],
)
def test_the_known_wordings_name_what_the_server_could_not_ask(failure: Any, wanted: str | None) -> None:
    assert missing_back_channel(failure) == wanted
