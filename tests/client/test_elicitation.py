"""The client side of 2025-11-25 elicitation and sampling: declared capabilities,
the refusal of undeclared modes, schema defaults filled into accepted answers,
the -32042 error, the completion notification, array sampling content."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.peers import PYTHON, SDK_PEER
from mcp_sse_server.client import StdioClient
from mcp_sse_server.client.base import McpClient
from mcp_sse_server.client.elicitation import UrlElicitationRequiredError, fill_defaults
from mcp_sse_server.client.transport import ClientTransport
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, JsonRpcNotification, JsonRpcRequest, McpError
from mcp_sse_server.engine.transport import Transport

# Every primitive and every enum shape of 2025-11-25, each with a default.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "verified": {"type": "boolean", "default": True},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
        "colour": {"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}], "default": "#f00"},
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"], "default": "b"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "default": ["x"]},
        "titled_tags": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}]}, "default": ["p"]},
        "plain": {"type": "string"},
    },
}


class Unreachable(ClientTransport):
    async def connect(self) -> Transport:
        raise AssertionError("not used")


class Offline(McpClient):
    """A client whose handlers are called directly; it never connects."""

    def __init__(self, **options: Any) -> None:
        super().__init__(Unreachable(), **options)


async def ask(client: McpClient, params: dict[str, Any]) -> dict[str, Any]:
    request = JsonRpcRequest(1, "elicitation/create", params)
    return await client.handle_request(request, None)  # type: ignore[arg-type]


def accept_with(content: dict[str, Any] | None) -> Any:
    async def handler(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", **({"content": content} if content is not None else {})}

    return handler


async def test_capabilities_are_declared_from_the_handlers_and_options() -> None:
    async def handler(params: dict[str, Any]) -> dict[str, Any]:
        return {}

    assert Offline().capabilities == {}
    assert Offline(elicitation_handler=handler).capabilities == {"elicitation": {"form": {}}}
    both = Offline(elicitation_handler=handler, elicitation_url=True)
    assert both.capabilities == {"elicitation": {"form": {}, "url": {}}}
    assert Offline(elicitation_url=True).capabilities == {}  # no handler, no elicitation
    assert Offline(sampling_handler=handler).capabilities == {"sampling": {}}
    assert Offline(sampling_handler=handler, sampling_tools=True).capabilities == {"sampling": {"tools": {}}}


@pytest.mark.parametrize("mode", ["url", "telepathy"])
async def test_an_undeclared_mode_is_refused_with_invalid_params(mode: str) -> None:
    asked: list[dict[str, Any]] = []

    async def handler(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept"}

    client = Offline(elicitation_handler=handler)
    with pytest.raises(McpError) as refused:
        await ask(client, {"mode": mode, "message": "m", "url": "https://example.com", "elicitationId": "e"})
    assert refused.value.code == INVALID_PARAMS
    assert asked == []


async def test_url_mode_reaches_a_handler_that_declared_it_and_gets_no_content() -> None:
    async def handler(params: dict[str, Any]) -> dict[str, Any]:
        assert params["url"] == "https://example.com/connect"
        return {"action": "accept"}

    client = Offline(elicitation_handler=handler, elicitation_url=True)
    params = {"mode": "url", "message": "m", "url": "https://example.com/connect", "elicitationId": "e1"}
    assert await ask(client, params) == {"action": "accept"}


async def test_defaults_fill_every_field_the_handler_leaves_out() -> None:
    client = Offline(elicitation_handler=accept_with({"name": "Ada", "age": None}))
    answer = await ask(client, {"message": "m", "requestedSchema": SCHEMA})  # no mode: form
    assert answer == {
        "action": "accept",
        "content": {
            "name": "Ada",  # given: kept
            "age": 30,  # None: the default
            "score": 95.5,
            "verified": True,
            "status": "active",
            "colour": "#f00",
            "legacy": "b",
            "tags": ["x"],
            "titled_tags": ["p"],
        },  # "plain" has no default: left out
    }


async def test_an_accept_without_content_gets_the_defaults_and_other_actions_are_untouched() -> None:
    client = Offline(elicitation_handler=accept_with(None))
    answer = await ask(client, {"mode": "form", "message": "m", "requestedSchema": SCHEMA})
    assert answer["content"]["name"] == "John Doe" and answer["content"]["tags"] == ["x"]

    async def decline(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    assert await ask(Offline(elicitation_handler=decline), {"message": "m", "requestedSchema": SCHEMA}) == {
        "action": "decline"
    }


def test_a_default_that_does_not_fit_its_schema_is_not_sent() -> None:
    schema = {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["a"], "default": "z"},
            "count": {"type": "integer", "default": 1.5},
            "flag": {"type": "boolean", "default": "yes"},
            "ratio": {"type": "number", "default": True},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x"]}, "default": ["x", "nope"]},
            "whole": {"type": "integer", "default": 2.0},
        },
    }
    assert fill_defaults(schema, {}) == {"whole": 2.0}
    assert fill_defaults(None, {"a": 1}) == {"a": 1}


async def test_the_completion_notification_reaches_its_handler_or_on_notification() -> None:
    completed: list[dict[str, Any]] = []
    others: list[JsonRpcNotification] = []
    note = JsonRpcNotification("notifications/elicitation/complete", {"elicitationId": "e1"})
    Offline(on_elicitation_complete=completed.append, on_notification=others.append).handle_notification(note)
    assert completed == [{"elicitationId": "e1"}] and others == []
    Offline(on_notification=others.append).handle_notification(note)
    assert others == [note]


async def test_sampling_array_content_is_passed_through() -> None:
    result = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}],
        "model": "m",
        "stopReason": "toolUse",
    }

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        assert params["tools"][0]["name"] == "get_weather"
        return result

    client = Offline(sampling_handler=sample, sampling_tools=True)
    request = JsonRpcRequest(
        2, "sampling/createMessage", {"messages": [], "maxTokens": 5, "tools": [{"name": "get_weather"}]}
    )
    assert await client.handle_request(request, None) == result  # type: ignore[arg-type]


def test_the_url_elicitation_required_error_lists_what_to_complete() -> None:
    data = {"elicitations": [{"mode": "url", "elicitationId": "e1", "url": "https://x.example/c", "message": "m"}]}
    error = UrlElicitationRequiredError("This request requires more information.", data)
    assert isinstance(error, McpError) and error.code == -32042 and error.data == data
    assert error.elicitations == data["elicitations"]
    assert "https://x.example/c" in str(error)
    assert UrlElicitationRequiredError("m", {"elicitations": "junk"}).elicitations == []


async def test_the_sdk_server_gets_the_defaults_of_an_empty_accept() -> None:
    async def accept_nothing(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    client = StdioClient(
        PYTHON, [SDK_PEER, "stdio"], elicitation_handler=accept_nothing, on_stderr=lambda line: None, mode="session"
    )
    async with client:
        result = await client.call_tool("ask_profile")
    assert result.content[0].text == 'accept: {"name":"Ada","age":30,"verified":true}'  # type: ignore[union-attr]


async def test_the_defaults_are_filled_in_input_required_rounds_too() -> None:
    async def accept_nothing(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    client = StdioClient(PYTHON, [SDK_PEER, "stdio"], elicitation_handler=accept_nothing, on_stderr=lambda line: None)
    async with client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("resolve_profile")
    assert result.content[0].text == 'accept: {"name":"Ada","age":30,"verified":true}'  # type: ignore[union-attr]
