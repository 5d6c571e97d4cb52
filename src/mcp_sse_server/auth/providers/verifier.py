"""``ProviderVerifier``: a preset's verifier: the token checked by the generic one (``JwtVerifier`` or
``IntrospectionVerifier``), then read the preset's way and put to the allow policy.

Order:

1. Cache: a token admitted before (and not expired) is answered from ``cache`` by its SHA-256.
   Only admitted tokens are kept there: the bearer layer reads this cache directly for a token
   seen before, so a refused one must never be in it. It keeps tokens no longer than the inner
   verifier's own cache does (an introspected token revoked is refused within its ``cache_ttl``
   here too); an inner verifier without such a cache gets none here either.
2. The inner verifier: signature, issuer, audience, expiry (its ``InvalidToken`` and
   ``VerifierUnavailable`` pass through unchanged).
3. Scopes: the preset's ``scope_claims`` (Auth0's ``permissions``) are added to the token's.
4. The allow policy: a token it does not admit is ``NotAllowed`` (reason ``"not allowed"``); the
   subject is logged, never the token.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from ...engine.tokens import AccessToken, NotAllowed, TokenVerifier, VerifiedTokens, token_key
from .policy import AllowPolicy
from .presets import Preset

__all__ = ["ProviderVerifier"]

logger = logging.getLogger("mcp_sse_server.auth")


class ProviderVerifier:
    """Verifies tokens of ``preset``'s identity provider with ``inner``, admitting those ``policy``
    admits (order above). ``cache``: admitted tokens (by default one as long-lived as ``inner``'s)."""

    __slots__ = ("cache", "inner", "policy", "preset")

    def __init__(
        self, inner: TokenVerifier, *, preset: Preset, policy: AllowPolicy, cache: VerifiedTokens | None = None
    ) -> None:
        self.inner = inner
        self.preset = preset
        self.policy = policy
        if cache is None:
            inner_cache = getattr(inner, "cache", None)
            if isinstance(inner_cache, VerifiedTokens):
                cache = VerifiedTokens(inner_cache.size, inner_cache.ttl, inner_cache.clock)
            else:
                cache = VerifiedTokens(ttl=0.0)
        self.cache = cache

    async def verify(self, token: str, /) -> AccessToken:
        key = token_key(token)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        verified = await self.inner.verify(token)
        extra = self._scopes(verified)
        if extra:
            verified = dataclasses.replace(verified, scopes=verified.scopes | extra)
        if not self.policy.admits(verified.claims):
            logger.info(
                "refused %s's token for subject %r: no allow rule admits it", self.preset.name, verified.subject
            )
            raise NotAllowed("not allowed")
        self.cache.put(key, verified)
        return verified

    def _scopes(self, token: AccessToken) -> frozenset[str]:
        found: set[str] = set()
        for name in self.preset.scope_claims:
            value: Any = token.claims.get(name)
            if isinstance(value, list):
                found.update(item for item in value if isinstance(item, str))
        return frozenset(found - token.scopes)

    async def aclose(self) -> None:
        """Close the inner verifier's HTTP client (when it made one)."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
