"""The shortcuts the hot paths take give exactly what the general code gives."""

from __future__ import annotations

import json
from dataclasses import dataclass

from mcp_sse_server.jsonrpc import (
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    encode_message,
    message_from_dict,
    message_to_dict,
)
from mcp_sse_server.types import Annotations, CallToolResult, TextContent


def test_a_response_orjson_refuses_is_still_encoded_exactly() -> None:
    big = 2**70  # beyond 64 bits
    encoded = encode_message(JsonRpcResponse(1, {"n": big}))
    assert json.loads(encoded) == {"jsonrpc": "2.0", "id": 1, "result": {"n": big}}


def test_a_response_encodes_as_its_dict() -> None:
    response = JsonRpcResponse("a", {"content": [{"type": "text", "text": "é"}]})
    assert json.loads(encode_message(response)) == message_to_dict(response)


class Name(str):
    pass


def test_values_of_subclassed_types_take_the_general_path() -> None:
    request = message_from_dict({"jsonrpc": "2.0", "id": Name("x"), "method": Name("ping")})
    assert request == JsonRpcRequest("x", "ping")
    notification = message_from_dict({"jsonrpc": "2.0", "method": Name("notifications/initialized")})
    assert notification == JsonRpcNotification("notifications/initialized")


def test_result_shortcuts_equal_the_full_constructors() -> None:
    assert CallToolResult.text("x") == CallToolResult([TextContent("x")])
    assert CallToolResult.error("bad") == CallToolResult([TextContent("bad")], is_error=True)
    assert CallToolResult.structured({"s": 1}) == CallToolResult([TextContent('{"s":1}')], structured_content={"s": 1})
    assert CallToolResult.text("x").to_dict() == {"content": [{"type": "text", "text": "x"}]}


def test_result_shortcuts_of_a_subclass_run_its_constructor() -> None:
    @dataclass(slots=True)
    class Tagged(CallToolResult):
        tag: str = "t"

        def __post_init__(self) -> None:
            self.tag = "made"

    result = Tagged.text("x")
    assert type(result) is Tagged and result.tag == "made"


def test_a_text_block_with_annotations_keeps_them() -> None:
    block = TextContent("x", annotations=Annotations(priority=0.5))
    assert CallToolResult([block]).to_dict()["content"] == [
        {"type": "text", "text": "x", "annotations": {"priority": 0.5}}
    ]
