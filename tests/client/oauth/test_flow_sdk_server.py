"""Our OAuth client against the official Python SDK's protected server (``mcp`` ``MCPServer`` with
``auth=AuthSettings(...)`` and a ``token_verifier``), served by uvicorn on 127.0.0.1, with the test
authorization server issuing the tokens.

The SDK's resource server differs from ours in what it says: its 401 names no ``scope`` (the client
falls back to the protected-resource metadata's ``scopes_supported``, which the SDK fills from
``required_scopes``), it has no per-tool scopes, and its 403 ``insufficient_scope`` (a token lacking
one of ``required_scopes``) names no ``scope`` either.

Two ``TokenVerifier``s of the SDK's protocol, written here: ``JwksVerifier`` checks the test
authorization server's JWTs with PyJWT against its key set (fetched with httpx, so nothing blocks
the event loop the authorization server runs on), and ``IntrospectingVerifier`` asks the
authorization server (RFC 7662), so a revoked token is refused at once.

Also the legacy HTTP+SSE transport: our ``SseClient`` against the SDK's protected ``sse_app`` (our
own server serves Streamable HTTP only).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Literal

import httpx
import jwt
import orjson
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from fixtures.oauth_records import PRM_PATH, RecordingAuthorizationServer, Wire
from mcp_sse_server.client import McpClient, SseClient, StreamableHttpClient
from mcp_sse_server.client.oauth import HeadlessUserAgent, MemoryTokenStorage, OAuth, OAuthError, OAuthSettings
from mcp_sse_server.engine.jsonrpc import McpError

REDIRECT = "http://127.0.0.1:9/callback"
START_WAIT = 10.0


# --- token verifiers of the SDK's protocol ------------------------------------------------------------


class JwksVerifier:
    """The SDK's ``TokenVerifier``: a JWT of ``issuer`` for ``audience``, checked against the key set."""

    def __init__(self, auth_server: RecordingAuthorizationServer, audience: str) -> None:
        self.auth_server = auth_server
        self.audience = audience
        self.keys: dict[str, jwt.PyJWK] = {}
        self.refused: list[str] = []  # why each refused token was refused

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            kid = str(jwt.get_unverified_header(token).get("kid"))
            if kid not in self.keys:
                async with httpx.AsyncClient(timeout=5.0) as http:
                    reply = await http.get(self.auth_server.jwks_uri)
                self.keys = {key["kid"]: jwt.PyJWK(key) for key in reply.json()["keys"]}
            key = self.keys[kid]
            claims = jwt.decode(
                token, key, algorithms=[self.auth_server.alg], audience=self.audience, issuer=self.auth_server.issuer
            )
        except (jwt.PyJWTError, KeyError) as error:
            self.refused.append(type(error).__name__)
            return None
        return _access_token(token, claims)


class IntrospectingVerifier:
    """The SDK's ``TokenVerifier`` by RFC 7662 introspection at the test authorization server (no cache)."""

    def __init__(self, auth_server: RecordingAuthorizationServer, audience: str) -> None:
        self.auth_server = auth_server
        self.audience = audience
        self.credentials = auth_server.register_client()
        self.refused: list[str] = []

    async def verify_token(self, token: str) -> AccessToken | None:
        client_id, secret = self.credentials
        assert secret is not None
        async with httpx.AsyncClient(timeout=5.0) as http:
            reply = await http.post(
                self.auth_server.introspection_endpoint, data={"token": token}, auth=(client_id, secret)
            )
        answer = reply.json()
        if not answer.get("active"):
            self.refused.append("inactive")
            return None
        if answer.get("aud") != self.audience:
            self.refused.append("audience")
            return None
        return _access_token(token, answer)


def _access_token(token: str, claims: dict[str, Any]) -> AccessToken:
    return AccessToken(
        token=token,
        client_id=claims["client_id"],
        scopes=claims.get("scope", "").split(),
        expires_at=claims.get("exp"),
        resource=claims.get("aud"),
        subject=claims.get("sub"),
        claims=claims,
    )


# --- the SDK's protected server -------------------------------------------------------------------


def sdk_server(verifier: Any, issuer: str, resource: str, required_scopes: list[str]) -> MCPServer:
    server = MCPServer(
        "sdk-protected",
        token_verifier=verifier,
        # From a mapping, as the SDK's settings read strings: the issuer keeps its exact spelling.
        auth=AuthSettings.model_validate(
            {
                "issuer_url": issuer,
                "resource_server_url": resource,
                "required_scopes": required_scopes,
                "validate_token_resource": True,
            }
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Who the access token names."""
        token = get_access_token()
        if token is None:
            return "null"
        claims = token.claims or {}
        return orjson.dumps(
            {
                "subject": token.subject,
                "scopes": sorted(token.scopes),
                "client_id": token.client_id,
                "audience": token.resource,
                "jti": claims.get("jti"),
            }
        ).decode()

    return server


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers (the test process owns them)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def sdk_endpoint(
    auth_server: RecordingAuthorizationServer,
    *,
    verifier: Literal["jwks", "introspection"] = "jwks",
    required_scopes: tuple[str, ...] = ("mcp:tools",),
    transport: Literal["streamable-http", "sse"] = "streamable-http",
) -> AsyncIterator[tuple[str, JwksVerifier | IntrospectingVerifier]]:
    """The SDK's server, protected by ``auth_server``'s tokens, on a socket bound first (its URL is
    the resource); yields the endpoint URL (``/mcp``, or ``/sse`` for the legacy transport) and the verifier."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    endpoint = f"{base}/mcp" if transport == "streamable-http" else f"{base}/sse"
    check = (JwksVerifier if verifier == "jwks" else IntrospectingVerifier)(auth_server, endpoint)
    server = sdk_server(check, auth_server.issuer, endpoint, list(required_scopes))
    app = server.streamable_http_app() if transport == "streamable-http" else server.sse_app()
    config = uvicorn.Config(
        app, lifespan="on", log_config=None, access_log=False, ws="none", timeout_graceful_shutdown=1
    )
    runner = _Server(config)
    task = asyncio.create_task(runner.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(START_WAIT):
            while not runner.started:
                if task.done():
                    task.result()
                    raise RuntimeError("the SDK server stopped while starting")
                await asyncio.sleep(0.005)
        yield endpoint, check
    finally:
        runner.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), 5.0)
        except TimeoutError:
            runner.force_exit = True
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        sock.close()


def oauth(
    http: httpx.AsyncClient,
    *,
    settings: OAuthSettings | None = None,
    clock: Callable[[], float] = time.time,
) -> OAuth:
    return OAuth(
        settings or OAuthSettings(client_name="sdk server test"),
        storage=MemoryTokenStorage(),
        user_agent=HeadlessUserAgent(REDIRECT, http=http),
        clock=clock,
    )


async def whoami(client: McpClient) -> dict[str, Any]:
    result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    seen: dict[str, Any] = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    return seen


def endpoint_statuses(wire: Wire, endpoint: str) -> list[int | None]:
    """The statuses of the MCP requests (to the endpoint, or the legacy transport's message URL)."""
    messages = endpoint.rsplit("/", 1)[0] + "/messages/"
    return [sent.status for sent in wire.sent if sent.url == endpoint or sent.url.startswith(messages)]


# --- login ------------------------------------------------------------------------------------------


async def test_login_against_the_sdk_server_and_its_tool_sees_the_token() -> None:
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        sdk_endpoint(auth_server) as (endpoint, _),
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            assert [tool.name for tool in await client.list_tools()] == ["whoami"]
            seen = await whoami(client)
        assert auth.tokens is not None
        token = auth.tokens.access_token

    assert seen == {
        "subject": "alice",
        "scopes": ["mcp:tools"],
        "client_id": seen["client_id"],
        "audience": endpoint,
        "jti": seen["jti"],
    }
    assert auth_server.clients[seen["client_id"]].dynamic
    assert auth_server.requests == [
        ("GET", "/.well-known/oauth-authorization-server"),
        ("POST", "/register"),
        ("GET", "/authorize"),
        ("POST", "/token"),
        ("GET", "/jwks"),
    ]
    [authorize] = auth_server.of("GET", "/authorize")
    query = authorize.params()
    # The SDK's 401 names no scope: the metadata's scopes_supported (its required_scopes) is asked for.
    assert query["scope"] == "mcp:tools" and query["resource"] == endpoint
    assert query["code_challenge_method"] == "S256"
    assert auth_server.of("POST", "/token")[0].params()["resource"] == endpoint
    # The SDK's metadata names the issuer exactly as the authorization server spells it (no added "/").
    base = endpoint.removesuffix("/mcp")
    assert [sent.url for sent in wire.sent[:3]] == [endpoint, base + PRM_PATH, auth_server.metadata_url]
    for entry in auth_server.seen:
        assert entry.authorization is None and token not in entry.query and token.encode() not in entry.body
    for sent in wire.sent:
        assert (sent.authorization is not None) == (sent.url == endpoint and sent is not wire.sent[0]), sent


# --- refresh ------------------------------------------------------------------------------------------


async def test_the_client_refreshes_ahead_of_expiry_against_the_sdk_server() -> None:
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer(token_ttl=2) as auth_server,
        sdk_endpoint(auth_server) as (endpoint, _),
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            before = await whoami(client)
            await asyncio.sleep(2.5)
            after = await whoami(client)

    assert after["jti"] != before["jti"] and after["client_id"] == before["client_id"]
    assert auth_server.count("GET", "/authorize") == 1
    grants = [grant for grant, _ in auth_server.grants]
    assert grants[0] == "authorization_code" and grants[1:] and set(grants[1:]) == {"refresh_token"}
    assert [status for status in endpoint_statuses(wire, endpoint) if status != 200] == [401]


async def test_the_client_refreshes_when_the_sdk_server_refuses_an_expired_token() -> None:
    """The client's clock lags the servers' by two minutes: it sends a token the SDK finds expired."""
    wire = Wire()
    lag = [0.0]
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer(token_ttl=2) as auth_server,
        sdk_endpoint(auth_server) as (endpoint, verifier),
        wire.client() as http,
    ):
        auth = oauth(http, clock=lambda: time.time() - lag[0])
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            before = await whoami(client)
            lag[0] = 120.0
            await asyncio.sleep(2.5)
            granted = len(auth_server.grants)
            after = await whoami(client)

    assert "ExpiredSignatureError" in verifier.refused
    assert after["jti"] != before["jti"]
    assert [grant for grant, _ in auth_server.grants[granted:]] == ["refresh_token"]
    assert auth_server.count("GET", "/authorize") == 1
    assert endpoint_statuses(wire, endpoint).count(401) == 2  # the first, tokenless request and the expired one


# --- revoked tokens ------------------------------------------------------------------------------------


async def test_a_revoked_token_at_the_sdk_server_is_refreshed_then_a_revoked_grant_authorized_once() -> None:
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        sdk_endpoint(auth_server, verifier="introspection") as (endpoint, verifier),
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            first = await whoami(client)
            assert auth.tokens is not None
            auth_server.revoke(auth.tokens.access_token)
            second = await whoami(client)
            assert auth_server.count("GET", "/authorize") == 1
            assert auth.tokens is not None and auth.tokens.refresh_token is not None
            auth_server.revoke(auth.tokens.access_token)
            auth_server.revoke(auth.tokens.refresh_token)
            third = await whoami(client)

    assert verifier.refused == ["inactive", "inactive"]
    assert len({first["jti"], second["jti"], third["jti"]}) == 3
    assert auth_server.count("GET", "/authorize") == 2
    assert [grant for grant, _ in auth_server.grants] == ["authorization_code", "refresh_token", "authorization_code"]
    assert endpoint_statuses(wire, endpoint).count(401) == 3


# --- 403: the SDK's required scopes ------------------------------------------------------------------


async def test_the_sdk_servers_403_insufficient_scope_is_stepped_up_to_its_required_scopes() -> None:
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        sdk_endpoint(auth_server, required_scopes=("mcp:tools", "mcp:admin")) as (endpoint, _),
        Wire().client() as http,
    ):
        auth = oauth(http, settings=OAuthSettings(scope="mcp:tools"))  # asks for less than the server needs
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            seen = await whoami(client)

    assert seen["scopes"] == ["mcp:admin", "mcp:tools"]
    authorizations = auth_server.of("GET", "/authorize")
    assert len(authorizations) == 2
    assert set(authorizations[1].params()["scope"].split()) == {"mcp:admin", "mcp:tools"}


async def test_the_sdk_servers_403_insufficient_scope_ends_within_bounded_authorizations() -> None:
    """Whether or not the client can step up against a 403 naming no scope, it never loops."""
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        sdk_endpoint(auth_server, required_scopes=("mcp:tools", "mcp:admin")) as (endpoint, _),
        wire.client() as http,
    ):
        auth = oauth(http, settings=OAuthSettings(scope="mcp:tools"))
        outcomes: list[str] = []
        for _ in range(3):
            try:
                async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
                    await whoami(client)
                outcomes.append("ok")
            except (OAuthError, McpError) as error:
                outcomes.append(type(error).__name__)

    assert auth_server.count("GET", "/authorize") <= 1 + OAuthSettings().max_step_ups
    assert outcomes[-1] in ("ok", "OAuthError")
    assert endpoint_statuses(wire, endpoint).count(403) <= 6


# --- the legacy HTTP+SSE transport ------------------------------------------------------------------------


async def test_the_legacy_sse_client_logs_in_to_the_sdks_protected_sse_server() -> None:
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        sdk_endpoint(auth_server, transport="sse") as (endpoint, _),
        wire.client() as http,
    ):
        auth = oauth(http)
        async with SseClient(endpoint, auth=auth, http_client=http) as client:
            assert [tool.name for tool in await client.list_tools()] == ["whoami"]
            seen = await whoami(client)
        assert auth.tokens is not None
        token = auth.tokens.access_token

    assert seen["subject"] == "alice" and seen["audience"] == endpoint and seen["scopes"] == ["mcp:tools"]
    assert auth_server.count("GET", "/authorize") == 1
    assert auth_server.of("GET", "/authorize")[0].params()["resource"] == endpoint
    base = endpoint.removesuffix("/sse")
    assert [(sent.method, sent.url, sent.status) for sent in wire.sent[:2]] == [
        ("GET", endpoint, 401),
        ("GET", base + "/.well-known/oauth-protected-resource/sse", 200),
    ]
    messages = [sent for sent in wire.sent if sent.url.startswith(base + "/messages/")]
    assert messages and all(sent.authorization == f"Bearer {token}" for sent in messages)
    for sent in wire.sent:
        if not sent.url.startswith((endpoint, base + "/messages/")):
            assert sent.authorization is None, sent
    for entry in auth_server.seen:
        assert entry.authorization is None and token.encode() not in entry.body
