"""Our OAuth client (``client.oauth.OAuth``) against our protected MCP endpoint and the test
authorization server, all on real loopback sockets.

What a deployment does end to end: the client is refused (401), reads the protected-resource
metadata, discovers the authorization server, registers, authorizes with PKCE and ``resource``,
and the tool then sees the caller through ``context.auth``; then refreshes, step-ups (granted and
refused), a revoked or foreign token, and tokens kept in a file across client instances.

Records kept to judge what went where: ``RecordingAuthorizationServer.seen`` (every request the
authorization server got, with its query, ``Authorization`` header and body) and ``Wire`` (every
request our client's ``httpx.AsyncClient`` sent, the auth flow's own ones included, with the
``Authorization`` header and the status it got).

Not here: the legacy HTTP+SSE transport (``SseClient``). Our server does not serve it
(``mcp_sse_server.transport.http`` is Streamable HTTP only), so it is tested against the official
SDK's server in ``test_flow_sdk_server.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from fixtures.oauth_records import PRM_PATH, RecordingAuthorizationServer, Wire
from fixtures.protected import protected_endpoint as protected
from mcp_sse_server.client import McpClient, StreamableHttpClient
from mcp_sse_server.client.oauth import (
    FileTokenStorage,
    HeadlessUserAgent,
    MemoryTokenStorage,
    OAuth,
    OAuthError,
    OAuthSettings,
    Tokens,
    TokenStorage,
)
from mcp_sse_server.engine.jsonrpc import McpError

REDIRECT = "http://127.0.0.1:9/callback"  # never served: HeadlessUserAgent reads the Location
AS_METADATA = "/.well-known/oauth-authorization-server"
LOGIN = [("GET", AS_METADATA), ("POST", "/register"), ("GET", "/authorize"), ("POST", "/token")]


def oauth(
    http: httpx.AsyncClient,
    storage: TokenStorage | None = None,
    *,
    settings: OAuthSettings | None = None,
    clock: Callable[[], float] = time.time,
) -> OAuth:
    return OAuth(
        settings or OAuthSettings(client_name="flow test"),
        storage=storage if storage is not None else MemoryTokenStorage(),
        user_agent=HeadlessUserAgent(REDIRECT, http=http),
        clock=clock,
    )


async def whoami(client: McpClient) -> dict[str, Any]:
    result = await client.call_tool("whoami", {})
    assert not result.is_error, result
    text = result.content[0].text  # type: ignore[union-attr]
    seen: dict[str, Any] = orjson.loads(text)
    return seen


def bearer_of(auth: OAuth) -> str:
    assert auth.tokens is not None
    return auth.tokens.access_token


# --- 1. login -------------------------------------------------------------------------------------


async def test_login_discovers_registers_authorizes_with_pkce_and_resource_and_the_tool_sees_the_subject() -> None:
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server) as endpoint,
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            tools = [tool.name for tool in await client.list_tools()]
            seen = await whoami(client)
        token = bearer_of(auth)

    assert tools == ["whoami"]  # not deploy: the token lacks mcp:admin
    client_id = seen["client_id"]
    registered = auth_server.clients[client_id]
    assert registered.dynamic and registered.redirect_uris == (REDIRECT,)
    assert registered.info["application_type"] == "native"
    assert registered.info["grant_types"] == ["authorization_code", "refresh_token"]
    assert seen == {
        "subject": "alice",
        "scopes": ["mcp:tools"],
        "client_id": client_id,
        "issuer": auth_server.issuer,
        "audience": [endpoint],
        "jti": seen["jti"],
    }

    # The authorization server, in the flow's order: metadata, registration, authorize, token.
    assert auth_server.flow() == LOGIN
    [authorize] = auth_server.of("GET", "/authorize")
    query = authorize.params()
    assert query["response_type"] == "code" and query["client_id"] == client_id
    assert query["redirect_uri"] == REDIRECT and query["resource"] == endpoint
    assert query["scope"] == "mcp:tools"  # what the 401 challenged for
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 32
    [token_request] = auth_server.of("POST", "/token")
    form = token_request.params()
    assert form["grant_type"] == "authorization_code" and form["resource"] == endpoint
    assert form["redirect_uri"] == REDIRECT and form["client_id"] == client_id
    assert 43 <= len(form["code_verifier"]) <= 128 and form["code"]
    assert auth_server.grants == [("authorization_code", "none")]  # a public client: DCR asked for none

    # The token went to the MCP endpoint only: never to the authorization server, nor the metadata.
    for entry in auth_server.seen:
        assert entry.authorization is None, entry
        assert token not in entry.query and token.encode() not in entry.body
    base = endpoint.removesuffix("/mcp")
    assert [sent.url for sent in wire.sent[:2]] == [endpoint, base + PRM_PATH]
    assert wire.sent[0].authorization is None and wire.sent[0].status == 401
    for sent in wire.sent:
        if sent.url == endpoint and sent is not wire.sent[0]:
            assert sent.authorization == f"Bearer {token}", sent
        elif sent.url != endpoint:
            assert sent.authorization is None, sent
    assert {sent.url for sent in wire.sent if sent.url != endpoint} == {
        base + PRM_PATH,
        auth_server.metadata_url,
        auth_server.registration_endpoint,
        auth_server.authorization_endpoint,
        auth_server.token_endpoint,
    }
    assert [sent.status for sent in wire.to(endpoint)][1:] == [200] * (len(wire.to(endpoint)) - 1)


# --- 2. refresh -----------------------------------------------------------------------------------


async def test_a_short_lived_token_is_refreshed_ahead_of_expiry_without_a_second_authorization() -> None:
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer(token_ttl=2) as auth_server,
        protected(auth_server) as endpoint,
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            before = await whoami(client)
            assert auth.tokens is not None
            first_refresh_token = auth.tokens.refresh_token
            await asyncio.sleep(2.5)  # the first token has expired, as the server counts (no leeway)
            after = await whoami(client)
            assert auth.tokens is not None

    assert auth_server.count("GET", "/authorize") == 1
    grants = [grant for grant, _ in auth_server.grants]
    assert grants[0] == "authorization_code" and grants[1:] and set(grants[1:]) == {"refresh_token"}
    assert after["jti"] != before["jti"] and after["subject"] == "alice" and after["audience"] == [endpoint]
    assert auth.tokens.refresh_token not in (None, first_refresh_token)  # rotated, and the new one kept
    # The refresh came before the token ran out: the endpoint refused only the first, tokenless request.
    assert [sent.status for sent in wire.to(endpoint) if sent.status != 200] == [401]
    for refresh in auth_server.of("POST", "/token")[1:]:
        form = refresh.params()
        assert form["grant_type"] == "refresh_token" and form["resource"] == endpoint
        assert refresh.authorization is None  # a public client: its client_id in the form, no bearer
        assert form["client_id"] == before["client_id"]


async def test_a_token_the_server_finds_expired_is_refreshed_on_its_401() -> None:
    """The client's clock runs two minutes behind the servers': it believes its 2-second token good,
    the endpoint refuses it (401 invalid_token), and the client refreshes once and retries."""
    wire = Wire()
    lag = [0.0]
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer(token_ttl=2) as auth_server,
        protected(auth_server) as endpoint,
        wire.client() as http,
    ):
        auth = oauth(http, clock=lambda: time.time() - lag[0])
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            before = await whoami(client)
            lag[0] = 120.0
            await asyncio.sleep(2.5)
            refused_at, granted = len(wire.sent), len(auth_server.grants)
            after = await whoami(client)

    assert auth_server.count("GET", "/authorize") == 1
    assert [grant for grant, _ in auth_server.grants[granted:]] == ["refresh_token"]
    assert after["jti"] != before["jti"]
    tail = [(sent.method, sent.url, sent.status) for sent in wire.sent[refused_at:]]
    assert tail == [
        ("POST", endpoint, 401),  # the expired token
        ("GET", endpoint.removesuffix("/mcp") + PRM_PATH, 200),  # discovery again (CL-28)
        ("GET", auth_server.metadata_url, 200),
        ("POST", auth_server.token_endpoint, 200),  # the refresh
        ("POST", endpoint, 200),  # the retry
    ]


# --- 3. step-up -----------------------------------------------------------------------------------


async def test_a_tool_needing_more_scope_gets_403_and_the_client_steps_up_to_the_union() -> None:
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server) as endpoint,
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            await whoami(client)
            result = await client.call_tool("deploy", {"service": "db"})
            tools = [tool.name for tool in await client.list_tools()]
            seen = await whoami(client)

    assert not result.is_error and result.content[0].text == "deployed db with mcp:admin mcp:tools"  # type: ignore[union-attr]
    assert tools == ["whoami", "deploy"]
    assert seen["scopes"] == ["mcp:admin", "mcp:tools"]
    assert [sent.status for sent in wire.to(endpoint)].count(403) == 1
    authorizations = auth_server.of("GET", "/authorize")
    assert len(authorizations) == 2
    first, second = (entry.params() for entry in authorizations)
    assert first["scope"] == "mcp:tools"
    assert set(second["scope"].split()) == {"mcp:admin", "mcp:tools"}  # the union, not the challenge alone
    assert second["resource"] == endpoint and second["state"] != first["state"]
    assert second["code_challenge"] != first["code_challenge"]  # a fresh PKCE pair
    assert auth_server.count("POST", "/register") == 1  # the registration is reused


class DownScopingAuthorizationServer(RecordingAuthorizationServer):
    """An authorization server whose user grants only ``mcp:tools``, whatever is asked (the grant
    says so in its ``scope``): a step-up for ``mcp:admin`` never gets it."""

    def _requested_scopes(self, requested: str | None, client: Any) -> tuple[str, ...]:
        return tuple(scope for scope in super()._requested_scopes(requested, client) if scope != "mcp:admin")


async def test_a_step_up_the_authorization_server_refuses_ends_in_a_clear_error_after_bounded_authorizations() -> None:
    """The authorization server does not offer mcp:admin at all (invalid_scope at /authorize)."""
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer(scopes_supported=("mcp:tools",)) as auth_server,
        protected(auth_server) as endpoint,
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            await whoami(client)
            failures: list[BaseException] = []
            for _ in range(6):
                with pytest.raises((OAuthError, McpError)) as caught:
                    await client.call_tool("deploy", {"service": "db"})
                failures.append(caught.value)
            still = await whoami(client)  # the session still works with the token it had

    assert isinstance(failures[0], OAuthError) and "invalid_scope" in str(failures[0])
    # A refused step-up keeps the token held before; once max_step_ups (2) re-authorizations for
    # tools/call were refused, the client asks no more and says so.
    assert [type(failure).__name__ for failure in failures] == ["OAuthError"] * 6
    assert "re-authorizations" in str(failures[-1]) and "mcp:admin" in str(failures[-1])
    assert auth_server.count("GET", "/authorize") == 3  # 1 login + 2 refused step-ups
    assert auth_server.count("POST", "/token") == 1
    assert still["scopes"] == ["mcp:tools"] and still["subject"] == "alice"


async def test_a_step_up_the_user_declines_ends_in_a_clear_error() -> None:
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server) as endpoint,
        Wire().client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            await whoami(client)
            auth_server.auto_approve_scopes = False  # from now on the user says no
            with pytest.raises(OAuthError, match="access_denied"):
                await client.call_tool("deploy", {"service": "db"})
            assert (await whoami(client))["scopes"] == ["mcp:tools"]

    assert auth_server.count("GET", "/authorize") == 2


async def test_a_step_up_granted_less_than_asked_gives_up_after_max_step_ups() -> None:
    """The authorization server answers each step-up with a token that still lacks mcp:admin."""
    wire = Wire()
    async with (
        asyncio.timeout(30),
        DownScopingAuthorizationServer() as auth_server,
        protected(auth_server) as endpoint,
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            await whoami(client)
            failures: list[BaseException] = []
            for _ in range(4):
                with pytest.raises((OAuthError, McpError)) as caught:
                    await client.call_tool("deploy", {"service": "db"})
                failures.append(caught.value)
            assert (await whoami(client))["scopes"] == ["mcp:tools"]

    # Each step-up's token still lacks mcp:admin: that call ends with the server's 403; after
    # max_step_ups (2) the client stops asking and says why.
    assert [type(failure).__name__ for failure in failures] == ["McpError"] * 2 + ["OAuthError"] * 2
    assert "mcp:admin" in str(failures[0])
    assert "after 2 re-authorizations" in str(failures[-1])
    assert auth_server.count("GET", "/authorize") == 3  # 1 login + 2 step-ups, then no more
    assert auth_server.count("POST", "/token") == 3
    assert [sent.status for sent in wire.to(endpoint)].count(403) == 6  # 2 per step-up, then 1 per call


# --- 4. a refused token ---------------------------------------------------------------------------


async def test_a_revoked_access_token_is_refreshed_and_a_revoked_grant_authorized_again_once() -> None:
    wire = Wire()
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server, introspection=True) as endpoint,
        wire.client() as http,
    ):
        auth = oauth(http)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            first = await whoami(client)
            auth_server.revoke(bearer_of(auth))  # the access token only: the refresh token still works
            second = await whoami(client)
            assert auth_server.count("GET", "/authorize") == 1
            assert auth.tokens is not None and auth.tokens.refresh_token is not None
            auth_server.revoke(bearer_of(auth))
            auth_server.revoke(auth.tokens.refresh_token)  # the whole grant: a new authorization
            third = await whoami(client)

    assert len({first["jti"], second["jti"], third["jti"]}) == 3
    assert auth_server.count("GET", "/authorize") == 2  # once more, not a loop
    assert [grant for grant, _ in auth_server.grants] == ["authorization_code", "refresh_token", "authorization_code"]
    assert auth_server.count("POST", "/token") == 4  # the refused refresh included
    assert auth_server.count("POST", "/register") == 1
    assert [sent.status for sent in wire.to(endpoint)].count(401) == 3


async def test_a_stored_token_for_another_audience_is_refused_and_the_client_authorizes_once() -> None:
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server) as endpoint,
        Wire().client() as http,
    ):
        foreign = auth_server.issue(audience="https://other.example/mcp", scopes=("mcp:tools",))
        storage = MemoryTokenStorage()
        stored = Tokens(foreign, expires_at=time.time() + 3600, scope="mcp:tools", issuer=auth_server.issuer)
        await storage.save_tokens(dataclasses.replace(stored, resource=endpoint))
        auth = oauth(http, storage)
        async with StreamableHttpClient(endpoint, auth=auth, http_client=http) as client:
            seen = await whoami(client)

    assert seen["audience"] == [endpoint] and bearer_of(auth) != foreign
    assert auth_server.count("GET", "/authorize") == 1


# --- 5. persistence -------------------------------------------------------------------------------


async def test_tokens_in_a_file_serve_a_new_client_without_authorizing_again(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server) as endpoint,
        Wire().client() as http,
    ):
        first_auth = oauth(http, FileTokenStorage(path))
        async with StreamableHttpClient(endpoint, auth=first_auth, http_client=http) as client:
            first = await whoami(client)
        await first_auth.aclose()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert bearer_of(first_auth).encode() in path.read_bytes()
        logged_in = len(auth_server.requests)

        # A new process, as far as the client can tell: a new OAuth, a new storage object, the same file.
        second_auth = oauth(http, FileTokenStorage(path))
        async with StreamableHttpClient(endpoint, auth=second_auth, http_client=http) as client:
            second = await whoami(client)

    assert second["jti"] == first["jti"]  # the very token the first client got
    assert second["client_id"] == first["client_id"]
    assert auth_server.count("GET", "/authorize") == 1 and auth_server.count("POST", "/register") == 1
    assert auth_server.count("POST", "/token") == 1
    assert [request for request in auth_server.requests[logged_in:] if request != ("GET", "/jwks")] == [
        ("GET", AS_METADATA)  # discovery, to know which issuer's token to take from the file
    ]


async def test_an_expired_token_in_a_file_is_refreshed_by_a_new_client(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer(token_ttl=2) as auth_server,
        protected(auth_server) as endpoint,
        Wire().client() as http,
    ):
        first_auth = oauth(http, FileTokenStorage(path))
        async with StreamableHttpClient(endpoint, auth=first_auth, http_client=http) as client:
            first = await whoami(client)
        await asyncio.sleep(2.5)
        second_auth = oauth(http, FileTokenStorage(path))
        async with StreamableHttpClient(endpoint, auth=second_auth, http_client=http) as client:
            second = await whoami(client)

    assert second["jti"] != first["jti"] and second["client_id"] == first["client_id"]
    assert auth_server.count("GET", "/authorize") == 1 and auth_server.count("POST", "/register") == 1
    assert {grant for grant, _ in auth_server.grants[1:]} == {"refresh_token"}


async def test_a_revoked_token_in_a_file_makes_a_new_client_recover_once(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    async with (
        asyncio.timeout(30),
        RecordingAuthorizationServer() as auth_server,
        protected(auth_server, introspection=True) as endpoint,
        Wire().client() as http,
    ):
        first_auth = oauth(http, FileTokenStorage(path))
        async with StreamableHttpClient(endpoint, auth=first_auth, http_client=http) as client:
            first = await whoami(client)
        auth_server.revoke(bearer_of(first_auth))
        second_auth = oauth(http, FileTokenStorage(path))
        async with StreamableHttpClient(endpoint, auth=second_auth, http_client=http) as client:
            second = await whoami(client)

    assert second["jti"] != first["jti"]
    assert auth_server.count("GET", "/authorize") == 1  # the refresh token in the file was enough
