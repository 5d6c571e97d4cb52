"""Our access tokens as tools see them: ``context.auth`` is a ``GrantToken`` when the endpoint's
resource server is the proxy's (``AuthProxy.resource_server``), so a tool that calls the identity
provider's API for the same user asks ``await context.auth.upstream_token()``. The IdP's token
never leaves the server: it is unsealed here for the tool's own outgoing call.

``GrantVerifier`` wraps the ``JwtVerifier`` of our tokens and shares its cache, so the HTTP layer's
fast path for a token seen before finds the ``GrantToken`` too.

Both reach the proxy through ``UpstreamTokens``, the one method they need of it, so this module
does not import ``server.py`` (which imports it).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

from ...engine.tokens import AccessToken, token_key

if TYPE_CHECKING:
    from ..jwt_verifier import JwtVerifier

__all__ = ["GrantToken", "GrantVerifier", "UpstreamTokens"]

_FIELDS = tuple(field.name for field in dataclasses.fields(AccessToken) if field.init)


class UpstreamTokens(Protocol):
    """Where a ``GrantToken`` finds the IdP's token of its sign-in (``AuthProxy``)."""

    async def upstream_token(self, token: AccessToken, /) -> str | None:
        """The IdP's access token of the grant ``token`` was issued under, None once it is gone."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class GrantToken(AccessToken):
    """One of our access tokens, verified, with the way to the sign-in it was issued under."""

    proxy: UpstreamTokens | None = dataclasses.field(default=None, repr=False, compare=False)

    async def upstream_token(self) -> str | None:
        """The IdP's access token of this user's sign-in (refreshed by the proxy within our
        refreshes), or None once the sign-in is revoked. For the tool's own calls to the IdP's
        API: never return it to the client."""
        if self.proxy is None:
            return None
        return await self.proxy.upstream_token(self)


class GrantVerifier:
    """Verifies our tokens with ``inner`` and answers ``GrantToken``s bound to ``proxy``."""

    __slots__ = ("cache", "inner", "proxy")

    def __init__(self, inner: JwtVerifier, proxy: UpstreamTokens) -> None:
        self.inner = inner
        self.proxy = proxy
        self.cache = inner.cache  # (shared: a token seen before comes back as a GrantToken)

    async def verify(self, token: str, /) -> AccessToken:
        verified = await self.inner.verify(token)
        if isinstance(verified, GrantToken):
            return verified
        grant = GrantToken(**{name: getattr(verified, name) for name in _FIELDS}, proxy=self.proxy)
        self.cache.put(token_key(token), grant)
        return grant

    async def aclose(self) -> None:
        """Close the inner verifier."""
        await self.inner.aclose()
