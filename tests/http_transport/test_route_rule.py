"""The router's rules (``transport/http/router.py``), row by row: ``route(request, path)`` is a pure
function of the method, the path and the headers, so each row is plain values."""

from __future__ import annotations

import pytest

from mcp_sse_server.transport.http.errors import HttpError
from mcp_sse_server.transport.http.legacy_sse import LegacyPaths
from mcp_sse_server.transport.http.request import McpRequest
from mcp_sse_server.transport.http.router import Route, route

SID = (b"mcp-session-id", b"s1")
OTHER_SID = (b"mcp-session-id", b"s2")
SESSION_VERSIONS = [b"2024-11-05", b"2025-03-26", b"2025-06-18", b"2025-11-25"]
NO_SESSION_VERSIONS = [b"2026-07-28", b"2024-10-07", b"1999-01-01", b"garbage", b""]
OTHER_METHODS = ["PUT", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "post"]


def request(method: str, path: str = "/mcp", *headers: tuple[bytes, bytes]) -> McpRequest:
    return McpRequest({"method": method, "path": path, "headers": [(b"host", b"127.0.0.1"), *headers]})


def version(value: bytes) -> tuple[bytes, bytes]:
    return (b"mcp-protocol-version", value)


ROUTED = [
    # (row, request, the app's path, route)
    *[
        (f"rule 5: {method} goes to the session endpoint", request(method, "/mcp", SID), "/mcp", where)
        for method, where in (("POST", Route.POST), ("GET", Route.GET), ("DELETE", Route.DELETE))
    ],
    ("rule 5: a POST without a session id (initialize)", request("POST"), "/mcp", Route.POST),
    *[
        (f"rule 5: session revision {v.decode()} leaves it to the method", request(m, "/mcp", version(v)), "/mcp", r)
        for v in SESSION_VERSIONS
        for m, r in (("POST", Route.POST), ("GET", Route.GET), ("DELETE", Route.DELETE))
    ],
    *[
        (f"rule 3: version {v.decode()!r} on {m} is stateless", request(m, "/mcp", version(v)), "/mcp", Route.STATELESS)
        for v in NO_SESSION_VERSIONS
        for m in ("POST", "GET", "DELETE", "PATCH", "OPTIONS")
    ],
    (
        "rule 3 before rule 5: a stateless PUT is not 405 here",
        request("PUT", "/mcp", version(b"2026-07-28")),
        "/mcp",
        Route.STATELESS,
    ),
    ("rule 1: without an app path any path is served", request("POST", "/anything/mcp"), None, Route.POST),
    (
        "rule 2: other repeated headers are fine",
        request("POST", "/mcp", SID, (b"accept", b"*/*"), (b"accept", b"*/*")),
        "/mcp",
        Route.POST,
    ),
]

REFUSED = [
    # (row, request, the app's path, status, words of the message)
    ("rule 1: another path", request("POST", "/other"), "/mcp", 404, "/mcp"),
    ("rule 1: a path under the endpoint", request("POST", "/mcp/x"), "/mcp", 404, "/mcp"),
    ("rule 1 before rule 5: a PATCH elsewhere is 404", request("PATCH", "/other"), "/mcp", 404, "not found"),
    ("rule 1 before rule 2", request("POST", "/other", SID, OTHER_SID), "/mcp", 404, "not found"),
    ("rule 2: a repeated Mcp-Session-Id", request("POST", "/mcp", SID, OTHER_SID), "/mcp", 400, "mcp-session-id"),
    ("rule 2: the same Mcp-Session-Id twice", request("GET", "/mcp", SID, SID), "/mcp", 400, "mcp-session-id"),
    (
        "rule 2 before rule 3: even on a stateless request",
        request("POST", "/mcp", SID, OTHER_SID, version(b"2026-07-28")),
        "/mcp",
        400,
        "several mcp-session-id",
    ),
    *[
        (f"rule 5: {method} is not allowed", request(method, "/mcp", SID), "/mcp", 405, "method not allowed")
        for method in OTHER_METHODS
    ],
    *[
        (
            f"rule 5: {method} on a session revision",
            request(method, "/mcp", version(b"2025-11-25")),
            "/mcp",
            405,
            method,
        )
        for method in ("PUT", "OPTIONS")
    ],
]


@pytest.mark.parametrize(("incoming", "path", "expected"), [pytest.param(*row[1:], id=row[0]) for row in ROUTED])
def test_routed(incoming: McpRequest, path: str | None, expected: Route) -> None:
    assert route(incoming, path) is expected


@pytest.mark.parametrize(
    ("incoming", "path", "status", "words"), [pytest.param(*row[1:], id=row[0]) for row in REFUSED]
)
def test_refused(incoming: McpRequest, path: str | None, status: int, words: str) -> None:
    with pytest.raises(HttpError) as refused:
        route(incoming, path)
    assert refused.value.status == status
    assert words.lower() in refused.value.message.lower()
    allow = dict(refused.value.headers).get(b"allow")
    assert allow == (b"GET, POST, DELETE" if status == 405 else None)


# --- with the 2024-11-05 transport (rules 0 and 4) ---------------------------------------------------

LEGACY = LegacyPaths()
SSE_ACCEPT = (b"accept", b"text/event-stream")
JSON_ACCEPT = (b"accept", b"application/json")

LEGACY_ROUTED = [
    # (row, request, the app's path, route)
    ("rule 0: GET of the stream path", request("GET", "/sse", SSE_ACCEPT), "/mcp", Route.LEGACY_STREAM),
    ("rule 0: POST to the messages path", request("POST", "/messages/"), "/mcp", Route.LEGACY_POST),
    ("rule 0 before rule 1: without an app path too", request("GET", "/sse"), None, Route.LEGACY_STREAM),
    (
        "rule 0 before rule 2: headers do not matter",
        request("GET", "/sse", SID, OTHER_SID),
        "/mcp",
        Route.LEGACY_STREAM,
    ),
    ("rule 4: a session-less GET of the endpoint", request("GET", "/mcp", SSE_ACCEPT), "/mcp", Route.LEGACY_STREAM),
    ("rule 4: no Accept takes any type", request("GET", "/mcp"), "/mcp", Route.LEGACY_STREAM),
    ("rule 4: without an app path", request("GET", "/anything"), None, Route.LEGACY_STREAM),
    ("rule 4: a GET naming its session", request("GET", "/mcp", SID, SSE_ACCEPT), "/mcp", Route.GET),
    ("rule 4: a GET naming a session revision", request("GET", "/mcp", version(b"2025-11-25")), "/mcp", Route.GET),
    ("rule 4: a GET that takes no event stream", request("GET", "/mcp", JSON_ACCEPT), "/mcp", Route.GET),
    ("rule 3 before rule 4", request("GET", "/mcp", version(b"2026-07-28")), "/mcp", Route.STATELESS),
    ("rule 5: a session-less POST is still initialize's", request("POST", "/mcp"), "/mcp", Route.POST),
]

LEGACY_REFUSED = [
    # (row, request, the app's path, status, allow)
    ("rule 0: the stream path takes GET only", request("POST", "/sse"), "/mcp", 405, b"GET"),
    ("rule 0: not DELETE either", request("DELETE", "/sse"), "/mcp", 405, b"GET"),
    ("rule 0: the messages path takes POST only", request("GET", "/messages/"), "/mcp", 405, b"POST"),
    ("rule 1: paths match exactly", request("GET", "/sse/"), "/mcp", 404, None),
    ("rule 1: the messages path without its slash", request("POST", "/messages"), "/mcp", 404, None),
]


@pytest.mark.parametrize(("incoming", "path", "expected"), [pytest.param(*row[1:], id=row[0]) for row in LEGACY_ROUTED])
def test_routed_with_legacy_sse(incoming: McpRequest, path: str | None, expected: Route) -> None:
    assert route(incoming, path, LEGACY) is expected


@pytest.mark.parametrize(
    ("incoming", "path", "status", "allow"), [pytest.param(*row[1:], id=row[0]) for row in LEGACY_REFUSED]
)
def test_refused_with_legacy_sse(incoming: McpRequest, path: str | None, status: int, allow: bytes | None) -> None:
    with pytest.raises(HttpError) as refused:
        route(incoming, path, LEGACY)
    assert refused.value.status == status
    assert dict(refused.value.headers).get(b"allow") == allow


def test_without_legacy_sse_its_paths_are_not_the_endpoint() -> None:
    with pytest.raises(HttpError) as refused:
        route(request("GET", "/sse"), "/mcp")
    assert refused.value.status == 404
    assert route(request("GET", "/mcp", SSE_ACCEPT), "/mcp") is Route.GET  # (the session endpoint answers 400)


def test_legacy_paths_are_below_the_mount_point() -> None:
    mounted = {"root_path": "/api"}  # (the ASGI scope's part route reads)
    assert route(request("GET", "/api/sse"), None, LEGACY, mounted) is Route.LEGACY_STREAM
    assert route(request("POST", "/api/messages/"), None, LEGACY, mounted) is Route.LEGACY_POST
    assert route(request("POST", "/apis/messages/"), None, LEGACY, mounted) is Route.POST  # (not below /api)
