"""``BearerMiddleware``: the resource server's checks, as a wrapping ASGI app; the metadata served beside.

Order, for an HTTP request (``auth/resource.py`` states what each answer carries):

1. ``GET``/``HEAD`` of a protected-resource metadata path (its path form and
   its root form): the RFC 9728 document, without authentication, cacheable
   for an hour (and ``OPTIONS``: CORS preflight).
2. Other paths than the endpoint's (and the ``also`` guarded: the 2024-11-05
   transport's) pass on untouched (the router answers 404).
3. The ``Authorization`` header, before the body is read, so an
   unauthenticated request costs no more than its headers:
   - sent twice, a ``Bearer`` without a token, or a token in the query string:
     400 ``invalid_request``;
   - missing, or another scheme: 401 with the challenge (no ``error``);
   - a token the verifier refuses: 401 ``invalid_token`` (its reason, never
     the token, in ``error_description``); a verifier that cannot decide
     (its key set out of reach): 503 with ``Retry-After`` its ``retry_after``
     seconds, logged at DEBUG only (the verifier logs an outage once, when it
     starts and when it ends, not once per request);
   - a token without the ``required_scopes``: 403 ``insufficient_scope``.
4. The request goes on with the token in ``current_access_token`` (what
   handlers read as ``context.auth``) and in the scope under ``SCOPE_KEY``.
5. Once the endpoint has read the body (``ScopeCheck``, called by both
   endpoints): a request naming a tool, prompt or resource whose ``scopes``
   the token lacks is 403 ``insufficient_scope`` naming them, before it is
   served (``scopes.py`` says which request needs what).
6. DPoP (``ResourceServer(dpop=...)``, ``auth/dpop.py``): an ``Authorization: DPoP`` request
   is checked there, proof first, then the token, its binding and scopes, then replay, and is
   refused with ``DPoP`` challenges (``use_dpop_nonce`` with a fresh ``DPoP-Nonce``); a nonce
   that runs out within a minute is renewed in the reply's ``DPoP-Nonce``. With ``required``
   a ``Bearer`` request is answered as one without credentials. A token bound to a key
   (``cnf.jkt``) sent as ``Bearer`` is refused in every mode, off included (a downgrade).
   Without credentials, ``allowed`` challenges with both schemes, ``required`` with ``DPoP``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

from ...auth.resource import ResourceServer
from ...engine.jsonrpc import JsonRpcRequest
from ...engine.tokens import (
    AccessToken,
    InvalidToken,
    NotAllowed,
    VerifiedTokens,
    VerifierUnavailable,
    current_access_token,
)
from .asgi import ASGIApp, Receive, Scope, Send
from .errors import SERVER_BUSY, HttpError
from .request import McpRequest, below

if TYPE_CHECKING:
    from ...auth.dpop import DPoP

__all__ = ["SCOPE_KEY", "BearerMiddleware", "ScopeCheck", "ScopedServer", "request_principal"]

logger = logging.getLogger("mcp_sse_server.auth")

SCOPE_KEY: Final = "mcp_sse_server.access_token"
_NONCE_KEY: Final = "mcp_sse_server.dpop_nonce"  # a nonce to renew in the reply (rule 6)
_NONCE_RENEWAL: Final = 60.0  # seconds a nonce has left when a fresh one goes with the reply

_CORS: Final = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"GET, HEAD, OPTIONS"),
    (b"access-control-allow-headers", b"mcp-protocol-version"),
]


class BearerMiddleware:
    """Wraps the MCP endpoint ``app``: requests reach it only with a valid token (rules above).
    ``path`` is the endpoint's path (None: every path but the metadata's); ``also``
    are other paths guarded as it is, below the app's mount point (``root_path``)."""

    __slots__ = (
        "_document",
        "_dpop",
        "_expands",
        "_metadata_paths",
        "_required",
        "_verified",
        "also",
        "app",
        "path",
        "server",
    )

    def __init__(
        self, app: ASGIApp, server: ResourceServer, path: str | None = None, *, also: Collection[str] = ()
    ) -> None:
        if server.verifier is None:
            raise ValueError("a ResourceServer needs a verifier to guard an endpoint")
        self.app = app
        self.server = server
        self.path = path
        self.also = frozenset(also)
        self._document = orjson.dumps(server.metadata())
        # The verifier's cache, when it keeps one (JwtVerifier and IntrospectionVerifier do): read
        # directly for a token seen before (``_seen_before``).
        cache = getattr(server.verifier, "cache", None)
        self._verified = cache if isinstance(cache, VerifiedTokens) else None
        self._metadata_paths = server.metadata_paths
        self._required = server.required_scopes
        self._expands = server.expands
        self._dpop: DPoP | None = server.dpop
        if self._dpop is not None and self._dpop.required:
            self._verified = None  # (the fast path takes Bearer only, which this mode refuses)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = McpRequest.of(scope)
        if request.path in self._metadata_paths:
            await self._metadata(request, send)
            return
        if (
            self.path is not None
            and request.path != self.path
            and below(request.path, scope.get("root_path", "")) not in self.also
        ):
            await self.app(scope, receive, send)
            return
        token = self._seen_before(request, scope)
        if token is None:
            token = await self._authenticate(request, scope, send)
            if token is None:
                return
            if self._dpop is not None and _NONCE_KEY in scope:
                send = _with_nonce(send, scope.pop(_NONCE_KEY))
        scope[SCOPE_KEY] = token
        reset = current_access_token.set(token)
        try:
            await self.app(scope, receive, send)
        finally:
            current_access_token.reset(reset)

    def _granted(self, token: AccessToken) -> AccessToken:
        """The token read with the scopes its own imply (rule 5 of ``auth/resource.py``)."""
        if not self._expands:
            return token
        return dataclasses.replace(token, scopes=self.server.granted(token.scopes))

    def _seen_before(self, request: McpRequest, scope: Scope) -> AccessToken | None:
        """A speed trick, measured in bench/ (opcodes.py --jwt, the ours-jwt rows): a well-formed
        ``Bearer`` header whose token the verifier's cache holds, and that has the endpoint's
        scopes, is accepted here, without the ``_authenticate`` coroutine, decoding the token to
        text and hashing it again. The key is the SHA-256 of the token's bytes, which equals
        ``token_key`` of the text for any token of ASCII characters (every valid one); anything
        else misses, and ``_authenticate`` decides as it always does."""
        verified = self._verified
        if verified is None:
            return None
        header = request.headers.get(b"authorization")
        if header is None or request.repeated or header[:7].lower() != b"bearer ":
            return None
        query = scope.get("query_string")
        if query and b"access_token=" in query:
            return None
        token = verified.get(hashlib.sha256(header[7:]).digest())
        if token is None or token.jkt is not None:  # (a bound token as Bearer: _authenticate refuses it)
            return None
        token = self._granted(token)
        return token if self._required <= token.scopes else None

    async def _authenticate(self, request: McpRequest, scope: Scope, send: Send) -> AccessToken | None:
        """The request's verified token, or None once a refusal was sent."""
        header = request.headers.get(b"authorization")
        if request.repeated and request.count(b"authorization") > 1:
            await self._refuse(send, 400, "invalid_request", "Bad request: send one Authorization header")
            return None
        if b"access_token=" in scope.get("query_string", b""):
            await self._refuse(
                send, 400, "invalid_request", "Bad request: send the token in the Authorization header only"
            )
            return None
        scheme, _, credentials = (header or b"").partition(b" ")
        scheme = scheme.lower()
        dpop = self._dpop
        if dpop is not None and scheme == b"dpop":
            return await self._authenticate_dpop(request, scope, send, credentials.strip())
        if header is None or scheme != b"bearer" or (dpop is not None and dpop.required):
            needs = "a DPoP-bound token" if dpop is not None and dpop.required else "a bearer token"
            await self._refuse(send, 401, None, f"Unauthorized: this server needs {needs}")
            return None
        value = credentials.strip()
        if not value:
            await self._refuse(send, 400, "invalid_request", "Bad request: the Bearer credentials are empty")
            return None
        token = await self._verify(send, value.decode("latin-1"), dpop=False)
        if token is None:
            return None
        if token.jkt is not None:  # RFC 9449 §7.2: a bound token without its proof is a downgrade
            await self._refuse(
                send,
                401,
                "invalid_token",
                "Unauthorized: the token is bound to a DPoP key; send it as Authorization: DPoP with a proof",
                "bound to a DPoP key",
            )
            return None
        return await self._in_scope(send, token, dpop=False)

    async def _authenticate_dpop(
        self, request: McpRequest, scope: Scope, send: Send, credentials: bytes
    ) -> AccessToken | None:
        """Rule 6: the checks of ``auth/dpop.py`` in their order; the token, or None once a
        refusal was sent."""
        from ...auth.dpop import DPoPRefused

        dpop = self._dpop
        server = self.server
        assert dpop is not None and server.verifier is not None
        if not credentials:
            await self._refuse(send, 400, "invalid_request", "Bad request: the DPoP credentials are empty", dpop=True)
            return None
        proof = request.headers.get(b"dpop")
        if proof is None or (request.repeated and request.count(b"dpop") > 1):
            reason = "send exactly one DPoP proof header"
            await self._refuse(send, 401, "invalid_dpop_proof", f"Unauthorized: {reason}", reason, dpop=True)
            return None
        value = credentials.decode("latin-1")
        raw_path = scope.get("raw_path")
        path = raw_path.decode("latin-1") if raw_path else request.path
        try:
            checked = dpop.check(proof, request.method, server.dpop_origin, path, value)
        except DPoPRefused as refused:
            logger.info("refused a DPoP proof: %s", refused.reason)
            extra = []
            if refused.error == "use_dpop_nonce" and dpop.nonces is not None:
                extra.append((b"dpop-nonce", dpop.nonces.issue().encode()))
            message = "Unauthorized: the DPoP proof is not valid"
            if refused.error == "use_dpop_nonce":
                message = "Unauthorized: send the proof again with the nonce in DPoP-Nonce"
            await self._refuse(send, 401, refused.error, message, refused.reason, dpop=True, extra=extra)
            return None
        token = await self._verify(send, value, dpop=True)
        if token is None:
            return None
        if token.jkt is None or not hmac.compare_digest(token.jkt.encode(), checked.jkt.encode()):
            reason = "not bound to a DPoP key" if token.jkt is None else "bound to another DPoP key"
            await self._refuse(
                send, 401, "invalid_token", "Unauthorized: the token is not bound to the proof's key", reason, dpop=True
            )
            return None
        token = await self._in_scope(send, token, dpop=True)
        if token is None:
            return None
        try:
            fresh = await dpop.first_use(checked)
        except VerifierUnavailable as error:
            await self._unavailable(send, error)
            return None
        if not fresh:
            logger.info("refused a replayed DPoP proof")
            reason = "the proof was used before"
            await self._refuse(send, 401, "invalid_dpop_proof", f"Unauthorized: {reason}", reason, dpop=True)
            return None
        if checked.nonce_left is not None and checked.nonce_left < _NONCE_RENEWAL and dpop.nonces is not None:
            scope[_NONCE_KEY] = dpop.nonces.issue().encode()
        return token

    async def _verify(self, send: Send, value: str, *, dpop: bool) -> AccessToken | None:
        """``value`` verified (as a ``DPoP`` token when ``dpop``, else ``Bearer``), or None once a
        refusal was sent: 403 not admitted, 401 not valid, 503 not checkable now."""
        verifier = self.server.verifier
        assert verifier is not None
        try:
            return await verifier.verify(value)
        except NotAllowed as refused:
            await self._not_allowed(send, refused, dpop=dpop)
        except InvalidToken as invalid:
            logger.info("refused a %s token: %s", "DPoP" if dpop else "bearer", invalid.reason)
            message = "the access token" if dpop else "the bearer token"
            await self._refuse(
                send, 401, "invalid_token", f"Unauthorized: {message} is not valid", invalid.reason, dpop=dpop
            )
        except VerifierUnavailable as error:
            await self._unavailable(send, error)
        return None

    async def _in_scope(self, send: Send, token: AccessToken, *, dpop: bool) -> AccessToken | None:
        """``token`` with its implied scopes when it has the endpoint's, else None once a 403
        ``insufficient_scope`` was sent."""
        token = self._granted(token)
        if token.has_scopes(self.server.required_scopes):
            return token
        await self._refuse(
            send,
            403,
            "insufficient_scope",
            "Forbidden: the token lacks a scope this server requires",
            granted=token.scopes,
            dpop=dpop,
        )
        return None

    async def _not_allowed(self, send: Send, refused: NotAllowed, *, dpop: bool = False) -> None:
        """A valid token whose holder the allow policy does not admit: 403 ``access_denied`` (signing
        in again, or asking for more scopes, would not help)."""
        logger.info("refused a token: %s", refused.reason)
        await self._refuse(
            send,
            403,
            "access_denied",
            "Forbidden: this server does not admit the account this token names; sign in with another",
            refused.reason,
            dpop=dpop,
        )

    @staticmethod
    async def _unavailable(send: Send, error: VerifierUnavailable) -> None:
        logger.debug("could not check a token: %s", error)
        await HttpError(
            503,
            "Service unavailable: the token cannot be checked now; try again later",
            SERVER_BUSY,
            headers=[(b"retry-after", b"%d" % error.retry_after)],
        ).write(send)

    async def _refuse(
        self,
        send: Send,
        status: int,
        error: str | None,
        message: str,
        description: str | None = None,
        *,
        granted: frozenset[str] = frozenset(),
        dpop: bool = False,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """Refuse with the challenges of rule 6: ``dpop`` (a DPoP request's refusal) the ``DPoP``
        one only; else ``Bearer``, with ``DPoP`` beside it when allowed, or alone when required."""
        server = self.server
        mode = self._dpop
        schemes: tuple[str, ...]
        if dpop or (mode is not None and mode.required and error is None):
            schemes = ("DPoP",)
        elif mode is not None:
            schemes = ("Bearer", "DPoP")
        else:
            schemes = ("Bearer",)
        headers = [
            (
                b"www-authenticate",
                server.challenge(
                    error if index == 0 else None,
                    granted=granted,
                    description=description if index == 0 else None,
                    scheme=scheme,
                ).encode("latin-1"),
            )
            for index, scheme in enumerate(schemes)
        ]
        await HttpError(status, message, headers=headers + (extra or [])).write(send)

    async def _metadata(self, request: McpRequest, send: Send) -> None:
        if request.method == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": _CORS})
            await send({"type": "http.response.body", "body": b""})
            return
        if request.method not in ("GET", "HEAD"):
            await HttpError(
                405, "Method not allowed: the metadata is read with GET", headers=[(b"allow", b"GET, HEAD, OPTIONS")]
            ).write(send)
            return
        body = self._document
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
            (b"cache-control", b"public, max-age=3600"),
            *_CORS,
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if request.method == "HEAD" else body})


class ScopedServer(Protocol):
    """What ``ScopeCheck`` asks of a server (``McpServer`` is one)."""

    def scopes_needed(self, method: str, params: Any) -> frozenset[str]:
        """The scopes a request needs beyond the endpoint's."""


class ScopeCheck:
    """Rule 5: the scopes of what a request names, checked against the request's token."""

    __slots__ = ("server",)

    def __init__(self, server: ResourceServer) -> None:
        self.server = server

    def check(self, catalog: ScopedServer, message: JsonRpcRequest) -> None:
        """HttpError 403 ``insufficient_scope`` when the token lacks a scope ``message`` needs."""
        needed = catalog.scopes_needed(message.method, message.params)
        if not needed:
            return
        token = current_access_token.get()
        granted = token.scopes if token is not None else frozenset()
        if granted.issuperset(needed):
            return
        missing = " ".join(sorted(needed - granted))
        scheme = "DPoP" if token is not None and token.jkt is not None else "Bearer"
        challenge = self.server.challenge("insufficient_scope", needed=needed, granted=granted, scheme=scheme)
        raise HttpError(
            403,
            f"Forbidden: {message.method} of this {_target(message.method)} needs the scope {missing}",
            headers=[(b"www-authenticate", challenge.encode("latin-1"))],
            request_id=message.id,
        )


def _with_nonce(send: Send, nonce: bytes) -> Send:
    """``send`` adding ``DPoP-Nonce`` to the reply's headers (a nonce renewed, rule 6)."""

    async def sending(message: Any) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), (b"dpop-nonce", nonce)]}
        await send(message)

    return sending


def _target(method: str) -> str:
    return {"tools/call": "tool", "prompts/get": "prompt", "completion/complete": "completion"}.get(method, "resource")


def request_principal() -> list[str | None] | None:
    """Who the request's bearer token speaks for (None on a server without authorization): what
    sessions are bound to."""
    token = current_access_token.get()
    return None if token is None else list(token.principal)
