"""Authorization for a server exposed beyond the machine: bearer tokens checked as a resource server.

* ``AccessToken``, ``TokenVerifier``, ``InvalidToken``, ``VerifierUnavailable`` and
  ``VerifiedTokens`` (``tokens.py``): what a verifier returns, how it fails, its cache.
* ``JwtVerifier`` (``jwt_verifier.py``): JWT access tokens against an authorization
  server's key set (PyJWT, on ``cryptography``).
* ``IntrospectionVerifier`` (``introspection.py``): any token, asked about at the
  authorization server (RFC 7662).
* ``Backoff`` (``backoff.py``): when either verifier asks its authorization server again
  after it failed to answer (an outage is 503 for the tokens that need it, never 401).
* ``ResourceServer`` (``resource.py``): an endpoint's settings as a protected resource
  (``McpHttpApp(auth=...)``), and what it tells clients.
* ``DPoP``, ``DPoPNonces``, ``MemoryReplay``, ``RedisReplay`` (``dpop.py``): DPoP-bound
  tokens (RFC 9449), their proofs' replay cache and stateless nonces.

Imported on first use: a server without authorization loads none of it.
"""

from typing import TYPE_CHECKING

from ..engine._lazy import lazy_exports

if TYPE_CHECKING:
    from ..engine.tokens import (
        AccessToken as AccessToken,
    )
    from ..engine.tokens import (
        InvalidToken as InvalidToken,
    )
    from ..engine.tokens import (
        TokenVerifier as TokenVerifier,
    )
    from ..engine.tokens import (
        VerifiedTokens as VerifiedTokens,
    )
    from ..engine.tokens import (
        VerifierUnavailable as VerifierUnavailable,
    )
    from .dpop import DPoP as DPoP
    from .dpop import DPoPNonces as DPoPNonces
    from .dpop import MemoryReplay as MemoryReplay
    from .dpop import RedisReplay as RedisReplay
    from .introspection import IntrospectionVerifier as IntrospectionVerifier
    from .jwt_verifier import JwtVerifier as JwtVerifier
    from .resource import ResourceServer as ResourceServer


__getattr__, __dir__ = lazy_exports(__name__, __file__)
