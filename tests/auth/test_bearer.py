"""The endpoint as a protected resource (``HttpSettings(auth=ResourceServer(...))``): the metadata,
every refusal's status and challenge, and a token's way to the handler, with real signed tokens."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from fixtures.asgi import AsgiCall, call
from fixtures.keys import ISSUER, RESOURCE, KeySetServer, SigningKey
from fixtures.messages import initialize_message, notification, request
from mcp_sse_server import McpServer, RequestContext, Tool
from mcp_sse_server.auth import JwtVerifier
from mcp_sse_server.auth.resource import ResourceServer
from mcp_sse_server.transport.http import HttpSettings, McpHttpApp, McpHttpServer

METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey("k1", "ES256")


def whoami_server() -> McpServer:
    server = McpServer("protected")

    async def whoami(arguments: dict[str, Any], context: RequestContext) -> str:
        auth = context.auth
        return "nobody" if auth is None else f"{auth.subject} {sorted(auth.scopes)}"

    server.add_tool(Tool("whoami", {"type": "object"}, whoami))
    return server


def resource(key: SigningKey, **settings: Any) -> ResourceServer:
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, keys={"keys": [key.jwk()]})
    return ResourceServer(RESOURCE, [ISSUER], verifier=verifier, required_scopes={"mcp:tools"}, **settings)


@pytest.fixture
def app(key: SigningKey) -> McpHttpApp:
    return McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", auth=resource(key)))


def challenge(reply: AsgiCall) -> str:
    return reply.headers["www-authenticate"]


async def test_the_metadata_is_served_without_a_token(app: McpHttpApp) -> None:
    reply = await call(app, "GET", path=METADATA_PATH)
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    assert orjson.loads(reply.body) == {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp:tools"],
    }
    assert reply.headers["access-control-allow-origin"] == "*"
    head = await call(app, "HEAD", path=METADATA_PATH)
    assert (head.status, head.body) == (200, b"")
    assert (await call(app, "POST", b"{}", path=METADATA_PATH)).status == 405


async def test_no_token_is_401_with_the_challenge_and_no_error(app: McpHttpApp) -> None:
    for headers in ({}, {"authorization": "Basic YTpi"}):
        reply = await call(app, body=initialize_message(), headers=headers)
        assert reply.status == 401
        assert challenge(reply) == (
            'Bearer scope="mcp:tools", resource_metadata="https://mcp.example.test' + METADATA_PATH + '"'
        )
        assert reply.json["error"]["code"] == -32600 and "bearer token" in reply.json["error"]["message"]


async def test_malformed_credentials_are_400_invalid_request(app: McpHttpApp, key: SigningKey) -> None:
    empty = await call(app, body=initialize_message(), headers={"authorization": "Bearer "})
    assert empty.status == 400 and 'error="invalid_request"' in challenge(empty)
    twice = AsgiCall(app, "POST", initialize_message(), {"authorization": f"Bearer {key.sign()}"})
    twice.scope["headers"].append((b"authorization", f"Bearer {key.sign()}".encode()))
    assert (await twice.start().finish()).status == 400
    in_query = AsgiCall(app, "POST", initialize_message(), {"authorization": f"Bearer {key.sign()}"})
    in_query.scope["query_string"] = b"access_token=abc"
    assert (await in_query.start().finish()).status == 400


@pytest.mark.parametrize(
    ("claims", "reason"),
    [({"exp": int(time.time()) - 60}, "expired"), ({"aud": "https://elsewhere.example/mcp"}, "audience")],
)
async def test_a_bad_token_is_401_invalid_token_and_never_echoed(
    app: McpHttpApp, key: SigningKey, claims: dict[str, Any], reason: str
) -> None:
    token = key.sign(claims)
    reply = await call(app, body=initialize_message(), headers={"authorization": f"Bearer {token}"})
    assert reply.status == 401
    assert f'error="invalid_token", error_description="{reason}"' in challenge(reply)
    assert token.encode() not in reply.body and token not in challenge(reply)


async def test_a_token_without_the_required_scope_is_403_insufficient_scope(app: McpHttpApp, key: SigningKey) -> None:
    reply = await call(app, body=initialize_message(), headers={"authorization": f"Bearer {key.sign(scope='other')}"})
    assert reply.status == 403
    assert challenge(reply).startswith('Bearer error="insufficient_scope", scope="mcp:tools"')


async def test_a_valid_token_reaches_the_handler_as_context_auth(app: McpHttpApp, key: SigningKey) -> None:
    bearer = {"authorization": f"Bearer {key.sign(scope='mcp:tools mcp:read')}"}
    opened = await call(app, body=initialize_message(), headers=bearer)
    assert opened.status == 200
    session = {**bearer, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert (await call(app, body=notification("notifications/initialized"), headers=session)).status == 202
    reply = await call(app, body=request(2, "tools/call", {"name": "whoami", "arguments": {}}), headers=session)
    assert reply.messages[-1]["result"]["content"][0]["text"] == "alice ['mcp:read', 'mcp:tools']"
    # Every request of the session needs the token: the session id is not a credential.
    no_token = {k: v for k, v in session.items() if k != "authorization"}
    assert (await call(app, body=request(3, "tools/list"), headers=no_token)).status == 401


@pytest.fixture
def down_key_set(key: SigningKey) -> Iterator[KeySetServer]:
    server = KeySetServer([key])
    server.status = 503
    yield server
    server.close()


async def test_a_verifier_that_cannot_decide_is_503_not_a_pass(down_key_set: KeySetServer, key: SigningKey) -> None:
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=down_key_set.url, timeout=1.0)
    app = McpHttpApp(whoami_server(), settings=HttpSettings(auth=ResourceServer(RESOURCE, [ISSUER], verifier=verifier)))
    try:
        for _ in range(3):  # the first fetch failed: every token is 503 until the set comes, never 401
            reply = await call(app, body=initialize_message(), headers={"authorization": f"Bearer {key.sign()}"})
            assert reply.status == 503 and reply.headers["retry-after"] == "1"  # the verifier's backoff left
    finally:
        await verifier.aclose()


@pytest.fixture
async def served(key: SigningKey) -> AsyncIterator[McpHttpServer]:
    key_set = KeySetServer([key])
    verifier = JwtVerifier(issuer=ISSUER, audience=RESOURCE, jwks_uri=key_set.url)
    auth = ResourceServer(RESOURCE, [ISSUER], verifier=verifier, required_scopes={"mcp:tools"})
    http = await McpHttpServer.bind(whoami_server(), settings=HttpSettings(auth=auth))
    try:
        yield http
    finally:
        await http.close()
        await verifier.aclose()
        key_set.close()


async def test_over_a_socket_with_keys_fetched_over_http(served: McpHttpServer, key: SigningKey) -> None:
    base = served.endpoint.rsplit("/mcp", 1)[0]
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with httpx.AsyncClient() as client:
        metadata = await client.get(base + METADATA_PATH)
        assert metadata.json()["resource"] == RESOURCE
        body = orjson.dumps(initialize_message())
        refused = await client.post(served.endpoint, content=body, headers=headers)
        assert refused.status_code == 401 and "resource_metadata=" in refused.headers["www-authenticate"]
        opened = await client.post(
            served.endpoint, content=body, headers={**headers, "authorization": f"Bearer {key.sign()}"}
        )
        assert opened.status_code == 200 and opened.headers["mcp-session-id"]


async def test_a_session_answers_only_the_principal_that_opened_it(app: McpHttpApp, key: SigningKey) -> None:
    alice = {"authorization": f"Bearer {key.sign()}"}
    opened = await call(app, body=initialize_message(), headers=alice)
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert (await call(app, body=notification("notifications/initialized"), headers={**alice, **session})).status == 202
    mallory = {"authorization": f"Bearer {key.sign(sub='mallory')}"}
    for method, body in (("POST", request(2, "tools/list")), ("GET", b""), ("DELETE", b"")):
        hijack = await call(app, method, body, headers={**mallory, **session})
        assert hijack.status == 404, method  # as if the session did not exist: the id is no credential
    assert (await call(app, body=request(3, "tools/list"), headers={**alice, **session})).status == 200


async def test_with_tokens_checked_a_client_without_origin_is_served_and_a_foreign_origin_is_not(
    key: SigningKey,
) -> None:
    from mcp_sse_server.transport.http import HttpLimits

    limits = HttpLimits(allowed_origins=("https://app.example.test",))
    bearer = {"authorization": f"Bearer {key.sign()}"}
    guarded = McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", limits=limits, auth=resource(key)))
    assert (await call(guarded, body=initialize_message(), headers=bearer)).status == 200  # no Origin: not a browser
    foreign = await call(guarded, body=initialize_message(), headers={**bearer, "origin": "https://evil.example"})
    assert foreign.status == 403
    listed = await call(guarded, body=initialize_message(), headers={**bearer, "origin": "https://app.example.test"})
    assert listed.status == 200
    # The resource's public name is a Host the server answers to (behind a proxy, say).
    public = await call(guarded, body=initialize_message(), headers={**bearer, "host": "mcp.example.test"})
    assert public.status == 200
    # Without tokens checked, the browser rule stays: an allowlist requires an Origin.
    strict = McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", limits=limits))
    refused = await call(strict, body=initialize_message())
    assert refused.status == 403 and "bearer tokens" in refused.json["error"]["message"]


async def test_binding_beyond_loopback_needs_auth_or_an_origin_allowlist(key: SigningKey) -> None:
    with pytest.raises(ValueError, match="auth="):
        await McpHttpServer.bind(whoami_server(), host="0.0.0.0")
    http = await McpHttpServer.bind(whoami_server(), host="0.0.0.0", settings=HttpSettings(auth=resource(key)))
    await http.close()


async def test_the_metadata_is_also_at_the_root_form_and_cacheable(app: McpHttpApp, key: SigningKey) -> None:
    root = await call(app, "GET", path="/.well-known/oauth-protected-resource")
    assert root.status == 200 and orjson.loads(root.body)["resource"] == RESOURCE
    assert root.headers["cache-control"] == "public, max-age=3600"
    unlisted = resource(key, root_metadata=False, resource_name="Who")
    only_path = McpHttpApp(whoami_server(), settings=HttpSettings(path="/mcp", auth=unlisted))
    assert (await call(only_path, "GET", path="/.well-known/oauth-protected-resource")).status == 404
    named = await call(only_path, "GET", path=METADATA_PATH)
    assert orjson.loads(named.body)["resource_name"] == "Who"


async def test_an_unauthenticated_request_allocates_no_session(app: McpHttpApp) -> None:
    for _ in range(50):
        assert (await call(app, body=initialize_message())).status == 401
    assert len(app.live_sessions) == 0 and await app.sessions.count() == 0


def test_scopes_that_are_not_scope_tokens_are_refused_at_registration(key: SigningKey) -> None:
    server = McpServer("bad scopes")
    with pytest.raises(ValueError, match="Tool 'spaced': not an OAuth scope"):
        server.add_tool(Tool("spaced", {"type": "object"}, lambda args, ctx: "", scopes=["files write"]))
    with pytest.raises(ValueError, match="not one string"):
        server.add_tool(Tool("stringy", {"type": "object"}, lambda args, ctx: "", scopes="files:write"))
    with pytest.raises(ValueError, match="not an OAuth scope"):
        resource(key, scopes_supported=['quote"d'])


async def test_the_2024_11_05_transport_is_guarded_too(app: McpHttpApp, key: SigningKey) -> None:
    alice, bob = {"authorization": f"Bearer {key.sign()}"}, {"authorization": f"Bearer {key.sign(sub='bob')}"}
    assert (await call(app, "GET", path="/sse")).status == 401
    assert (await call(app, "GET")).status == 401  # (the session-less GET of the endpoint)
    assert (await call(app, body=initialize_message(), path="/messages/")).status == 401
    mounted = Starlette(routes=[Mount("/api", app=app)])  # (its paths are then below /api)
    assert (await call(mounted, "GET", path="/api/sse")).status == 401
    stream = AsgiCall(app, "GET", headers=alice, path="/sse").start()
    await stream.wait_until(lambda: b"\n\n" in stream.body)
    endpoint = stream.body.split(b"data: ", 1)[1].split(b"\n", 1)[0]
    path, query = endpoint.decode().split("?")

    async def post(body: Any, headers: dict[str, str]) -> AsgiCall:
        posted = AsgiCall(app, "POST", body, headers, path=path)
        posted.scope["query_string"] = query.encode()
        return await posted.start().finish()

    assert (await post(initialize_message(), {})).status == 401
    assert (await post(initialize_message(), bob)).status == 404  # another principal's session
    assert (await post(initialize_message(), alice)).status == 202
    assert (await post(notification("notifications/initialized"), alice)).status == 202
    assert (await post(request(2, "tools/call", {"name": "whoami", "arguments": {}}), alice)).status == 202
    await stream.wait_until(lambda: b"alice" in stream.body)
    assert b"event: message\ndata: " in stream.body
    stream.disconnect()
    await stream.finish()
    assert not app.live_sessions
