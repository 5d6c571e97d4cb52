"""The shortcuts the hot paths take give exactly what the general code gives."""

from __future__ import annotations

import json

from mcp_sse_server.engine.jsonrpc import (
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    encode_message,
    message_from_dict,
    message_to_dict,
)


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
