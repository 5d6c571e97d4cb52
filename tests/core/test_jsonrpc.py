"""JSON-RPC framing: parsing with precise error codes, and the wire form."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcp_sse_server.engine.jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    JsonRpcError,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    McpError,
    encode_message,
    message_from_dict,
    message_to_dict,
    parse_message,
)


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"not json", b'{"jsonrpc": "2.0", "id": 1,}', b"\xff\xfe", "{'single': 'quotes'}"],
)
def test_bad_json_is_a_parse_error(raw: bytes | str) -> None:
    with pytest.raises(McpError) as caught:
        parse_message(raw)
    assert caught.value.code == PARSE_ERROR


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], "batch"),
        ([], "empty batch"),
        ("ping", "a string"),
        (1, "a number"),
        (None, "null"),
        ({"id": 1, "method": "ping"}, "no jsonrpc member"),
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, "wrong jsonrpc version"),
        ({"jsonrpc": 2.0, "id": 1, "method": "ping"}, "jsonrpc as a number"),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, "null id"),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, "bool id"),
        ({"jsonrpc": "2.0", "id": False, "method": "ping"}, "bool id false"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, "float id"),
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, "array id"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, "object id"),
        ({"jsonrpc": "2.0", "id": 1, "method": 7}, "method not a string"),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1, 2]}, "positional params"),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"}, "string params"),
        ({"jsonrpc": "2.0"}, "neither method nor id"),
        ({"jsonrpc": "2.0", "id": 1}, "response without result or error"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}, "result and error"),
        ({"jsonrpc": "2.0", "id": 1, "result": [1]}, "result not an object"),
        ({"jsonrpc": "2.0", "id": True, "result": {}}, "response with a bool id"),
        ({"jsonrpc": "2.0", "id": None, "result": {}}, "response with a null id"),
        ({"jsonrpc": "2.0", "id": 1, "error": "boom"}, "error not an object"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": "1", "message": "x"}}, "error code a string"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "x"}}, "error code a bool"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}, "error without message"),
        ({"jsonrpc": "2.0", "id": 1.5, "error": {"code": 1, "message": "x"}}, "error with a float id"),
    ],
)
def test_wrong_shapes_are_invalid_requests(message: Any, why: str) -> None:
    with pytest.raises(McpError) as caught:
        parse_message(orjson.dumps(message))
    assert caught.value.code == INVALID_REQUEST, why


def test_a_batch_is_refused_with_a_message_that_says_so() -> None:
    with pytest.raises(McpError) as caught:
        parse_message(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
    assert "batch" in caught.value.message.lower()


def test_null_id_message_says_so() -> None:
    with pytest.raises(McpError) as caught:
        parse_message(b'{"jsonrpc":"2.0","id":null,"method":"ping"}')
    assert "null" in caught.value.message


def test_parses_each_kind_of_message() -> None:
    assert parse_message(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == JsonRpcRequest(1, "ping")
    assert parse_message('{"jsonrpc":"2.0","id":"a","method":"x","params":{"k":1}}') == JsonRpcRequest(
        "a", "x", {"k": 1}
    )
    assert parse_message(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == JsonRpcNotification(
        "notifications/initialized"
    )
    assert parse_message(b'{"jsonrpc":"2.0","id":2,"result":{"ok":true}}') == JsonRpcResponse(2, {"ok": True})
    assert parse_message(
        b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope","data":{"m":"x"}}}'
    ) == JsonRpcError(3, -32601, "nope", {"m": "x"})
    # An error whose request id could not be read carries a null id.
    assert parse_message(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}') == JsonRpcError(
        None, -32700, "bad"
    )
    assert parse_message(memoryview(b'{"jsonrpc":"2.0","id":0,"method":"ping"}')) == JsonRpcRequest(0, "ping")


@pytest.mark.parametrize(
    "message",
    [
        JsonRpcRequest(1, "tools/list"),
        JsonRpcRequest("req-1", "tools/call", {"name": "add", "arguments": {"a": 1}}),
        JsonRpcNotification("notifications/initialized"),
        JsonRpcNotification("notifications/progress", {"progressToken": "t", "progress": 1}),
        JsonRpcResponse(1, {}),
        JsonRpcResponse("x", {"tools": []}),
        JsonRpcError(1, -32602, "bad"),
        JsonRpcError(None, -32700, "bad json"),
        JsonRpcError(5, -32002, "not found", {"uri": "x://y"}),
    ],
)
def test_encode_and_parse_round_trip(message: Any) -> None:
    encoded = encode_message(message)
    assert parse_message(encoded) == message
    assert message_from_dict(message_to_dict(message)) == message
    assert orjson.loads(encoded)["jsonrpc"] == "2.0"


def test_wire_form_omits_absent_members() -> None:
    assert orjson.loads(encode_message(JsonRpcRequest(1, "ping"))) == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert orjson.loads(encode_message(JsonRpcError(1, -32601, "x"))) == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32601, "message": "x"},
    }
    # A null id is kept on an error: the peer must see which request failed (none).
    assert orjson.loads(encode_message(JsonRpcError(None, -32700, "x")))["id"] is None


def test_mcp_error_carries_code_message_and_data() -> None:
    error = McpError(-32002, "Resource not found", {"uri": "a://b"})
    assert error.to_error_object() == {"code": -32002, "message": "Resource not found", "data": {"uri": "a://b"}}
    assert McpError(-32603, "x").to_error_object() == {"code": -32603, "message": "x"}
    reply = JsonRpcError.from_exception(7, error)
    assert reply == JsonRpcError(7, -32002, "Resource not found", {"uri": "a://b"})
    back = reply.to_exception()
    assert (back.code, back.message, back.data) == (-32002, "Resource not found", {"uri": "a://b"})
    assert str(error) == "Resource not found"


def test_message_to_dict_refuses_non_messages() -> None:
    with pytest.raises(TypeError):
        message_to_dict({"jsonrpc": "2.0"})  # type: ignore[arg-type]
