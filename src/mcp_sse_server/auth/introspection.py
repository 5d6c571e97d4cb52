"""``IntrospectionVerifier``: opaque (or any) access tokens checked by asking the authorization server (RFC 7662).

The checks, in order (each failure is an ``InvalidToken`` with a short reason):

1. Size: a token over ``max_token_bytes`` is refused unasked (``"too large"``).
2. Cache: a token found active less than ``cache_ttl`` seconds ago (and not
   expired since) is answered from ``VerifiedTokens`` by its SHA-256. Only
   active answers are kept, so a revoked token is refused at most
   ``cache_ttl`` seconds after its revocation. Requests carrying the same
   token while it is being introspected wait for that one answer.
3. The call: ``POST`` of ``token`` (form-encoded) to ``endpoint``, this
   resource authenticated as a client (``client_secret_basic`` by default,
   or ``client_secret_post``), within ``timeout``. No answer, a 4xx or 5xx, or
   a body that is not a JSON object raises ``VerifierUnavailable``: the
   token is neither let through nor called invalid.
4. An outage: after a failed call the endpoint is not asked again until its
   ``Backoff`` (``auth/backoff.py``: 1 s doubling to 4 s, jittered) has
   passed. Meanwhile a token not in the cache is ``VerifierUnavailable`` at
   once, with ``retry_after`` the backoff left, never ``InvalidToken``: a
   dead endpoint is not asked by every request, and one that is back is
   asked at most 4 s later. Then one call goes, the probe; a request for
   another token while it is under way is ``VerifierUnavailable`` at once too
   (``retry_after`` 1): only the probe's own token waits for it. Tokens in
   the cache keep working through the outage (rule 2). A request waits at
   most ``timeout`` seconds, whatever the endpoint does: a call is given up
   after ``timeout``, and a request waiting for one came at its start or
   after. The backoff's times are on ``timer`` (monotonic seconds).
5. The answer: ``active`` must be ``true`` (``"inactive"``); ``exp`` and
   ``nbf`` are checked again with ``leeway`` (``"expired"``, ``"not yet
   valid"``); ``iss``, when given, must be one of ``issuer`` (``"issuer"``);
   ``aud`` must name this resource (``"audience"``, RFC 8707), and an answer
   without ``aud`` is refused unless ``require_audience=False``.

Scopes come from ``scope`` (space-separated); the client id from ``client_id``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal

import httpx

from ..engine.tokens import AccessToken, InvalidToken, VerifiedTokens, VerifierUnavailable, token_key
from .backoff import Backoff
from .client_auth import client_secret_basic
from .fetch import fetch_json
from .urls import check_fetch_url

__all__ = ["IntrospectionVerifier"]

logger = logging.getLogger("mcp_sse_server.auth")

_MAX_ANSWER_BYTES: Final = 64 * 1024
_ANSWER: Final = "the authorization server's answer about the token"


class IntrospectionVerifier:
    """Verifies access tokens for one resource by RFC 7662 introspection (checks in the module docstring).

    ``endpoint``: the authorization server's introspection URL (``https``, or
    ``http`` on loopback only). ``client_id`` and ``client_secret``: this
    resource's credentials there. ``audience``: this resource's canonical URI
    (or URIs). ``issuer``: the issuer (or issuers) an answer's ``iss`` must be,
    when it names one. ``http``: the client to call with (one of its own,
    closed by ``aclose``, by default). ``clock``: wall-clock seconds (expiry, the cache);
    ``timer`` and ``jitter``: the backoff's (rule 4), monotonic seconds and draws from [0, 1).
    """

    def __init__(
        self,
        *,
        endpoint: str,
        client_id: str,
        client_secret: str,
        audience: str | Iterable[str],
        issuer: str | Iterable[str] = (),
        auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic",
        require_audience: bool = True,
        cache_ttl: float = 60.0,
        leeway: float = 30.0,
        timeout: float = 5.0,
        max_token_bytes: int = 16 * 1024,
        cache: VerifiedTokens | None = None,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        check_fetch_url("endpoint", endpoint)
        if not client_id:
            raise ValueError("IntrospectionVerifier needs this resource's client id at the authorization server")
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError(f"auth_method must be client_secret_basic or client_secret_post, not {auth_method!r}")
        self.audiences = (audience,) if isinstance(audience, str) else tuple(audience)
        if not self.audiences or not all(self.audiences):
            raise ValueError("IntrospectionVerifier needs the resource's audience: a token for any audience passes")
        self.issuers = (issuer,) if isinstance(issuer, str) else tuple(issuer)
        self.endpoint = endpoint
        self.client_id = client_id
        self._client_secret = client_secret
        self.auth_method = auth_method
        self.require_audience = require_audience
        self.leeway = leeway
        self.timeout = timeout
        self.max_token_bytes = max_token_bytes
        self.cache = cache if cache is not None else VerifiedTokens(ttl=cache_ttl, clock=clock)
        self.clock = clock
        self._http = http
        self._own_http = http is None
        self._asking: dict[bytes, asyncio.Future[AccessToken]] = {}  # by token_key
        self._probe: asyncio.Future[AccessToken] | None = None  # the call under way during an outage
        self._backoff = Backoff(f"the introspection endpoint {endpoint}", timer=timer, jitter=jitter)

    async def verify(self, token: str, /) -> AccessToken:
        if len(token) > self.max_token_bytes:
            raise InvalidToken("too large")
        key = token_key(token)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        try:
            return await self._answer(token, key)
        except VerifierUnavailable as error:  # (one of its own for each request, with the backoff left now)
            raise self._backoff.unavailable(str(error)) from None

    async def _answer(self, token: str, key: bytes) -> AccessToken:
        """The answer about ``token``, within ``timeout``: a call ends within ``timeout`` of its
        start (``fetch_json``), and a request that joins one came at its start or after."""
        backoff = self._backoff
        if key not in self._asking and backoff.failing and (self._probe is not None or backoff.remaining() > 0):
            raise backoff.unavailable(f"{_ANSWER} cannot be had: the endpoint is out of reach")
        asking = self._asking.get(key)
        if asking is None:
            # One introspection per token at a time, in a task of its own: a caller that goes away
            # (its client disconnected) does not cancel it for the others.
            asking = self._asking[key] = asyncio.ensure_future(self._ask(token, key))
            asking.add_done_callback(self._asked)
            if backoff.failing:
                self._probe = asking
        return await asyncio.shield(asking)

    async def _ask(self, token: str, key: bytes) -> AccessToken:
        attempt = self._backoff.attempt()
        try:
            answer = await self._introspect(token)
        except VerifierUnavailable as error:
            self._backoff.failed(attempt, str(error))
            raise
        finally:
            if self._asking.pop(key) is self._probe:  # (this very call)
                self._probe = None
        self._backoff.succeeded()  # (an answer, even "inactive": the endpoint is up)
        verified = self._check(answer)
        self.cache.put(key, verified)
        return verified

    @staticmethod
    def _asked(asking: asyncio.Future[AccessToken]) -> None:
        if not asking.cancelled():
            asking.exception()  # retrieved, so a failure nobody waited for is not logged as lost

    async def _introspect(self, token: str) -> Mapping[str, Any]:
        http = self._http
        if http is None:
            http = self._http = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False)
        form = {"token": token, "token_type_hint": "access_token"}
        headers = {"accept": "application/json"}
        if self.auth_method == "client_secret_basic":
            headers["authorization"] = client_secret_basic(self.client_id, self._client_secret)
        else:
            form |= {"client_id": self.client_id, "client_secret": self._client_secret}
        return await fetch_json(
            http,
            "POST",
            self.endpoint,
            what=_ANSWER,
            timeout=self.timeout,
            limit=_MAX_ANSWER_BYTES,
            data=form,
            headers=headers,
        )

    def _check(self, answer: Mapping[str, Any]) -> AccessToken:
        if answer.get("active") is not True:
            raise InvalidToken("inactive")
        now = self.clock()
        expires = answer.get("exp")
        if isinstance(expires, int | float) and now > expires + self.leeway:
            raise InvalidToken("expired")
        not_before = answer.get("nbf")
        if isinstance(not_before, int | float) and now + self.leeway < not_before:
            raise InvalidToken("not yet valid")
        issuer = answer.get("iss")
        if issuer is not None and self.issuers and issuer not in self.issuers:
            raise InvalidToken("issuer")
        aud = answer.get("aud")
        audience = (aud,) if isinstance(aud, str) else tuple(a for a in aud or () if isinstance(a, str))
        if (audience or self.require_audience) and not set(audience) & set(self.audiences):
            raise InvalidToken("audience")
        scope = answer.get("scope")
        subject = answer.get("sub")
        client_id = answer.get("client_id")
        return AccessToken(
            issuer=issuer if isinstance(issuer, str) else (self.issuers[0] if self.issuers else self.endpoint),
            subject=subject if isinstance(subject, str) else None,
            client_id=client_id if isinstance(client_id, str) else None,
            scopes=frozenset(scope.split()) if isinstance(scope, str) else frozenset(),
            expires_at=float(expires) if isinstance(expires, int | float) else None,
            audience=audience,
            claims=dict(answer),
        )

    async def aclose(self) -> None:
        """Close the HTTP client this verifier made (one it was given stays open)."""
        if self._own_http and self._http is not None:
            await self._http.aclose()
            self._http = None
