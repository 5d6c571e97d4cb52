"""The demo server's answers when a prompt argument is wrong or the client never answers sampling."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, McpError
from mcp_sse_server.servers import demo
from mcp_sse_server.servers.artifact_instructions import ARTIFACT_TYPES


async def test_write_artifact_with_an_unknown_type_is_invalid_params_naming_the_types(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sse_server")
    async with InMemoryClient(demo.build_demo_server()) as client:
        with pytest.raises(McpError) as refused:
            await client.get_prompt("write_artifact", {"type": "pdf", "subject": "a report"})
    assert refused.value.code == INVALID_PARAMS
    assert "'pdf'" in refused.value.message
    for kind in ARTIFACT_TYPES:
        assert kind in refused.value.message
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]


async def test_ask_model_says_the_client_did_not_answer_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "SAMPLING_TIMEOUT", 0.05)
    never = asyncio.Event()

    async def silent(params: dict[str, Any]) -> dict[str, Any]:
        await never.wait()  # cancelled when the server gives up
        raise AssertionError("unreachable")

    # A session: sampling is a real request to the client, which the server can time out.
    async with InMemoryClient(demo.build_demo_server(), sampling_handler=silent, mode="session") as client:
        result = await client.call_tool("ask_model", {"question": "why?"})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "did not answer the sampling request within 0.05 s" in text
    assert "internal error" not in text.lower()


async def test_ask_model_passes_on_the_clients_refusal() -> None:
    async def decline(params: dict[str, Any]) -> dict[str, Any]:
        raise McpError(-1, "User rejected sampling request")

    async with InMemoryClient(demo.build_demo_server(), sampling_handler=decline, mode="session") as client:
        result = await client.call_tool("ask_model", {"question": "why?"})
    assert result.is_error
    assert "User rejected sampling request" in result.content[0].text  # type: ignore[union-attr]
