"""The ASGI plumbing the proxy's endpoints share: request reading (query, a body of at most
16 KiB, the public client's id), the OAuth error ``Refusal``, and the three kinds of answer
(JSON, a redirect, an HTML page). Pages are never framed (CSP ``frame-ancestors 'none'``) nor
cached, and keep no referrer.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, unquote

import orjson

__all__ = [
    "ASGIApp",
    "Handler",
    "Receive",
    "Refusal",
    "Scope",
    "Send",
    "body",
    "client_id",
    "form",
    "json",
    "page",
    "query",
    "redirect",
]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Handler = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY: Final = 16 * 1024
_PAGE_HEADERS: Final = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"content-security-policy", b"frame-ancestors 'none'; default-src 'none'; style-src 'unsafe-inline'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


class Refusal(Exception):
    """An OAuth error answer of the token or registration endpoint."""

    def __init__(
        self, error: str, description: str, status: int = 400, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        super().__init__(description)
        self.headers = headers or []
        self.error, self.description, self.status = error, description, status


def client_id(scope: Scope, form: Mapping[str, str]) -> str:
    """The public client's id, from the form (``none``) or a Basic header without a secret."""
    found = form.get("client_id", "")
    for key, value in scope["headers"]:
        if key == b"authorization" and value[:6].lower() == b"basic ":
            try:
                decoded = base64.b64decode(value[6:]).decode()
            except ValueError:
                raise Refusal("invalid_client", "the Basic credentials do not decode", 401) from None
            found = unquote(decoded.partition(":")[0])
    if not found:
        raise Refusal("invalid_client", "client_id is required", 401)
    return found


def query(scope: Scope) -> dict[str, str]:
    """The query's parameters, the first of each name."""
    params: dict[str, str] = {}
    for name, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
        params.setdefault(name, value)
    return params


async def body(receive: Receive) -> bytes | None:
    """The request body, or None when it is larger than 16 KiB."""
    chunks = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def form(receive: Receive) -> dict[str, str]:
    """The url-encoded form of the body (empty when the body is too large)."""
    data = await body(receive)
    return dict(parse_qsl(data.decode("latin-1"))) if data is not None else {}


async def json(
    send: Send, status: int, content: Any, *, cache: bool = False, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """A JSON answer: ``no-store`` unless ``cache`` (public documents, readable cross-origin)."""
    data = orjson.dumps(content)
    sent = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"public, max-age=300" if cache else b"no-store"),
        *headers,
    ]
    if cache:
        sent.append((b"access-control-allow-origin", b"*"))
    await send({"type": "http.response.start", "status": status, "headers": sent})
    await send({"type": "http.response.body", "body": data})


async def redirect(send: Send, location: str, *, cookies: Iterable[bytes] = ()) -> None:
    """A 302 to ``location``, setting ``cookies``."""
    headers = [(b"location", location.encode()), (b"cache-control", b"no-store"), (b"content-length", b"0")]
    headers += [(b"set-cookie", cookie) for cookie in cookies]
    await send({"type": "http.response.start", "status": 302, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def page(
    send: Send, status: int, title: str, text: str, *, raw: bool = False, cookies: Iterable[bytes] = ()
) -> None:
    """An HTML page: ``text`` escaped into a paragraph, or taken as HTML when ``raw``."""
    content = text if raw else f"<p>{html.escape(text)}</p>"
    data = (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
        f"<body><h1>{html.escape(title)}</h1>{content}</body></html>"
    ).encode()
    headers = [*_PAGE_HEADERS, (b"content-length", str(len(data)).encode())]
    headers += [(b"set-cookie", cookie) for cookie in cookies]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
