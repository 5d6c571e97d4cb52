"""Interoperability with the official Python SDK client (PyPI ``mcp``) over a real socket."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as t
import pytest
from mcp import Client

from fixtures.asgi import until
from fixtures.http_app import Gate
from mcp_sse_server.transport.http import McpHttpServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Recorder:
    """What the client saw: log messages, progress, sampling and elicitation requests."""

    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.sampled: list[t.CreateMessageRequestParams] = []
        self.elicited: list[t.ElicitRequestParams] = []

    async def sampling(self, context: Any, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        self.sampled.append(params)
        return t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text="forty-two"), model="m")

    async def elicitation(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        self.elicited.append(params)
        return t.ElicitResult(action="accept", content={"name": "Ada"})

    async def logging(self, params: t.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))


@asynccontextmanager
async def connect(bound: McpHttpServer) -> AsyncIterator[tuple[Client, Recorder]]:
    """The SDK client, opened and closed in the test's own task (anyio requires it)."""
    recorder = Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(
            bound.endpoint,
            mode="legacy",
            sampling_callback=recorder.sampling,
            elicitation_callback=recorder.elicitation,
            logging_callback=recorder.logging,
        ) as connected:
            yield connected, recorder


async def test_tools(bound: McpHttpServer) -> None:
    async with connect(bound) as client:
        sdk, _ = client
        assert sdk.protocol_version == "2025-11-25"  # the SDK's latest, which we serve
        names = [tool.name for tool in (await sdk.list_tools()).tools]
        assert names[:3] == ["add", "wait", "chatty"]
        result = await sdk.call_tool("add", {"a": 20, "b": 22})
        assert result.content[0].text == "42"  # type: ignore[union-attr]
        bad = await sdk.call_tool("add", {"a": "x", "b": 1})
        assert bad.is_error
        assert len(bound.app.live_sessions) == 1


async def test_resources_templates_prompts_and_completion(bound: McpHttpServer) -> None:
    async with connect(bound) as client:
        sdk, _ = client
        resources = (await sdk.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["test://hello"]
        read = await sdk.read_resource("test://hello")
        assert read.contents[0].text == "Hello, world."  # type: ignore[union-attr]
        templates = (await sdk.list_resource_templates()).resource_templates
        assert templates[0].uri_template == "test://items/{id}"
        item = await sdk.read_resource("test://items/7")
        assert item.contents[0].text == "item 7"  # type: ignore[union-attr]
        prompts = (await sdk.list_prompts()).prompts
        assert prompts[0].name == "greet"
        prompt = await sdk.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Say hello to Ada."  # type: ignore[union-attr]
        completed = await sdk.complete(
            t.PromptReference(type="ref/prompt", name="greet"), {"name": "name", "value": "al"}
        )
        assert completed.completion.values == ["alice", "albert"]
        completed = await sdk.complete(
            t.ResourceTemplateReference(type="ref/resource", uri="test://items/{id}"), {"name": "id", "value": "ap"}
        )
        assert completed.completion.values == ["apple", "apricot"]


async def test_progress_and_logs_during_a_call(bound: McpHttpServer) -> None:
    async with connect(bound) as client:
        sdk, recorder = client
        await sdk.set_logging_level("debug")
        result = await sdk.call_tool("chatty", {}, progress_callback=recorder.on_progress)
        assert result.content[0].text == "chatty done"  # type: ignore[union-attr]
        assert recorder.progress == [(1, 2, "half"), (2, 2, "done")]
        assert recorder.logs == ["working"]


async def test_sampling_and_elicitation_answered_by_the_client(bound: McpHttpServer) -> None:
    async with connect(bound) as client:
        sdk, recorder = client
        sampled = await sdk.call_tool("sample", {"prompt": "meaning of life?"})
        assert sampled.content[0].text == "model said: forty-two"  # type: ignore[union-attr]
        assert recorder.sampled[0].messages[0].content.text == "meaning of life?"  # type: ignore[union-attr]
        elicited = await sdk.call_tool("elicit", {})
        assert elicited.content[0].text == "accept: Ada"  # type: ignore[union-attr]
        assert recorder.elicited[0].message == "Your name?"  # type: ignore[union-attr]


async def test_a_timed_out_call_is_cancelled_on_the_server(bound: McpHttpServer, gate: Gate) -> None:
    async with connect(bound) as client:
        sdk, _ = client
        with pytest.raises(Exception):  # noqa: B017 - the SDK's timeout error type is its own business
            await sdk.call_tool("wait", {}, read_timeout_seconds=0.3)
        await asyncio.wait_for(gate.cancelled.wait(), 5)
        assert (await sdk.send_ping()) is not None


async def test_leaving_the_client_deletes_the_session(bound: McpHttpServer) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(bound.endpoint, mode="legacy") as sdk:
            await sdk.send_ping()
            assert len(bound.app.live_sessions) == 1
            session = next(iter(bound.app.live_sessions.values()))
    await until(lambda: len(bound.app.live_sessions) == 0)
    assert session.transport.closed
