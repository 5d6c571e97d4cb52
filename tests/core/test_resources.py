"""Resources: listing, reading, template matching order, degraded listings, subscriptions."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest

from fixtures.sessions import Connect
from mcp_sse_server import (
    BlobResourceContents,
    McpServer,
    ReadResourceResult,
    RequestContext,
    Resource,
    ResourceInfo,
    ResourceTemplate,
    TextResourceContents,
)
from mcp_sse_server.engine.jsonrpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError


def _reader(label: str) -> Any:
    def read(uri: str, variables: dict[str, str], context: RequestContext) -> ReadResourceResult:
        return ReadResourceResult([TextResourceContents(uri, f"{label}:{sorted(variables.items())}")])

    return read


async def test_fixed_text_and_blob_resources(server: McpServer, connect: Connect) -> None:
    server.add_resource(Resource.text("config://app", "app-config", '{"debug": false}', mime_type="application/json"))
    server.add_resource(Resource.blob("blob://logo", "logo", b"\x00\x01\xff", mime_type="image/png", title="Logo"))
    client = await connect(server)
    listing = await client.result("resources/list")
    assert listing == {
        "resources": [
            {"uri": "config://app", "name": "app-config", "mimeType": "application/json", "size": 16},
            {"uri": "blob://logo", "name": "logo", "title": "Logo", "mimeType": "image/png", "size": 3},
        ]
    }
    text = await client.result("resources/read", {"uri": "config://app"})
    assert text == {"contents": [{"uri": "config://app", "text": '{"debug": false}', "mimeType": "application/json"}]}
    blob = await client.result("resources/read", {"uri": "blob://logo"})
    assert blob == {
        "contents": [
            {"uri": "blob://logo", "blob": base64.b64encode(b"\x00\x01\xff").decode(), "mimeType": "image/png"}
        ]
    }


async def test_resource_text_defaults_to_text_plain(server: McpServer, connect: Connect) -> None:
    server.add_resource(Resource.text("note://1", "n", "héllo"))
    client = await connect(server)
    listing = await client.result("resources/list")
    assert listing["resources"][0]["mimeType"] == "text/plain"
    assert listing["resources"][0]["size"] == len("héllo".encode())


async def test_a_fixed_resource_with_a_reader(server: McpServer, connect: Connect) -> None:
    reads: list[str] = []

    async def read(uri: str, context: RequestContext) -> str:
        reads.append(uri)
        return f"read #{len(reads)}"

    server.add_resource(Resource("clock://now", "now", read, mime_type="text/plain"))
    client = await connect(server)
    first = await client.result("resources/read", {"uri": "clock://now"})
    second = await client.result("resources/read", {"uri": "clock://now"})
    assert first == {"contents": [{"uri": "clock://now", "text": "read #1", "mimeType": "text/plain"}]}
    assert second["contents"][0]["text"] == "read #2"


async def test_readers_may_return_bytes_or_a_list_of_contents(server: McpServer, connect: Connect) -> None:
    server.add_resource(Resource("b://x", "x", lambda uri, ctx: b"\x01\x02", mime_type="application/octet-stream"))
    server.add_resource_template(
        ResourceTemplate(
            "multi://{id}",
            "multi",
            lambda uri, v, ctx: [TextResourceContents(uri, "a"), BlobResourceContents.from_bytes(uri + "/b", b"b")],
        )
    )
    client = await connect(server)
    assert await client.result("resources/read", {"uri": "b://x"}) == {
        "contents": [{"uri": "b://x", "blob": "AQI=", "mimeType": "application/octet-stream"}]
    }
    assert await client.result("resources/read", {"uri": "multi://1"}) == {
        "contents": [{"uri": "multi://1", "text": "a"}, {"uri": "multi://1/b", "blob": "Yg=="}]
    }


def test_a_resource_needs_contents_or_a_reader() -> None:
    with pytest.raises(ValueError):
        McpServer("s", "1").add_resource(Resource("x://y", "y"))


async def test_unknown_uri_is_resource_not_found_with_the_uri(server: McpServer, connect: Connect) -> None:
    server.add_resource(Resource.text("config://app", "app", "{}"))
    server.add_resource_template(ResourceTemplate("users://{id}", "user", _reader("user")))
    client = await connect(server)
    for uri in ("config://other", "users://1/2", "nothing"):
        error = await client.error("resources/read", {"uri": uri})
        assert error.code == RESOURCE_NOT_FOUND
        assert error.data == {"uri": uri}


@pytest.mark.parametrize("params", [None, {}, {"uri": 5}, {"uri": None}])
async def test_resources_read_needs_a_string_uri(
    server: McpServer, connect: Connect, params: dict[str, Any] | None
) -> None:
    server.add_resource(Resource.text("config://app", "app", "{}"))
    client = await connect(server)
    error = await client.error("resources/read", params)
    assert error.code == INVALID_PARAMS


async def test_fixed_uris_match_before_templates(server: McpServer, connect: Connect) -> None:
    # The template is registered first and would match, but the fixed resource wins.
    server.add_resource_template(ResourceTemplate("users://{id}", "user", _reader("template")))
    server.add_resource(Resource.text("users://me", "me", "fixed"))
    client = await connect(server)
    assert (await client.result("resources/read", {"uri": "users://me"}))["contents"][0]["text"] == "fixed"
    assert (await client.result("resources/read", {"uri": "users://you"}))["contents"][0]["text"] == (
        "template:[('id', 'you')]"
    )


async def test_templates_match_in_registration_order(server: McpServer, connect: Connect) -> None:
    server.add_resource_template(ResourceTemplate("docs://{+path}", "any-doc", _reader("first")))
    server.add_resource_template(ResourceTemplate("docs://{name}", "top-doc", _reader("second")))
    server.add_resource_template(ResourceTemplate("other://{name}", "other", _reader("third")))
    client = await connect(server)
    # Both of the first two match "docs://readme"; the one registered first wins.
    assert (await client.result("resources/read", {"uri": "docs://readme"}))["contents"][0]["text"] == (
        "first:[('path', 'readme')]"
    )
    assert (await client.result("resources/read", {"uri": "other://x"}))["contents"][0]["text"] == (
        "third:[('name', 'x')]"
    )


async def test_reserved_template_variable_spans_slashes_and_simple_does_not(
    server: McpServer, connect: Connect
) -> None:
    server.add_resource_template(ResourceTemplate("file:///{+path}", "file", _reader("file")))
    server.add_resource_template(ResourceTemplate("user://{id}/profile", "profile", _reader("profile")))
    client = await connect(server)
    assert (await client.result("resources/read", {"uri": "file:///src/a/b.py"}))["contents"][0]["text"] == (
        "file:[('path', 'src/a/b.py')]"
    )
    assert (await client.result("resources/read", {"uri": "user://42/profile"}))["contents"][0]["text"] == (
        "profile:[('id', '42')]"
    )
    error = await client.error("resources/read", {"uri": "user://4/2/profile"})
    assert error.code == RESOURCE_NOT_FOUND


def test_a_template_outside_the_subset_is_refused_at_registration() -> None:
    server = McpServer("s", "1")
    with pytest.raises(ValueError):
        server.add_resource_template(ResourceTemplate("search{?q}", "search", _reader("x")))
    assert "resources" not in server.capabilities


async def test_templates_list(server: McpServer, connect: Connect) -> None:
    server.add_resource_template(
        ResourceTemplate(
            "file:///{+path}", "project-file", _reader("f"), title="Project file", description="d", mime_type="text/x"
        )
    )
    server.add_resource_template(ResourceTemplate("user://{id}", "user", _reader("u")))
    client = await connect(server)
    assert await client.result("resources/templates/list") == {
        "resourceTemplates": [
            {
                "uriTemplate": "file:///{+path}",
                "name": "project-file",
                "title": "Project file",
                "description": "d",
                "mimeType": "text/x",
            },
            {"uriTemplate": "user://{id}", "name": "user"},
        ]
    }


async def test_a_template_reader_may_raise_mcp_error(server: McpServer, connect: Connect) -> None:
    def read(uri: str, variables: dict[str, str], context: RequestContext) -> str:
        raise McpError(RESOURCE_NOT_FOUND, f"No user {variables['id']}", {"uri": uri})

    server.add_resource_template(ResourceTemplate("user://{id}", "user", read))
    client = await connect(server)
    error = await client.error("resources/read", {"uri": "user://9"})
    assert (error.code, error.data) == (RESOURCE_NOT_FOUND, {"uri": "user://9"})


# --- listing from listers ------------------------------------------------------------


async def test_listers_contribute_entries_after_fixed_resources(server: McpServer, connect: Connect) -> None:
    async def list_files() -> list[ResourceInfo]:
        return [ResourceInfo("file:///a.txt", "a.txt", mime_type="text/plain"), ResourceInfo("file:///b.txt", "b.txt")]

    server.add_resource_template(ResourceTemplate("file:///{+path}", "file", _reader("f"), lister=list_files))
    server.add_resource_template(
        ResourceTemplate("user://{id}", "user", _reader("u"), lister=lambda: [ResourceInfo("user://1", "one")])
    )
    server.add_resource(Resource.text("config://app", "app", "{}"))
    client = await connect(server)
    listing = await client.result("resources/list")
    assert [r["uri"] for r in listing["resources"]] == ["config://app", "file:///a.txt", "file:///b.txt", "user://1"]
    assert listing["resources"][1] == {"uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"}
    assert "_meta" not in listing


async def test_a_failing_lister_degrades_the_listing_instead_of_failing_it(
    server: McpServer, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> list[ResourceInfo]:
        raise OSError("disk on fire at /secret/path")

    async def broken_async() -> list[ResourceInfo]:
        raise RuntimeError("async failure")

    server.add_resource(Resource.text("config://app", "app", "{}"))
    server.add_resource_template(ResourceTemplate("file:///{+path}", "files", _reader("f"), lister=broken))
    server.add_resource_template(ResourceTemplate("a://{x}", "async-files", _reader("a"), lister=broken_async))
    server.add_resource_template(
        ResourceTemplate("user://{id}", "users", _reader("u"), lister=lambda: [ResourceInfo("user://1", "one")])
    )
    client = await connect(server)
    with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
        listing = await client.result("resources/list")
    assert [r["uri"] for r in listing["resources"]] == ["config://app", "user://1"]
    assert listing["_meta"] == {"degraded": True, "failedListers": ["files", "async-files"]}
    assert "/secret/path" not in str(listing)
    assert "disk on fire" in caplog.text


# --- subscriptions -------------------------------------------------------------------


async def test_updates_reach_subscribers_only(server: McpServer, connect: Connect) -> None:
    server.add_resource(Resource.text("config://app", "app", "{}"))
    server.add_resource(Resource.text("config://other", "other", "{}"))
    client = await connect(server)

    await server.notify_resource_updated("config://app")
    await client.sync()
    assert client.notifications("notifications/resources/updated") == []

    assert await client.result("resources/subscribe", {"uri": "config://app"}) == {}
    await server.notify_resource_updated("config://app")
    await server.notify_resource_updated("config://other")
    updated = await client.notification("notifications/resources/updated")
    assert updated.params == {"uri": "config://app"}
    await client.sync()
    assert client.notifications("notifications/resources/updated") == []

    assert await client.result("resources/unsubscribe", {"uri": "config://app"}) == {}
    await server.notify_resource_updated("config://app")
    await client.sync()
    assert client.notifications("notifications/resources/updated") == []


async def test_subscribing_to_a_template_uri(server: McpServer, connect: Connect) -> None:
    server.add_resource_template(ResourceTemplate("user://{id}", "user", _reader("u")))
    client = await connect(server)
    await client.result("resources/subscribe", {"uri": "user://7"})
    await server.notify_resource_updated("user://7")
    assert (await client.notification("notifications/resources/updated")).params == {"uri": "user://7"}


async def test_unsubscribing_from_something_never_subscribed_is_fine(server: McpServer, connect: Connect) -> None:
    server.add_resource(Resource.text("config://app", "app", "{}"))
    client = await connect(server)
    assert await client.result("resources/unsubscribe", {"uri": "config://app"}) == {}


@pytest.mark.parametrize("method", ["resources/subscribe", "resources/unsubscribe"])
@pytest.mark.parametrize("params", [None, {}, {"uri": 3}])
async def test_subscribe_needs_a_uri(
    server: McpServer, connect: Connect, method: str, params: dict[str, Any] | None
) -> None:
    server.add_resource(Resource.text("config://app", "app", "{}"))
    client = await connect(server)
    assert (await client.error(method, params)).code == INVALID_PARAMS


async def test_notify_without_a_connection_is_harmless() -> None:
    server = McpServer("s", "1")
    await server.notify_resource_updated("x://y")
    await server.notify_resource_list_changed()


async def test_a_failing_reader_is_an_internal_error_without_its_text(
    server: McpServer, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    def read(uri: str, variables: dict[str, str], context: RequestContext) -> str:
        raise OSError("cannot open /home/secret/notes.txt")

    server.add_resource_template(ResourceTemplate("notes://{id}", "note", read))
    client = await connect(server)
    with caplog.at_level(logging.ERROR, logger="mcp_sse_server"):
        error = await client.error("resources/read", {"uri": "notes://1"})
    assert error.code == -32603
    assert "secret" not in error.message and error.data is None
    assert "/home/secret/notes.txt" in caplog.text
