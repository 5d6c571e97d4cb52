"""Client ID metadata documents at the OAuth proxy (``auth/proxy/cimd.py``): a client whose id is
an https URL signs in with no registration (the document served over real TLS on loopback, the
proxy told to allow private addresses for this test only), and the SSRF defences: ids naming
loopback, link-local (cloud metadata) or mapped addresses are refused without a connection to
them (a listener counts), and documents that redirect, are too large or name another client."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import secrets
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson
import pytest
import trustme

from fixtures.auth_proxy import Browser, proxied_endpoint

REDIRECT = "http://127.0.0.1:9/callback"

CA = trustme.CA()


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class _Documents(http.server.BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {}

    def do_GET(self) -> None:
        status, headers, body = self.routes.get(self.path, (404, {}, b""))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def https_documents() -> Iterator[tuple[str, dict[str, tuple[int, dict[str, str], bytes]]]]:
    """An https server on loopback (a certificate of the test CA); yields its origin and routes."""
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
    handler = type("Handler", (_Documents,), {"routes": routes})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    CA.issue_cert("127.0.0.1").configure_cert(context)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", routes
    finally:
        server.shutdown()
        server.server_close()


def trusting_client() -> httpx.AsyncClient:
    context = ssl.create_default_context()
    CA.configure_trust(context)
    return httpx.AsyncClient(verify=context)


def document(url: str, **fields: Any) -> tuple[int, dict[str, str], bytes]:
    body = {"client_id": url, "client_name": "Doc client", "redirect_uris": [REDIRECT], **fields}
    return 200, {"content-type": "application/json"}, orjson.dumps(body)


def authorize(issuer: str, resource: str, client_id: str, verifier: str) -> str:
    return (
        issuer
        + "/oauth/authorize?"
        + urlencode(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT,
                "code_challenge": s256(verifier),
                "code_challenge_method": "S256",
                "state": "st",
                "resource": resource,
            }
        )
    )


async def test_a_client_described_by_its_document_signs_in_without_registering() -> None:
    with https_documents() as (origin, routes):
        url = origin + "/client.json"
        routes["/client.json"] = document(url, grant_types=["authorization_code", "refresh_token"])
        async with (
            trusting_client() as http,
            proxied_endpoint(http=http, client_documents_private=True) as proxied,
        ):
            metadata = (await http.get(proxied.issuer + "/.well-known/oauth-authorization-server")).json()
            assert metadata["client_id_metadata_document_supported"] is True
            verifier = secrets.token_urlsafe(48)
            browser = Browser()
            back = await browser.walk(authorize(proxied.issuer, proxied.resource, url, verifier), REDIRECT)
            await browser.aclose()
            answer = await http.post(
                proxied.issuer + "/oauth/token",
                data={
                    "grant_type": "authorization_code",
                    "client_id": url,
                    "code": back["code"],
                    "code_verifier": verifier,
                    "redirect_uri": REDIRECT,
                },
            )
    assert answer.status_code == 200, answer.text
    assert "refresh_token" in answer.json()


@pytest.mark.parametrize(
    ("name", "route"),
    [
        ("another client_id", lambda url: document("https://elsewhere.example/client.json")),
        ("a redirect", lambda url: (302, {"location": "https://127.0.0.1:1/x"}, b"")),
        ("too large", lambda url: (200, {}, b'{"x":"' + b"a" * 70_000 + b'"}')),
        ("not JSON", lambda url: (200, {}, b"<html>")),
        ("a confidential client", lambda url: document(url, token_endpoint_auth_method="client_secret_basic")),
        ("an https redirect elsewhere", lambda url: document(url, redirect_uris=["https://evil.example/cb"])),
    ],
)
async def test_a_document_that_does_not_fit_is_refused(name: str, route: Any) -> None:
    with https_documents() as (origin, routes):
        url = origin + "/client.json"
        routes["/client.json"] = route(url)
        async with (
            trusting_client() as http,
            proxied_endpoint(http=http, client_documents_private=True) as proxied,
        ):
            page = await http.get(authorize(proxied.issuer, proxied.resource, url, "v" * 43))
    assert page.status_code == 400 and "location" not in page.headers, name
    assert "metadata document was refused" in page.text, name


@pytest.mark.parametrize(
    "client_id",
    [
        "https://127.0.0.1:{port}/client.json",
        "https://localhost:{port}/client.json",
        "https://[::ffff:127.0.0.1]:{port}/client.json",
        "https://169.254.169.254/latest/meta-data/client.json",
        "https://10.0.0.1/client.json",
    ],
)
async def test_a_client_id_naming_an_internal_address_is_never_fetched(client_id: str) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        url = client_id.format(port=listener.getsockname()[1])
        async with proxied_endpoint() as proxied, httpx.AsyncClient() as http:
            page = await http.get(authorize(proxied.issuer, proxied.resource, url, "v" * 43))
        assert page.status_code == 400 and "location" not in page.headers
        assert "non-public address" in page.text
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
