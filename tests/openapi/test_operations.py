"""Names, route rules, the flat input schema and the requests it builds: what ``from_openapi``
decides at load, and resources and templates read from a real API on loopback."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from client.asgi_server import serve
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.engine.jsonrpc import McpError
from mcp_sse_server.openapi import GETS_AS_RESOURCES, OpenApiError, Route, from_openapi
from mcp_sse_server.openapi.operations import compile_operation
from mcp_sse_server.openapi.schemas import SchemaConverter

from .shop_app import build_app

BASE = "http://127.0.0.1:9"


def spec_with(paths: dict[str, Any]) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "T", "version": "1"}, "paths": paths}


def names_of(spec: dict[str, Any], **options: Any) -> list[str]:
    return [tool.name for tool in from_openapi(spec, base_url=BASE, **options).tools]


def test_long_names_are_cut_to_64_and_stay_apart() -> None:
    # fastmcp #420, fastapi_mcp #161: FastAPI operationIds run long.
    stem = "get_the_list_of_every_single_item_in_the_warehouse_grouped_by_colour_and_size"
    spec = spec_with({"/a": {"get": {"operationId": stem + "_one"}}, "/b": {"get": {"operationId": stem + "_two"}}})
    first, second = names_of(spec)
    assert len(first) == len(second) == 64 and first != second
    assert first.startswith(stem[:40]) and names_of(spec) == [first, second]  # stable across loads


def test_names_come_from_names_then_operation_id_then_method_and_path() -> None:
    spec = spec_with(
        {
            "/items/{item_id}": {
                "get": {"operationId": "read_item_items__item_id__get"},  # FastAPI's tail goes
                "put": {"operationId": "update item!"},  # slugged
                "delete": {},  # no operationId
            },
            "/other": {"get": {"operationId": "other"}},
        }
    )
    assert names_of(spec) == ["read_item", "update_item", "delete_items_item_id", "other"]
    assert names_of(spec, names={"other": "elsewhere", "DELETE /items/{item_id}": "drop"})[2:] == ["drop", "elsewhere"]


def test_collisions_are_suffixed_in_spec_order_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    spec = spec_with(
        {
            "/a": {"get": {"operationId": "fetch"}},
            "/b": {"get": {"operationId": "fetch"}},
            "/c": {"get": {"operationId": "fetch!"}},
        }
    )
    with caplog.at_level(logging.WARNING, "mcp_sse_server.openapi"):
        assert names_of(spec) == ["fetch", "fetch_2", "fetch_3"]
    assert "GET /b is named 'fetch_2': 'fetch' is GET /a's" in caplog.text
    # A name given in names= is kept; the generated one steps aside.
    assert names_of(spec, names={"GET /c": "fetch"}) == ["fetch_2", "fetch_3", "fetch"]


@pytest.mark.parametrize(
    ("names", "error"),
    [({"fetch": "has space"}, "a tool name here is"), ({"fetch": "same", "other": "same"}, "gives 'same' to both")],
)
def test_bad_names_are_refused(names: dict[str, str], error: str) -> None:
    spec = spec_with({"/a": {"get": {"operationId": "fetch"}}, "/b": {"get": {"operationId": "other"}}})
    with pytest.raises(OpenApiError, match=error):
        from_openapi(spec, base_url=BASE, names=names)


def test_clashing_names_get_their_location_and_a_clashing_body_stays_whole() -> None:
    operation = {
        "operationId": "update",
        "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
            {"name": "id", "in": "query", "schema": {"type": "string"}},
            {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
        ],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"type": "object", "properties": {"verbose": {"type": "string"}}}}
            },
        },
    }
    (tool,) = from_openapi(spec_with({"/things/{id}": {"post": operation}}), base_url=BASE).tools
    assert list(tool.input_schema["properties"]) == ["id__path", "id__query", "verbose", "body"]
    assert tool.input_schema["required"] == ["id__path", "body"]


def compiled(path: str, operation: dict[str, Any]) -> Any:
    spec = spec_with({path: {"post": operation}})
    return compile_operation(SchemaConverter(spec), "post", path, spec["paths"][path], operation, frozenset())


def test_requests_follow_the_parameter_styles() -> None:
    operation = compiled(
        "/files/{name}",
        {
            "parameters": [
                {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "tag", "in": "query", "schema": {"type": "array"}},
                {"name": "ids", "in": "query", "explode": False, "schema": {"type": "array"}},
                {"name": "filter", "in": "query", "style": "deepObject", "schema": {"type": "object"}},
                {"name": "deep", "in": "query", "schema": {"type": "boolean"}},
                {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
            ],
            "requestBody": {
                "content": {
                    "application/x-www-form-urlencoded": {
                        "schema": {"type": "object", "properties": {"note": {"type": "string"}}}
                    }
                }
            },
        },
    )
    request = operation.request(
        {"name": "a/../b c", "tag": ["x", "y"], "ids": [1, 2], "filter": {"size": "M"}, "deep": True,
         "session": "s 1", "X-Trace": "t", "note": "hi"}
    )  # fmt: skip
    assert request["url"] == "/files/a%2F..%2Fb%20c"
    assert request["params"] == [("tag", "x"), ("tag", "y"), ("ids", "1,2"), ("filter[size]", "M"), ("deep", "true")]
    assert request["headers"] == {"X-Trace": "t", "cookie": "session=s%201"}
    assert request["data"] == {"note": "hi"}
    assert (
        compiled("/p/{v}", {"parameters": [{"name": "v", "in": "path", "required": True}]}).request({"v": ".."})["url"]
        == "/p/%2E%2E"
    )


def test_a_text_body_is_one_string_argument() -> None:
    operation = compiled("/notes", {"requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}}})
    assert operation.input_schema == {"type": "object", "properties": {"body": {"type": "string"}}}
    request = operation.request({"body": "hello"})
    assert request["content"] == "hello" and request["headers"]["content-type"] == "text/plain"


async def test_routes_exclude_and_turn_gets_into_resources_and_templates() -> None:
    app, _ = build_app()
    async with serve(app) as base:
        server = from_openapi(
            app.openapi(),
            base_url=base,
            routes=[Route("exclude", path=r"^/(fail|private|moved|slow)$"), *GETS_AS_RESOURCES],
        )
        tools = {tool.name for tool in server.tools}
        async with InMemoryClient(server) as client:
            resources = {resource.uri: resource.name for resource in await client.list_resources()}
            templates = {template.uri_template: template.name for template in await client.list_resource_templates()}
            listing = await client.read_resource("api+shop://items")
            one = await client.read_resource("api+shop://items/1")
            with pytest.raises(McpError, match="api\\+shop://items/99"):
                await client.read_resource("api+shop://items/99")
    assert tools == {"create_item", "attach", "delete_item"}  # not GETs, and the excluded GETs are gone
    assert resources == {
        "api+shop://items": "list_items",
        "api+shop://categories/root": "category_tree",
        "api+shop://count": "count",
    }
    assert templates == {"api+shop://items/{item_id}": "read_item", "api+shop://echo/{name}": "echo"}
    assert '"name":"kettle"' in listing.contents[0].text  # type: ignore[union-attr]
    assert one.contents[0].uri == "api+shop://items/1" and one.contents[0].mime_type == "application/json"


def test_a_route_rule_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="Route kind must be one of"):
        Route("tools")  # type: ignore[arg-type]
    assert Route("exclude", methods=["get"], tags=["admin"]).matches("GET", "/x", ["admin", "ops"], set())
    assert not Route("exclude", methods=["get"], tags=["admin"]).matches("GET", "/x", ["ops"], set())
