"""``AuthProxy``: an OAuth 2.1 authorization server facing MCP clients, and an OpenID client facing
an identity provider that offers them no registration (the spec's "mode B").

Endpoints (issuer = this server's origin; ``wrap(app)`` serves them beside the MCP endpoint), each
group in its module, all over one ``ProxyState`` (``state.py``: settings, the sealed store, the
HTTP client, the clock, cookies):

- ``registration.py``: ``GET /.well-known/oauth-authorization-server`` (RFC 8414),
  ``GET /oauth/jwks``, ``POST /oauth/register`` (RFC 7591), client ID metadata documents.
- ``consent.py``: ``GET /oauth/authorize`` and ``POST /oauth/consent``, up to the IdP.
- ``callback.py``: ``GET /oauth/callback``, back from the IdP: the grant and our code.
- ``token_endpoint.py``: ``POST /oauth/token`` (codes, refresh rotation, DPoP) and
  ``POST /oauth/revoke`` (RFC 7009); the formats of our tokens.

A request that finds the store out of reach is answered 503 ``temporarily_unavailable`` (with
``Retry-After``) when nothing was sent yet.

``resource_server()`` is the matching ``ResourceServer``: a ``JwtVerifier`` over our key set,
issuer ours, so an upstream token or ID token is refused there; its tokens are ``GrantToken``s
(``tokens.py``) whose ``upstream_token()`` asks this proxy.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Unpack

from . import asgi
from .callback import Callback
from .consent import Consent
from .keys import SigningKeys
from .registration import METADATA_PATH, Registration
from .state import ProxyOptions, ProxyState
from .store import ProxyStore, ProxyStoreUnavailable
from .token_endpoint import TokenEndpoint
from .tokens import GrantVerifier
from .upstream import Upstream

if TYPE_CHECKING:
    from ...engine.tokens import AccessToken
    from ..resource import ResourceServer

__all__ = ["AuthProxy"]

logger = logging.getLogger("mcp_sse_server.auth")


class AuthProxy:
    """The authorization-server facade (module docstring): builds the endpoint groups over one
    ``ProxyState`` (``state``) and routes requests to them.

    Its keywords are ``ProxyOptions`` (``state.py``, each described there): ``issuer``,
    ``resource`` and ``upstream`` required, the rest optional.
    """

    def __init__(self, **options: Unpack[ProxyOptions]) -> None:
        self.state = ProxyState(**options)
        self._registration = Registration(self.state)
        consent = Consent(self.state, self._registration)
        tokens = TokenEndpoint(self.state, self._registration)
        self._routes: dict[tuple[str, str], asgi.Handler] = {
            ("GET", METADATA_PATH): self._registration.serve_metadata,
            ("GET", "/oauth/jwks"): self._registration.serve_jwks,
            ("POST", "/oauth/register"): self._registration.register,
            ("GET", "/oauth/authorize"): consent.authorize,
            ("POST", "/oauth/consent"): consent.consent,
            ("GET", "/oauth/callback"): Callback(self.state).callback,
            ("POST", "/oauth/token"): tokens.token,
            ("POST", "/oauth/revoke"): tokens.revoke,
        }

    @property
    def issuer(self) -> str:
        """Our origin, without a trailing slash."""
        return self.state.issuer

    @property
    def resource(self) -> str:
        """The MCP endpoint's URL."""
        return self.state.resource

    @property
    def upstream(self) -> Upstream:
        """The IdP."""
        return self.state.upstream

    @property
    def scopes(self) -> tuple[str, ...]:
        """Our scopes."""
        return self.state.scopes

    @property
    def store(self) -> ProxyStore:
        """The flow store."""
        return self.state.store

    @property
    def keys(self) -> SigningKeys:
        """The signing ring of our tokens."""
        return self.state.keys

    @property
    def callback_url(self) -> str:
        """The callback registered at the IdP."""
        return self.state.callback_url

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 document."""
        return self._registration.metadata()

    def resource_server(self, required_scopes: Iterable[str] = (), **options: Any) -> ResourceServer:
        """The ``ResourceServer`` that accepts our tokens only (issuer ours, audience the resource,
        ES256 over our own key set, ``typ at+jwt``), and serves the proxy's endpoints beside the MCP
        endpoint (``McpHttpApp(settings=HttpSettings(auth=...))``); ``options`` go to
        ``ResourceServer``."""
        from ..jwt_verifier import JwtVerifier
        from ..resource import ResourceServer

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

    def wrap(self, app: asgi.ASGIApp) -> asgi.ASGIApp:
        """An ASGI app serving the proxy's endpoints and passing every other request to ``app``."""

        async def serve(scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
            if scope["type"] == "http":
                handler = self._routes.get((scope["method"], scope["path"]))
                if handler is not None:
                    await self._serve(handler, scope, receive, send)
                    return
            await app(scope, receive, send)

        return serve

    async def _serve(self, handler: asgi.Handler, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
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
        return await self.state.upstream_token(token)

    async def aclose(self) -> None:
        """Close the HTTP client the proxy made for itself."""
        await self.state.aclose()
