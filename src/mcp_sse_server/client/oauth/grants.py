"""How ``OAuth`` gets tokens once discovery has found the authorization server (rule 3 of
``flow.py``): the grants, the token endpoint, refreshing, and the client's identity.

Rules:

1. The grant is the settings' (``OAuthSettings.grant``): the authorization code with PKCE
   through the ``UserAgent``, client credentials, a JWT bearer assertion, or the enterprise
   token exchange (SEP-990: the ID token exchanged for an ID-JAG, presented as a JWT bearer).
   An authorization request whose scope has ``offline_access`` says ``prompt=consent``: OpenID
   providers ignore ``offline_access`` (and issue no refresh token) without it.
2. The client's identity, for the authorization code: pre-registered, a client ID metadata
   document where the authorization server accepts them, one registered before with this
   issuer, else dynamic registration (CL-10). Exactly one way of authenticating it at the token
   endpoint (CL-14, CL-34): a ``private_key_jwt`` assertion, ``client_secret_basic``,
   ``client_secret_post``, or its id alone.
3. Tokens are stored for (issuer, resource) as they arrive; a refresh that returns no refresh
   token keeps the old one (CL-26); a refused refresh forgets the tokens.
4. With DPoP, every token request (refreshes too) carries a proof, retried once with the nonce a
   ``use_dpop_nonce`` answer gives.

Every failure is an ``OAuthError`` whose message says what went wrong; none holds a token,
secret or code.
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
from .challenge import token_challenge
from .discovery import (
    AuthorizationServer,
    ProtectedResource,
    authorization_code,
    check_oauth_url,
    effective_auth_method,
    new_state,
    pkce_pair,
    requested_auth_method,
)
from .errors import OAuthError
from .storage import ClientRegistration, MemoryTokenStorage, Tokens, TokenStorage
from .user_agent import UserAgent

if TYPE_CHECKING:
    from .assertions import DPoPKey

__all__ = ["Discovered", "EnterpriseIdentity", "OAuthSettings", "SubFlow", "TokenGrants"]

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
class Discovered:
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


class TokenGrants:
    """What ``OAuth`` holds (its settings, storage, tokens, what discovery found) and how it gets
    tokens (see the module); ``OAuth`` adds the flow that decides when."""

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
        self._server: Discovered | None = None
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
        sub = SubFlow(steps)
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
        sub = SubFlow(self._client_identity())
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
            if "offline_access" in scope.split():
                # OpenID Connect Core §11: offline_access is ignored unless the request says
                # prompt=consent (oidc-provider drops it, Google wants a fresh consent for a
                # refresh token): without it no refresh token comes back.
                query["prompt"] = "consent"
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
        sub = SubFlow(self._token_request(form, client, scope))
        while (step := await sub.next()) is not None:
            sub.reply = yield step

    async def _client_credentials(self, scope: str | None) -> AsyncGenerator[httpx.Request, httpx.Response]:
        client = self._preregistered()
        assert client is not None  # OAuthSettings requires client_id for this grant
        sub = SubFlow(self._token_request({"grant_type": "client_credentials"}, client, scope))
        while (step := await sub.next()) is not None:
            sub.reply = yield step

    async def _jwt_bearer(self, scope: str | None) -> AsyncGenerator[httpx.Request, httpx.Response]:
        assert self.settings.assertion is not None
        assertion = await _resolve(self.settings.assertion)
        client = self._preregistered() or ClientRegistration(
            issuer=self._known().authorization.issuer, client_id="", token_endpoint_auth_method="none"
        )
        form = {"grant_type": JWT_BEARER, "assertion": assertion}
        sub = SubFlow(self._token_request(form, client, scope))
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
        sub = SubFlow(self._token_request({"grant_type": JWT_BEARER, "assertion": assertion}, client, scope))
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
                headers["dpop"] = self._dpop.proof("POST", endpoint, nonce=self._dpop_nonces.get(origin_of(endpoint)))
            response = yield _post_form(endpoint, form, headers)
            if attempt == 0 and self._dpop is not None and dpop_nonce_requested(response):
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
        for attempt in range(2):
            if self._dpop is not None:
                headers["dpop"] = self._dpop.proof("POST", endpoint, nonce=self._dpop_nonces.get(origin_of(endpoint)))
            response = yield _post_form(endpoint, form, headers)
            await response.aread()
            # Rule 4: the nonce kept since the last token request may have been rotated away.
            if attempt == 0 and self._dpop is not None and dpop_nonce_requested(response):
                self._remember_nonce(httpx.URL(endpoint), response)
                continue
            break
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
            sub = SubFlow(self._refresh())
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
        answer = json_object(response, "the registration response")
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

    # --- helpers -------------------------------------------------------------------------

    def _expiring(self, tokens: Tokens) -> bool:
        return tokens.expired(self.clock(), self._skew)

    def _held(self, tokens: Tokens) -> None:
        """Hold (and keep) new tokens; a short-lived one is refreshed at half its life, not every time."""
        self.tokens = tokens
        if tokens.expires_at is not None:
            self._skew = min(60.0, max(0.0, tokens.expires_at - self.clock()) / 2)

    def _known(self) -> Discovered:
        if self._server is None:
            raise OAuthError("the authorization server is not known yet")  # (a flow step out of order)
        return self._server

    def _remember_nonce(self, url: httpx.URL, response: httpx.Response) -> None:
        nonce = response.headers.get("dpop-nonce")
        if nonce:
            self._dpop_nonces[origin_of(url)] = nonce


class SubFlow:
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


def metadata_request(url: str, headers: Mapping[str, str] | None = None) -> httpx.Request:
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
        raise OAuthError(f"{plain_url(response.request.url)} answered with more than 1 MiB")


def json_object(response: httpx.Response, what: str) -> dict[str, Any]:
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise OAuthError(f"{what} at {plain_url(response.request.url)} is not a JSON object")
    return data


def _token_answer(response: httpx.Response, what: str) -> dict[str, Any]:
    if response.status_code != 200:
        raise OAuthError(f"{what} refused the request (HTTP {response.status_code}{_error_suffix(response)})")
    return json_object(response, what)


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


def dpop_nonce_requested(response: httpx.Response) -> bool:
    if response.status_code not in (400, 401) or "dpop-nonce" not in response.headers:
        return False
    if response.status_code == 401:
        challenge = token_challenge(response.headers.get_list("www-authenticate"))
        return challenge is not None and challenge.error == "use_dpop_nonce"
    try:
        return b"use_dpop_nonce" in response.content  # (a token endpoint's answer: read by then)
    except httpx.ResponseNotRead:
        return False


def plain_url(url: httpx.URL | str) -> str:
    """A URL without its query (where tokens and codes may travel)."""
    parts = urlsplit(str(url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def origin_of(url: httpx.URL | str) -> str:
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}"


async def _resolve(secret: Secret) -> str:
    return secret if isinstance(secret, str) else await secret()
