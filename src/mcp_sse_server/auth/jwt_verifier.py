"""``JwtVerifier``: JWT access tokens (RFC 9068) checked locally against an authorization server's JWKS.

The checks, in order (each failure is an ``InvalidToken`` with a short reason):

1. Size: a token over ``max_token_bytes`` is refused unread (``"too large"``).
2. Cache: a token verified before and not expired is answered from
   ``VerifiedTokens`` (by its SHA-256), with no cryptography.
3. Header: it must parse (``"malformed"``), name an allowed asymmetric
   ``alg`` (``"algorithm"``: ``none`` and the HMAC algorithms never are, so a
   public key can never serve as an HMAC secret) and an accepted ``typ``
   (``"type"``: RFC 9068's ``at+jwt``, ``JWT`` or none by default).
4. Key: looked up by ``kid`` in the key set (its first ``MAX_KEYS`` keys are
   read). A ``kid`` not in it fetches the set again when the verifier may:
   - the set was fetched last time: once ``refresh_interval`` has passed since
     (a flood of made-up ids is not a flood of fetches); until then the
     token is ``"unknown key"``, as it is when the fresh set lacks the ``kid``;
   - the last fetch failed: once its ``Backoff`` (``auth/backoff.py``: 1 s
     doubling to 4 s, jittered) has passed; until then, and when the fetch
     fails again, ``VerifierUnavailable`` with ``retry_after`` the backoff
     left, never ``"unknown key"``: the verifier cannot tell. So every request
     that needs the set is 503 while it is down, and a set that is back is
     fetched at most 4 s later. Before the first fetch the verifier knows no
     key, so this holds for every token until the set is first fetched.
   A fetch that fails keeps the keys the verifier has (a ``kid`` known before
   keeps verifying through the outage); a body without a ``keys`` list is a
   failed fetch. One fetch at a time, in a task of its own, given up after
   ``timeout`` seconds; a request waits for it (whoever started it), so at
   most ``timeout`` seconds in all, then gets ``VerifierUnavailable``. These
   times are on ``timer`` (monotonic seconds), the cache's on ``clock``.
5. Signature and claims (PyJWT): ``"signature"``, ``"expired"``,
   ``"not yet valid"`` (``nbf``/``iat``, with ``leeway`` seconds),
   ``"issuer"`` (one of ``issuer``, exactly), ``"audience"`` (RFC 8707: this
   resource, ``audience``; required, so an ID token, whose audience is its
   client, never passes), ``"missing claim"`` (``exp``, ``iss`` and ``aud``
   are required).

Scopes come from ``scope`` (space-separated), else ``scp``; the client id
from ``client_id``, else ``azp``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import jwt

if TYPE_CHECKING:
    import httpx

from ..engine.tokens import AccessToken, InvalidToken, VerifiedTokens, VerifierUnavailable, token_key
from .backoff import Backoff
from .urls import check_fetch_url

__all__ = ["DEFAULT_ALGORITHMS", "MAX_KEYS", "JwtVerifier"]

logger = logging.getLogger("mcp_sse_server.auth")

DEFAULT_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""The asymmetric algorithms accepted unless told otherwise."""

MAX_KEYS: Final = 64
"""Keys of a key set read at most (parsing a key costs; a set of thousands would stall the loop)."""

_MAX_JWKS_BYTES: Final = 1 << 20
_KEY_SET: Final = "the authorization server's key set"
_ACCEPTED_TYPES: Final = frozenset({"at+jwt", "application/at+jwt", "jwt"})
_REASONS: Final[tuple[tuple[type[Exception], str], ...]] = (
    (jwt.ExpiredSignatureError, "expired"),
    (jwt.ImmatureSignatureError, "not yet valid"),
    (jwt.InvalidAudienceError, "audience"),
    (jwt.InvalidIssuerError, "issuer"),
    (jwt.MissingRequiredClaimError, "missing claim"),
    (jwt.InvalidSignatureError, "signature"),
)


class JwtVerifier:
    """Verifies JWT access tokens for one resource (checks in the module docstring).

    ``issuer``: the issuer (or issuers) exactly as the authorization server publishes it.
    ``audience``: this resource's canonical URI (or URIs): required. ``jwks_uri``: where the
    keys are (``https``, or ``http`` on loopback only); ``keys`` instead: a JWKS as a mapping.
    ``http``: the client to fetch with (one of its own, closed by ``aclose``, by default).
    ``clock``: wall-clock seconds (the cache's); ``timer`` and ``jitter``: when the set may be
    fetched again (rule 4), monotonic seconds and draws from [0, 1).
    """

    def __init__(
        self,
        *,
        issuer: str | Iterable[str],
        audience: str | Iterable[str],
        jwks_uri: str | None = None,
        keys: Mapping[str, Any] | None = None,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        accepted_types: Iterable[str | None] = ("at+jwt", "application/at+jwt", "JWT", None),
        leeway: float = 30.0,
        refresh_interval: float = 60.0,
        timeout: float = 5.0,
        max_token_bytes: int = 16 * 1024,
        cache: VerifiedTokens | None = None,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.issuers = (issuer,) if isinstance(issuer, str) else tuple(issuer)
        self.audiences = (audience,) if isinstance(audience, str) else tuple(audience)
        if not self.audiences or not all(self.audiences):
            raise ValueError("JwtVerifier needs the resource's audience: a token for any audience is no check")
        if not self.issuers or not all(self.issuers):
            raise ValueError("JwtVerifier needs the issuer (or issuers) it accepts tokens from")
        if (jwks_uri is None) == (keys is None):
            raise ValueError("JwtVerifier takes jwks_uri= or keys=, not both and not neither")
        if jwks_uri is not None:
            check_fetch_url("jwks_uri", jwks_uri)
        self.algorithms = frozenset(algorithms)
        refused = {alg for alg in self.algorithms if alg == "none" or alg.startswith("HS")}
        if refused:
            raise ValueError(f"not an algorithm for keys from a key set: {', '.join(sorted(refused))}")
        self.accepted_types = frozenset(None if typ is None else typ.lower() for typ in accepted_types)
        self.jwks_uri = jwks_uri
        self.leeway = leeway
        self.refresh_interval = refresh_interval
        self.timeout = timeout
        self.max_token_bytes = max_token_bytes
        self.cache = cache if cache is not None else VerifiedTokens(clock=clock)
        self.clock = clock
        self._http = http
        self._own_http = http is None
        self._keys: dict[str | None, jwt.PyJWK] = self._read_keys(keys) if keys is not None else {}
        self.timer = timer
        self._fetched_at: float | None = None  # on ``timer``, when a fetch last succeeded
        self._fetching: asyncio.Task[None] | None = None
        self._backoff = Backoff(f"{_KEY_SET} at {jwks_uri}", timer=timer, jitter=jitter)

    async def verify(self, token: str, /) -> AccessToken:
        if len(token) > self.max_token_bytes:
            raise InvalidToken("too large")
        key_of_token = token_key(token)
        cached = self.cache.get(key_of_token)
        if cached is not None:
            return cached
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("malformed") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidToken("algorithm")
        typ = header.get("typ")
        if (typ.lower() if isinstance(typ, str) else typ) not in self.accepted_types:
            raise InvalidToken("type")
        kid = header.get("kid")
        key = await self._key(kid if isinstance(kid, str) else None)
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=list(self.audiences),
                issuer=list(self.issuers),
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as error:
            raise InvalidToken(
                next((reason for kind, reason in _REASONS if isinstance(error, kind)), "invalid")
            ) from None
        verified = _access_token(claims)
        self.cache.put(key_of_token, verified)
        return verified

    # --- keys --------------------------------------------------------------------------------

    async def _key(self, kid: str | None) -> jwt.PyJWK:
        key = self._find(kid)
        if key is None and self.jwks_uri is not None and (self._fetching is not None or self._may_fetch()):
            await self._refreshed()
            key = self._find(kid)
        if key is not None:
            return key
        if self._backoff.failing:
            raise self._backoff.unavailable(f"{_KEY_SET} is out of reach")
        raise InvalidToken("unknown key")

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        key = self._keys.get(kid)
        if key is None and kid is None and len(self._keys) == 1:
            key = next(iter(self._keys.values()))  # a token without kid, a set of one key
        return key

    def _may_fetch(self) -> bool:
        if self._backoff.failing:
            return self._backoff.remaining() <= 0
        return self._fetched_at is None or self.timer() - self._fetched_at >= self.refresh_interval

    async def _refreshed(self) -> None:
        """Wait for the key set to be fetched again, joining the fetch under way if one is. At
        most ``timeout`` seconds: a fetch ends within ``timeout`` of its start (``fetch_json``),
        and every request waiting for it came at its start or after."""
        fetching = self._fetching
        if fetching is None:
            # In a task of its own: a request that stops waiting (its client went away) does not
            # cancel the fetch for the others.
            fetching = self._fetching = asyncio.ensure_future(self._refresh())
            fetching.add_done_callback(_retrieved)
        try:
            await asyncio.shield(fetching)
        except VerifierUnavailable as error:  # (one of its own for each request, with the backoff left now)
            raise self._backoff.unavailable(str(error)) from None

    async def _refresh(self) -> None:
        attempt = self._backoff.attempt()
        try:
            jwks = await self._fetch()
            entries = jwks.get("keys")
            if not isinstance(entries, list):
                raise VerifierUnavailable(f"{_KEY_SET} at {self.jwks_uri} has no list of keys")
        except VerifierUnavailable as error:
            self._backoff.failed(attempt, str(error))
            raise
        finally:
            self._fetching = None
        self._keys = self._read_keys(jwks)
        self._fetched_at = self.timer()
        self._backoff.succeeded()

    async def _fetch(self) -> Mapping[str, Any]:
        assert self.jwks_uri is not None
        http = self._http
        import httpx  # (only a verifier that fetches its key set loads the HTTP client)

        from .fetch import fetch_json

        if http is None:
            http = self._http = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False)
        return await fetch_json(
            http,
            "GET",
            self.jwks_uri,
            what=_KEY_SET,
            timeout=self.timeout,
            limit=_MAX_JWKS_BYTES,
            headers={"accept": "application/json"},
        )

    def _read_keys(self, jwks: Mapping[str, Any]) -> dict[str | None, jwt.PyJWK]:
        """The usable keys of a JWKS by ``kid`` (keys of other uses or unknown types are left out)."""
        entries = jwks.get("keys")
        if not isinstance(entries, list):
            return {}
        if len(entries) > MAX_KEYS:
            logger.warning("the key set has %d keys; the first %d are read", len(entries), MAX_KEYS)
        keys: dict[str | None, jwt.PyJWK] = {}
        for entry in entries[:MAX_KEYS]:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except (jwt.PyJWTError, ValueError, TypeError, KeyError):
                continue  # an algorithm this installation lacks, or a malformed key
            kid = entry.get("kid")
            keys[kid if isinstance(kid, str) else None] = key
        return keys

    async def aclose(self) -> None:
        """Close the HTTP client this verifier made (one it was given stays open)."""
        if self._own_http and self._http is not None:
            await self._http.aclose()
            self._http = None


def _retrieved(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved, so a failure nobody waited for is not logged as lost


def _access_token(claims: Mapping[str, Any]) -> AccessToken:
    scope = claims.get("scope")
    if isinstance(scope, str):
        scopes = frozenset(scope.split())
    else:
        scp = claims.get("scp")
        scopes = frozenset(scp.split() if isinstance(scp, str) else (s for s in scp or () if isinstance(s, str)))
    audience = claims.get("aud")
    client_id = claims.get("client_id", claims.get("azp"))
    subject = claims.get("sub")
    expires = claims.get("exp")
    return AccessToken(
        issuer=str(claims["iss"]),
        subject=subject if isinstance(subject, str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=scopes,
        expires_at=float(expires) if isinstance(expires, int | float) else None,
        audience=(audience,) if isinstance(audience, str) else tuple(a for a in audience or () if isinstance(a, str)),
        claims=dict(claims),
    )
