"""``ProxyState``: what the proxy's endpoint groups share. The settings (issuer, resource, the
IdP, the allow policy, scopes, lifetimes, redirect and client-document rules, DPoP), the flow
store read and written sealed, one HTTP client, the clock, and the browser cookies of a sign-in.

Every record is sealed under its own key as associated data, so a record copied to another key
does not open. A shared store needs shared keys: keys generated here would differ per worker,
and a step reaching another worker would fail.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Required, TypedDict, Unpack
from urllib.parse import urlencode, urlsplit

import orjson

from ..providers.policy import AllowPolicy
from . import asgi
from .keys import Sealer, SigningKeys
from .store import MemoryProxyStore, ProxyStore
from .upstream import Upstream

if TYPE_CHECKING:
    import httpx

    from ...engine.tokens import AccessToken
    from ..dpop import DPoP

__all__ = ["ProxyOptions", "ProxyState", "digest", "s256"]


def s256(verifier: str) -> str:
    """The PKCE S256 challenge of ``verifier``."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def digest(secret: str) -> str:
    """The store key part of a secret (codes, refresh tokens): never the secret itself."""
    return hashlib.sha256(secret.encode()).hexdigest()


class ProxyOptions(TypedDict, total=False):
    """What ``AuthProxy`` (and its ``ProxyState``) take, as keywords; ``issuer``, ``resource`` and
    ``upstream`` are required, the others have the defaults said here."""

    issuer: Required[str]
    """Our origin (``https://mcp.example``; ``http`` on loopback only)."""
    resource: Required[str]
    """The MCP endpoint's URL (every token's audience)."""
    upstream: Required[Upstream]
    """The IdP."""
    idp: str
    """The preset's name, the prefix of our subjects (``"oidc"``)."""
    allow: AllowPolicy | None
    """Who may sign in: the preset's ``AllowPolicy`` (None, or empty, admits anyone the IdP vouches
    for)."""
    scopes: Iterable[str]
    """Ours, what clients may ask for (``("mcp:tools",)``)."""
    store: ProxyStore | None
    """Flow state (a ``MemoryProxyStore`` when None; any other needs ``keys`` and ``sealer``)."""
    keys: SigningKeys | None
    """The signing ring (generated for one process when None)."""
    sealer: Sealer | None
    """The sealing ring (generated for one process when None)."""
    redirect_allow: Iterable[str]
    """https redirect patterns clients may register (none)."""
    strict_redirects: bool
    """No loopback port exception (False)."""
    token_ttl: float
    """Access token lifetime in seconds (300)."""
    refresh_ttl: float
    """Refresh token lifetime in seconds (30 days)."""
    client_documents: bool
    """Take https client ids as client ID metadata documents (``cimd.py``; True)."""
    client_documents_private: bool
    """Fetch those documents from private addresses too (tests and closed networks only: SSRF;
    False)."""
    dpop: DPoP | None
    """DPoP at the token endpoint (RFC 9449): a request with a valid proof gets tokens bound to its
    key (``cnf.jkt``, ``token_type`` DPoP), and its refresh token is good only with a proof by that
    key (off when None)."""
    http: httpx.AsyncClient | None
    """The HTTP client (one of our own, closed with us, when None)."""
    clock: Callable[[], float]
    """Wall-clock seconds (``time.time``)."""


class ProxyState:
    """The settings, sealed store, HTTP client and clock of one ``AuthProxy`` (``ProxyOptions``
    describes the arguments)."""

    def __init__(self, **options: Unpack[ProxyOptions]) -> None:
        from ..urls import check_fetch_url

        issuer = options["issuer"]
        keys = options.get("keys")
        sealer = options.get("sealer")
        store = options.get("store")
        allow = options.get("allow")
        http = options.get("http")
        parts = urlsplit(issuer)
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"the proxy's issuer is an origin (scheme, host, port): {issuer!r}")
        check_fetch_url("the proxy's issuer", issuer)
        self.issuer = issuer.rstrip("/")
        self.resource = options["resource"]
        self.upstream = options["upstream"]
        self.idp = options.get("idp", "oidc")
        self.allow = allow if allow is not None else AllowPolicy(())
        self.scopes = tuple(options.get("scopes", ("mcp:tools",)))
        self.store: ProxyStore = store if store is not None else MemoryProxyStore()
        if not isinstance(self.store, MemoryProxyStore) and (keys is None or sealer is None):
            raise ValueError(
                "a shared store needs shared keys: give keys= and sealer= (MCP_AUTH_SIGNING_KEYS, MCP_AUTH_SECRETS)"
            )
        self.keys = keys if keys is not None else SigningKeys.generate()
        self.sealer = sealer if sealer is not None else Sealer.generate()
        self.redirect_allow = tuple(options.get("redirect_allow", ()))
        self.strict_redirects = options.get("strict_redirects", False)
        self.token_ttl = options.get("token_ttl", 300.0)
        self.refresh_ttl = options.get("refresh_ttl", 30 * 86400.0)
        self.client_documents = options.get("client_documents", True)
        self.client_documents_private = options.get("client_documents_private", False)
        self.dpop = options.get("dpop")
        self.callback_url = self.issuer + "/oauth/callback"
        self.clock = options.get("clock", time.time)
        self.secure = parts.scheme == "https"
        self._own_http = http is None
        self._http = http

    # --- the store, sealed -----------------------------------------------------------------

    async def save(self, key: str, record: Mapping[str, Any], ttl: float) -> None:
        """Store ``record`` sealed under ``key`` for ``ttl`` seconds."""
        await self.store.put(key, self.seal(key, record), ttl)

    def seal(self, key: str, record: Mapping[str, Any]) -> bytes:
        """``record`` sealed for ``key``."""
        return self.sealer.seal(orjson.dumps(record), key.encode())

    def open(self, key: str, sealed: bytes | None) -> dict[str, Any] | None:
        """The record sealed for ``key``, None when absent or not ours."""
        if sealed is None:
            return None
        data = self.sealer.open(sealed, key.encode())
        if data is None:
            return None
        record = orjson.loads(data)
        return record if isinstance(record, dict) else None

    async def load(self, key: str) -> dict[str, Any] | None:
        """The record at ``key``."""
        return self.open(key, await self.store.get(key))

    async def take(self, key: str) -> dict[str, Any] | None:
        """The record at ``key``, deleted in the same step (a second take finds nothing)."""
        return self.open(key, await self.store.take(key))

    async def upstream_token(self, token: AccessToken) -> str | None:
        """The IdP's access token of the grant ``token`` (one of ours) was issued under; None when
        the grant is gone. Never sent to a client."""
        grant = await self.load(f"grant:{token.claims.get('sid')}")
        if grant is None:
            return None
        value = grant["upstream"].get("access_token")
        return str(value) if isinstance(value, str) else None

    # --- the HTTP client ---------------------------------------------------------------------

    def client(self) -> httpx.AsyncClient:
        """The HTTP client for the IdP and client documents (made on first use unless given)."""
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(follow_redirects=False)
        return self._http

    async def aclose(self) -> None:
        """Close the HTTP client made here."""
        if self._own_http and self._http is not None:
            await self._http.aclose()

    # --- the browser ---------------------------------------------------------------------------

    def cookie(self, name: str, value: str, max_age: int) -> bytes:
        """A ``set-cookie`` value for this browser."""
        # One cookie per transaction (two renders in one browser do not race); __Host-: only over
        # https (browsers refuse it otherwise); Lax: sent on the IdP's top-level redirect back.
        prefix = "__Host-" if self.secure else ""
        secure = "; Secure" if self.secure else ""
        return f"{prefix}{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}".encode()

    def cookie_of(self, scope: asgi.Scope, name: str) -> str | None:
        """The value of the request's cookie ``name`` (set by ``cookie``), None when absent."""
        wanted = ("__Host-" if self.secure else "") + name
        for key, value in scope["headers"]:
            if key == b"cookie":
                for part in value.decode("latin-1").split(";"):
                    cookie, _, content = part.strip().partition("=")
                    if cookie == wanted:
                        return str(content)
        return None

    async def to_client(self, send: asgi.Send, redirect_uri: str, params: Mapping[str, str], state: str | None) -> None:
        """A redirect to a ``redirect_uri`` that passed the checks, with ``state`` and our ``iss``."""
        query = {**params, **({"state": state} if state is not None else {}), "iss": self.issuer}
        joiner = "&" if "?" in redirect_uri else "?"
        await asgi.redirect(send, redirect_uri + joiner + urlencode(query))
