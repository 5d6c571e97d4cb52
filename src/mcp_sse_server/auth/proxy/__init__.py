"""The OAuth proxy: an authorization server of our own in front of an identity provider that lets
MCP clients neither register nor ask for tokens meant for this server (GitHub, Google, Entra,
generic OIDC). Clients register and authorize here (PKCE, consent); the user signs in at the IdP;
clients get our own ES256 tokens, and the IdP's stay here, sealed.

* ``AuthProxy`` (``server.py``): the endpoints, and the ``ResourceServer`` that takes our tokens;
  a facade over ``ProxyState`` (``state.py``) and the endpoint groups ``registration.py``,
  ``consent.py``, ``callback.py``, ``token_endpoint.py`` (``asgi.py``: their request/answer helpers).
* ``Upstream`` (``upstream.py``): the IdP as our OpenID client of it.
* ``SigningKeys``, ``Sealer`` (``keys.py``): the signing and sealing rings, apart.
* ``ProxyStore``, ``MemoryProxyStore`` (``store.py``): flow state with atomic take and swap;
  ``RedisProxyStore`` (``redis_store.py``, the ``redis`` extra) shares it between workers.
* ``redirects.py``: redirect-URI registration and matching rules.
* ``GrantToken`` (``tokens.py``): ``context.auth`` under the proxy; a tool calling the IdP's API
  for the same user asks ``await context.auth.upstream_token()``.
"""

from typing import TYPE_CHECKING

from .keys import Sealer, SigningKeys
from .server import AuthProxy
from .store import MemoryProxyStore, ProxyStore, ProxyStoreUnavailable
from .tokens import GrantToken, GrantVerifier
from .upstream import GITHUB_CLAIMS, GOOGLE_CLAIMS, Upstream, UpstreamError

if TYPE_CHECKING:
    from .redis_store import RedisProxyStore as RedisProxyStore


def __getattr__(name: str) -> object:
    if name == "RedisProxyStore":  # imported on use: redis is an optional extra
        from .redis_store import RedisProxyStore

        return RedisProxyStore
    raise AttributeError(name)


__all__ = [
    "GITHUB_CLAIMS",
    "GOOGLE_CLAIMS",
    "AuthProxy",
    "GrantToken",
    "GrantVerifier",
    "MemoryProxyStore",
    "ProxyStore",
    "ProxyStoreUnavailable",
    "RedisProxyStore",
    "Sealer",
    "SigningKeys",
    "Upstream",
    "UpstreamError",
]
