"""How an OAuth flow fails: one error type, whose message says what went wrong and what to do."""

from __future__ import annotations

from typing import Any

from .._common import McpConnectionError

__all__ = ["OAuthError"]


class OAuthError(McpConnectionError):
    """The client could not get (or keep) a token for the server: discovery, registration,
    authorization or the token endpoint failed, or a server broke a rule the client checks.

    It is an ``McpConnectionError``: the connection cannot be used without a token. The message
    is one line and never contains a token, a client secret or an authorization code.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message, data)
