"""The old home of the stateless revision's endpoint: kept for one release, import ``stateless``.

The package calls the 2026-07-28 era "stateless" (and the handshake revisions
"session"), so ``ModernEndpoint`` is now ``stateless.StatelessEndpoint`` and
the wire constants live in ``stateless_meta``. Every name this module had is
still importable from here, under its old name.
"""

from __future__ import annotations

from .stateless import (
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    LOG_LEVEL,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO,
    SUBSCRIPTION_ID,
    CachePolicy,
    Envelope,
    InputRequired,
    MirroredHeader,
    RequestSession,
    StatelessEndpoint,
    StatelessHost,
    has_envelope,
    mirrored_headers,
    read_envelope,
    refuse_enveloped,
    unsupported_version,
)

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVEL",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "CachePolicy",
    "Envelope",
    "InputRequired",
    "MirroredHeader",
    "ModernEndpoint",
    "ModernHost",
    "RequestSession",
    "has_envelope",
    "mirrored_headers",
    "read_envelope",
    "refuse_enveloped",
    "unsupported_version",
]

ModernEndpoint = StatelessEndpoint
"""The old name of ``stateless.StatelessEndpoint``."""

ModernHost = StatelessHost
"""The old name of ``stateless.StatelessHost``."""
