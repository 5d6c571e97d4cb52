"""Handshake: connecting, and finding out which era the server speaks (``McpClient``'s ``mode``).

Rules:

1. ``mode="auto"`` first asks ``server/discover`` at the stateless revision (the probe) when
   the transport may reach such a server (``ClientTransport.can_be_stateless``), and speaks it
   when the server lists it or answers with an error only such a server sends (-32020, -32021,
   -32022 naming a revision both speak); on anything else it performs ``initialize`` and opens
   a session. ``"session"`` only does that; a stateless revision's name only probes.
2. The transport sends the probe (``ClientTransport.probe``): one that ended a server the probe
   broke returns None, and the client connects again and performs ``initialize``.
3. What an ``"auto"`` client found is remembered per server identity for this process (the era
   memo, ``client/era_memo.py``; ``remember_era=False`` opts out): a server remembered as a
   session server is not probed; one that then refuses ``initialize`` naming a stateless
   revision is forgotten and probed.
4. A handshake that fails closes the client (what the transport opened is released), so
   ``async with`` never leaks on error. Each successful one is counted, so that concurrent
   requests that met an expired session share one new handshake (``ClientCore._reinitialize``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable
from typing import Any

from ..engine import versions
from ..engine.jsonrpc import INTERNAL_ERROR, METHOD_NOT_FOUND, McpError
from ..engine.protocol import Connection
from .core import ERA_SESSION, ERA_STATELESS, MODE_AUTO, MODE_SESSION, ClientCore
from .era_memo import MEMO_SESSION, Identity, forget_era, recall_era, remember_era, skips_probe
from .stateless import (
    SERVER_INFO_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    UnsupportedProtocolVersionError,
    is_stateless_error,
)

__all__ = ["Handshake"]

logger = logging.getLogger("mcp_sse_server.client")


class Handshake(ClientCore):
    """``initialize()``, the probe and the era (see the module)."""

    async def initialize(self) -> dict[str, Any]:
        """Open the transport and perform the handshake; returns the InitializeResult.

        On a client that is already initialized and connected this returns the
        handshake's result again without repeating it.
        """
        if self._initialize_result is not None and self.connection is not None and not self.connection.closed:
            return self._initialize_result
        return await self._handshake()

    async def _handshake(self) -> dict[str, Any]:
        try:
            result = await self._negotiate()
        except BaseException:
            with contextlib.suppress(Exception):
                await self.close()
            raise
        self._handshakes += 1
        return result

    async def _connected(self) -> Connection:
        """The connection, opened (again) when there is none or it has closed."""
        if self.connection is None or self.connection.closed:
            self.connection = Connection(await self.transport.connect(), self)
        return self.connection

    async def _negotiate(self) -> dict[str, Any]:
        await self._connected()
        self._initialize_result = None
        if not self._may_probe():
            result = await self._initialize()
        else:
            identity = self._memo_identity()
            remembered = recall_era(identity) if identity is not None else None
            if identity is not None and skips_probe(remembered):
                result = await self._initialize_remembered(identity)
            else:
                result = await self._probe_or_initialize(remembered)
        identity = self._memo_identity()
        if identity is not None and self.era is not None:
            spoken = self.protocol_version or versions.CLIENT_STATELESS[-1]
            remember_era(identity, spoken if self.stateless else MEMO_SESSION)
        return result

    def _may_probe(self) -> bool:
        """True when this client should ask for the stateless revision before the handshake."""
        return self.mode != MODE_SESSION and self.era != ERA_SESSION and self.transport.can_be_stateless

    def _memo_identity(self) -> Identity | None:
        """The era memo key this client reads and writes: only ``mode="auto"`` clients with
        ``remember_era`` use the memo, for a transport whose server has an identity."""
        if self.mode != MODE_AUTO or not self.remember_era:
            return None
        return self.transport.identity

    async def _initialize_remembered(self, identity: Identity) -> dict[str, Any]:
        """``initialize`` without a probe, for a server the era memo remembers as a session server;
        one that now refuses it naming a stateless revision is forgotten and probed."""
        logger.debug("the server is remembered as a session server; skipping server/discover")
        try:
            return await self._initialize()
        except UnsupportedProtocolVersionError as refusal:
            if not any(name in versions.CLIENT_STATELESS for name in refusal.supported):
                raise
            logger.info("the server remembered as a session server now refuses initialize; probing it again")
            forget_era(identity)
            await self._connected()
            return await self._probe_or_initialize(None)

    async def _probe_or_initialize(self, preferred: str | None) -> dict[str, Any]:
        """The probe (at ``preferred`` first, when it is a stateless revision), else ``initialize``."""
        adopted = await self._probe(preferred)
        if adopted is not None:
            return adopted
        stateless = ", ".join(versions.CLIENT_STATELESS)
        logger.debug("the server does not speak %s; falling back to initialize", stateless)
        try:
            return await self._initialize()
        except UnsupportedProtocolVersionError as refusal:
            # The probe got no usable answer (a timeout, say) but the server turns the
            # handshake down naming a revision both speak: ask once more.
            if not any(name in versions.CLIENT_STATELESS for name in refusal.supported):
                raise
            await self._connected()
            adopted = await self._probe()
            if adopted is None:
                raise
            return adopted

    async def _send_probe(self, params: dict[str, Any]) -> dict[str, Any]:
        """Send the ``server/discover`` probe (its ``probe_timeout`` applies); its result."""
        connection = self._live()
        if self._hooks is None and self._telemetry is None:
            return await connection.request("server/discover", params, timeout=self.probe_timeout)

        def send(sent: dict[str, Any] | None) -> Awaitable[dict[str, Any]]:
            return connection.request("server/discover", sent, timeout=self.probe_timeout)

        return await self._reported(connection, "server/discover", params, send)

    async def _probe(self, preferred: str | None = None) -> dict[str, Any] | None:
        """Ask ``server/discover`` (at ``preferred`` first, when it is a stateless revision this
        client speaks); the adopted result when the server speaks the stateless revision, None when
        the handshake should follow (never on a recognised stateless error)."""
        forced = self.mode != MODE_AUTO
        if forced:
            version = self.mode
        else:
            version = preferred if preferred in versions.CLIENT_STATELESS else versions.CLIENT_STATELESS[-1]
        for attempt in range(2):
            stamped = self._stamp(None, version)
            try:
                ask = functools.partial(self._send_probe, stamped)
                result = await self.transport.probe(ask, mode=self.mode, timeout=self.probe_timeout)
            except TimeoutError:
                if forced:
                    raise
                logger.info("server/discover got no answer within %g s; using the handshake", self.probe_timeout)
                return None
            except McpError as error:
                if isinstance(error, ConnectionError):
                    raise  # the server cannot be reached: no revision question to settle
                if error.code == UNSUPPORTED_PROTOCOL_VERSION:
                    refusal = UnsupportedProtocolVersionError(error.message, error.data)
                    mutual = [name for name in refusal.supported if name in versions.CLIENT_STATELESS]
                    if mutual and attempt == 0:
                        version = mutual[-1]
                        continue
                    if not forced and any(versions.client_accepts(name) for name in refusal.supported):
                        return None
                    await self.close()
                    raise refusal from None
                if is_stateless_error(error):
                    logger.info("server/discover failed with %s; the server speaks %s", error.code, version)
                    return self._adopt({}, version)
                if forced:
                    raise
                return None
            if result is None:  # the probe broke the server: a fresh one gets initialize
                await self._connected()
                return None
            listed = result.get("supportedVersions")
            names = [name for name in listed if isinstance(name, str)] if isinstance(listed, list) else []
            mutual = [name for name in names if name in versions.CLIENT_STATELESS]
            if not mutual:
                if forced:
                    await self.close()
                    raise UnsupportedProtocolVersionError(
                        "The server does not list this client's protocol revision in server/discover",
                        {"supported": names, "requested": version},
                    )
                return None
            if version not in mutual:
                version = mutual[-1]
            self._remember("server/discover", "", result)
            return self._adopt(result, version)
        return None

    def _adopt(self, discovered: dict[str, Any], version: str) -> dict[str, Any]:
        """Speak the stateless revision ``version`` with a server that answered ``discovered``."""
        self.era = ERA_STATELESS
        self.protocol_version = version
        self.discover_result = discovered or None
        meta = discovered.get("_meta")
        info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
        if not isinstance(info, dict):
            info = discovered.get("serverInfo")  # some early servers put it in the result
        self.server_info = info if isinstance(info, dict) else None
        capabilities = discovered.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        instructions = discovered.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        # What initialize() returns: the handshake's shape, so callers of either era read it alike.
        self._initialize_result = {
            "protocolVersion": version,
            "capabilities": self.server_capabilities,
            "serverInfo": self.server_info or {},
            **({"instructions": self.instructions} if self.instructions is not None else {}),
        }
        return self._initialize_result

    async def discover(self) -> dict[str, Any]:
        """The server's DiscoverResult (stateless revision only), from the cache while its
        ``ttlMs`` lasts."""
        if not self.stateless:
            raise McpError(METHOD_NOT_FOUND, f"server/discover is not a method of revision {self.protocol_version}")
        cached = self._recall("server/discover", "")
        if cached is not None:
            return dict(cached)
        result = await self.request("server/discover")
        self._adopt(result, self.protocol_version or versions.CLIENT_STATELESS[-1])
        self._remember("server/discover", "", result)
        return result

    async def _initialize(self) -> dict[str, Any]:
        offer = {
            "protocolVersion": versions.CLIENT_OFFERS,
            "capabilities": self.capabilities,
            "clientInfo": self.client_info,
        }
        result = await self.request("initialize", offer, retry_expired=False)
        answered = result.get("protocolVersion")
        if not isinstance(answered, str) or not versions.client_accepts(answered):
            await self.close()
            raise McpError(
                INTERNAL_ERROR,
                f"The server answered protocol revision {answered!r}, which this client does not speak "
                f"(it speaks {', '.join(versions.CLIENT_ACCEPTED)})",
            )
        self.protocol_version = answered
        self.era = ERA_SESSION
        self.server_info = result.get("serverInfo")
        self.server_capabilities = result.get("capabilities") or {}
        self.instructions = result.get("instructions")
        if self._telemetry is not None:
            self._telemetry.session_opened(self)
        await self.notify("notifications/initialized")
        await self._ask_for_logs()
        self._initialize_result = result
        return result

    async def _ask_for_logs(self) -> None:
        """logging/setLevel with ``effective_log_level`` on a new session whose server declares
        ``logging``: without it the server picks what to send (some send nothing, ours everything)."""
        level = self.effective_log_level
        if level is None or "logging" not in (self.server_capabilities or {}):
            return
        try:
            # No retry on an expired session: this runs inside the (re-)initialization itself.
            await self.request("logging/setLevel", {"level": level}, retry_expired=False)
        except McpError as error:
            if isinstance(error, ConnectionError):
                raise
            # Logs are an extra: a server that refuses the level still serves everything else.
            logger.warning("the server refused logging/setLevel %r: %s", level, error.message)
