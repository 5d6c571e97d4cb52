"""``AuthProxy``: an OAuth 2.1 authorization server facing MCP clients, and an OpenID client facing
an identity provider that offers them no registration (the spec's "mode B").

Endpoints (issuer = this server's origin; ``wrap(app)`` serves them beside the MCP endpoint):

- ``GET /.well-known/oauth-authorization-server``: RFC 8414 metadata (S256 only; ``none`` auth;
  ``authorization_response_iss_parameter_supported``).
- ``POST /oauth/register``: RFC 7591, public clients (``none``) only; redirect URIs checked now
  (``redirects.py``); at most 10 of them, a name of at most 100 characters, 16 KiB of metadata.
- ``GET /oauth/authorize``: the client and its ``redirect_uri`` are checked before anything can
  redirect (a failure there is an HTML 400 page, never a redirect); then ``response_type=code``,
  an S256 ``code_challenge`` (``plain`` or none: ``invalid_request``, a PKCE downgrade),
  ``resource`` = this resource, scopes among ours. A transaction is stored (sealed, 10 min) and a
  consent page shown: the client's name marked unverified, the redirect's host, the scopes, the
  IdP. Its form carries a CSRF token stored in the transaction and double-submitted in a cookie
  set with the page; CSP ``frame-ancestors 'none'``.
- ``POST /oauth/consent``: a form whose transaction, CSRF field and cookie all agree (else 403).
  Deny: ``access_denied`` to the client. Approve: the transaction is marked consented, a binding
  cookie (a MAC of the transaction id) is set in this browser, and the user goes to the IdP
  (``upstream.py``), with our own PKCE, nonce and ``state`` = the transaction id.
- ``GET /oauth/callback``: the transaction is taken (read and deleted in one step: a second
  callback finds nothing); it must have been consented, in this browser (binding cookie), and
  the IdP's ``iss`` must be its issuer when it sends one. The code is exchanged, the identity
  read (ID token or userinfo), the preset's allow policy applied; a grant is stored with the
  upstream tokens (sealed, never sent to a client) and our code (single use, 60 s) goes to the
  client with its ``state`` and ``iss``.
- ``POST /oauth/token``: ``authorization_code``: the code is taken atomically (two concurrent
  redemptions: one wins; a redemption of a used code revokes its grant), then client,
  ``redirect_uri``, ``resource`` and the PKCE verifier (constant-time) are checked.
  ``refresh_token``: rotation (``_refresh``). Answers ``Cache-Control: no-store``.
- ``POST /oauth/revoke``: RFC 7009 on our refresh token: the grant (family) is deleted and the
  upstream refresh token revoked at the IdP when it can.
- ``GET /oauth/jwks``: our public signing keys.

Our access tokens: ES256 JWTs (``typ at+jwt``, ``kid``), ``iss`` ours, ``aud`` the resource,
``sub`` = ``<idp>:<upstream sub>``, ``client_id``, ``scope``, ``sid`` (the grant), ``jti``,
short-lived. ``resource_server()`` is the matching ``ResourceServer``: a ``JwtVerifier`` over
our key set, issuer ours, so an upstream token or ID token is refused there.

Refresh tokens ``mrt_<grant>_<secret>``, one record each, rotated with one ``swap``: an active
token yields a new pair and becomes ``rotated`` with the answer stashed (sealed) for a grace
window (a client that lost the answer, or refreshed twice at once, gets the same answer again);
a rotated token used after the window is a replay: the whole grant is revoked.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit

import orjson

from ..providers.policy import AllowPolicy
from . import redirects
from .keys import Sealer, SigningKeys
from .store import MemoryProxyStore, ProxyStore, ProxyStoreUnavailable
from .upstream import Upstream, UpstreamError

if TYPE_CHECKING:
    import httpx

    from ...engine.tokens import AccessToken
    from ..dpop import DPoP
    from ..resource import ResourceServer

__all__ = ["AuthProxy"]

logger = logging.getLogger("mcp_sse_server.auth")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

METADATA_PATH: Final = "/.well-known/oauth-authorization-server"
_MAX_BODY: Final = 16 * 1024
_TX_TTL: Final = 600.0
_CODE_TTL: Final = 60.0
_USED_TTL: Final = 600.0
_CLIENT_TTL: Final = 30 * 86400.0
_GRACE: Final = 30.0
_PAGE_HEADERS: Final = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"content-security-policy", b"frame-ancestors 'none'; default-src 'none'; style-src 'unsafe-inline'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _s256(verifier: str) -> str:
    return _b64(hashlib.sha256(verifier.encode()).digest())


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class _Refusal(Exception):
    """An OAuth error answer of the token or registration endpoint."""

    def __init__(
        self, error: str, description: str, status: int = 400, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        super().__init__(description)
        self.headers = headers or []
        self.error, self.description, self.status = error, description, status


class AuthProxy:
    """The authorization-server facade (module docstring).

    ``issuer``: our origin (``https://mcp.example``; ``http`` on loopback only).
    ``resource``: the MCP endpoint's URL (every token's audience). ``upstream``: the IdP.
    ``idp``: the preset's name (the prefix of our subjects). ``allow``: who may sign in (the
    preset's ``AllowPolicy``; empty admits anyone the IdP vouches for). ``scopes``: ours, what
    clients may ask for. ``store``: flow state (memory by default). ``keys``/``sealer``: signing
    and sealing rings (generated for one process by default). ``redirect_allow``: https
    redirect patterns clients may register; ``strict_redirects``: no loopback port exception.
    ``token_ttl``/``refresh_ttl``: lifetimes in seconds. ``client_documents``: take https client
    ids as client ID metadata documents (``cimd.py``); ``client_documents_private``: fetch them
    from private addresses too (tests and closed networks only: SSRF). ``dpop``: DPoP at the token
    endpoint (RFC 9449): a request with a valid proof gets tokens bound to its key (``cnf.jkt``,
    ``token_type`` DPoP), and its refresh token is good only with a proof by that key.
    ``clock``: wall-clock seconds.
    """

    def __init__(
        self,
        *,
        issuer: str,
        resource: str,
        upstream: Upstream,
        idp: str = "oidc",
        allow: AllowPolicy | None = None,
        scopes: Iterable[str] = ("mcp:tools",),
        store: ProxyStore | None = None,
        keys: SigningKeys | None = None,
        sealer: Sealer | None = None,
        redirect_allow: Iterable[str] = (),
        strict_redirects: bool = False,
        token_ttl: float = 300.0,
        refresh_ttl: float = 30 * 86400.0,
        client_documents: bool = True,
        client_documents_private: bool = False,
        dpop: DPoP | None = None,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from ..urls import check_fetch_url

        parts = urlsplit(issuer)
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"the proxy's issuer is an origin (scheme, host, port): {issuer!r}")
        check_fetch_url("the proxy's issuer", issuer)
        self.issuer = issuer.rstrip("/")
        self.resource = resource
        self.upstream = upstream
        self.idp = idp
        self.allow = allow if allow is not None else AllowPolicy(())
        self.scopes = tuple(scopes)
        self.store: ProxyStore = store if store is not None else MemoryProxyStore()
        if not isinstance(self.store, MemoryProxyStore) and (keys is None or sealer is None):
            # Keys made here would differ per worker: a step reaching another one would fail.
            raise ValueError(
                "a shared store needs shared keys: give keys= and sealer= (MCP_AUTH_SIGNING_KEYS, MCP_AUTH_SECRETS)"
            )
        self.keys = keys if keys is not None else SigningKeys.generate()
        self.sealer = sealer if sealer is not None else Sealer.generate()
        self.redirect_allow = tuple(redirect_allow)
        self.strict_redirects = strict_redirects
        self.token_ttl = token_ttl
        self.refresh_ttl = refresh_ttl
        self.client_documents = client_documents
        self.client_documents_private = client_documents_private
        self.dpop = dpop
        self.callback_url = self.issuer + "/oauth/callback"
        self._own_http = http is None
        self._http = http
        self._clock = clock
        self._secure = parts.scheme == "https"
        self._routes: dict[tuple[str, str], Callable[[Scope, Receive, Send], Awaitable[None]]] = {
            ("GET", METADATA_PATH): self._metadata,
            ("GET", "/oauth/jwks"): self._jwks,
            ("POST", "/oauth/register"): self._register,
            ("GET", "/oauth/authorize"): self._authorize,
            ("POST", "/oauth/consent"): self._consent,
            ("GET", "/oauth/callback"): self._callback,
            ("POST", "/oauth/token"): self._token,
            ("POST", "/oauth/revoke"): self._revoke,
        }

    # --- wiring ----------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 document."""
        base = self.issuer
        return {
            "issuer": base,
            "authorization_endpoint": base + "/oauth/authorize",
            "token_endpoint": base + "/oauth/token",
            "registration_endpoint": base + "/oauth/register",
            "revocation_endpoint": base + "/oauth/revoke",
            "jwks_uri": base + "/oauth/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": [*self.scopes, "offline_access"],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": self.client_documents,
            **({"dpop_signing_alg_values_supported": list(self.dpop.algorithms)} if self.dpop is not None else {}),
        }

    def resource_server(self, required_scopes: Iterable[str] = (), **options: Any) -> ResourceServer:
        """The ``ResourceServer`` that accepts our tokens only (issuer ours, audience the resource,
        ES256 over our own key set, ``typ at+jwt``), and serves the proxy's endpoints beside the MCP
        endpoint (``McpHttpApp(settings=HttpSettings(auth=...))``); ``options`` go to
        ``ResourceServer``."""
        from ..jwt_verifier import JwtVerifier
        from ..resource import ResourceServer
        from .tokens import GrantVerifier

        verifier = GrantVerifier(
            JwtVerifier(
                issuer=self.issuer,
                audience=self.resource,
                keys=self.keys.jwks(),
                algorithms=("ES256",),
                accepted_types=("at+jwt",),
            ),
            self,
        )
        options.setdefault("scopes_supported", self.scopes)
        options.setdefault("authorization_routes", self.wrap)
        return ResourceServer(
            self.resource, [self.issuer], verifier=verifier, required_scopes=required_scopes, **options
        )

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """An ASGI app serving the proxy's endpoints and passing every other request to ``app``."""

        async def serve(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                handler = self._routes.get((scope["method"], scope["path"]))
                if handler is not None:
                    await self._serve(handler, scope, receive, send)
                    return
            await app(scope, receive, send)

        return serve

    async def _serve(
        self, handler: Callable[[Scope, Receive, Send], Awaitable[None]], scope: Scope, receive: Receive, send: Send
    ) -> None:
        """``handler``, answering 503 when the store is out of reach before anything was sent."""
        started = False

        async def sending(message: dict[str, Any]) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await handler(scope, receive, sending)
        except ProxyStoreUnavailable as error:
            logger.warning("auth proxy: %s", error)
            if started:
                raise
            body = b'{"error":"temporarily_unavailable"}'
            headers = [(b"content-type", b"application/json"), (b"retry-after", b"1"), (b"cache-control", b"no-store")]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body})

    async def upstream_token(self, token: AccessToken) -> str | None:
        """The IdP's access token of the grant ``token`` (one of ours) was issued under, for a tool
        that calls the IdP's API; None when the grant is gone. Never sent to a client."""
        grant = await self._load(f"grant:{token.claims.get('sid')}")
        if grant is None:
            return None
        value = grant["upstream"].get("access_token")
        return str(value) if isinstance(value, str) else None

    async def aclose(self) -> None:
        """Close the HTTP client the proxy made for itself."""
        if self._own_http and self._http is not None:
            await self._http.aclose()

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(follow_redirects=False)
        return self._http

    # --- the store, sealed -----------------------------------------------------------------

    async def _save(self, key: str, record: Mapping[str, Any], ttl: float) -> None:
        await self.store.put(key, self.sealer.seal(orjson.dumps(record), key.encode()), ttl)

    def _open(self, key: str, sealed: bytes | None) -> dict[str, Any] | None:
        if sealed is None:
            return None
        data = self.sealer.open(sealed, key.encode())
        if data is None:
            return None
        record = orjson.loads(data)
        return record if isinstance(record, dict) else None

    async def _load(self, key: str) -> dict[str, Any] | None:
        return self._open(key, await self.store.get(key))

    async def _take(self, key: str) -> dict[str, Any] | None:
        return self._open(key, await self.store.take(key))

    # --- metadata, keys, registration ----------------------------------------------------------

    async def _metadata(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _json(send, 200, self.metadata(), cache=True)

    async def _jwks(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _json(send, 200, self.keys.jwks(), cache=True)

    async def _register(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _body(receive)
        try:
            if body is None:
                raise _Refusal("invalid_client_metadata", "the registration is larger than 16 KiB")
            try:
                metadata = orjson.loads(body)
            except orjson.JSONDecodeError:
                metadata = None
            if not isinstance(metadata, dict):
                raise _Refusal("invalid_client_metadata", "the registration must be a JSON object")
            record = self._client_record(metadata)
        except _Refusal as refusal:
            await _json(send, refusal.status, {"error": refusal.error, "error_description": refusal.description})
            return
        client_id = "mcp_" + secrets.token_urlsafe(18)
        record["client_id"] = client_id
        record["client_id_issued_at"] = int(self._clock())
        await self._save(f"cl:{client_id}", record, _CLIENT_TTL)
        await _json(send, 201, record)

    def _client_record(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        method = metadata.get("token_endpoint_auth_method", "none")
        if method != "none":
            raise _Refusal("invalid_client_metadata", "only public clients (token_endpoint_auth_method none) register")
        uris = metadata.get("redirect_uris")
        if not isinstance(uris, list) or not uris or len(uris) > 10:
            raise _Refusal("invalid_redirect_uri", "redirect_uris: a list of 1 to 10 URIs")
        for uri in uris:
            try:
                redirects.check_registered(uri, self.redirect_allow)
            except ValueError as error:
                raise _Refusal("invalid_redirect_uri", str(error)) from None
        grants = metadata.get("grant_types", ["authorization_code"])
        if not isinstance(grants, list) or not set(grants) <= {"authorization_code", "refresh_token"}:
            raise _Refusal("invalid_client_metadata", "grant_types: authorization_code and refresh_token only")
        responses = metadata.get("response_types", ["code"])
        if responses != ["code"]:
            raise _Refusal("invalid_client_metadata", "response_types: code only")
        name = metadata.get("client_name", "")
        if not isinstance(name, str) or len(name) > 100:
            raise _Refusal("invalid_client_metadata", "client_name: a string of at most 100 characters")
        return {
            "redirect_uris": uris,
            "grant_types": grants,
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "client_name": name,
        }

    # --- authorize and consent ----------------------------------------------------------------

    async def _client_of(self, client_id: str) -> tuple[dict[str, Any] | None, str]:
        """The client's record (registered, or its metadata document), or None and why."""
        from .cimd import is_client_document_url

        if not client_id:
            return None, "The request names no client."
        if not is_client_document_url(client_id):
            record = await self._load(f"cl:{client_id}")
            return record, "This application is not registered with this server."
        if not self.client_documents:
            return None, "This server does not take client ID metadata documents."
        key = f"cimd:{_digest(client_id)}"
        record = await self._load(key)
        if record is not None:
            return record, ""
        from .cimd import ClientDocumentError, fetch_client_document

        try:
            document = await fetch_client_document(
                self._client(), client_id, allow_private=self.client_documents_private
            )
            # Its redirect URIs: loopback, the document's own host over https, or the allowlist.
            own = f"https://{urlsplit(client_id).netloc}/*"
            for uri in document["redirect_uris"]:
                redirects.check_registered(uri, (*self.redirect_allow, own))
        except (ClientDocumentError, ValueError) as error:
            return None, f"The client's metadata document was refused: {error}"
        grants = document.get("grant_types", ["authorization_code"])
        name = document.get("client_name")
        record = {
            "client_id": client_id,
            "redirect_uris": document["redirect_uris"],
            "grant_types": grants if isinstance(grants, list) else ["authorization_code"],
            "client_name": name[:100] if isinstance(name, str) else "",
            "document": True,
        }
        await self._save(key, record, 300.0)
        return record, ""

    async def _authorize(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = _query(scope)
        client_id = params.get("client_id", "")
        client, problem = await self._client_of(client_id)
        if client is None:
            await _page(send, 400, "Unknown client", problem)
            return
        redirect_uri = params.get("redirect_uri")
        if redirect_uri is None and len(client["redirect_uris"]) == 1:
            redirect_uri = client["redirect_uris"][0]
        if redirect_uri is None or not redirects.matches(
            redirect_uri, client["redirect_uris"], strict=self.strict_redirects
        ):
            # Never a redirect: the URI is not known to be the client's.
            await _page(send, 400, "Invalid redirect URI", "The redirect URI is not one this application registered.")
            return
        state = params.get("state")

        async def refuse(error: str, description: str) -> None:
            await self._to_client(send, redirect_uri, {"error": error, "error_description": description}, state)

        if params.get("response_type") != "code":
            await refuse("unsupported_response_type", "response_type must be code")
            return
        challenge = params.get("code_challenge", "")
        if params.get("code_challenge_method") != "S256" or not 43 <= len(challenge) <= 128:
            await refuse("invalid_request", "PKCE with code_challenge_method S256 is required")
            return
        resource = params.get("resource", self.resource)
        if resource != self.resource:
            await refuse("invalid_target", "resource must be this server's MCP endpoint")
            return
        asked = params.get("scope", "").split()
        unknown = [s for s in asked if s not in self.scopes and s != "offline_access"]
        if unknown:
            await refuse("invalid_scope", f"unknown scope {unknown[0]}")
            return
        granted = [s for s in asked if s in self.scopes] or list(self.scopes)
        txn = secrets.token_urlsafe(32)
        csrf = secrets.token_urlsafe(32)
        await self._save(
            f"tx:{txn}",
            {
                "client_id": client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "challenge": challenge,
                "jkt": params.get("dpop_jkt"),  # RFC 9449 10: the code bound to this key
                "resource": resource,
                "scopes": granted,
                "csrf": csrf,
                "verifier": secrets.token_urlsafe(48),
                "nonce": secrets.token_urlsafe(24),
                "consented": False,
            },
            _TX_TTL,
        )
        await self._consent_page(send, txn, csrf, client, redirect_uri, granted)

    async def _consent_page(
        self, send: Send, txn: str, csrf: str, client: Mapping[str, Any], redirect_uri: str, scopes: list[str]
    ) -> None:
        e = html.escape
        host = urlsplit(redirect_uri).netloc or redirect_uri
        name = client.get("client_name") or client["client_id"]
        if client.get("document"):
            name = f"{name} (described by {urlsplit(client['client_id']).netloc})"
        loopback = urlsplit(redirect_uri).hostname in ("127.0.0.1", "::1", "localhost")
        warning = (
            "<p><strong>It sends you back to this computer:</strong> any program here could be it.</p>"
            if loopback
            else ""
        )
        unverified = "" if client.get("document") else " (name not verified)"
        body = (
            f"<p><b>{e(name)}</b>{unverified} asks to use this server on your behalf, "
            f"with the scopes <b>{e(' '.join(scopes))}</b>.</p>"
            f"<p>After you sign in at <b>{e(self.upstream.issuer)}</b>, you go back to <b>{e(host)}</b>.</p>"
            f"{warning}"
            f'<form method="post" action="/oauth/consent">'
            f'<input type="hidden" name="txn" value="{e(txn)}">'
            f'<input type="hidden" name="csrf" value="{e(csrf)}">'
            f'<button name="decision" value="approve">Allow</button> '
            f'<button name="decision" value="deny">Deny</button></form>'
        )
        await _page(
            send, 200, "Allow access?", body, raw=True, cookies=[self._cookie(f"mcp_csrf_{txn[:16]}", csrf, 600)]
        )

    def _cookie(self, name: str, value: str, max_age: int) -> bytes:
        # One cookie per transaction (two renders in one browser do not race); __Host-: only over
        # https (browsers refuse it otherwise); Lax: sent on the IdP's top-level redirect back.
        prefix = "__Host-" if self._secure else ""
        secure = "; Secure" if self._secure else ""
        return f"{prefix}{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}".encode()

    def _cookie_of(self, scope: Scope, name: str) -> str | None:
        wanted = ("__Host-" if self._secure else "") + name
        for key, value in scope["headers"]:
            if key == b"cookie":
                for part in value.decode("latin-1").split(";"):
                    cookie, _, content = part.strip().partition("=")
                    if cookie == wanted:
                        return str(content)
        return None

    async def _consent(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _body(receive)
        form = dict(parse_qsl(body.decode("latin-1"))) if body is not None else {}
        txn = form.get("txn", "")
        tx = await self._load(f"tx:{txn}") if txn else None
        cookie = self._cookie_of(scope, f"mcp_csrf_{txn[:16]}") or ""
        sent = form.get("csrf", "")
        if (
            tx is None
            or tx["consented"]
            or not sent
            or not hmac.compare_digest(sent, tx["csrf"])
            or not hmac.compare_digest(cookie, tx["csrf"])
        ):
            await _page(send, 403, "Refused", "This consent form is not valid here: start again from the application.")
            return
        if form.get("decision") != "approve":
            await self.store.delete(f"tx:{txn}")
            await self._to_client(send, tx["redirect_uri"], {"error": "access_denied"}, tx["state"])
            return
        tx["consented"] = True
        await self._save(f"tx:{txn}", tx, _TX_TTL)
        url = self.upstream.authorize_url(
            callback=self.callback_url, state=txn, challenge=_s256(tx["verifier"]), nonce=tx["nonce"]
        )
        await _redirect(send, url, cookies=[self._cookie(f"mcp_bind_{txn[:16]}", self.sealer.mac(txn.encode()), 600)])

    # --- the upstream callback ------------------------------------------------------------------

    async def _callback(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = _query(scope)
        txn = params.get("state", "")
        tx = await self._take(f"tx:{txn}") if txn else None
        if tx is None:
            await _page(send, 400, "Sign-in expired", "This sign-in is unknown or was already completed.")
            return
        bound = self._cookie_of(scope, f"mcp_bind_{txn[:16]}") or ""
        if not tx["consented"] or not hmac.compare_digest(bound, self.sealer.mac(txn.encode())):
            await _page(send, 403, "Refused", "This sign-in was not started in this browser.")
            return
        if ("iss" in params or self.upstream.iss_parameter) and params.get("iss") != self.upstream.issuer:
            # A mix-up: this answer comes from another IdP than the one this sign-in went to.
            await _page(send, 400, "Refused", "The identity provider's answer names another issuer.")
            return
        redirect_uri, state = tx["redirect_uri"], tx["state"]
        if "error" in params or "code" not in params:
            # Only access_denied passes through; the IdP's own words never reach the client.
            error = "access_denied" if params.get("error") == "access_denied" else "server_error"
            await self._to_client(send, redirect_uri, {"error": error}, state)
            return
        http = self._client()
        try:
            tokens = await self.upstream.exchange(
                http, code=params["code"], callback=self.callback_url, verifier=tx["verifier"]
            )
            claims = await self.upstream.identity(http, tokens, nonce=tx["nonce"])
        except UpstreamError as error:
            logger.warning("auth proxy: sign-in at %s failed: %s", self.upstream.issuer, error)
            await self._to_client(
                send, redirect_uri, {"error": "server_error", "error_description": "the sign-in failed"}, state
            )
            return
        if not self.allow.admits(claims):
            await self._to_client(
                send,
                redirect_uri,
                {"error": "access_denied", "error_description": "this account is not allowed here"},
                state,
            )
            return
        gid = secrets.token_urlsafe(16).replace("_", "-")
        now = self._clock()
        upstream = {
            "access_token": tokens["access_token"],
            "refresh_token": tokens.get("refresh_token"),
            "expires_at": now + float(tokens["expires_in"]) if "expires_in" in tokens else None,
        }
        await self._save(
            f"grant:{gid}",
            {
                "subject": f"{self.idp}:{claims['sub']}",
                "client_id": tx["client_id"],
                "scopes": tx["scopes"],
                "resource": tx["resource"],
                "created": now,
                "upstream": upstream,
            },
            self.refresh_ttl,
        )
        code = secrets.token_urlsafe(32)
        await self._save(
            f"code:{_digest(code)}",
            {
                "client_id": tx["client_id"],
                "redirect_uri": redirect_uri,
                "challenge": tx["challenge"],
                "jkt": tx.get("jkt"),
                "resource": tx["resource"],
                "grant": gid,
            },
            _CODE_TTL,
        )
        await self._to_client(send, redirect_uri, {"code": code}, state)

    async def _to_client(self, send: Send, redirect_uri: str, params: Mapping[str, str], state: str | None) -> None:
        """A redirect to a ``redirect_uri`` that passed the checks, with ``state`` and our ``iss``."""
        query = {**params, **({"state": state} if state is not None else {}), "iss": self.issuer}
        joiner = "&" if "?" in redirect_uri else "?"
        await _redirect(send, redirect_uri + joiner + urlencode(query))

    # --- token and revocation -------------------------------------------------------------------

    async def _token(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _body(receive)
        form = dict(parse_qsl(body.decode("latin-1"))) if body is not None else {}
        try:
            client_id = _client_id(scope, form)
            jkt = await self._proof(scope)
            grant_type = form.get("grant_type")
            if grant_type == "authorization_code":
                answer = await self._redeem(client_id, form, jkt)
            elif grant_type == "refresh_token":
                answer = await self._refresh(client_id, form, jkt)
            else:
                raise _Refusal("unsupported_grant_type", "grant_type: authorization_code or refresh_token")
        except _Refusal as refusal:
            error = {"error": refusal.error, "error_description": refusal.description}
            await _json(send, refusal.status, error, headers=refusal.headers)
            return
        await _json(send, 200, answer)

    async def _proof(self, scope: Scope) -> str | None:
        """The thumbprint of the key a valid DPoP proof at this endpoint proves (None: no proof,
        or DPoP off); ``_Refusal`` for a bad, replayed or nonce-less proof."""
        if self.dpop is None:
            return None
        proofs = [value for key, value in scope["headers"] if key == b"dpop"]
        if not proofs:
            return None
        if len(proofs) > 1:
            raise _Refusal("invalid_dpop_proof", "send one DPoP proof")
        from ..dpop import DPoPRefused

        try:
            proof = self.dpop.check(proofs[0], "POST", self.issuer, "/oauth/token", None)
        except DPoPRefused as refused:
            headers = []
            if refused.error == "use_dpop_nonce" and self.dpop.nonces is not None:
                headers.append((b"dpop-nonce", self.dpop.nonces.issue().encode()))
            raise _Refusal(refused.error, refused.reason, headers=headers) from None
        if not await self.dpop.first_use(proof):
            raise _Refusal("invalid_dpop_proof", "the proof was used before")
        return proof.jkt

    async def _redeem(self, client_id: str, form: Mapping[str, str], jkt: str | None) -> dict[str, Any]:
        code = form.get("code", "")
        if not code:
            raise _Refusal("invalid_request", "code is required")
        digest = _digest(code)
        record = await self._take(f"code:{digest}")
        if record is None:
            used = await self.store.get(f"used:{digest}")
            if used is not None:
                # A code redeemed twice was stolen or replayed: the grant it made goes too (RFC 9700).
                await self.store.delete(f"grant:{used.decode()}")
            raise _Refusal("invalid_grant", "the code is unknown, expired or already used")
        await self.store.put(f"used:{digest}", record["grant"].encode(), _USED_TTL)
        verifier = form.get("code_verifier", "")
        if (
            record["client_id"] != client_id
            or form.get("redirect_uri", record["redirect_uri"]) != record["redirect_uri"]
            or form.get("resource", record["resource"]) != record["resource"]
            or not 43 <= len(verifier) <= 128
            or not hmac.compare_digest(_s256(verifier), record["challenge"])
        ):
            await self.store.delete(f"grant:{record['grant']}")
            raise _Refusal("invalid_grant", "the code does not belong to this request (client, redirect, PKCE)")
        if record.get("jkt") is not None and record["jkt"] != jkt:
            await self.store.delete(f"grant:{record['grant']}")
            raise _Refusal("invalid_grant", "the code is bound to another DPoP key (dpop_jkt)")
        grant = await self._load(f"grant:{record['grant']}")
        if grant is None:
            raise _Refusal("invalid_grant", "the grant is gone")
        client, _ = await self._client_of(client_id)
        refresh = client is not None and "refresh_token" in client.get("grant_types", ())
        answer, token_record = self._issue(record["grant"], grant, grant["scopes"], refresh, jkt)
        if token_record is not None:
            await self._save(*token_record)
        return answer

    def _issue(
        self, gid: str, grant: Mapping[str, Any], scopes: list[str], refresh: bool, jkt: str | None
    ) -> tuple[dict[str, Any], tuple[str, dict[str, Any], float] | None]:
        """A token answer for ``grant`` and the record of its new refresh token (None: none),
        bound to the DPoP key ``jkt`` when given."""
        now = int(self._clock())
        bound = {"cnf": {"jkt": jkt}} if jkt is not None else {}
        access = self.keys.sign(
            {
                **bound,
                "iss": self.issuer,
                "aud": grant["resource"],
                "sub": grant["subject"],
                "client_id": grant["client_id"],
                "scope": " ".join(scopes),
                "iat": now,
                "exp": now + int(self.token_ttl),
                "jti": secrets.token_urlsafe(16),
                "sid": gid,
                "idp": self.idp,
            }
        )
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "DPoP" if jkt is not None else "Bearer",
            "expires_in": int(self.token_ttl),
            "scope": " ".join(scopes),
        }
        if not refresh:
            return answer, None
        token = f"mrt_{gid}_{secrets.token_urlsafe(32)}"
        answer["refresh_token"] = token
        record = {"grant": gid, "state": "active", "scopes": scopes, "jkt": jkt}
        return answer, (f"rt:{_digest(token)}", record, self.refresh_ttl)

    async def _refresh(self, client_id: str, form: Mapping[str, str], jkt: str | None) -> dict[str, Any]:
        token = form.get("refresh_token", "")
        parts = token.split("_", 2)
        if len(parts) != 3 or parts[0] != "mrt":
            raise _Refusal("invalid_grant", "the refresh token is unknown")
        gid = parts[1]
        grant = await self._load(f"grant:{gid}")
        if grant is None or grant["client_id"] != client_id:
            raise _Refusal("invalid_grant", "the refresh token is unknown or revoked")
        key = f"rt:{_digest(token)}"
        current = await self._load(key)
        if current is None or current.get("grant") != gid:
            raise _Refusal("invalid_grant", "the refresh token is unknown")
        if current.get("jkt") is not None and current["jkt"] != jkt:
            # A bound refresh token (RFC 9449 5): good only with a proof by its key.
            raise _Refusal("invalid_grant", "the refresh token is bound to a DPoP key this request does not prove")
        scopes = current["scopes"]
        asked = form.get("scope")
        if asked is not None:
            if not set(asked.split()) <= set(scopes):
                raise _Refusal("invalid_scope", "a refresh cannot widen the grant")
            scopes = asked.split()
        answer, fresh = self._issue(gid, grant, scopes, True, current.get("jkt"))
        assert fresh is not None
        now = self._clock()
        rotated = {
            "grant": gid,
            "state": "rotated",
            "scopes": current["scopes"],
            "grace_until": now + _GRACE,
            "jkt": current.get("jkt"),
            "answer": answer,
        }
        # One atomic step decides who rotated this token: the first swap finds it active.
        previous = self._open(
            key, await self.store.swap(key, self.sealer.seal(orjson.dumps(rotated), key.encode()), self.refresh_ttl)
        )
        if previous is not None and previous["state"] == "active":
            await self._save(*fresh)
            if not await self._refresh_upstream(gid):
                # The IdP no longer honours the user's grant: neither do we (a new sign-in is needed).
                await self.store.delete(f"grant:{gid}")
                raise _Refusal("invalid_grant", "the identity provider ended this sign-in; sign in again")
            return answer
        if previous is not None and previous["state"] == "rotated" and now <= previous["grace_until"]:
            # Within the grace window: the same answer again (a lost answer, a double refresh).
            await self._save(key, previous, self.refresh_ttl)
            stashed: dict[str, Any] = previous["answer"]
            return stashed
        # A rotated token after its window: replayed, so the whole family goes (RFC 9700 4.14).
        await self.store.delete(f"grant:{gid}")
        await self.store.delete(key)
        raise _Refusal("invalid_grant", "the refresh token was already used; the grant is revoked")

    async def _refresh_upstream(self, gid: str) -> bool:
        """Refresh the grant's upstream token when it expires within a minute, under a lock one
        worker holds (another finding it taken leaves it to that one); False when the IdP refused
        (``invalid_grant``). A failure to reach the IdP keeps the old token (tried next time)."""
        grant = await self._load(f"grant:{gid}")
        if grant is None:
            return False
        if not self._upstream_due(grant):
            return True
        lock = f"lock:{gid}"
        if not await self.store.add(lock, b"1", 15.0):
            return True
        try:
            grant = await self._load(f"grant:{gid}")  # again, under the lock: another may have done it
            if grant is None:
                return False
            if not self._upstream_due(grant):
                return True
            held = grant["upstream"]
            try:
                tokens = await self.upstream.refresh(self._client(), held["refresh_token"])
            except UpstreamError as error:
                logger.warning("auth proxy: upstream refresh at %s failed: %s", self.upstream.issuer, error)
                return error.error != "invalid_grant"
            now = self._clock()
            grant["upstream"] = {
                "access_token": tokens["access_token"],
                # An IdP that does not rotate (Cognito) sends none: the old one stays good.
                "refresh_token": tokens.get("refresh_token") or held["refresh_token"],
                "expires_at": now + float(tokens["expires_in"]) if "expires_in" in tokens else None,
            }
            left = self.refresh_ttl - (now - float(grant["created"]))
            if left > 0:
                await self._save(f"grant:{gid}", grant, left)
            return left > 0
        finally:
            await self.store.delete(lock)

    def _upstream_due(self, grant: Mapping[str, Any]) -> bool:
        held = grant["upstream"]
        expires = held.get("expires_at")
        return bool(held.get("refresh_token")) and expires is not None and expires - self._clock() < 60

    async def _revoke(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _body(receive)
        form = dict(parse_qsl(body.decode("latin-1"))) if body is not None else {}
        try:
            client_id = _client_id(scope, form)
        except _Refusal as refusal:
            await _json(send, refusal.status, {"error": refusal.error, "error_description": refusal.description})
            return
        token = form.get("token", "")
        parts = token.split("_", 2)
        if len(parts) == 3 and parts[0] == "mrt" and await self.store.get(f"rt:{_digest(token)}") is not None:
            grant = await self._load(f"grant:{parts[1]}")
            if grant is not None and grant["client_id"] == client_id:
                await self.store.delete(f"grant:{parts[1]}")
                upstream = grant["upstream"]
                held = upstream.get("refresh_token") or upstream.get("access_token")
                if isinstance(held, str):
                    hint = "refresh_token" if upstream.get("refresh_token") else "access_token"
                    await self.upstream.revoke(self._client(), held, hint)
        await _json(send, 200, {})  # RFC 7009: the same answer whatever the token was


def _client_id(scope: Scope, form: Mapping[str, str]) -> str:
    """The public client's id, from the form (``none``) or a Basic header without a secret."""
    client_id = form.get("client_id", "")
    for key, value in scope["headers"]:
        if key == b"authorization" and value[:6].lower() == b"basic ":
            try:
                decoded = base64.b64decode(value[6:]).decode()
            except ValueError:
                raise _Refusal("invalid_client", "the Basic credentials do not decode", 401) from None
            from urllib.parse import unquote

            client_id = unquote(decoded.partition(":")[0])
    if not client_id:
        raise _Refusal("invalid_client", "client_id is required", 401)
    return client_id


def _query(scope: Scope) -> dict[str, str]:
    params: dict[str, str] = {}
    for name, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
        params.setdefault(name, value)
    return params


async def _body(receive: Receive) -> bytes | None:
    """The request body, or None when it is larger than 16 KiB."""
    chunks = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _json(
    send: Send, status: int, body: Any, *, cache: bool = False, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    data = orjson.dumps(body)
    sent = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"public, max-age=300" if cache else b"no-store"),
        *headers,
    ]
    if cache:
        sent.append((b"access-control-allow-origin", b"*"))
    await send({"type": "http.response.start", "status": status, "headers": sent})
    await send({"type": "http.response.body", "body": data})


async def _redirect(send: Send, location: str, *, cookies: Iterable[bytes] = ()) -> None:
    headers = [(b"location", location.encode()), (b"cache-control", b"no-store"), (b"content-length", b"0")]
    headers += [(b"set-cookie", cookie) for cookie in cookies]
    await send({"type": "http.response.start", "status": 302, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def _page(
    send: Send, status: int, title: str, text: str, *, raw: bool = False, cookies: Iterable[bytes] = ()
) -> None:
    content = text if raw else f"<p>{html.escape(text)}</p>"
    data = (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
        f"<body><h1>{html.escape(title)}</h1>{content}</body></html>"
    ).encode()
    headers = [*_PAGE_HEADERS, (b"content-length", str(len(data)).encode())]
    headers += [(b"set-cookie", cookie) for cookie in cookies]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
