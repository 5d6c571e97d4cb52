"""Schema handling, one test per case of the digest's bug list (middleware-composition.md §8) and
per OpenAPI 3.0 -> 2020-12 conversion; every converted schema is also compiled by the server's
validator (a tool is only registered with a schema it can compile)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.engine.schema import SchemaValidator
from mcp_sse_server.engine.types import Tool
from mcp_sse_server.openapi import OpenApiError, from_openapi

BASE = "http://127.0.0.1:9"  # never called: these tests look at what is listed


def spec_of(
    operation: dict[str, Any], schemas: dict[str, Any] | None = None, version: str = "3.1.0", path: str = "/things"
) -> dict[str, Any]:
    return {
        "openapi": version,
        "info": {"title": "T", "version": "1"},
        "paths": {path: {"post": {"operationId": "op", **operation}}},
        "components": {"schemas": schemas or {}},
    }


def body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def returns(schema: dict[str, Any]) -> dict[str, Any]:
    return {"responses": {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}}


def only_tool(spec: dict[str, Any]) -> Tool:
    (tool,) = from_openapi(spec, base_url=BASE).tools
    SchemaValidator(tool.input_schema)
    if tool.output_schema is not None:
        SchemaValidator(tool.output_schema)
    return tool


def test_refs_point_into_the_tools_own_defs_not_the_spec(caplog: pytest.LogCaptureFixture) -> None:
    # #926: a $ref must resolve against the schema the tool lists, so it names #/$defs.
    tool = only_tool(spec_of(body({"$ref": "#/components/schemas/Pet"}), {"Pet": {"type": "object", "properties": {
        "owner": {"$ref": "#/components/schemas/Person"}}}, "Person": {"type": "object", "properties": {
        "name": {"type": "string"}}}}))  # fmt: skip
    assert tool.input_schema["properties"]["owner"] == {"$ref": "#/$defs/Person"}
    assert "#/components" not in str(tool.input_schema)
    validator = SchemaValidator(tool.input_schema)
    assert validator.first_error({"owner": {"name": 3}}) is not None
    assert validator.first_error({"owner": {"name": "Ann"}}) is None


def test_a_property_named_ref_is_a_property() -> None:
    # #1220: "$ref" under "properties" is a name, not a reference.
    tool = only_tool(
        spec_of(body({"type": "object", "properties": {"$ref": {"type": "string"}, "n": {"type": "integer"}}}))
    )
    assert tool.input_schema["properties"]["$ref"] == {"type": "string"}
    assert SchemaValidator(tool.input_schema).first_error({"$ref": "x", "n": 1}) is None


def test_an_external_ref_skips_its_operation_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # #2293: never fetched; the other operations are served.
    spec = spec_of(body({"$ref": "https://example.org/schemas/pet.json"}))
    spec["paths"]["/ok"] = {"get": {"operationId": "ok"}}
    with caplog.at_level(logging.WARNING, "mcp_sse_server.openapi"):
        tools = from_openapi(spec, base_url=BASE).tools
    assert [tool.name for tool in tools] == ["ok"]
    assert "POST /things skipped" in caplog.text and "https://example.org/schemas/pet.json" in caplog.text


def test_nested_definitions_are_all_carried_and_no_others() -> None:
    # #2366: A -> B -> C all reachable; Unused is left out.
    schemas = {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        "B": {"type": "object", "properties": {"c": {"type": "array", "items": {"$ref": "#/components/schemas/C"}}}},
        "C": {"type": "object", "properties": {"v": {"type": "integer"}}},
        "Unused": {"type": "string"},
    }
    tool = only_tool(
        spec_of(body({"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}}), schemas)
    )
    assert sorted(tool.input_schema["$defs"]) == ["A", "B", "C"]
    assert SchemaValidator(tool.input_schema).first_error({"a": {"b": {"c": [{"v": "x"}]}}}) is not None


def test_enums_are_kept_in_parameters_bodies_and_defs() -> None:
    # #2466
    schemas = {"Size": {"type": "string", "enum": ["S", "M", "L"]}}
    operation = {
        "parameters": [{"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}}],
        **body({"type": "object", "properties": {"size": {"$ref": "#/components/schemas/Size"}}}),
    }
    tool = only_tool(spec_of(operation, schemas))
    assert tool.input_schema["properties"]["sort"]["enum"] == ["asc", "desc"]
    assert tool.input_schema["$defs"]["Size"]["enum"] == ["S", "M", "L"]
    assert SchemaValidator(tool.input_schema).first_error({"size": "XL"}) is not None


def test_unions_keep_their_branches() -> None:
    # #2153: oneOf/anyOf/allOf are translated branch by branch, not merged or dropped.
    schemas = {
        "Cat": {"type": "object", "properties": {"meow": {"type": "boolean"}}, "required": ["meow"]},
        "Dog": {"type": "object", "properties": {"bark": {"type": "boolean"}}, "required": ["bark"]},
        "Named": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    pet = {"oneOf": [{"$ref": "#/components/schemas/Cat"}, {"$ref": "#/components/schemas/Dog"}]}
    named = {
        "allOf": [
            {"$ref": "#/components/schemas/Named"},
            {"type": "object", "properties": {"age": {"type": "integer"}}},
        ]
    }
    tool = only_tool(spec_of(body({"type": "object", "properties": {"pet": pet, "who": named}}), schemas))
    assert tool.input_schema["properties"]["pet"] == {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]}
    validator = SchemaValidator(tool.input_schema)
    assert validator.first_error({"pet": {"meow": True}}) is None
    assert validator.first_error({"pet": {"quack": True}}) is not None
    assert validator.first_error({"who": {"name": 1}}) is not None


def test_a_union_body_is_one_body_argument() -> None:
    tool = only_tool(spec_of(body({"anyOf": [{"type": "string"}, {"type": "object", "properties": {"x": {}}}]})))
    assert list(tool.input_schema["properties"]) == ["body"] and tool.input_schema["required"] == ["body"]


def test_an_output_schema_with_a_root_ref_is_an_inlined_object() -> None:
    # #2455: a root $ref would leave the output schema without "type": "object".
    schemas = {
        "Node": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}},
        }
    }
    tool = only_tool(spec_of(returns({"$ref": "#/components/schemas/Node"}), schemas))
    assert tool.output_schema is not None
    assert tool.output_schema["type"] == "object" and "$ref" not in tool.output_schema
    assert tool.output_schema["properties"]["kids"]["items"] == {"$ref": "#/$defs/Node"}  # recursion via $defs
    assert list(tool.output_schema["$defs"]) == ["Node"]


def test_a_non_object_output_is_wrapped_under_result() -> None:
    tool = only_tool(spec_of(returns({"type": "array", "items": {"type": "integer"}})))
    assert tool.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
    }


def test_openapi_30_nullable_bounds_and_example_become_2020_12() -> None:
    schemas = {
        "Pet": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "nullable": True, "example": "Rex"},
                "status": {"type": "string", "enum": ["sold", "free"], "nullable": True},
                "age": {
                    "type": "integer",
                    "minimum": 0,
                    "exclusiveMinimum": True,
                    "maximum": 30,
                    "exclusiveMaximum": False,
                },
                "owner": {"allOf": [{"$ref": "#/components/schemas/Owner"}], "nullable": True},
            },
        },
        "Owner": {"type": "object", "properties": {"id": {"type": "integer"}}},
    }
    tool = only_tool(spec_of(body({"$ref": "#/components/schemas/Pet"}), schemas, version="3.0.3"))
    properties = tool.input_schema["properties"]
    assert properties["name"] == {"type": ["string", "null"], "examples": ["Rex"]}
    assert properties["status"] == {"type": ["string", "null"], "enum": ["sold", "free", None]}
    assert properties["age"] == {"type": "integer", "exclusiveMinimum": 0, "maximum": 30}
    assert properties["owner"] == {"anyOf": [{"allOf": [{"$ref": "#/$defs/Owner"}]}, {"type": "null"}]}
    validator = SchemaValidator(tool.input_schema)
    assert validator.first_error({"name": None, "status": None, "owner": None}) is None
    assert validator.first_error({"name": "Rex", "age": 0}) is not None  # exclusive now


def test_openapi_31_type_arrays_pass_through() -> None:
    tool = only_tool(
        spec_of(body({"type": "object", "properties": {"n": {"type": ["integer", "null"], "exclusiveMinimum": 1}}}))
    )
    assert tool.input_schema["properties"]["n"] == {"type": ["integer", "null"], "exclusiveMinimum": 1}


def test_read_only_leaves_input_and_write_only_leaves_output() -> None:
    schemas = {
        "User": {
            "type": "object",
            "required": ["id", "password", "name"],
            "properties": {
                "id": {"type": "integer", "readOnly": True},
                "password": {"type": "string", "writeOnly": True},
                "name": {"type": "string"},
            },
        }
    }
    operation = {**body({"$ref": "#/components/schemas/User"}), **returns({"$ref": "#/components/schemas/User"})}
    tool = only_tool(spec_of(operation, schemas))
    assert sorted(tool.input_schema["properties"]) == ["name", "password"]
    assert tool.input_schema["required"] == ["password", "name"]
    assert tool.output_schema is not None
    assert sorted(tool.output_schema["properties"]) == ["id", "name"] and tool.output_schema["required"] == [
        "id",
        "name",
    ]


def test_a_parameter_ref_is_inlined() -> None:
    spec = spec_of({"parameters": [{"$ref": "#/components/parameters/Limit"}]})
    spec["components"]["parameters"] = {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}}
    assert only_tool(spec).input_schema["properties"] == {"limit": {"type": "integer"}}


def test_a_ref_loop_and_a_dangling_ref_are_clear_errors() -> None:
    spec = spec_of({"parameters": [{"$ref": "#/components/parameters/A"}]})
    spec["components"]["parameters"] = {"A": {"$ref": "#/components/parameters/A"}}
    with pytest.raises(OpenApiError, match="refers back to itself"):
        from_openapi(spec, base_url=BASE)
    with pytest.raises(OpenApiError, match="points at nothing"):
        from_openapi(spec_of(body({"$ref": "#/components/schemas/Missing"})), base_url=BASE)


@pytest.mark.parametrize(
    "document", [{"swagger": "2.0"}, {"openapi": "3.0.0", "paths": []}, []], ids=["swagger2", "paths", "list"]
)
def test_a_document_that_is_not_openapi_3_is_refused(document: Any) -> None:
    with pytest.raises(OpenApiError):
        from_openapi(document, base_url=BASE)


async def test_a_converted_schema_is_enforced_before_the_api_is_called() -> None:
    # The port is closed: a call that got past validation would be a connection failure.
    schemas = {"Size": {"type": "string", "enum": ["S", "M"]}}
    server = from_openapi(
        spec_of(body({"type": "object", "properties": {"size": {"$ref": "#/components/schemas/Size"}}}), schemas),
        base_url=BASE,
    )
    async with InMemoryClient(server) as client:
        refused = await client.call_tool("op", {"size": "XL"})
        sent = await client.call_tool("op", {"size": "S"})
    assert refused.is_error and "size" in refused.content[0].text  # type: ignore[union-attr]
    assert sent.is_error and sent.content[0].text.startswith("The API request failed")  # type: ignore[union-attr]
