"""RateLimit: a token bucket per caller, in process or shared by every worker through a store.

>>> from mcp_sse_server import McpServer
>>> server = McpServer("s", middleware=[RateLimit(rate=5.0, burst=20)])

Rules, kept here and nowhere else:

1. Each caller (``caller.caller_key``: the principal, else the session; ``key=`` may choose
   another) has a bucket of ``burst`` tokens refilled at ``rate`` tokens a second. A counted
   request takes one; with none left it is refused, and the handler does not run. Requests with
   no caller key share one bucket, ``"anonymous"``.
2. Counted: every request method except ``initialize`` and ``ping`` (refusing those would break
   the handshake and keep-alives, which cost nothing), or the ``methods`` given. A 2026-07-28
   MRTR call counts once: its continuation rounds (``caller.is_continuation``) take no token.
3. A refusal is ``McpError(RATE_LIMITED, "Rate limit exceeded", {"retryAfterMs": n})``, ``n``
   the milliseconds until a token is back. The code is -32029, in JSON-RPC's server range and
   free in MCP; not -32000, which this library's client and both official SDKs use for a
   connection that closed, so a refusal is never mistaken for a dead connection. With
   telemetry on, each refusal is also counted (``mcp_sse_server.requests.rejected``, reason
   ``rate_limit``).
4. The buckets live in a ``Buckets`` store: ``MemoryBuckets`` (this process; at most
   ``max_keys`` callers, the least recently seen forgotten first) or ``RedisBuckets``
   (``redis_buckets.py``: one atomic script per take, so N workers share one budget).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import Any, Final, Protocol

from ..engine.context import RequestContext
from ..engine.jsonrpc import McpError
from ..engine.middleware import CallNext, Middleware
from .caller import caller_key, is_continuation

__all__ = ["RATE_LIMITED", "Buckets", "MemoryBuckets", "RateLimit"]

RATE_LIMITED: Final = -32029
"""The JSON-RPC error code of a refused request (rule 3)."""

_UNCOUNTED: Final = frozenset({"initialize", "ping"})


class Buckets(Protocol):
    """Where token buckets live (rule 4)."""

    async def take(self, key: str, rate: float, burst: int) -> int:
        """Take one token from ``key``'s bucket (full when new): 0 when taken, else the
        milliseconds until one is back (nothing taken)."""
        ...


class MemoryBuckets:
    """Token buckets in this process (rule 4); ``clock`` is monotonic seconds."""

    __slots__ = ("_buckets", "_clock", "max_keys")

    def __init__(self, *, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, stamp)

    async def take(self, key: str, rate: float, burst: int) -> int:
        now = self._clock()
        buckets = self._buckets
        found = buckets.pop(key, None)  # (re-inserted below: the most recently seen last)
        tokens = float(burst) if found is None else min(float(burst), found[0] + (now - found[1]) * rate)
        wait = 0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = max(1, math.ceil((1.0 - tokens) / rate * 1000.0))
        buckets[key] = (tokens, now)
        if len(buckets) > self.max_keys:
            buckets.popitem(last=False)
        return wait


class RateLimit(Middleware):
    """Refuses a caller's requests beyond ``burst`` at once and ``rate`` a second (the module's rules).

    ``store`` defaults to ``MemoryBuckets()``; ``key(context)`` replaces the caller key;
    ``methods`` replaces the counted methods (rule 2).
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        store: Buckets | None = None,
        key: Callable[[RequestContext], str | None] | None = None,
        methods: Collection[str] | None = None,
    ) -> None:
        if not (rate > 0 and math.isfinite(rate)):
            raise ValueError("rate must be a positive number of tokens a second")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.rate = float(rate)
        self.burst = int(burst)
        self.store: Buckets = store if store is not None else MemoryBuckets()
        self._key = key
        self._methods = None if methods is None else frozenset(methods)

    def counts(self, method: str) -> bool:
        """True when a request of ``method`` takes a token (rule 2)."""
        methods = self._methods
        return method not in _UNCOUNTED if methods is None else method in methods

    async def on_request(self, context: RequestContext, params: dict[str, Any], call_next: CallNext) -> dict[str, Any]:
        if self.counts(context.method) and not is_continuation(params):
            key = caller_key(context, params) if self._key is None else self._key(context)
            wait = await self.store.take(key or "anonymous", self.rate, self.burst)
            if wait:
                observer = getattr(context.connection, "observer", None)  # telemetry (engine/observe.py)
                if observer is not None:
                    observer.rejected("rate_limit")
                raise McpError(RATE_LIMITED, "Rate limit exceeded", {"retryAfterMs": wait})
        return await call_next(params)
