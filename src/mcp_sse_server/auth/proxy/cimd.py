"""Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): a client whose id
is an https URL is described by the JSON document at that URL. Fetching it is a request the
server makes to a URL the client chose, so every step guards against SSRF:

1. The URL: ``https``, a host, a path other than ``/``, no query, fragment or userinfo.
2. The host is resolved here and **every** address must be global (not private, loopback,
   link-local, the cloud metadata ``169.254.169.254``, shared, reserved or multicast; IPv4-mapped
   IPv6 checked as IPv4), unless ``allow_private`` (tests, closed networks).
3. The connection goes to the checked address (the request names the IP; ``Host`` and TLS SNI
   name the host, so the certificate is still checked against it): a DNS answer that changes
   between the check and the connection (rebinding) cannot redirect it.
4. No redirects; ``timeout`` seconds; at most ``limit`` bytes, read as they come.
5. A JSON object whose ``client_id`` is the URL, byte for byte; ``redirect_uris`` a non-empty
   list; ``token_endpoint_auth_method`` absent or ``none`` (public clients).

Every refusal is a ``ClientDocumentError`` saying which rule, never the document's content.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import orjson

if TYPE_CHECKING:
    import httpx

__all__ = ["ClientDocumentError", "fetch_client_document", "is_client_document_url"]

_LIMIT: Final = 64 * 1024


class ClientDocumentError(Exception):
    """A client ID metadata document that may not be fetched or does not describe the client."""


def is_client_document_url(client_id: str) -> bool:
    """True when ``client_id`` names a metadata document (an https URL) rather than a registration."""
    return client_id.startswith("https://")


def _check_address(address: str, allow_private: bool) -> None:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if not allow_private and not ip.is_global:
        raise ClientDocumentError(f"the client's metadata host resolves to a non-public address ({ip})")


async def _resolve(host: str, port: int, timeout: float) -> list[str]:
    """The addresses of ``host`` (itself when it is an IP literal)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        async with asyncio.timeout(timeout):
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        infos = []
    addresses = sorted({str(info[4][0]) for info in infos})
    if not addresses:
        raise ClientDocumentError("the client's metadata host does not resolve")
    return addresses


async def fetch_client_document(
    http: httpx.AsyncClient,
    url: str,
    *,
    allow_private: bool = False,
    timeout: float = 5.0,
    limit: int = _LIMIT,
) -> dict[str, Any]:
    """The checked metadata document at ``url`` (rules 1 to 5)."""
    import httpx

    parts = urlsplit(url)
    try:
        port = parts.port or 443
    except ValueError:
        raise ClientDocumentError("the client id URL has a bad port") from None
    host = parts.hostname or ""
    if (
        parts.scheme != "https"
        or not host
        or parts.path in ("", "/")
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
        or len(url) > 2000
    ):
        raise ClientDocumentError("a client id URL is https, with a path, without query, fragment or userinfo")
    addresses = await _resolve(host, port, timeout)
    for address in addresses:
        _check_address(address, allow_private)
    target = addresses[0]
    netloc = f"[{target}]" if ":" in target else target
    pinned = f"https://{netloc}:{port}{parts.path}"
    try:
        async with (
            asyncio.timeout(timeout),
            http.stream(
                "GET",
                pinned,
                headers={"host": parts.netloc, "accept": "application/json"},
                extensions={"sni_hostname": host},
                follow_redirects=False,
            ) as response,
        ):
            if response.status_code != 200:
                raise ClientDocumentError(f"the client's metadata document answered {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    raise ClientDocumentError(f"the client's metadata document is larger than {limit} bytes")
    except (httpx.HTTPError, TimeoutError) as error:
        raise ClientDocumentError(
            f"the client's metadata document cannot be fetched ({type(error).__name__})"
        ) from None
    try:
        document = orjson.loads(bytes(body))
    except orjson.JSONDecodeError:
        document = None
    if not isinstance(document, dict):
        raise ClientDocumentError("the client's metadata document is not a JSON object")
    if document.get("client_id") != url:
        raise ClientDocumentError("the client's metadata document names another client_id")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris) or len(uris) > 10:
        raise ClientDocumentError("the client's metadata document needs 1 to 10 redirect_uris")
    if document.get("token_endpoint_auth_method", "none") != "none":
        raise ClientDocumentError(
            "only public clients (token_endpoint_auth_method none) are taken by metadata document"
        )
    return document
