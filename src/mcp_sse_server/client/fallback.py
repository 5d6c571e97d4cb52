"""SessionFallback: a session beside a 2026-07-28 connection, for servers whose tools still ask
the client directly (``McpClient``'s ``session_fallback``, on by default).

Rules:

1. Servers of other SDKs that speak 2026-07-28 may keep handlers that ask the client directly
   (sampling, elicitation, roots) rather than through ``input_required``; at 2026-07-28 that
   fails and the server says so (``stateless.missing_back_channel`` knows their wordings), as an
   error or as a ``tools/call`` result with ``isError``.
2. When a call fails that way, the client has a handler for what was asked, and its transport
   can reach the same server a second time (``ClientTransport.sibling``), the client opens one
   session there (``mode="session"``, this client's handlers and options) and repeats the call
   on it, where the server can reach back; later such failures reuse that session, and
   ``close()`` ends it.
3. A server that refuses the handshake, or opens no session (``ClientTransport.holds_session``),
   gets no second try: the original failure is returned. The repeated call runs the tool again
   from its start; ``session_fallback=False`` keeps the failure instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import abstractmethod
from typing import Any

from ..engine.jsonrpc import INTERNAL_ERROR, McpError
from ..engine.protocol import ProgressCallback
from .core import MODE_SESSION, ClientCore
from .stateless import missing_back_channel
from .stateless_calls import StatelessCalls
from .transport import ClientTransport

__all__ = ["SessionFallback"]

logger = logging.getLogger("mcp_sse_server.client")


class SessionFallback(StatelessCalls):
    """Stateless requests repeated on a session when the server could not reach back (see the module)."""

    _fallback: ClientCore | None = None  # the session of the session fallback, once opened
    _fallback_refused = False  # the server would not open one: no further attempts
    _fallback_opening: asyncio.Lock | None = None

    @abstractmethod
    def _new_client(self, transport: ClientTransport, **options: Any) -> ClientCore:
        """A new client over ``transport`` (``McpClient``)."""

    async def close(self) -> None:
        """End the session (and the session fallback's) and release the transport (idempotent)."""
        fallback, self._fallback, self._fallback_refused = self._fallback, None, False
        if fallback is not None:
            await fallback.close()
        await super().close()

    async def _stateless_or_session(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, on_progress: ProgressCallback | None
    ) -> dict[str, Any]:
        try:
            result = await self._stateless_request(method, params, timeout, on_progress)
        except McpError as error:
            session = None if isinstance(error, ConnectionError) else await self._fallback_for(error, method)
            if session is None:
                raise
            return await session.request(method, params, timeout=timeout, on_progress=on_progress)
        if method == "tools/call" and result.get("isError") is True:
            session = await self._fallback_for(result, method)
            if session is not None:
                return await session.request(method, params, timeout=timeout, on_progress=on_progress)
        return result

    async def _fallback_for(self, failure: McpError | dict[str, Any], method: str) -> ClientCore | None:
        """The session to repeat ``method`` on after ``failure``, or None: not a failure to reach
        back (``missing_back_channel``), or one the fallback does not take (``_may_fall_back``)."""
        if not self._may_fall_back(missing_back_channel(failure)):
            return None
        return await self._fallback_session(method)

    def _may_fall_back(self, wanted: str | None) -> bool:
        """True when a call whose server could not send ``wanted`` may be repeated on a session:
        the fallback is on, this client answers ``wanted``, and the server did not refuse one."""
        if wanted is None or not self.session_fallback or self._owner is not None or self._fallback_refused:
            return False
        if wanted == "sampling/createMessage":
            return self.sampling_handler is not None
        if wanted == "elicitation/create":
            return self.elicitation_handler is not None
        return wanted == "roots/list" and self.roots is not None

    async def _fallback_session(self, method: str) -> ClientCore | None:
        """The session fallback's client, opened on first need; None when the transport has no
        second way to the server or the server refused the handshake (then never asked again
        until ``close()``)."""
        if self._fallback_opening is None:
            self._fallback_opening = asyncio.Lock()
        async with self._fallback_opening:
            if self._fallback is not None or self._fallback_refused:
                return self._fallback
            sibling = self.transport.sibling()
            if sibling is None:
                self._fallback_refused = True
                return None
            client = self._new_client(sibling, mode=MODE_SESSION, **self._handler_options())
            client._owner = self
            try:
                await client.initialize()
                if not sibling.holds_session:
                    # It answers each request on its own: our answers could not reach the handler either.
                    raise McpError(INTERNAL_ERROR, "the handshake opened no session")
            except Exception as error:  # any refusal: the original failure stands
                logger.info("%s needs a session, but the server did not open one: %s", method, error)
                with contextlib.suppress(Exception):
                    await client.close()
                self._fallback_refused = True
                return None
            logger.info(
                "%s asked this client something 2026-07-28 cannot carry to it; repeating it on a %s session",
                method,
                client.protocol_version,
            )
            self._fallback = client
            return client

    def _handler_options(self) -> dict[str, Any]:
        """This client's handlers and options as keyword arguments, for the fallback's client, which
        declares the same capabilities; what the server asks still reaches this client's handlers
        (``_serve``)."""
        return {
            "client_name": self.client_info["name"],
            "client_version": self.client_info["version"],
            "sampling_handler": self.sampling_handler,
            "elicitation_handler": self.elicitation_handler,
            "roots": self.roots,
            "on_log": self.on_log,
            "on_notification": self.on_notification,
            "request_timeout": self.request_timeout,
            "elicitation_url": self.elicitation_url,
            "sampling_tools": self.sampling_tools,
            "on_elicitation_complete": self.on_elicitation_complete,
            "log_level": self.log_level,
            "max_input_rounds": self.max_input_rounds,
            "cache": self.cache,
            "session_fallback": False,
        }
