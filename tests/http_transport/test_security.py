"""Origin and Host checks against DNS rebinding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fixtures.asgi import AsgiCall, call, open_session
from fixtures.messages import initialize_message
from mcp_sse_server.transport.http import McpHttpApp
from mcp_sse_server.transport.http.security import (
    OriginHostMiddleware,
    OriginPolicy,
    host_of,
    is_loopback_host,
    split_host_port,
)

pytestmark = pytest.mark.deployments("local", "redis")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST:8080", True),
        ("app.localhost", True),
        ("127.0.0.1", True),
        ("127.1.2.3:9", True),
        ("[::1]", True),
        ("[::1]:8080", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("10.0.0.1", False),
        ("evil.example.com", False),
        ("localhost.evil.com", False),
        ("127.0.0.1.nip.io", False),
        ("", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_split_host_port_and_host_of() -> None:
    assert split_host_port("Example.com:80") == ("example.com", "80")
    assert split_host_port("[::1]:80") == ("::1", "80")
    assert split_host_port("[::1]") == ("::1", None)
    assert host_of("https://App.example.com:8443") == "app.example.com"
    assert host_of("null") is None
    assert host_of("http://user@evil.com") is None


def test_default_policy_allows_loopback_only() -> None:
    policy = OriginPolicy()
    assert policy.check(None, b"127.0.0.1:8000") is None
    assert policy.check(None, None) is None
    assert policy.check(b"http://localhost:3000", b"localhost:8000") is None
    assert policy.check(b"https://127.0.0.1", b"[::1]:8000") is None
    assert policy.check(b"https://evil.example.com", b"127.0.0.1:8000") is not None
    assert policy.check(b"null", b"127.0.0.1") is not None
    assert policy.check(b"file://", b"127.0.0.1") is not None
    assert policy.check(None, b"evil.example.com:8000") is not None  # DNS rebinding
    assert "Host" in (policy.check(b"http://localhost", b"evil.example.com") or "")


def test_an_allowlist_requires_an_origin_and_allows_its_hosts() -> None:
    policy = OriginPolicy(["https://app.example.com"], bind_host="0.0.0.0")
    assert policy.check(None, b"127.0.0.1") is not None
    assert policy.check(b"https://app.example.com", b"app.example.com") is None
    assert policy.check(b"https://APP.example.com/", b"127.0.0.1") is None
    assert policy.check(b"http://localhost:5173", b"localhost") is None
    assert policy.check(b"https://other.example.com", b"app.example.com") is not None
    assert policy.check(b"https://app.example.com", b"mcp.example.com") is not None


def test_allowed_hosts_and_the_bound_address() -> None:
    policy = OriginPolicy(["https://app.example.com"], ["mcp.example.com"], bind_host="192.168.1.5")
    assert policy.check(b"https://app.example.com", b"mcp.example.com:443") is None
    assert policy.check(b"https://app.example.com", b"192.168.1.5:8080") is None
    assert policy.check(b"https://app.example.com", b"evil.example.com") is not None
    anything = OriginPolicy(["https://app.example.com"], ["*"])
    assert anything.check(b"https://app.example.com", b"whatever.internal") is None


def test_decisions_are_cached() -> None:
    policy = OriginPolicy()
    policy.check(b"https://evil.example.com", b"localhost")
    assert (b"https://evil.example.com", b"localhost") in policy._cache


async def test_refusals_are_403_with_a_json_rpc_error(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app()
    reply = await call(app, "POST", initialize_message(), {"origin": "https://evil.example.com"})
    assert reply.status == 403
    assert "origin" in reply.json["error"]["message"].lower()
    reply = await call(app, "POST", initialize_message(), {"host": "evil.example.com:8000"})
    assert reply.status == 403
    assert "host" in reply.json["error"]["message"].lower()
    reply = await call(app, "POST", initialize_message(), {"origin": "http://localhost:8000"})
    assert reply.status == 200
    assert len(app.live_sessions) == 1


async def test_with_an_allowlist_a_request_without_origin_is_refused(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app(allowed_origins={"https://app.example.com"})
    reply = await call(app, "POST", initialize_message())
    assert reply.status == 403
    assert "origin" in reply.json["error"]["message"].lower()
    reply = await call(app, "POST", initialize_message(), {"origin": "https://app.example.com"})
    assert reply.status == 200


async def _posted_with(app: McpHttpApp, extra: list[tuple[bytes, bytes]], drop: str | None = None) -> AsgiCall:
    headers = {drop: None} if drop else {}
    request = AsgiCall(app, "POST", initialize_message(), headers)  # type: ignore[arg-type]
    request.scope["headers"].extend(extra)
    return await request.start().finish()


@pytest.mark.parametrize(
    ("extra", "drop", "problem"),
    [
        ([], "host", "no host header"),
        ([(b"host", b"evil.example")], None, "several host headers"),  # after the good one
        ([(b"origin", b"http://localhost"), (b"origin", b"https://evil.example")], None, "several origin headers"),
    ],
)
async def test_a_missing_or_repeated_host_or_origin_is_400(
    make_app: Callable[..., McpHttpApp], extra: list[tuple[bytes, bytes]], drop: str | None, problem: str
) -> None:
    app = make_app()
    reply = await _posted_with(app, extra, drop)
    assert reply.status == 400 and problem in reply.json["error"]["message"].lower()
    assert len(app.live_sessions) == 0  # and no session was opened


async def test_a_repeated_session_id_is_400(make_app: Callable[..., McpHttpApp]) -> None:
    app = make_app()
    first, second = await open_session(app), await open_session(app)
    request = AsgiCall(app, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, first.headers)
    request.scope["headers"].append((b"mcp-session-id", second.id.encode()))
    reply = await request.start().finish()
    assert reply.status == 400 and "several mcp-session-id" in reply.json["error"]["message"].lower()


async def test_the_checks_wrap_any_asgi_app() -> None:
    reached: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guarded = OriginHostMiddleware(inner, OriginPolicy())
    assert (await AsgiCall(guarded, "GET", b"", {"origin": "https://evil.example"}).start().finish()).status == 403
    assert (await AsgiCall(guarded, "GET", b"", {}).start().finish()).status == 204
    assert reached == ["/mcp"]
