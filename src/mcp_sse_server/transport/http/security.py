"""Origin and Host checks: the DNS-rebinding defence of a local MCP server.

A web page the user has open can make the browser send requests to
127.0.0.1 (through a rebound DNS name). Browsers always send ``Host`` with the
name they resolved and ``Origin`` with the page's origin, so:

* with no allowlist, an ``Origin`` must be loopback and ``Host`` must name a
  loopback host (or the address the server is bound to);
* with ``allowed_origins``, an ``Origin`` is required and must be loopback or
  listed, and ``Host`` may also be one of the allowlisted origins' hosts or an
  ``allowed_hosts`` entry.

This is a browser control, not authentication. ``OriginHostMiddleware``
applies it to any ASGI app; a request must carry exactly one ``Host`` and at
most one ``Origin`` (400 otherwise), so no second header can hide the first.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Final

from .asgi import ASGIApp, Receive, Scope, Send
from .errors import HttpError
from .request import McpRequest

__all__ = ["OriginHostMiddleware", "OriginPolicy", "host_of", "is_loopback_host", "split_host_port"]

logger = logging.getLogger("mcp_sse_server.http")

_WILDCARD_BINDS: Final = frozenset({"", "0.0.0.0", "::", "[::]"})
_CACHE_SIZE: Final = 256


def split_host_port(value: str) -> tuple[str, str | None]:
    """``("example.com", "8080")`` from ``example.com:8080``; IPv6 brackets are removed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        host = value[1:end]
        rest = value[end + 1 :]
        return host, rest[1:] if rest.startswith(":") else None
    if value.count(":") > 1:  # a bare IPv6 address
        return value, None
    host, colon, port = value.partition(":")
    return host, port if colon else None


def host_of(origin: str) -> str | None:
    """The hostname of an origin such as ``https://app.example.com:8443``."""
    scheme, sep, rest = origin.partition("://")
    if not sep or not scheme:
        return None
    authority = rest.split("/", 1)[0]
    if "@" in authority:
        return None
    host, _ = split_host_port(authority)
    return host or None


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1 (brackets and a port are fine)."""
    name, _ = split_host_port(host)
    if name == "localhost" or name.endswith(".localhost"):
        # RFC 6761: browsers resolve *.localhost to loopback themselves, so DNS cannot rebind it.
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class OriginPolicy:
    """Decides whether a request's Origin and Host headers are acceptable.

    ``check`` returns None when the request may proceed, else the reason to
    send with a 403. Decisions are cached per header pair.
    """

    __slots__ = ("_cache", "allowed_origins", "any_host", "hosts", "require_origin")

    def __init__(
        self,
        allowed_origins: Iterable[str] = (),
        allowed_hosts: Iterable[str] = (),
        bind_host: str | None = None,
        *,
        tokens_checked: bool = False,
    ) -> None:
        self.allowed_origins = frozenset(o.strip().rstrip("/").lower() for o in allowed_origins)
        # With bearer tokens checked, a request without Origin (not a browser's) is served: the
        # token is the control. An Origin that is present must still be allowed.
        self.require_origin = bool(self.allowed_origins) and not tokens_checked
        hosts = {split_host_port(h)[0] for h in allowed_hosts if h != "*"}
        self.any_host = "*" in allowed_hosts
        for origin in self.allowed_origins:
            host = host_of(origin)
            if host is not None:
                hosts.add(host)
        if bind_host is not None:
            bind_name = split_host_port(bind_host)[0]
            # A wildcard bind says nothing about the names clients use.
            if bind_name not in _WILDCARD_BINDS:
                hosts.add(bind_name)
        self.hosts = frozenset(hosts)
        self._cache: dict[tuple[bytes | None, bytes | None], str | None] = {}

    def check(self, origin: bytes | None, host: bytes | None) -> str | None:
        """None when acceptable, else a message for the 403 error body."""
        key = (origin, host)
        try:
            return self._cache[key]
        except KeyError:
            pass
        verdict = self._decide(origin, host)
        if len(self._cache) >= _CACHE_SIZE:
            self._cache.clear()
        self._cache[key] = verdict
        return verdict

    def origin_allowed(self, origin: str) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        host = host_of(origin)
        return host is not None and origin.startswith(("http://", "https://")) and is_loopback_host(host)

    def host_allowed(self, host: str) -> bool:
        if self.any_host:
            return True
        name, _ = split_host_port(host)
        return name in self.hosts or is_loopback_host(name)

    def _decide(self, origin: bytes | None, host: bytes | None) -> str | None:
        if origin is None:
            if self.require_origin:
                return (
                    "Forbidden: this server only accepts requests from its allowed origins (Origin header missing; "
                    "a server that checks bearer tokens serves clients that send none)"
                )
        elif not self.origin_allowed(origin.decode("latin-1")):
            return "Forbidden: the request's Origin is not allowed to use this MCP server"
        # A request without Host cannot come from a browser (HTTP/1.1 browsers always send it).
        if host is not None and not self.host_allowed(host.decode("latin-1")):
            return (
                "Forbidden: the request's Host header does not name this MCP server "
                "(allowed_hosts / --allowed-host adds a name)"
            )
        return None


class OriginHostMiddleware:
    """Wraps an ASGI app: HTTP requests reach it only with one acceptable Host and Origin.

    400 for a missing or repeated ``Host`` or a repeated ``Origin``; 403 with
    the policy's reason for a refused pair. Other scopes pass through.
    """

    __slots__ = ("app", "policy")

    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = McpRequest.of(scope)  # the header view the endpoint reads too: one scan per request
        host, origin = request.host, request.origin
        if host is None or request.repeated:
            hosts, origins = request.count(b"host"), request.count(b"origin")
            if hosts != 1 or origins > 1:
                if hosts == 0:
                    problem = "no Host header"
                else:
                    problem = "several Host headers" if hosts > 1 else "several Origin headers"
                await HttpError(400, f"Bad request: {problem}; send exactly one Host and at most one Origin").write(
                    send
                )
                return
        refusal = self.policy.check(origin, host)
        if refusal is not None:
            logger.info("refused a request: %s (Origin %r, Host %r)", refusal, origin, host)
            await HttpError(403, refusal).write(send)
            return
        await self.app(scope, receive, send)
