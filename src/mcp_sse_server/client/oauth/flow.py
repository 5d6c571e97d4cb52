"""``OAuth``: the ``httpx.Auth`` that gets, keeps and sends a token for an MCP server.

The flow is an httpx auth flow: a generator that yields the requests to send and
receives their responses, so it runs over whatever transport the client has (a
real network, or an in-process ASGI app in the tests), and every decision in it is
made by the pure functions of ``discovery.py`` and ``challenge.py``.

Rules, in the order a request meets them:

1. A request goes out with the token held for this server, if any (refreshed first
   when it expires within a minute and a refresh token is at hand). The token goes
   to the MCP endpoint only: discovery, registration and token requests never
   carry it (CL-24).
2. A 401 starts discovery from its challenge: the protected-resource metadata (the
   challenge's URL, then the path and root forms), the resource checked against the
   server URL before anything else, then the authorization server's metadata (RFC
   8414 and OpenID, in the specification's order), whose ``issuer`` must be the one
   the resource named. Without any protected-resource metadata, the 2025-03-26 rules
   (metadata at the origin, else the default endpoints).
3. A token stored for (issuer, resource) is tried before asking anyone; else the
   refresh token; else a new grant: the authorization code with PKCE through the
   ``UserAgent`` (client identity: pre-registered, a client ID metadata document,
   one registered before with this issuer, else dynamic registration), or the
   client credentials, JWT bearer or enterprise token-exchange grant the settings
   name.
4. The request is sent again with the new token. One authorization per request: a
   second 401 is an ``OAuthError``.
5. A 403 ``insufficient_scope`` asks again for the union of the scopes requested,
   granted and challenged, once per request and at most ``max_step_ups`` times per
   (method, name), and not at all when the token already has every scope
   challenged (the server would never be satisfied).
6. DPoP (``dpop=True``): every token and MCP request carries a proof; a
   ``use_dpop_nonce`` answer from the authorization server or the MCP server is
   retried once with the nonce it gave.

Every failure is an ``OAuthError`` whose message says what went wrong; none holds a
token, secret or code.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import httpx
import orjson

from .challenge import Challenge, token_challenge
from .discovery import (
    AuthorizationServer,
    ProtectedResource,
    authorization_server_urls,
    check_oauth_url,
    initial_scope,
    legacy_authorization_server,
    legacy_metadata_url,
    parse_authorization_server,
    parse_protected_resource,
    protected_resource_urls,
    resource_matches,
    step_up_hopeless,
    step_up_scope,
)
from .errors import OAuthError
from .grants import (
    Discovered,
    EnterpriseIdentity,
    OAuthSettings,
    SubFlow,
    TokenGrants,
    dpop_nonce_requested,
    json_object,
    metadata_request,
    origin_of,
    plain_url,
)

__all__ = ["EnterpriseIdentity", "OAuth", "OAuthSettings"]


class OAuth(TokenGrants, httpx.Auth):
    """OAuth 2.1 for one MCP server, as an ``httpx.Auth`` (pass it as ``auth=`` to
    ``StreamableHttpClient`` or ``SseClient``).

    ``settings``: an ``OAuthSettings``. ``storage``: where tokens and registrations are
    kept (in memory by default; ``FileTokenStorage`` keeps them across runs).
    ``user_agent``: how the user authorizes (``BrowserUserAgent`` by default).
    """

    # --- the flow ------------------------------------------------------------------------

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self._lock is None:
            self._lock = asyncio.Lock()
        if self.tokens is not None and self._server is not None and self._expiring(self.tokens):
            async with self._lock:
                if self.tokens is not None and self._expiring(self.tokens):
                    sub = SubFlow(self._refresh_or_forget())
                    while (step := await sub.next()) is not None:
                        sub.reply = yield step
        # Rule 4: a stored token, a refreshed one or one another request just got may each be tried
        # once; a new grant (or a step-up) at most once; its refusal ends the request.
        may_reuse = may_refresh = True
        granted_here = False
        sent_with = self.tokens
        self._authorize(request)
        response = yield request
        nonce_asked = False  # rule 6: once per token sent
        for _ in range(8):
            if self._dpop is not None and not nonce_asked and dpop_nonce_requested(response):
                nonce_asked = True
                await response.aread()
                self._remember_nonce(request.url, response)
                self._authorize(request)
                response = yield request
                continue
            status = response.status_code
            if status not in (401, 403):
                return
            await response.aread()
            challenge = token_challenge(response.headers.get_list("www-authenticate"))
            if status == 403 and (challenge is None or challenge.error != "insufficient_scope"):
                return  # another refusal (an Origin check, a policy): the caller's to report
            if granted_here:
                if status == 403:
                    return  # one step-up per request: the server's refusal is the caller's error
                break
            async with self._lock:
                if status == 401 and self.tokens is not None and self.tokens is not sent_with and may_reuse:
                    may_reuse = False  # another request got a token meanwhile: try it
                elif status == 401:
                    sub = SubFlow(
                        self._on_unauthorized(
                            request, challenge, sent_with is not None, may_reuse=may_reuse, may_refresh=may_refresh
                        )
                    )
                    while (step := await sub.next()) is not None:
                        sub.reply = yield step
                    outcome = self._outcome
                    may_reuse = False
                    may_refresh = may_refresh and outcome != "refreshed"
                    granted_here = outcome == "granted"
                else:
                    assert challenge is not None
                    sub = SubFlow(self._step_up(request, challenge))
                    while (step := await sub.next()) is not None:
                        sub.reply = yield step
                    granted_here = True
            sent_with, nonce_asked = self.tokens, False
            self._authorize(request)
            response = yield request
        if response.status_code == 401:
            await response.aread()
            if self.tokens is not None:
                await self.storage.clear_tokens(self.tokens.issuer, self.tokens.resource)
                self.tokens = None
            raise OAuthError(
                f"MCP server at {plain_url(request.url)} refused the token it was just given (HTTP 401): "
                "check that the authorization server issues tokens for this resource"
            )

    def _authorize(self, request: httpx.Request) -> None:
        tokens = self.tokens
        if tokens is None:
            return
        if self._dpop is not None and tokens.token_type.lower() == "dpop":
            request.headers["authorization"] = f"DPoP {tokens.access_token}"
            request.headers["dpop"] = self._dpop.proof(
                request.method,
                str(request.url),
                access_token=tokens.access_token,
                nonce=self._dpop_nonces.get(origin_of(request.url)),
            )
        else:
            request.headers["authorization"] = f"Bearer {tokens.access_token}"

    # --- 401: discovery, then a token ----------------------------------------------------

    async def _on_unauthorized(
        self,
        request: httpx.Request,
        challenge: Challenge | None,
        had_token: bool,
        *,
        may_reuse: bool = True,
        may_refresh: bool = True,
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Rules 2 and 3; ``self._outcome`` then says what it did: ``stored`` (a token kept from
        before), ``refreshed`` or ``granted`` (a new grant)."""
        server_url = plain_url(request.url)
        previous = self._server
        sub = SubFlow(self._discover(server_url, challenge))
        while (step := await sub.next()) is not None:
            sub.reply = yield step
        server = self._known()
        issuer, resource = server.authorization.issuer, server.token_key
        moved = previous is not None and previous.authorization.issuer != issuer
        if had_token and self.tokens is not None:
            await self.storage.clear_tokens(self.tokens.issuer, self.tokens.resource)  # refused: no good any more
        elif may_reuse:
            stored = await self.storage.load_tokens(issuer, resource)
            if stored is not None and not stored.expired(self.clock()):
                self.tokens, self._outcome = stored, "stored"
                return
            self.tokens = stored
        if moved:
            self.tokens = None  # another authorization server: nothing of the old one is sent to it
        if may_refresh and self.tokens is not None and self.tokens.refresh_token:
            sub = SubFlow(self._refresh())
            while (step := await sub.next()) is not None:
                sub.reply = yield step
            if self.tokens is not None:
                self._outcome = "refreshed"
                return
        self.tokens = None
        scope = self.settings.scope or initial_scope(
            challenge.scope if challenge is not None else None,
            server.resource,
            server.authorization,
            want_refresh=self.settings.offline_access,
        )
        sub = SubFlow(self._grant(scope))
        while (step := await sub.next()) is not None:
            sub.reply = yield step
        self._outcome = "granted"

    async def _discover(
        self, server_url: str, challenge: Challenge | None
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Rule 2: find the resource's metadata and its authorization server's."""
        header_url = challenge.resource_metadata if challenge is not None else None
        resource: ProtectedResource | None = None
        for url in protected_resource_urls(server_url, header_url):
            check_oauth_url(url, "the protected-resource metadata URL")
            response = yield metadata_request(url)
            if response.status_code == 200:
                resource = parse_protected_resource(json_object(response, "protected-resource metadata"), url)
                break
            if response.status_code >= 500:
                raise OAuthError(
                    f"the protected-resource metadata at {url} could not be read (HTTP {response.status_code})"
                )
        if resource is None:
            sub = SubFlow(self._discover_legacy(server_url))
            while (step := await sub.next()) is not None:
                sub.reply = yield step
            return
        if not resource_matches(server_url, resource.resource):
            raise OAuthError(
                f"the protected-resource metadata of {server_url} names another resource ({resource.resource}): "
                "refusing to get a token for it"
            )
        issuer = self._choose_issuer(resource)
        metadata: AuthorizationServer | None = None
        for url in authorization_server_urls(issuer):
            check_oauth_url(url, "the authorization server's metadata URL")
            response = yield metadata_request(url)
            if response.status_code == 200:
                metadata = parse_authorization_server(
                    json_object(response, "authorization server metadata"), url, issuer
                )
                break
            if response.status_code >= 500:
                raise OAuthError(f"the authorization server metadata at {url} could not be read")
        if metadata is None:
            raise OAuthError(f"the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID)")
        self._server = Discovered(resource, metadata, server_url)

    async def _discover_legacy(self, server_url: str) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """2025-03-26: no protected-resource metadata; the authorization server is at the origin."""
        url = legacy_metadata_url(server_url)
        response = yield metadata_request(url, headers={"mcp-protocol-version": "2025-03-26"})
        if response.status_code == 200:
            document = json_object(response, "authorization server metadata")
            # 2025-03-26 put the metadata at the origin whatever the issuer; an issuer on that
            # origin (a path under it) is accepted, one elsewhere is not.
            issuer = document.get("issuer")
            expected = issuer if isinstance(issuer, str) and origin_of(issuer) == origin_of(url) else origin_of(url)
            metadata = parse_authorization_server(document, url, expected)
        else:
            metadata = legacy_authorization_server(server_url)
        self._server = Discovered(None, metadata, server_url)

    def _choose_issuer(self, resource: ProtectedResource) -> str:
        preferred = self.settings.authorization_server
        if preferred is not None:
            if preferred not in resource.authorization_servers:
                raise OAuthError(
                    f"the resource {resource.resource} does not name the authorization server {preferred} "
                    f"(it names {', '.join(resource.authorization_servers)})"
                )
            return preferred
        return resource.authorization_servers[0]

    # --- 403: more scope ----------------------------------------------------------------

    async def _step_up(
        self, request: httpx.Request, challenge: Challenge
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self._server is None:
            sub = SubFlow(self._discover(plain_url(request.url), challenge))
            while (step := await sub.next()) is not None:
                sub.reply = yield step
        server = self._known()
        granted = self.tokens.scope if self.tokens is not None else None
        # A challenge that names no scope: what the resource says it supports (the selection rule).
        supported = server.resource.scopes_supported if server.resource is not None else None
        challenged = challenge.scope or (" ".join(supported) if supported else None)
        if step_up_hopeless(granted, challenged):
            named = (
                f"scope {challenged!r}, which the token already has" if challenged else "more scope without naming it"
            )
            raise OAuthError(
                f"MCP server at {plain_url(request.url)} asks for {named}: it will not accept this request"
            )
        key = _operation(request)
        attempts = self._step_ups.get(key, 0)
        if attempts >= self.settings.max_step_ups:
            raise OAuthError(
                f"MCP server at {plain_url(request.url)} still needs scope {challenged!r} for {key[0]} "
                f"after {attempts} re-authorizations: giving up"
            )
        self._step_ups[key] = attempts + 1
        scope = step_up_scope(self._requested_scope, granted, challenged)
        kept = self.tokens
        self.tokens = None
        try:
            sub = SubFlow(self._grant(scope))
            while (step := await sub.next()) is not None:
                sub.reply = yield step
        finally:
            if self.tokens is None:
                self.tokens = kept  # refused: the token held before still serves what it served


def _operation(request: httpx.Request) -> tuple[str, str]:
    """The JSON-RPC method and tool (or other) name a request is for: what step-ups are counted by."""
    try:
        message = orjson.loads(request.content)
    except (orjson.JSONDecodeError, httpx.RequestNotRead):
        return ("?", "")
    if not isinstance(message, dict):
        return ("?", "")
    params = message.get("params")
    name = params.get("name") or params.get("uri") if isinstance(params, dict) else None
    return (str(message.get("method")), str(name or ""))
