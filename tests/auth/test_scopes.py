"""Scopes per tool, prompt and resource (``scopes=``): 403 ``insufficient_scope`` naming them before
the request is served, at both eras, and listings that show only what the token may use."""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.asgi import AsgiCall, call
from fixtures.keys import ISSUER, RESOURCE, SigningKey
from fixtures.messages import initialize_message, notification, request
from mcp_sse_server import McpServer, Prompt, RequestContext, Resource, ResourceTemplate, Tool
from mcp_sse_server.auth import JwtVerifier
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.client import InMemoryClient
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp

STATELESS = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": STATELESS, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("k1", "ES256")


def scoped_server() -> McpServer:
    server = McpServer("scoped")

    @server.tool
    def echo(text: str) -> str:
        """Says it back."""
        return text

    @server.tool(scopes=["ops:write"])
    def deploy(service: str) -> str:
        """Deploys a service."""
        return f"deployed {service}"

    @server.prompt(scopes=["prompts:secret"])
    def plan(goal: str) -> str:
        return f"Plan for {goal}"

    @server.resource("notes://{id}", scopes=["notes:read"])
    def note(id: str) -> str:
        return f"note {id}"

    server.add_resource(Resource.text("config://public", "public", "open to all"))
    server.add_resource(Resource.text("config://secret", "secret", "s3cret", scopes=["config:read"]))
    return server


@pytest.fixture
def app(key: SigningKey) -> McpHttpApp:
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    auth = ResourceServer(
        RESOURCE,
        [ISSUER],
        verifier=verifier,
        required_scopes={"mcp:tools"},
        scopes_supported={"mcp:tools", "ops:write"},
    )
    return McpHttpApp(scoped_server(), settings=HttpSettings(path="/mcp", auth=auth))


async def open_session(app: McpHttpApp, token: str) -> dict[str, str]:
    bearer = {"authorization": f"Bearer {token}"}
    opened = await call(app, body=initialize_message(), headers=bearer)
    assert opened.status == 200
    session = {**bearer, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert (await call(app, body=notification("notifications/initialized"), headers=session)).status == 202
    return session


async def test_a_call_without_the_tools_scope_is_403_naming_it_and_never_served(
    app: McpHttpApp, key: SigningKey
) -> None:
    session = await open_session(app, key.sign(scope="mcp:tools"))
    reply = await call(
        app, body=request(7, "tools/call", {"name": "deploy", "arguments": {"service": "db"}}), headers=session
    )
    assert reply.status == 403
    # The challenge names what the call needs, and keeps the known scopes the token has (step-up).
    assert reply.headers["www-authenticate"].startswith(
        'Bearer error="insufficient_scope", scope="mcp:tools ops:write"'
    )
    assert reply.json["id"] == 7 and "ops:write" in reply.json["error"]["message"]
    allowed = await call(
        app, body=request(8, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}), headers=session
    )
    assert allowed.messages[-1]["result"]["content"][0]["text"] == "hi"


async def test_with_the_scope_the_call_is_served(app: McpHttpApp, key: SigningKey) -> None:
    session = await open_session(app, key.sign(scope="mcp:tools ops:write"))
    reply = await call(
        app, body=request(2, "tools/call", {"name": "deploy", "arguments": {"service": "db"}}), headers=session
    )
    assert reply.status == 200 and reply.messages[-1]["result"]["content"][0]["text"] == "deployed db"


async def test_listings_show_only_what_the_token_may_use(app: McpHttpApp, key: SigningKey) -> None:
    narrow = await open_session(app, key.sign(scope="mcp:tools"))
    tools = await call(app, body=request(2, "tools/list"), headers=narrow)
    assert [tool["name"] for tool in tools.messages[-1]["result"]["tools"]] == ["echo"]
    prompts = await call(app, body=request(3, "prompts/list"), headers=narrow)
    assert prompts.messages[-1]["result"]["prompts"] == []
    resources = await call(app, body=request(4, "resources/list"), headers=narrow)
    assert [r["uri"] for r in resources.messages[-1]["result"]["resources"]] == ["config://public"]
    templates = await call(app, body=request(5, "resources/templates/list"), headers=narrow)
    assert templates.messages[-1]["result"]["resourceTemplates"] == []

    wide = await open_session(app, key.sign(scope="mcp:tools ops:write prompts:secret notes:read config:read"))
    tools = await call(app, body=request(2, "tools/list"), headers=wide)
    assert [tool["name"] for tool in tools.messages[-1]["result"]["tools"]] == ["echo", "deploy"]
    resources = await call(app, body=request(4, "resources/list"), headers=wide)
    assert [r["uri"] for r in resources.messages[-1]["result"]["resources"]] == ["config://public", "config://secret"]


@pytest.mark.parametrize(
    ("method", "params", "needed"),
    [
        ("prompts/get", {"name": "plan", "arguments": {"goal": "x"}}, "prompts:secret"),
        ("resources/read", {"uri": "notes://42"}, "notes:read"),  # through the template
        ("resources/read", {"uri": "config://secret"}, "config:read"),
        ("resources/subscribe", {"uri": "config://secret"}, "config:read"),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "plan"}, "argument": {"name": "goal", "value": ""}},
            "prompts:secret",
        ),
    ],
)
async def test_prompts_resources_and_completions_need_their_scopes(
    app: McpHttpApp, key: SigningKey, method: str, params: dict[str, Any], needed: str
) -> None:
    session = await open_session(app, key.sign(scope="mcp:tools"))
    reply = await call(app, body=request(2, method, params), headers=session)
    assert reply.status == 403 and needed in reply.headers["www-authenticate"]
    public = await call(app, body=request(3, "resources/read", {"uri": "config://public"}), headers=session)
    assert public.messages[-1]["result"]["contents"][0]["text"] == "open to all"


async def test_a_stateless_request_is_checked_the_same_way(app: McpHttpApp, key: SigningKey) -> None:
    head = {
        "authorization": f"Bearer {key.sign(scope='mcp:tools')}",
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": "deploy",
    }
    body = request(4, "tools/call", {"_meta": META, "name": "deploy", "arguments": {"service": "db"}})
    reply = await AsgiCall(app, "POST", body, head).start().finish()
    assert reply.status == 403 and 'error="insufficient_scope"' in reply.headers["www-authenticate"]
    assert reply.json["id"] == 4
    head["authorization"] = f"Bearer {key.sign(scope='mcp:tools ops:write')}"
    served = await AsgiCall(app, "POST", body, head).start().finish()
    assert served.status == 200 and served.messages[-1]["result"]["content"][0]["text"] == "deployed db"


async def test_without_authorization_scopes_are_not_checked() -> None:
    async with InMemoryClient(scoped_server()) as client:
        result = await client.call_tool("deploy", {"service": "db"})
        assert result.content[0].to_dict()["text"] == "deployed db"
        assert [tool.name for tool in await client.list_tools()] == ["echo", "deploy"]


def test_a_uri_needs_the_scopes_of_what_would_read_it() -> None:
    server = McpServer("files")
    server.add_resource_template(ResourceTemplate("files://{path}", "shallow", read, scopes=["files:read"]))
    server.add_resource_template(ResourceTemplate("files://{+path}", "deep", read, scopes=["files:deep"]))
    server.add_resource(Resource.text("files://readme", "readme", "hello"))
    assert server.scopes_needed("resources/read", {"uri": "files://readme"}) == frozenset()  # a fixed one wins
    assert server.scopes_needed("resources/read", {"uri": "files://a"}) == {"files:read"}  # the first matching
    assert server.scopes_needed("resources/read", {"uri": "files://a/b"}) == {"files:deep"}
    # Replacing keeps its place, as the registry does; removing drops it.
    server.add_resource_template(ResourceTemplate("files://{path}", "shallow", read, scopes=["files:other"]))
    assert server.scopes_needed("resources/read", {"uri": "files://a"}) == {"files:other"}
    server.remove_resource_template("files://{path}")
    assert server.scopes_needed("resources/read", {"uri": "files://a"}) == {"files:deep"}
    ref = {"ref": {"type": "ref/resource", "uri": "files://{+path}"}, "argument": {"name": "path", "value": ""}}
    assert server.scopes_needed("completion/complete", ref) == {"files:deep"}
    assert server.scopes_needed("tools/call", {"name": 3}) == frozenset()
    assert server.scopes_needed("tools/call", ["not", "an", "object"]) == frozenset()


def read(uri: str, variables: dict[str, str], context: RequestContext) -> str:
    return uri


def test_tool_and_prompt_objects_take_scopes_too() -> None:
    server = McpServer("plain")
    server.add_tool(Tool("t", {"type": "object"}, lambda args, ctx: "x", scopes=("a", "b")))
    server.add_prompt(Prompt("p", lambda args, ctx: "y", scopes=["c"]))
    assert server.scopes_needed("tools/call", {"name": "t"}) == {"a", "b"}
    assert server.scopes_needed("prompts/get", {"name": "p"}) == {"c"}
    server.remove_tool("t")
    assert server.scopes_needed("tools/call", {"name": "t"}) == frozenset()


async def test_a_broader_scope_counts_for_the_narrower_ones_it_implies(key: SigningKey) -> None:
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    auth = ResourceServer(
        RESOURCE,
        [ISSUER],
        verifier=verifier,
        required_scopes={"mcp:tools"},
        implies={"mcp:admin": ["mcp:tools", "ops:write"]},
    )
    app = McpHttpApp(scoped_server(), settings=HttpSettings(path="/mcp", auth=auth))
    session = await open_session(app, key.sign(scope="mcp:admin"))  # no mcp:tools, but implied
    body = request(2, "tools/call", {"name": "deploy", "arguments": {"service": "db"}})
    reply = await call(app, body=body, headers=session)
    assert reply.status == 200 and reply.messages[-1]["result"]["content"][0]["text"] == "deployed db"
    with pytest.raises(ValueError, match="not an OAuth scope"):
        ResourceServer(RESOURCE, [ISSUER], verifier=verifier, implies={"a b": ["c"]})
