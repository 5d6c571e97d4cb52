"""Backend: one connection from a proxy to the server it fronts, restarted with backoff.

Rules:

1. A ``Backend`` owns at most one client at a time, made by its ``ClientFactory`` on first use
   (``client()``), and made again after it failed: a backend that died (a stdio process that
   exited, an HTTP server that went away) is restarted by the next request, never by a timer.
2. A failure of the connection itself (the transport closed, a connection error, a client that
   could not start) fails the request it happened in with ``BackendUnavailable``, whose message
   names the backend and says what happened; a JSON-RPC error the backend answered is not a
   failure and passes as the ``McpError`` it is (code, message, data).
3. After a failure no start is tried for ``first_delay`` seconds, doubled with each failure in
   a row up to ``max_delay``, counted from the failure on ``timer``; a success resets it. A
   request in that time fails at once with ``BackendUnavailable`` naming the last failure and
   the time left: the front never hammers a dying backend, and never makes a request wait on
   one (a gateway's lists stay quick with a dead entry).
4. What the backend asks of its client (sampling, elicitation, roots) goes to ``asker``, the
   function the proxy sets for the front this connection serves; without one the backend is
   told -32601, as a client that cannot answer would. With ``roots`` given, roots/list is
   answered with them and never asked. Its notifications go to
   ``on_notification``, its logs to ``on_log``.
5. Starting is serialised: requests that find no client wait for the one start under way.
6. A result comes back without what a 2026-07-28 backend stamps for its own client
   (``resultType``, ``ttlMs``, ``cacheScope``, the ``io.modelcontextprotocol/`` keys of
   ``_meta``): the front stamps its own, for its own client.
7. ``round`` makes one round of a call on a stateless connection and returns an
   ``input_required`` result as the backend gave it (its question keys, all its questions,
   its ``requestState``), declaring the capabilities the front request declared: the proxy
   passes the round on to its own client (proxy/server.py rule 5).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..engine.jsonrpc import CONNECTION_CLOSED, METHOD_NOT_FOUND, JsonRpcNotification, McpError
from ..engine.protocol import ProgressCallback

if TYPE_CHECKING:
    from ..client.base import McpClient
    from ..client.results import LogMessage

__all__ = ["Asker", "Backend", "BackendUnavailable", "ClientFactory"]

logger = logging.getLogger("mcp_sse_server.proxy")

# What a 2026-07-28 server stamps on a result for the client it answers (rule 6).
_STAMPED: Final = frozenset({"resultType", "ttlMs", "cacheScope", "_meta"})
_RESERVED_META: Final = "io.modelcontextprotocol/"

FIRST_DELAY: Final = 0.25
MAX_DELAY: Final = 5.0

Asker = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any]]]
"""``await asker(method, params)``: a backend's request to its client, answered by the front."""


class ClientFactory(Protocol):
    """Makes a new, unconnected client of the backend with these client options."""

    def __call__(self, **options: Any) -> McpClient: ...


class BackendUnavailable(Exception):
    """The backend could not be reached, or its connection failed during the request."""


class Backend:
    """One connection to a backend (rules in the module docstring)."""

    __slots__ = (
        "_client",
        "_delay_until",
        "_failures",
        "_reason",
        "_starting",
        "asker",
        "capabilities",
        "factory",
        "first_delay",
        "label",
        "max_delay",
        "mode",
        "on_log",
        "on_notification",
        "roots",
        "timer",
    )

    def __init__(
        self,
        label: str,
        factory: ClientFactory,
        *,
        capabilities: dict[str, Any] | None = None,
        mode: str = "auto",
        roots: list[dict[str, Any]] | None = None,
        on_notification: Callable[[JsonRpcNotification], Any] | None = None,
        on_log: Callable[[LogMessage], Any] | None = None,
        first_delay: float = FIRST_DELAY,
        max_delay: float = MAX_DELAY,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.factory = factory
        # The client capabilities to declare to the backend: those of the front it serves, so the
        # backend never asks what the front cannot answer (None: declare none).
        self.capabilities = capabilities or {}
        self.mode = mode  # the client's: "auto", "session" or a stateless revision
        self.asker: Asker | None = None
        self.roots = roots  # when given, roots/list is answered with these, not asked of the front
        self.on_notification = on_notification
        self.on_log = on_log
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.timer = timer
        self._client: McpClient | None = None
        self._starting: asyncio.Lock | None = None
        self._failures = 0
        self._delay_until = 0.0
        self._reason = ""  # the last failure's, for the requests refused while it lasts

    @property
    def started(self) -> McpClient | None:
        """The client, when one is connected now."""
        return self._client

    async def client(self) -> McpClient:
        """The connected client, started (again) when there is none (rules 1, 3 and 5)."""
        client = self._client
        if client is not None:
            return client
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._client is not None:
                return self._client
            wait = self._delay_until - self.timer()
            if wait > 0:
                raise BackendUnavailable(
                    f"Backend {self.label} is unavailable: {self._reason}; starting again in {wait:.1f} s"
                )
            client = self.factory(**self._options())
            try:
                await client.initialize()
            except Exception as error:
                await _close_quietly(client)
                if isinstance(error, McpError) and not isinstance(error, ConnectionError):
                    raise  # (the backend answered: a refusal, not an outage)
                self._failed(f"it could not be started: {_why(error)}")
                raise BackendUnavailable(f"Backend {self.label} could not be started: {_why(error)}") from error
            self._failures = 0
            self._client = client
            return client

    def _options(self) -> dict[str, Any]:
        capabilities = self.capabilities
        options: dict[str, Any] = {
            "client_name": "mcp-sse-server-proxy",
            "mode": self.mode,
            "on_notification": self.on_notification,
            "on_log": self.on_log,
            "log_level": "debug" if self.on_log is not None else None,  # the front filters (proxy.py)
            "request_timeout": None,  # the front's own limits bound a forwarded call
        }
        if "sampling" in capabilities:
            options["sampling_handler"] = self._sample
            options["sampling_tools"] = "tools" in (capabilities["sampling"] or {})
        if "elicitation" in capabilities:
            options["elicitation_handler"] = self._elicit
            options["elicitation_url"] = "url" in (capabilities["elicitation"] or {})
        if "roots" in capabilities or self.roots is not None:
            options["roots"] = self._roots
        return options

    async def _ask(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        asker = self.asker
        if asker is None:
            raise McpError(METHOD_NOT_FOUND, f"{method} cannot be answered: no client is asking through this proxy")
        return await asker(method, params)

    async def _sample(self, request: dict[str, Any]) -> dict[str, Any]:
        return await self._ask("sampling/createMessage", dict(request))

    async def _elicit(self, request: dict[str, Any]) -> dict[str, Any]:
        return await self._ask("elicitation/create", dict(request))

    async def _roots(self) -> list[dict[str, Any]]:
        if self.roots is not None:
            return self.roots
        roots = (await self._ask("roots/list", None)).get("roots")
        return roots if isinstance(roots, list) else []

    async def request(
        self, method: str, params: dict[str, Any] | None, on_progress: ProgressCallback | None = None
    ) -> dict[str, Any]:
        """Forward one request; McpError as the backend answered, BackendUnavailable (rule 2)."""
        client = self._client or await self.client()
        result = await self._guarded(client, client.request(method, params, on_progress=on_progress))
        if "resultType" in result or "_meta" in result:
            return _own_result(result)
        return result

    async def round(
        self,
        method: str,
        params: dict[str, Any],
        capabilities: dict[str, Any],
        on_progress: ProgressCallback | None = None,
    ) -> dict[str, Any] | None:
        """One round of a call on a stateless connection, declaring ``capabilities`` (rule 7):
        the backend's ``input_required`` result as it gave it, or its complete result as
        ``request`` returns it; None when this connection is a session (use ``request``)."""
        client = self._client or await self.client()
        if not client.stateless:
            return None
        sent = client.request_round(method, params, capabilities=capabilities, timeout=None, on_progress=on_progress)
        result = await self._guarded(client, sent)
        if result.get("resultType") == "input_required":
            return result
        return _own_result(result)

    async def _guarded(self, client: McpClient, sent: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        """The result of ``sent``, a request on ``client``; a failure of the connection itself
        as BackendUnavailable (rule 2)."""
        try:
            return await sent
        except McpError as error:
            if isinstance(error, ConnectionError) or (error.code == CONNECTION_CLOSED and _closed(client)):
                raise self._lost(client, error) from None
            raise
        except (OSError, EOFError, RuntimeError) as error:  # (what the transports raise when the peer is gone)
            raise self._lost(client, error) from error

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification on the live connection; nothing when there is none."""
        client = self._client
        if client is not None:
            try:
                await client.notify(method, params)
            except Exception:
                logger.debug("could not send %s to %s", method, self.label, exc_info=True)

    def _lost(self, client: McpClient, error: BaseException) -> BackendUnavailable:
        if self._client is client:
            self._client = None
            self._failed(_why(error))
            asyncio.get_running_loop().create_task(_close_quietly(client))
        logger.warning("backend %s failed: %s", self.label, _why(error))
        return BackendUnavailable(f"Backend {self.label} is unavailable: {_why(error)}")

    def _failed(self, reason: str) -> None:
        self._reason = reason
        self._failures += 1
        delay = min(self.max_delay, self.first_delay * 2.0 ** min(self._failures - 1, 16))
        self._delay_until = self.timer() + delay

    async def close(self) -> None:
        """Close the connection (a stdio backend's process ends with it)."""
        client, self._client = self._client, None
        if client is not None:
            await _close_quietly(client)


def _own_result(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` without what a 2026-07-28 backend stamps on it for its own client (rule 6): the
    front stamps its own, and a session front is sent none."""
    out = {key: value for key, value in result.items() if key not in _STAMPED}
    meta = result.get("_meta")
    if isinstance(meta, dict):
        kept = {key: value for key, value in meta.items() if not key.startswith(_RESERVED_META)}
        if kept:
            out["_meta"] = kept
    return out


def _closed(client: McpClient) -> bool:
    connection = client.connection
    return connection is None or connection.closed


def _why(error: BaseException) -> str:
    text = error.message if isinstance(error, McpError) else str(error)
    return text or type(error).__name__


async def _close_quietly(client: McpClient) -> None:
    try:
        await client.close()
    except Exception:
        logger.debug("closing a backend client failed", exc_info=True)
