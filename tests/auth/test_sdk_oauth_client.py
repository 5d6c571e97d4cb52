"""The official Python MCP SDK's OAuth client (``mcp.client.auth.OAuthClientProvider``) against
this project's protected endpoint and the test authorization server, all over loopback HTTP.

What a real deployment does, end to end: the SDK is refused (401 with ``resource_metadata``),
reads our protected-resource metadata (RFC 9728), discovers the authorization server (RFC 8414),
registers itself (RFC 7591), runs the authorization-code grant with PKCE and ``resource``
(RFC 8707), and retries with the token, which our ``JwtVerifier`` checks against the server's
published keys; the tool then sees who called through ``context.auth``. Then the SDK's refresh of
an expired token, and its recovery from a stored token our server refuses (another audience).

No browser: ``Browser`` follows the authorization URL with an HTTP client and reads the code
and state from the redirect, which is what a user's browser would deliver to the SDK's callback.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import mcp.types as t
import orjson
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from fixtures.authorization_server import AuthorizationServer
from fixtures.protected import protected_endpoint

REDIRECT = "http://127.0.0.1/callback"  # the SDK's callback; the browser stand-in never calls it
AS_METADATA = "/.well-known/oauth-authorization-server"
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"


class MemoryStorage:
    """The SDK's ``TokenStorage``, in memory; ``saved`` keeps every token set it was given."""

    def __init__(self, tokens: OAuthToken | None = None) -> None:
        self.tokens = tokens
        self.client_info: OAuthClientInformationFull | None = None
        self.saved: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.saved.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """The user's browser and the SDK's callback in one: ``redirect`` visits the authorization URL
    (the server approves at once and redirects), ``callback`` hands back what the redirect carried."""

    def __init__(self) -> None:
        self.visited: list[str] = []
        self._answer: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        self.visited.append(authorization_url)
        async with httpx.AsyncClient(timeout=10.0) as http:
            reply = await http.get(authorization_url, follow_redirects=False)
        assert reply.status_code == 302, reply.text
        location = reply.headers["location"]
        assert location.startswith(REDIRECT + "?"), location
        answer = {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}
        assert "error" not in answer, answer
        self._answer = AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    async def callback(self) -> AuthorizationCodeResult:
        answer, self._answer = self._answer, None
        assert answer is not None, "the callback came before the redirect"
        return answer


class Wire:
    """Every response the SDK's HTTP client got (an httpx2 response hook; the auth flow's own
    requests included): (method, URL without query, status, WWW-Authenticate)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int, str | None]] = []

    async def hook(self, response: httpx2.Response) -> None:
        url = response.request.url.copy_with(query=None)
        self.seen.append(
            (response.request.method, str(url), response.status_code, response.headers.get("www-authenticate"))
        )


def provider(endpoint: str, storage: MemoryStorage, browser: Browser) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(client_name="sdk oauth test", redirect_uris=[AnyUrl(REDIRECT)])
    return OAuthClientProvider(endpoint, metadata, storage, browser.redirect, browser.callback)


@contextlib.asynccontextmanager
async def sdk_client(endpoint: str, auth: OAuthClientProvider, wire: Wire) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(
            auth=auth, timeout=httpx2.Timeout(10.0, read=30.0), event_hooks={"response": [wire.hook]}
        ) as http,
        Client(streamable_http_client(endpoint, http_client=http), mode="legacy") as sdk,
    ):
        yield sdk


async def whoami(sdk: Client) -> dict[str, Any]:
    result = await sdk.call_tool("whoami", {})
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, t.TextContent)
    seen: dict[str, Any] = orjson.loads(block.text)
    return seen


async def test_the_sdk_completes_the_whole_flow_and_the_tool_sees_its_token() -> None:
    storage, browser, wire = MemoryStorage(), Browser(), Wire()
    async with (
        asyncio.timeout(30),
        AuthorizationServer() as auth_server,
        protected_endpoint(auth_server) as endpoint,
        sdk_client(endpoint, provider(endpoint, storage, browser), wire) as sdk,
    ):
        assert sdk.server_info is not None and sdk.server_info.name == "protected"  # initialize went through
        tools = await sdk.list_tools()
        assert [tool.name for tool in tools.tools] == ["whoami"]  # not deploy: the token lacks mcp:admin
        seen = await whoami(sdk)

    assert storage.client_info is not None and storage.tokens is not None
    client_id = storage.client_info.client_id
    registered = auth_server.clients[client_id]
    assert registered.dynamic and registered.redirect_uris == (REDIRECT,)
    assert seen == {
        "subject": "alice",
        "scopes": ["mcp:tools"],  # what our 401 challenged for (scope="mcp:tools")
        "client_id": client_id,
        "issuer": auth_server.issuer,
        "audience": [endpoint],
        "jti": seen["jti"],
    }
    assert storage.tokens.scope == "mcp:tools" and storage.tokens.refresh_token

    # The authorization request: PKCE S256, the resource indicator our metadata named, our scope.
    assert len(browser.visited) == 1
    query = parse_qs(urlsplit(browser.visited[0]).query)
    assert query["resource"] == [endpoint] and query["code_challenge_method"] == ["S256"]
    assert query["scope"] == ["mcp:tools"] and query["client_id"] == [client_id]

    # Discovery started at our endpoint's challenge and its protected-resource metadata...
    base = endpoint.removesuffix("/mcp")
    first = wire.seen[0]
    assert first[:3] == ("POST", endpoint, 401)
    assert first[3] == f'Bearer scope="mcp:tools", resource_metadata="{base}{PRM_PATH}"'
    assert wire.seen[1][:3] == ("GET", base + PRM_PATH, 200)
    # ...then went to the authorization server it named, in the order the flow takes.
    assert auth_server.requests[:4] == [
        ("GET", AS_METADATA),
        ("POST", "/register"),
        ("GET", "/authorize"),
        ("POST", "/token"),
    ]
    assert set(auth_server.requests[4:]) == {("GET", "/jwks")}  # our verifier fetching the keys
    assert auth_server.grants == [("authorization_code", "client_secret_basic")]
    assert wire.seen[2][:3] == ("GET", auth_server.metadata_url, 200)
    assert wire.seen[5][:3] == ("POST", endpoint, 200)  # the initialize, retried with the token
    assert all(status < 400 for _, _, status, _ in wire.seen[1:])


async def test_the_sdk_refreshes_an_expired_token_within_the_session() -> None:
    storage, browser, wire = MemoryStorage(), Browser(), Wire()
    async with (
        asyncio.timeout(30),
        AuthorizationServer(token_ttl=2) as auth_server,
        protected_endpoint(auth_server) as endpoint,
        sdk_client(endpoint, provider(endpoint, storage, browser), wire) as sdk,
    ):
        before = await whoami(sdk)
        assert storage.tokens is not None
        first_refresh = storage.tokens.refresh_token
        await asyncio.sleep(2.2)  # the token's expires_in has passed, as the SDK counts
        after = await whoami(sdk)

    # A refresh, not a second authorization: the browser was needed once.
    assert len(browser.visited) == 1
    grants = [grant for grant, _ in auth_server.grants]
    assert grants[0] == "authorization_code" and grants[1:] and set(grants[1:]) == {"refresh_token"}
    assert {method for _, method in auth_server.grants} == {"client_secret_basic"}
    assert after["jti"] != before["jti"]
    assert {key: value for key, value in after.items() if key != "jti"} == {
        key: value for key, value in before.items() if key != "jti"
    }
    assert storage.tokens.refresh_token not in (None, first_refresh)  # rotated, and the SDK kept the new one
    # Every request of the session was answered: the refresh came before the token ran out.
    assert [status for method, url, status, _ in wire.seen if url == endpoint and status >= 400] == [401]
    assert auth_server.requests.count(("GET", "/authorize")) == 1


async def test_a_stored_token_for_another_audience_is_refused_and_the_sdk_authorizes_again() -> None:
    wire, browser = Wire(), Browser()
    async with asyncio.timeout(30), AuthorizationServer() as auth_server, protected_endpoint(auth_server) as endpoint:
        foreign = auth_server.issue(audience="https://other.example/mcp", scopes=("mcp:tools",))
        storage = MemoryStorage(OAuthToken(access_token=foreign, expires_in=3600))
        async with sdk_client(endpoint, provider(endpoint, storage, browser), wire) as sdk:
            seen = await whoami(sdk)

    method, url, status, challenge = wire.seen[0]
    assert (method, url, status) == ("POST", endpoint, 401)
    assert challenge is not None and 'error="invalid_token", error_description="audience"' in challenge
    assert storage.client_info is not None and storage.tokens is not None
    assert storage.tokens.access_token != foreign
    assert seen["audience"] == [endpoint] and seen["client_id"] == storage.client_info.client_id != "test-client"
    assert len(browser.visited) == 1
    # Our verifier fetched the keys to judge the foreign token; the SDK then ran the whole flow.
    assert [request for request in auth_server.requests if request != ("GET", "/jwks")] == [
        ("GET", AS_METADATA),
        ("POST", "/register"),
        ("GET", "/authorize"),
        ("POST", "/token"),
    ]


async def test_a_tool_needing_more_scope_is_403_and_the_sdk_steps_up() -> None:
    storage, browser, wire = MemoryStorage(), Browser(), Wire()
    async with (
        asyncio.timeout(30),
        AuthorizationServer() as auth_server,
        protected_endpoint(auth_server) as endpoint,
        sdk_client(endpoint, provider(endpoint, storage, browser), wire) as sdk,
    ):
        await whoami(sdk)
        result = await sdk.call_tool("deploy", {"service": "db"})
        tools = await sdk.list_tools()

    block = result.content[0]
    assert isinstance(block, t.TextContent) and block.text == "deployed db with mcp:admin mcp:tools"
    assert [tool.name for tool in tools.tools] == ["whoami", "deploy"]  # the new token may call it
    refused = [challenge for method, url, status, challenge in wire.seen if status == 403]
    metadata = endpoint.removesuffix("/mcp") + PRM_PATH
    assert refused == [
        f'Bearer error="insufficient_scope", scope="mcp:admin mcp:tools", resource_metadata="{metadata}"'
    ]
    # The second authorization asked for both scopes: the one the call needs and the one held.
    assert len(browser.visited) == 2
    assert set(parse_qs(urlsplit(browser.visited[1]).query)["scope"][0].split()) == {"mcp:admin", "mcp:tools"}
    assert storage.tokens is not None and set((storage.tokens.scope or "").split()) == {"mcp:admin", "mcp:tools"}
