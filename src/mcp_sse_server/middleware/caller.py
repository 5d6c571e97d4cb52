"""Who a request comes from and what it names: what the built-in middleware key, log and count by.

Rules, kept here and nowhere else:

1. A principal is never logged or keyed by its own words: ``principal_hash`` is the first 16
   hex digits of the SHA-256 of (issuer, subject, client id), the same for every token of that
   principal and of no use to someone reading the logs.
2. ``caller_key`` is the principal's hash when the request carries a verified token, else
   ``"session:"`` and the session's id, else None (an anonymous request with no session: a
   stateless request on a server without authorization, or a session without an id, such as
   stdio's, has nothing of its own to be keyed by).
3. A 2026-07-28 MRTR continuation round carries ``requestState`` or ``inputResponses`` in its
   params (``engine/stateless.py``): ``is_continuation`` says so, and the built-ins treat such a
   round as part of the call its first round started.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any, Final

from ..engine.context import RequestContext
from ..engine.stateless_meta import PROTOCOL_VERSION_KEY

__all__ = ["caller_key", "is_continuation", "principal_hash", "session_id", "target_of"]

# The param naming what a request is about, by method.
_TARGETS: Final[dict[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "resources/unsubscribe": "uri",
    "tasks/get": "taskId",
    "tasks/result": "taskId",
    "tasks/cancel": "taskId",
}


@functools.lru_cache(maxsize=4096)
def _hashed(principal: tuple[str, str | None, str | None]) -> str:
    # (cached: every request of a principal asks, and the tuple is made once per token)
    joined = "\x1f".join(part or "" for part in principal)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:16]


def principal_hash(context: RequestContext) -> str | None:
    """The hash of the request's principal (rule 1); None without a verified token."""
    token = context.auth
    return None if token is None else _hashed(token.principal)


def session_id(context: RequestContext, params: dict[str, Any] | None = None) -> str | None:
    """The id of the request's session (the ``Mcp-Session-Id`` over HTTP); None when it has none.
    Given the request's ``params``, a 2026-07-28 request (which has no session) is known by its
    envelope, without building the request session the engine makes on first use."""
    if params is not None:
        meta = params.get("_meta")
        if type(meta) is dict and PROTOCOL_VERSION_KEY in meta:
            return None
    record = getattr(context.session, "record", None)
    identifier = getattr(record, "id", None)
    return identifier if isinstance(identifier, str) and identifier else None


def caller_key(context: RequestContext, params: dict[str, Any] | None = None) -> str | None:
    """Whom a per-caller budget or cache entry belongs to (rule 2); ``params`` as ``session_id``'s."""
    hashed = principal_hash(context)
    if hashed is not None:
        return hashed
    identifier = session_id(context, params)
    return None if identifier is None else "session:" + identifier


def is_continuation(params: dict[str, Any]) -> bool:
    """True for a round after the first of a 2026-07-28 MRTR call (rule 3)."""
    return "requestState" in params or "inputResponses" in params


def target_of(method: str, params: dict[str, Any]) -> str | None:
    """The tool or prompt name, resource URI or task id the request names; None for other methods."""
    key = _TARGETS.get(method)
    if key is None:
        return None
    value = params.get(key)
    return value if isinstance(value, str) else None
