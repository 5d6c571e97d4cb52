"""The OAuth proxy: an authorization server of our own in front of an identity provider that lets
MCP clients neither register nor ask for tokens meant for this server (GitHub, Google, Entra,
generic OIDC). Clients register and authorize here (PKCE, consent); the user signs in at the IdP;
clients get our own ES256 tokens, and the IdP's stay here, sealed.

* ``AuthProxy`` (``server.py``): the endpoints, and the ``ResourceServer`` that takes our tokens.
* ``Upstream`` (``upstream.py``): the IdP as our OpenID client of it.
* ``SigningKeys``, ``Sealer`` (``keys.py``): the signing and sealing rings, apart.
* ``ProxyStore``, ``MemoryProxyStore`` (``store.py``): flow state with atomic take and swap.
* ``redirects.py``: redirect-URI registration and matching rules.
"""

from .keys import Sealer, SigningKeys
from .server import AuthProxy
from .store import MemoryProxyStore, ProxyStore
from .upstream import Upstream, UpstreamError

__all__ = ["AuthProxy", "MemoryProxyStore", "ProxyStore", "Sealer", "SigningKeys", "Upstream", "UpstreamError"]
