"""The identity provider's own discovery document, fetched and checked once at start-up.

Checks, each a ``DiscoveryError`` (a ValueError) that stops the server from starting:

1. The issuer is ``https`` (``http`` on loopback only) and of the preset's shape.
2. The document is fetched from the preset's well-known URLs in order (OIDC's
   ``{issuer}/.well-known/openid-configuration``, RFC 8414's path-inserted
   ``/.well-known/oauth-authorization-server{path}``), without following redirects; the
   first JSON object answered with 200 is the one.
3. Its ``issuer`` equals the configured one exactly (RFC 8414 §3.3; a trailing slash counts:
   clients compare issuers as strings).
4. It names a ``jwks_uri`` (for JWT access tokens) or an ``introspection_endpoint`` (for opaque
   ones), ``https`` or loopback ``http``.

>>> discovery_urls("https://sso.example/realms/acme", ("openid", "oauth"))
['https://sso.example/realms/acme/.well-known/openid-configuration', 'https://sso.example/.well-known/oauth-authorization-server/realms/acme']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

from ..urls import check_fetch_url

if TYPE_CHECKING:
    import httpx

    from .presets import Preset

__all__ = ["DiscoveryError", "check_discovery", "discovery_urls", "fetch_discovery"]

_MAX_BYTES: Final = 256 * 1024


class DiscoveryError(ValueError):
    """The identity provider's discovery document is missing or does not match the settings."""


def discovery_urls(issuer: str, kinds: Iterable[Literal["openid", "oauth"]]) -> list[str]:
    """Where the discovery document of ``issuer`` is, in the order ``kinds`` names."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    urls = []
    for kind in kinds:
        if kind == "openid":
            urls.append(f"{issuer.rstrip('/')}/.well-known/openid-configuration")
        else:
            urls.append(f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{path}")
    return urls


def check_discovery(
    preset: Preset, issuer: str, document: Mapping[str, Any], *, url: str, token_format: str = "jwt"
) -> None:
    """Rules 3 and 4 for ``document`` (fetched from ``url``)."""
    published = document.get("issuer")
    if published != issuer:
        raise DiscoveryError(
            f"the discovery document at {url} names the issuer {published!r}, not {issuer!r}: give the issuer "
            "exactly as the identity provider publishes it"
        )
    needed = "jwks_uri" if token_format == "jwt" else "introspection_endpoint"
    endpoint = document.get(needed)
    if not isinstance(endpoint, str) or not endpoint:
        raise DiscoveryError(f"the discovery document at {url} has no {needed}: {preset.name} tokens cannot be checked")
    try:
        check_fetch_url(needed, endpoint)
    except ValueError as error:
        raise DiscoveryError(f"the discovery document at {url}: {error}") from None


def fetch_discovery(
    preset: Preset,
    issuer: str,
    *,
    token_format: str = "jwt",
    http: httpx.Client | None = None,
    timeout: float = 10.0,
) -> dict[str, Any]:
    """The checked discovery document of ``issuer`` (rules 1 to 4), fetched with ``http`` (a
    client of its own, closed after, by default)."""
    try:
        check_fetch_url("the issuer", issuer)
    except ValueError as error:
        raise DiscoveryError(str(error)) from None
    problem = preset.issuer_problem(issuer)
    if problem is not None:
        raise DiscoveryError(problem)
    import httpx

    client = http if http is not None else httpx.Client(timeout=timeout, follow_redirects=False)
    tried = []
    try:
        for url in discovery_urls(issuer, preset.discovery):
            try:
                response = client.get(url, headers={"accept": "application/json"})
            except httpx.HTTPError as error:
                tried.append(f"{url}: {type(error).__name__}")
                continue
            document = _json_object(response)
            if document is None:
                tried.append(f"{url}: {response.status_code}")
                continue
            check_discovery(preset, issuer, document, url=url, token_format=token_format)
            return document
    finally:
        if http is None:
            client.close()
    raise DiscoveryError(f"no discovery document for {issuer} ({'; '.join(tried)})")


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    if response.status_code != 200 or len(response.content) > _MAX_BYTES:
        return None
    try:
        document = response.json()
    except ValueError:
        return None
    return document if isinstance(document, dict) else None
