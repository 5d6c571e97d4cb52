"""Client telemetry against real peers: the official Python SDK 2.3's server (its own OpenTelemetry
middleware, on by default) makes its SERVER span a child of our CLIENT span, in both eras, so the
call is one trace across both processes; and a 2026-07-28 call that the session fallback repeats
on a session of the SDK's server stays one span, the fallback an event of it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from fixtures.peers import Peer, running_peer
from mcp_sse_server.client import StdioClient, StreamableHttpClient
from mcp_sse_server.engine.types import TextContent

pytest.importorskip("mcp.server.mcpserver")  # the official SDK 2.x, in this virtualenv

HERE = Path(__file__).parent
TRACED_SDK = HERE / "sdk_traced_server.py"
ELICITING_SDK = HERE.parent / "client" / "eliciting_sdk_stdio_server.py"


class Settings:
    """``McpClient(telemetry=...)`` with our own tracer provider and no metrics."""

    metrics = False

    def __init__(self, tracer_provider: TracerProvider) -> None:
        self.tracer_provider = tracer_provider


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    yield InMemorySpanExporter()


@pytest.fixture
def settings(exporter: InMemorySpanExporter) -> Iterator[Settings]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Settings(provider)
    provider.shutdown()


@pytest.fixture
def sdk_http() -> Iterator[Peer]:
    """The official SDK's Streamable HTTP server (tests/client/sdk_peer.py), whose tools ask the
    client directly: at 2026-07-28 that needs the session fallback."""
    yield from running_peer("http")


def peer_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("mode", ["auto", "session"])
async def test_the_official_sdk_servers_span_is_a_child_of_ours(
    tmp_path: Path, exporter: InMemorySpanExporter, settings: Settings, mode: str
) -> None:
    out = tmp_path / "spans.jsonl"
    async with StdioClient(
        sys.executable, [str(TRACED_SDK)], {"SPANS_OUT": str(out)}, mode=mode, telemetry=settings
    ) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        seen = await client.call_tool("traceparent", {})
        era = client.era
    assert result.structured_content == {"result": 5}
    assert era == ("stateless" if mode == "auto" else "session")

    ours = {span.name: span for span in exporter.get_finished_spans() if span.kind is SpanKind.CLIENT}
    theirs = {span["name"]: span for span in peer_spans(out) if span["kind"] == "SERVER"}
    for name in ("tools/call add", "tools/call traceparent"):
        context = ours[name].get_span_context()
        assert context is not None
        assert theirs[name]["trace_id"] == f"{context.trace_id:032x}", (name, theirs)
        assert theirs[name]["parent_id"] == f"{context.span_id:016x}"
    # What the server's tool read in _meta is our span's context.
    traced = ours["tools/call traceparent"].get_span_context()
    assert traced is not None
    (said,) = seen.content
    assert isinstance(said, TextContent)
    assert said.text.startswith(f"00-{traced.trace_id:032x}-{traced.span_id:016x}-")


async def test_a_call_repeated_on_a_session_by_the_fallback_is_one_span(
    exporter: InMemorySpanExporter, settings: Settings
) -> None:
    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"colour": "teal"}}

    async with StdioClient(
        sys.executable, [str(ELICITING_SDK)], {}, elicitation_handler=elicit, telemetry=settings
    ) as client:
        before = client.era
        result = await client.call_tool("ask_colour", {})
        after = client.era  # (over stdio the client itself moves onto a session)
    assert (before, after) == ("stateless", "session")
    assert "you said teal" in str(result.content)

    calls = [span for span in exporter.get_finished_spans() if span.name == "tools/call ask_colour"]
    assert len(calls) == 1, [span.name for span in exporter.get_finished_spans()]
    (call,) = calls
    assert call.kind is SpanKind.CLIENT
    events = [event.name for event in call.events]
    assert events == ["mcp_sse_server.session_fallback"]
    assert dict(call.events[0].attributes or {}) == {"mcp_sse_server.reason": "elicitation/create"}
    # The session's handshake, made for the call, carries the call's context (no span of its own),
    # and the question the server asked on it is answered inside the call's trace.
    answered = [span for span in exporter.get_finished_spans() if span.name == "elicitation/create"]
    assert len(answered) == 1 and answered[0].kind is SpanKind.SERVER
    assert answered[0].context.trace_id == call.context.trace_id


async def test_the_fallback_sessions_requests_are_children_of_the_call(
    sdk_http: Peer, exporter: InMemorySpanExporter, settings: Settings
) -> None:
    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"colour": "teal"}}

    async with StreamableHttpClient(f"{sdk_http.base}/mcp", elicitation_handler=elicit, telemetry=settings) as ours:
        answered = await ours.call_tool("ask_user")
        assert ours.stateless and ours.fallback_session is not None
    assert "accept: teal" in str(answered.content)

    spans = exporter.get_finished_spans()
    (call,) = [span for span in spans if span.name == "tools/call ask_user" and span.parent is None]
    assert [event.name for event in call.events] == ["mcp_sse_server.session_fallback"]
    # The session opened for it and the call repeated there: CLIENT spans of their own, its children.
    children = {
        span.name: span for span in spans if span.parent is not None and span.parent.span_id == call.context.span_id
    }
    assert {"initialize", "tools/call ask_user"} <= set(children)
    repeated = dict(children["tools/call ask_user"].attributes or {})
    assert repeated["mcp.protocol.version"] != "2026-07-28" and "mcp.session.id" in repeated
