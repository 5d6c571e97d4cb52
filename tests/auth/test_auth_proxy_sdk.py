"""The official Python MCP SDK's OAuth client (``mcp.client.auth.OAuthClientProvider``, mcp 2.3)
signs in through our OAuth proxy to a real OpenID provider (oidc-provider on loopback) and calls
a tool: discovery from our 401, RFC 8414 metadata naming us, dynamic registration, PKCE,
``resource``, our consent page, the IdP's sign-in, our callback and token endpoint."""

from __future__ import annotations

from typing import Any

import httpx2
import orjson
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from fixtures.auth_proxy import Browser, proxied_endpoint

REDIRECT = "http://127.0.0.1/callback"  # the SDK's callback; the browser stops at its Location


class MemoryStorage:
    """The SDK's ``TokenStorage``, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


async def test_the_sdk_client_signs_in_through_the_proxy_and_calls_a_tool() -> None:
    browser = Browser()
    answers: list[dict[str, str]] = []

    async def redirect(url: str) -> None:
        answers.append(await browser.walk(url, REDIRECT))

    async def callback() -> AuthorizationCodeResult:
        answer = answers.pop()
        assert "error" not in answer, answer
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    storage = MemoryStorage()
    async with proxied_endpoint() as proxied:
        metadata = OAuthClientMetadata(client_name="sdk through the proxy", redirect_uris=[AnyUrl(REDIRECT)])
        auth = OAuthClientProvider(proxied.resource, metadata, storage, redirect, callback)
        async with (
            httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(10.0, read=30.0)) as http,
            Client(streamable_http_client(proxied.resource, http_client=http), mode="legacy") as sdk,
        ):
            result = await sdk.call_tool("whoami", {})
    await browser.aclose()
    assert not result.is_error, result
    seen: dict[str, Any] = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    assert seen["subject"] == "oidc:alice" and seen["issuer"] == proxied.issuer
    assert seen["audience"] == [proxied.resource]
    assert storage.tokens is not None and storage.tokens.token_type.lower() == "bearer"
    assert browser.upstream_url is not None and browser.upstream_url.startswith(proxied.op.url)
