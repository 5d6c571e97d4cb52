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
4. A server that serves this client alone (``ClientTransport.owns_server``: a child process over
   stdio) gets no second connection: the client itself moves onto a session of it, by
   ``initialize`` on the same process when the server takes it (within ``probe_timeout``), else
   by starting the process again and speaking ``initialize`` to the new one; the call is repeated
   there and every later request goes there too (``era`` becomes ``"session"``). A ``mode="auto"``
   client with ``remember_era`` records the server as a session server in the era memo
   (``client/era_memo.py``), so later clients of the same command skip 2026-07-28 and never run
   the tool twice. Calls in flight on a process that is ended fail with its connection error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import abstractmethod
from typing import Any

from ..engine.jsonrpc import INTERNAL_ERROR, McpError
from ..engine.protocol import ProgressCallback
from .core import MODE_AUTO, MODE_SESSION, ClientCore
from .era_memo import MEMO_SESSION, remember_era
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
            self._note("session_fallback", reason=str(missing_back_channel(error)))
            return await session.request(method, params, timeout=timeout, on_progress=on_progress)
        if method == "tools/call" and result.get("isError") is True:
            session = await self._fallback_for(result, method)
            if session is not None:
                self._note("session_fallback", reason=str(missing_back_channel(result)))
                return await session.request(method, params, timeout=timeout, on_progress=on_progress)
        return result

    async def _fallback_for(self, failure: McpError | dict[str, Any], method: str) -> ClientCore | None:
        """The session to repeat ``method`` on after ``failure``, or None: not a failure to reach
        back (``missing_back_channel``), or one the fallback does not take (``_may_fall_back``)."""
        wanted = missing_back_channel(failure)
        if not self._may_fall_back(wanted):
            return None
        if self.transport.owns_server:
            return self if await self._move_to_session(method, str(wanted)) else None
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
            client._hooks = self._hooks  # the same hooks see the repeated calls
            client._telemetry = self._telemetry  # and its spans are children of the call's
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

    async def _move_to_session(self, method: str, wanted: str) -> bool:
        """Move this client onto a session of the server it alone is served by (rule 4): True once
        it speaks one, False when the server would not open one (then not asked again until
        ``close()``, and the client goes on at 2026-07-28)."""
        if self._fallback_opening is None:
            self._fallback_opening = asyncio.Lock()
        async with self._fallback_opening:
            if not self.stateless:
                return True  # a concurrent call moved it already
            if self._fallback_refused:
                return False
            era, version = self.era, self.protocol_version
            self.era = None  # request() now takes the session revisions' path, initialize included
            try:
                where = await self._session_here()
            except Exception as error:  # any refusal: the original failure stands
                logger.info("%s needs a session, but the server did not open one: %s", method, error)
                self._fallback_refused = True
                self.era, self.protocol_version = era, version
                with contextlib.suppress(Exception):
                    await self._connected()
                return False
            self._handshakes += 1
            identity = self.transport.identity
            remembered = self.mode == MODE_AUTO and self.remember_era and identity is not None
            if remembered and identity is not None:
                remember_era(identity, MEMO_SESSION)
            logger.info(
                "%s: the server could not send %s at %s; this client now speaks %s with it (initialize %s)%s",
                method,
                wanted,
                version,
                self.protocol_version,
                where,
                "; remembered for this server" if remembered else "",
            )
            return True

    async def _session_here(self) -> str:
        """``initialize`` on the current process, else on a new one (rule 4); where it was accepted."""
        try:
            async with asyncio.timeout(self.probe_timeout):
                await self._initialize()
            return "on the same process"
        except Exception as refusal:
            logger.debug("the server refused initialize on the same process (%s); starting it again", refusal)
        if self.connection is not None:
            await self.connection.close()
        await self._connected()
        await self._initialize()
        return "on a new process"

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
            "apps": self.apps,
            "on_elicitation_complete": self.on_elicitation_complete,
            "log_level": self.log_level,
            "max_input_rounds": self.max_input_rounds,
            "cache": self.cache,
            "session_fallback": False,
        }
