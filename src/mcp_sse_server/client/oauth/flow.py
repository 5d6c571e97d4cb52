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
import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import httpx
import orjson

from ...auth.client_auth import client_secret_basic
from .challenge import Challenge, token_challenge
from .discovery import (
    AuthorizationServer,
    ProtectedResource,
    authorization_code,
    authorization_server_urls,
    check_oauth_url,
    effective_auth_method,
    initial_scope,
    legacy_authorization_server,
    legacy_metadata_url,
    new_state,
    parse_authorization_server,
    parse_protected_resource,
    pkce_pair,
    protected_resource_urls,
    requested_auth_method,
    resource_matches,
    step_up_hopeless,
    step_up_scope,
)
from .errors import OAuthError
from .storage import ClientRegistration, MemoryTokenStorage, Tokens, TokenStorage
from .user_agent import UserAgent

if TYPE_CHECKING:
    from .assertions import DPoPKey

__all__ = ["EnterpriseIdentity", "OAuth", "OAuthSettings"]

logger = logging.getLogger("mcp_sse_server.client.oauth")

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"
_TIMEOUT: Final = httpx.Timeout(30.0, connect=10.0)
_MAX_METADATA_BYTES: Final = 1 << 20

Grant = Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise"]
Secret = str | Callable[[], Awaitable[str]]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EnterpriseIdentity:
    """Enterprise-managed authorization (SEP-990): the identity provider that turns the
    user's ID token into an identity assertion (ID-JAG) for the authorization server."""

    token_endpoint: str
    client_id: str
    id_token: Secret  # the user's ID token from the identity provider, or how to get it
    client_secret: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OAuthSettings:
    """How the client identifies itself and which grant it uses (rules in the module docstring).

    ``client_id``/``client_secret``: credentials registered beforehand (``token_endpoint_auth_method``
    says how to send them; by default what the authorization server supports).
    ``client_metadata_url``: this client's metadata document URL, used as its client id where
    the authorization server accepts them. ``scope``: ask for exactly these (space-separated)
    instead of choosing. ``grant``: ``authorization_code`` (a user authorizes), ``client_credentials``
    (the client is the principal: a secret or ``private_key``), ``jwt_bearer`` (``assertion``, a
    workload identity token) or ``enterprise`` (``identity``). ``private_key``: a PEM key for
    ``private_key_jwt`` client authentication, signed with ``signing_algorithm``. ``dpop``:
    sender-constrained tokens (RFC 9449). ``authorization_server``: which issuer to use when the
    resource names several. ``offline_access``: ask for it (a refresh token) where offered.
    ``application_type``: what dynamic registration declares (``native`` for a CLI or desktop app).
    ``max_step_ups``: re-authorizations for more scope per (method, name).
    """

    client_name: str = "mcp-sse-server"
    client_id: str | None = None
    client_secret: str | None = None
    token_endpoint_auth_method: str | None = None
    client_metadata_url: str | None = None
    scope: str | None = None
    grant: Grant = "authorization_code"
    private_key: str | bytes | None = None
    signing_algorithm: str = "ES256"
    assertion: Secret | None = None
    identity: EnterpriseIdentity | None = None
    dpop: bool = False
    authorization_server: str | None = None
    offline_access: bool = True
    application_type: Literal["native", "web"] = "native"
    max_step_ups: int = 2

    def __post_init__(self) -> None:
        if self.grant == "client_credentials" and not self.client_id:
            raise ValueError("the client_credentials grant needs client_id (and client_secret or private_key)")
        if self.grant == "jwt_bearer" and self.assertion is None:
            raise ValueError("the jwt_bearer grant needs assertion= (the JWT to present)")
        if self.grant == "enterprise" and (self.identity is None or not self.client_id):
            raise ValueError("the enterprise grant needs identity= and client_id")


@dataclasses.dataclass(slots=True)
class _Server:
    """What discovery found for the MCP server: its resource, when it has metadata, and its issuer's."""

    resource: ProtectedResource | None
    authorization: AuthorizationServer
    url: str  # the MCP endpoint

    @property
    def resource_id(self) -> str | None:
        """What the ``resource`` parameter names (None: a 2025-03-26 server, which has none)."""
        return self.resource.resource if self.resource is not None else None

    @property
    def token_key(self) -> str:
        """What tokens are stored under, with the issuer."""
        return self.resource.resource if self.resource is not None else self.url


class OAuth(httpx.Auth):
    """OAuth 2.1 for one MCP server, as an ``httpx.Auth`` (pass it as ``auth=`` to
    ``StreamableHttpClient`` or ``SseClient``).

    ``settings``: an ``OAuthSettings``. ``storage``: where tokens and registrations are
    kept (in memory by default; ``FileTokenStorage`` keeps them across runs).
    ``user_agent``: how the user authorizes (``BrowserUserAgent`` by default).
    """

    def __init__(
        self,
        settings: OAuthSettings | None = None,
        *,
        storage: TokenStorage | None = None,
        user_agent: UserAgent | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings or OAuthSettings()
        self.storage: TokenStorage = storage if storage is not None else MemoryTokenStorage()
        self._user_agent = user_agent
        self.clock = clock
        self.tokens: Tokens | None = None
        self._server: _Server | None = None
        self._lock: asyncio.Lock | None = None
        self._dpop: DPoPKey | None = None
        if self.settings.dpop:
            from .assertions import DPoPKey  # (cryptography is loaded only by clients that sign)

            self._dpop = DPoPKey()
        self._dpop_nonces: dict[str, str] = {}  # origin -> the last nonce it asked for
        self._step_ups: dict[tuple[str, str], int] = {}
        self._requested_scope: str | None = None
        self._outcome: Literal["stored", "refreshed", "granted"] = "granted"  # what _on_unauthorized did
        self._skew = 60.0  # refresh this long before expiry (less for tokens that live under two minutes)

    @property
    def user_agent(self) -> UserAgent:
        if self._user_agent is None:
            from .user_agent import BrowserUserAgent

            self._user_agent = BrowserUserAgent()
        return self._user_agent

    async def aclose(self) -> None:
        """Close the user agent this flow made (its loopback socket)."""
        if self._user_agent is not None:
            await self._user_agent.aclose()

    # --- the flow ------------------------------------------------------------------------

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self._lock is None:
            self._lock = asyncio.Lock()
        if self.tokens is not None and self._server is not None and self._expiring(self.tokens):
            async with self._lock:
                if self.tokens is not None and self._expiring(self.tokens):
                    sub = _Delegate(self._refresh_or_forget())
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
            if self._dpop is not None and not nonce_asked and _dpop_nonce_requested(response):
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
                    sub = _Delegate(
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
                    sub = _Delegate(self._step_up(request, challenge))
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
                f"MCP server at {_plain(request.url)} refused the token it was just given (HTTP 401): "
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
                nonce=self._dpop_nonces.get(_origin(request.url)),
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
        server_url = _plain(request.url)
        previous = self._server
        sub = _Delegate(self._discover(server_url, challenge))
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
            sub = _Delegate(self._refresh())
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
        sub = _Delegate(self._grant(scope))
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
            response = yield _get(url)
            if response.status_code == 200:
                resource = parse_protected_resource(_json(response, "protected-resource metadata"), url)
                break
            if response.status_code >= 500:
                raise OAuthError(
                    f"the protected-resource metadata at {url} could not be read (HTTP {response.status_code})"
                )
        if resource is None:
            sub = _Delegate(self._discover_legacy(server_url))
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
            response = yield _get(url)
            if response.status_code == 200:
                metadata = parse_authorization_server(_json(response, "authorization server metadata"), url, issuer)
                break
            if response.status_code >= 500:
                raise OAuthError(f"the authorization server metadata at {url} could not be read")
        if metadata is None:
            raise OAuthError(f"the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID)")
        self._server = _Server(resource, metadata, server_url)

    async def _discover_legacy(self, server_url: str) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """2025-03-26: no protected-resource metadata; the authorization server is at the origin."""
        url = legacy_metadata_url(server_url)
        response = yield _get(url, headers={"mcp-protocol-version": "2025-03-26"})
        if response.status_code == 200:
            document = _json(response, "authorization server metadata")
            # 2025-03-26 put the metadata at the origin whatever the issuer; an issuer on that
            # origin (a path under it) is accepted, one elsewhere is not.
            issuer = document.get("issuer")
            expected = issuer if isinstance(issuer, str) and _origin(issuer) == _origin(url) else _origin(url)
            metadata = parse_authorization_server(document, url, expected)
        else:
            metadata = legacy_authorization_server(server_url)
        self._server = _Server(None, metadata, server_url)

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

    # --- grants ------------------------------------------------------------------------

    async def _grant(self, scope: str | None) -> AsyncGenerator[httpx.Request, httpx.Response]:
        grant = self.settings.grant
        self._requested_scope = scope
        steps: AsyncGenerator[httpx.Request, httpx.Response]
        if grant == "authorization_code":
            steps = self._authorization_code(scope)
        elif grant == "client_credentials":
            steps = self._client_credentials(scope)
        elif grant == "jwt_bearer":
            steps = self._jwt_bearer(scope)
        else:
            steps = self._enterprise(scope)
        sub = _Delegate(steps)
        while (step := await sub.next()) is not None:
            sub.reply = yield step

    async def _authorization_code(self, scope: str | None) -> AsyncGenerator[httpx.Request, httpx.Response]:
        server = self._known()
        metadata = server.authorization
        if metadata.authorization_endpoint is None:
            raise OAuthError(f"the authorization server {metadata.issuer} has no authorization endpoint")
        endpoint = check_oauth_url(metadata.authorization_endpoint, "the authorization endpoint")
        check_oauth_url(metadata.token_endpoint, "the token endpoint")  # before the user is asked for nothing
        if metadata.url is not None and not metadata.supports_pkce():
            raise OAuthError(
                f"the authorization server {metadata.issuer} does not list PKCE S256 support: refusing to authorize"
            )
        client: ClientRegistration | None = None
        sub = _Delegate(self._client_identity())
        while (step := await sub.next()) is not None:
            sub.reply = yield step
        client = await self._client()
        redirect_uri = self.user_agent.redirect_uri
        verifier, challenge = pkce_pair()
        state = new_state()
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        if scope:
            query["scope"] = scope
        if server.resource_id is not None:
            query["resource"] = server.resource_id
        separator = "&" if urlsplit(endpoint).query else "?"
        params = await self.user_agent.authorize(endpoint + separator + urlencode(query, quote_via=quote))
        code = authorization_code(
            params, state=state, issuer=metadata.issuer, iss_supported=metadata.iss_parameter_supported
        )
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        sub = _Delegate(self._token_request(form, client, scope))
        while (step := await sub.next()) is not None:
            sub.reply = yield step

    async def _client_credentials(self, scope: str | None) -> AsyncGenerator[httpx.Request, httpx.Response]:
        client = self._preregistered()
        assert client is not None  # OAuthSettings requires client_id for this grant
        sub = _Delegate(self._token_request({"grant_type": "client_credentials"}, client, scope))
        while (step := await sub.next()) is not None:
            sub.reply = yield step

    async def _jwt_bearer(self, scope: str | None) -> AsyncGenerator[httpx.Request, httpx.Response]:
        assert self.settings.assertion is not None
        assertion = await _resolve(self.settings.assertion)
        client = self._preregistered() or ClientRegistration(
            issuer=self._known().authorization.issuer, client_id="", token_endpoint_auth_method="none"
        )
        form = {"grant_type": JWT_BEARER, "assertion": assertion}
        sub = _Delegate(self._token_request(form, client, scope))
        while (step := await sub.next()) is not None:
            sub.reply = yield step

    async def _enterprise(self, scope: str | None) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """SEP-990: the ID token exchanged at the identity provider for an ID-JAG, presented to the
        authorization server as a JWT bearer grant."""
        identity = self.settings.identity
        assert identity is not None
        server = self._known()
        exchange = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": await _resolve(identity.id_token),
            "subject_token_type": ID_TOKEN,
            "audience": server.authorization.issuer,
        }
        if server.resource_id is not None:
            exchange["resource"] = server.resource_id
        if scope:
            exchange["scope"] = scope
        headers: dict[str, str] = {}
        if identity.client_secret is not None:
            headers["authorization"] = client_secret_basic(identity.client_id, identity.client_secret)
        else:
            exchange["client_id"] = identity.client_id
        endpoint = check_oauth_url(identity.token_endpoint, "the identity provider's token endpoint")
        response = yield _post_form(endpoint, exchange, headers)
        answer = _token_answer(response, "the identity provider's token exchange")
        assertion = answer.get("access_token")
        if not isinstance(assertion, str) or not assertion:
            raise OAuthError("the identity provider's token exchange answered without an identity assertion")
        client = self._preregistered()
        assert client is not None
        sub = _Delegate(self._token_request({"grant_type": JWT_BEARER, "assertion": assertion}, client, scope))
        while (step := await sub.next()) is not None:
            sub.reply = yield step

    # --- the token endpoint ---------------------------------------------------------------

    async def _token_request(
        self, form: dict[str, str], client: ClientRegistration, scope: str | None
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        server = self._known()
        metadata = server.authorization
        endpoint = check_oauth_url(metadata.token_endpoint, "the token endpoint")
        form = dict(form)
        if server.resource_id is not None:
            form["resource"] = server.resource_id
        if scope and form["grant_type"] != "authorization_code":
            form["scope"] = scope
        headers = self._client_authentication(form, client, metadata)
        for attempt in range(2):
            if self._dpop is not None:
                headers["dpop"] = self._dpop.proof("POST", endpoint, nonce=self._dpop_nonces.get(_origin(endpoint)))
            response = yield _post_form(endpoint, form, headers)
            if attempt == 0 and self._dpop is not None and _dpop_nonce_requested(response):
                await response.aread()
                self._remember_nonce(httpx.URL(endpoint), response)
                continue
            break
        tokens = _tokens(
            _token_answer(response, "the token endpoint"), metadata.issuer, server.token_key, scope, self.clock()
        )
        self._held(tokens)
        await self.storage.save_tokens(tokens)

    def _client_authentication(
        self, form: dict[str, str], client: ClientRegistration, metadata: AuthorizationServer
    ) -> dict[str, str]:
        """Exactly one way of authenticating the client (CL-14, CL-34): its form fields are added to
        ``form``; the headers to send are returned."""
        headers: dict[str, str] = {}
        if not client.client_id:
            return headers  # a grant whose assertion is the credential (workload identity)
        if self.settings.private_key is not None:
            from .assertions import CLIENT_ASSERTION_TYPE, client_assertion

            form["client_assertion_type"] = CLIENT_ASSERTION_TYPE
            form["client_assertion"] = client_assertion(
                client.client_id, metadata.issuer, self.settings.private_key, algorithm=self.settings.signing_algorithm
            )
            return headers
        method = effective_auth_method(client.token_endpoint_auth_method, client.client_secret is not None, metadata)
        if method == "client_secret_basic" and client.client_secret is not None:
            headers["authorization"] = client_secret_basic(client.client_id, client.client_secret)
        elif method == "client_secret_post" and client.client_secret is not None:
            form["client_id"] = client.client_id
            form["client_secret"] = client.client_secret
        else:
            form["client_id"] = client.client_id
        return headers

    async def _refresh(self) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """A refresh-token grant; on ``invalid_grant`` the tokens are dropped (``self.tokens`` None)."""
        tokens = self.tokens
        server = self._known()
        assert tokens is not None and tokens.refresh_token is not None
        client = await self._client_or_none()
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        metadata = server.authorization
        endpoint = check_oauth_url(metadata.token_endpoint, "the token endpoint")
        if server.resource_id is not None:
            form["resource"] = server.resource_id
        headers = self._client_authentication(form, client, metadata) if client is not None else {}
        if self._dpop is not None:
            headers["dpop"] = self._dpop.proof("POST", endpoint, nonce=self._dpop_nonces.get(_origin(endpoint)))
        response = yield _post_form(endpoint, form, headers)
        await response.aread()
        if response.status_code != 200:
            logger.info("the refresh token was refused (HTTP %d): authorizing again", response.status_code)
            await self.storage.clear_tokens(tokens.issuer, tokens.resource)
            self.tokens = None
            return
        answer = _token_answer(response, "the token endpoint")
        refreshed = _tokens(answer, metadata.issuer, server.token_key, tokens.scope, self.clock())
        if refreshed.refresh_token is None:  # no rotation: the old one stays good (CL-26)
            refreshed = dataclasses.replace(refreshed, refresh_token=tokens.refresh_token)
        self._held(refreshed)
        await self.storage.save_tokens(refreshed)

    async def _refresh_or_forget(self) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Rule 1: a token about to expire is refreshed, or dropped (a 401 then gets a new one)."""
        if self.tokens is not None and self.tokens.refresh_token:
            sub = _Delegate(self._refresh())
            while (step := await sub.next()) is not None:
                sub.reply = yield step
        else:
            self.tokens = None

    # --- client identity ------------------------------------------------------------------

    def _preregistered(self) -> ClientRegistration | None:
        settings = self.settings
        if not settings.client_id:
            return None
        return ClientRegistration(
            issuer=self._known().authorization.issuer,
            client_id=settings.client_id,
            client_secret=settings.client_secret,
            token_endpoint_auth_method=settings.token_endpoint_auth_method,
        )

    async def _client_or_none(self) -> ClientRegistration | None:
        preregistered = self._preregistered()
        if preregistered is not None:
            return preregistered
        metadata = self._known().authorization
        if self.settings.client_metadata_url and metadata.client_id_metadata_document_supported:
            return ClientRegistration(
                issuer=metadata.issuer, client_id=self.settings.client_metadata_url, token_endpoint_auth_method="none"
            )
        return await self.storage.load_client(metadata.issuer)

    async def _client(self) -> ClientRegistration:
        client = await self._client_or_none()
        if client is None:
            raise OAuthError(f"no client registration for {self._known().authorization.issuer}")
        return client

    async def _client_identity(self) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """CL-10: pre-registered, a metadata document, one registered before, else registration."""
        if await self._client_or_none() is not None:
            return
        metadata = self._known().authorization
        if metadata.registration_endpoint is None:
            raise OAuthError(
                f"the authorization server {metadata.issuer} offers no dynamic client registration: configure "
                "a client_id registered there (OAuthSettings(client_id=...))"
            )
        endpoint = check_oauth_url(metadata.registration_endpoint, "the registration endpoint")
        method = requested_auth_method(metadata)
        body: dict[str, Any] = {
            "client_name": self.settings.client_name,
            "redirect_uris": [self.user_agent.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": self.settings.application_type,
        }
        response = yield httpx.Request(
            "POST",
            endpoint,
            content=orjson.dumps(body),
            headers={"content-type": "application/json", "accept": "application/json"},
            extensions={"timeout": _TIMEOUT.as_dict()},
        )
        await response.aread()
        if response.status_code not in (200, 201):
            raise OAuthError(
                f"dynamic client registration at {endpoint} failed (HTTP {response.status_code}"
                f"{_error_suffix(response)})"
            )
        answer = _json(response, "the registration response")
        client_id = answer.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise OAuthError(f"the registration response of {endpoint} has no client_id")
        secret = answer.get("client_secret")
        registered_method = answer.get("token_endpoint_auth_method")
        expires = answer.get("client_secret_expires_at")
        await self.storage.save_client(
            ClientRegistration(
                issuer=metadata.issuer,
                client_id=client_id,
                client_secret=secret if isinstance(secret, str) else None,
                token_endpoint_auth_method=registered_method if isinstance(registered_method, str) else method,
                redirect_uris=(self.user_agent.redirect_uri,),
                expires_at=float(expires) if isinstance(expires, int | float) and expires > 0 else None,
            )
        )

    # --- 403: more scope ----------------------------------------------------------------

    async def _step_up(
        self, request: httpx.Request, challenge: Challenge
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self._server is None:
            sub = _Delegate(self._discover(_plain(request.url), challenge))
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
            raise OAuthError(f"MCP server at {_plain(request.url)} asks for {named}: it will not accept this request")
        key = _operation(request)
        attempts = self._step_ups.get(key, 0)
        if attempts >= self.settings.max_step_ups:
            raise OAuthError(
                f"MCP server at {_plain(request.url)} still needs scope {challenged!r} for {key[0]} "
                f"after {attempts} re-authorizations: giving up"
            )
        self._step_ups[key] = attempts + 1
        scope = step_up_scope(self._requested_scope, granted, challenged)
        kept = self.tokens
        self.tokens = None
        try:
            sub = _Delegate(self._grant(scope))
            while (step := await sub.next()) is not None:
                sub.reply = yield step
        finally:
            if self.tokens is None:
                self.tokens = kept  # refused: the token held before still serves what it served

    # --- helpers -------------------------------------------------------------------------

    def _expiring(self, tokens: Tokens) -> bool:
        return tokens.expired(self.clock(), self._skew)

    def _held(self, tokens: Tokens) -> None:
        """Hold (and keep) new tokens; a short-lived one is refreshed at half its life, not every time."""
        self.tokens = tokens
        if tokens.expires_at is not None:
            self._skew = min(60.0, max(0.0, tokens.expires_at - self.clock()) / 2)

    def _known(self) -> _Server:
        if self._server is None:
            raise OAuthError("the authorization server is not known yet")  # (a flow step out of order)
        return self._server

    def _remember_nonce(self, url: httpx.URL, response: httpx.Response) -> None:
        nonce = response.headers.get("dpop-nonce")
        if nonce:
            self._dpop_nonces[_origin(url)] = nonce


class _Delegate:
    """Runs a sub-flow inside a flow (``yield from``, which async generators lack): ``next()``
    gives its next request (None once it is done), after reading the reply to the last one
    into memory (a sub-flow's replies are small JSON documents)."""

    __slots__ = ("reply", "steps")

    def __init__(self, steps: AsyncGenerator[httpx.Request, httpx.Response]) -> None:
        self.steps = steps
        self.reply: httpx.Response | None = None

    async def next(self) -> httpx.Request | None:
        try:
            if self.reply is None:
                return await self.steps.__anext__()
            await _read_capped(self.reply)
            return await self.steps.asend(self.reply)
        except StopAsyncIteration:
            return None


def _get(url: str, headers: Mapping[str, str] | None = None) -> httpx.Request:
    return httpx.Request(
        "GET",
        url,
        headers={"accept": "application/json", **(headers or {})},
        extensions={"timeout": _TIMEOUT.as_dict()},
    )


def _post_form(url: str, form: Mapping[str, str], headers: Mapping[str, str]) -> httpx.Request:
    return httpx.Request(
        "POST",
        url,
        content=urlencode(form).encode(),
        headers={"content-type": "application/x-www-form-urlencoded", "accept": "application/json", **headers},
        extensions={"timeout": _TIMEOUT.as_dict()},
    )


async def _read_capped(response: httpx.Response) -> None:
    await response.aread()
    if len(response.content) > _MAX_METADATA_BYTES:
        raise OAuthError(f"{_plain(response.request.url)} answered with more than 1 MiB")


def _json(response: httpx.Response, what: str) -> dict[str, Any]:
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise OAuthError(f"{what} at {_plain(response.request.url)} is not a JSON object")
    return data


def _token_answer(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code != 200:
        raise OAuthError(f"{what} refused the request (HTTP {response.status_code}{_error_suffix(response)})")
    return _json(response, what)


def _tokens(answer: Mapping[str, Any], issuer: str, resource: str, requested: str | None, now: float) -> Tokens:
    access = answer.get("access_token")
    if not isinstance(access, str) or not access:
        raise OAuthError("the token endpoint answered without an access_token")
    token_type = answer.get("token_type")
    if not isinstance(token_type, str) or token_type.lower() not in ("bearer", "dpop"):
        raise OAuthError(f"the token endpoint answered an unusable token_type ({token_type!r})")
    expires_in = answer.get("expires_in")
    refresh = answer.get("refresh_token")
    scope = answer.get("scope")
    return Tokens(
        access_token=access,
        token_type="DPoP" if token_type.lower() == "dpop" else "Bearer",
        expires_at=now + float(expires_in) if isinstance(expires_in, int | float) and expires_in > 0 else None,
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
        scope=scope if isinstance(scope, str) else requested,
        issuer=issuer,
        resource=resource,
    )


def _error_suffix(response: httpx.Response) -> str:
    """``: invalid_grant`` from an OAuth error body (its code only: descriptions may echo input)."""
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    return f": {error}" if isinstance(error, str) and error.isascii() and len(error) < 64 else ""


def _dpop_nonce_requested(response: httpx.Response) -> bool:
    if response.status_code not in (400, 401) or "dpop-nonce" not in response.headers:
        return False
    if response.status_code == 401:
        challenge = token_challenge(response.headers.get_list("www-authenticate"))
        return challenge is not None and challenge.error == "use_dpop_nonce"
    try:
        return b"use_dpop_nonce" in response.content  # (a token endpoint's answer: read by then)
    except httpx.ResponseNotRead:
        return False


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


def _plain(url: httpx.URL | str) -> str:
    """A URL without its query (where tokens and codes may travel)."""
    parts = urlsplit(str(url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin(url: httpx.URL | str) -> str:
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}"


async def _resolve(secret: Secret) -> str:
    return secret if isinstance(secret, str) else await secret()
