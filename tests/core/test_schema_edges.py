"""Schema validation edge cases: arguments nested past the validator's limit, and enum messages."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from fixtures.sessions import Connect, text_of
from mcp_sse_server import McpServer, Tool
from mcp_sse_server.engine.schema import SchemaValidator
from mcp_sse_server.servers.artifact_instructions import artifact_tools


def nested(depth: int, *, array: bool = False) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value] if array else {"a": value}
    return value


@pytest.mark.parametrize("array", [False, True])
async def test_deeply_nested_arguments_are_an_invalid_arguments_result_without_a_traceback(
    server: McpServer, connect: Connect, caplog: pytest.LogCaptureFixture, array: bool
) -> None:
    schema = {"type": "object", "additionalProperties": {"type": "number"}}
    calls: list[Any] = []
    server.add_tool(Tool("numbers", schema, lambda args, ctx: calls.append(args) or "ran"))
    client = await connect(server)
    caplog.set_level(logging.DEBUG, logger="mcp_sse_server")
    result = await client.result("tools/call", {"name": "numbers", "arguments": {"x": nested(256, array=array)}})
    assert result["isError"] is True
    message = text_of(result)
    assert message.startswith("Invalid arguments for tool numbers: ")
    assert "nested too deeply" in message
    assert "\n" not in message
    assert calls == []
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]


def test_first_error_reports_depth_instead_of_raising() -> None:
    validator = SchemaValidator({"type": "object", "properties": {"a": {"type": "object"}}})
    assert validator.first_error({"a": nested(300, array=True)}) == (
        "arguments nested too deeply to validate (301 levels of arrays and objects)"
    )
    assert validator.first_error(nested(1000)) is None  # valid at any depth: nothing to report


def test_an_enum_error_lists_every_allowed_value_when_there_are_few() -> None:
    validator = SchemaValidator({"type": "object", "properties": {"kind": {"enum": ["a", "b", 3, None]}}})
    assert validator.first_error({"kind": "z"}) == 'argument "kind": "z" is not one of "a", "b", 3 or null'
    twenty = SchemaValidator({"enum": [f"v{i}" for i in range(20)]}).first_error("x")
    assert twenty is not None and all(f'"v{i}"' in twenty for i in range(20))
    assert SchemaValidator({"enum": ["only"]}).first_error("x") == '"x" is not one of "only"'


def test_an_enum_error_with_many_values_stays_short() -> None:
    message = SchemaValidator({"enum": [f"v{i}" for i in range(21)]}).first_error("x")
    assert message is not None and '"v20"' not in message and "other candidates" in message


async def test_an_unknown_artifact_type_names_every_type(server: McpServer, connect: Connect) -> None:
    for tool in artifact_tools():
        server.add_tool(tool)
    client = await connect(server)
    result = await client.result("tools/call", {"name": "get_artifact_instructions", "arguments": {"type": "pdf"}})
    assert result["isError"] is True
    message = text_of(result)
    assert "other candidates" not in message
    for kind in ["code", "documents", "html", "svg", "mermaid", "react"]:
        assert f'"{kind}"' in message


def test_a_deep_field_path_is_shortened_in_the_message() -> None:
    validator = SchemaValidator({"type": "object", "additionalProperties": {"$ref": "#"}})
    message = validator.first_error(nested(200)) or ""  # the 0 at the bottom is not an object
    assert message.startswith('argument "a.a.a') and message.endswith('a.a": 0 is not of type "object"')
    assert "..." in message and len(message) < 200
    assert validator.first_error({"a": {"b": 1}}) == 'argument "a.b": 1 is not of type "object"'
