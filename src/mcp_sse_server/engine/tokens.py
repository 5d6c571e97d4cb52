"""Access tokens as a resource server sees them: what a verifier returns, and how it fails.

Rules every ``TokenVerifier`` keeps:

1. ``verify(token)`` returns an ``AccessToken`` (plain data) or raises
   ``InvalidToken`` (the token is not good for this resource: answer 401
   ``invalid_token``) or ``VerifierUnavailable`` (the verifier cannot decide
   now, a key set or introspection endpoint out of reach: answer 503 and let
   the client retry after its ``retry_after`` seconds). It never lets a token
   through because it could not check, and never calls a token invalid
   because it could not check (a client drops a token refused as invalid).
2. An ``InvalidToken``'s reason is short, generic and safe to send to the
   client (``"expired"``, ``"audience"``...): it never quotes the token or a
   library's exception text.
3. Results are cached by the token's SHA-256 (``VerifiedTokens``), never by the
   token itself, and not past the token's expiry.

>>> token = AccessToken(issuer="https://as.example", subject="alice", scopes=frozenset({"mcp:tools"}))
>>> token.has_scopes({"mcp:tools"}), token.has_scopes({"mcp:admin"})
(True, False)
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

__all__ = [
    "AccessToken",
    "InvalidToken",
    "NotAllowed",
    "TokenVerifier",
    "VerifiedTokens",
    "VerifierUnavailable",
    "current_access_token",
    "token_key",
]


@dataclasses.dataclass(frozen=True, slots=True)
class AccessToken:
    """A verified access token: who it names, for whom, with which scopes, until when (epoch seconds)."""

    issuer: str
    subject: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    expires_at: float | None = None
    audience: tuple[str, ...] = ()
    claims: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # The RFC 7638 thumbprint of the key the token is bound to (RFC 9449 ``cnf.jkt``; read from
    # ``claims`` when not given): such a token is good only with a DPoP proof by that key.
    jkt: str | None = None
    # Made once: every request of a session compares it with the one that opened the session.
    _principal: tuple[str, str | None, str | None] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_principal", (self.issuer, self.subject, self.client_id))
        if self.jkt is None:
            cnf = self.claims.get("cnf")
            if isinstance(cnf, Mapping) and isinstance(cnf.get("jkt"), str):
                object.__setattr__(self, "jkt", cnf["jkt"])

    def has_scopes(self, needed: Iterable[str]) -> bool:
        """True when every scope in ``needed`` was granted."""
        return self.scopes.issuperset(needed)

    @property
    def principal(self) -> tuple[str, str | None, str | None]:
        """Who the token speaks for (issuer, subject, client id): what a session is bound to."""
        return self._principal


current_access_token: contextvars.ContextVar[AccessToken | None] = contextvars.ContextVar(
    "mcp_sse_server.access_token", default=None
)
"""The token of the HTTP request being served (set by the bearer check around it; what
``RequestContext.auth`` reads). None on a server without authorization."""


class InvalidToken(Exception):
    """The token is not good for this resource (rule 2: ``reason`` is safe to show the client)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotAllowed(InvalidToken):
    """The token is valid for this resource, but the server's allow policy does not admit whom it
    names (``auth/providers/policy.py``): a refusal the HTTP layer can answer 403, not 401 (signing
    in again would not help). An ``InvalidToken`` so that a layer that knows only those still
    refuses it."""


class VerifierUnavailable(Exception):
    """The verifier cannot decide now (its key set or introspection endpoint is out of reach).
    ``retry_after``: seconds until it may be able to, a whole number, at least 1 (the HTTP
    layer's ``Retry-After``); the message is for the log, never sent to the client."""

    def __init__(self, message: str = "the token cannot be checked now", *, retry_after: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


class TokenVerifier(Protocol):
    """Checks a bearer token for this resource (rules in the module docstring)."""

    async def verify(self, token: str, /) -> AccessToken: ...


def token_key(token: str) -> bytes:
    """What a token is cached and compared by: its SHA-256, never the token itself."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class VerifiedTokens:
    """A bounded cache of verified tokens by ``token_key``, each kept ``ttl`` seconds at most and
    never past its expiry; the least recently used goes first once ``size`` are kept."""

    __slots__ = ("_entries", "clock", "size", "ttl")

    def __init__(self, size: int = 10_000, ttl: float = 300.0, clock: Callable[[], float] = time.time) -> None:
        self.size = size
        self.ttl = ttl
        self.clock = clock
        self._entries: OrderedDict[bytes, tuple[float, AccessToken]] = OrderedDict()

    def get(self, key: bytes) -> AccessToken | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        until, token = entry
        if self.clock() >= until:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return token

    def put(self, key: bytes, token: AccessToken) -> None:
        until = self.clock() + self.ttl
        if token.expires_at is not None:
            until = min(until, token.expires_at)
        self._entries[key] = (until, token)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
