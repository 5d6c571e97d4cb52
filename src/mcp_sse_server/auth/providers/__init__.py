"""Identity-provider presets (resource mode): tokens of Keycloak, Auth0, Okta, WorkOS AuthKit, Descope,
Scalekit, Supabase or any OpenID provider verified directly, with an allow policy::

    auth = resource_server("keycloak", issuer="https://sso.example/realms/acme",
                           resource="https://mcp.example/mcp", allow=["group:mcp-users"])
    app = McpHttpApp(server, settings=HttpSettings(auth=auth))

``resource_server`` fetches the IdP's discovery document (``discovery.py``: issuer equal to the one
given, a key set or introspection endpoint, ``https`` except on loopback), so it runs before the
event loop (or in ``asyncio.to_thread``); ``discovery=`` takes a document fetched another way,
still checked. The result is a plain ``ResourceServer`` (``McpHttpApp``'s ``auth=``) whose
authorization server is the IdP (clients register and sign in there) and whose verifier is a
``ProviderVerifier``: the generic ``JwtVerifier`` (the key set from discovery) or, for opaque
tokens, ``IntrospectionVerifier``, then the preset's scope claims and the ``AllowPolicy``.

Audience (RFC 8707): by default this resource's URI, as the preset's IdP can be set up to issue
(``Preset.setup`` says how); Descope and Scalekit name a configured id (``audience=`` is required);
Supabase names ``authenticated`` for every server, which is warned about.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .discovery import DiscoveryError, check_discovery, discovery_urls, fetch_discovery
from .policy import AllowPolicy
from .presets import PRESETS, Preset
from .verifier import ProviderVerifier

if TYPE_CHECKING:
    import httpx

    from ...engine.tokens import TokenVerifier
    from ..dpop import DPoP
    from ..resource import ResourceServer

__all__ = [
    "PRESETS",
    "AllowPolicy",
    "DiscoveryError",
    "Preset",
    "ProviderVerifier",
    "check_discovery",
    "discovery_urls",
    "fetch_discovery",
    "resource_server",
]

logger = logging.getLogger("mcp_sse_server.auth")


def resource_server(
    provider: str | Preset,
    *,
    issuer: str,
    resource: str,
    audience: str | Iterable[str] | None = None,
    allow: Iterable[str] | AllowPolicy = (),
    token_format: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    required_scopes: Iterable[str] = (),
    scopes_supported: Iterable[str] | None = None,
    resource_name: str | None = None,
    implies: Mapping[str, Iterable[str]] | None = None,
    dpop: DPoP | None = None,
    discovery: Mapping[str, Any] | None = None,
    http: httpx.Client | None = None,
    timeout: float = 10.0,
    warn: Callable[[str], None] | None = None,
) -> ResourceServer:
    """The ``ResourceServer`` of ``resource`` for tokens of ``provider`` (a name of ``PRESETS`` or a
    ``Preset``) at ``issuer`` (exactly as it publishes it).

    ``audience``: what tokens must name (the preset's rule by default: see the module docstring).
    ``allow``: the ``AllowPolicy`` rules (none: whoever the IdP issues tokens for ``resource``).
    ``token_format``: ``jwt`` or ``opaque`` (the preset's first by default); opaque tokens are
    introspected at the discovered endpoint as ``client_id`` with ``client_secret``.
    ``required_scopes`` ... ``dpop``: as ``ResourceServer`` takes them. ``discovery``: the
    document, when not fetched here with ``http`` (within ``timeout``). ``warn``: where the
    preset's warning goes (the log by default). ValueError (``DiscoveryError`` among them) for
    settings or a document that do not fit.
    """
    from ..resource import ResourceServer

    preset = _preset(provider)
    fmt = token_format or preset.token_formats[0]
    if fmt not in preset.token_formats:
        raise ValueError(f"{preset.name} access tokens are {' or '.join(preset.token_formats)}, not {fmt}")
    audiences = _audiences(preset, resource, audience)
    policy = allow if isinstance(allow, AllowPolicy) else AllowPolicy(allow, claims=preset.claims)
    if discovery is None:
        document = fetch_discovery(preset, issuer, token_format=fmt, http=http, timeout=timeout)
    else:
        problem = preset.issuer_problem(issuer)
        if problem is not None:
            raise DiscoveryError(problem)
        check_discovery(preset, issuer, discovery, url="(given)", token_format=fmt)
        document = dict(discovery)
    issuers = [issuer]
    if preset.also_issuer is not None:
        issuers += [preset.also_issuer.format(issuer=issuer.rstrip("/"), audience=a) for a in audiences]
    inner: TokenVerifier
    if fmt == "jwt":
        if client_id is not None or client_secret is not None:
            raise ValueError("client_id and client_secret go with opaque (introspected) tokens")
        from ..jwt_verifier import JwtVerifier

        inner = JwtVerifier(issuer=issuers, audience=audiences, jwks_uri=document["jwks_uri"])
    else:
        if not client_id or not client_secret:
            raise ValueError("opaque tokens are introspected: give this resource's client_id and client_secret")
        from ..introspection import IntrospectionVerifier

        inner = IntrospectionVerifier(
            endpoint=document["introspection_endpoint"],
            client_id=client_id,
            client_secret=client_secret,
            audience=audiences,
            issuer=issuers,
        )
    if preset.warning is not None:
        (warn or logger.warning)(f"{preset.name}: {preset.warning}")
    return ResourceServer(
        resource,
        [issuer],
        verifier=ProviderVerifier(inner, preset=preset, policy=policy),
        required_scopes=required_scopes,
        scopes_supported=scopes_supported,
        resource_name=resource_name,
        implies=implies,
        dpop=dpop,
    )


def _preset(provider: str | Preset) -> Preset:
    if isinstance(provider, Preset):
        return provider
    preset = PRESETS.get(provider.lower())
    if preset is None:
        raise ValueError(f"no identity provider preset {provider!r}: one of {', '.join(PRESETS)}")
    return preset


def _audiences(preset: Preset, resource: str, audience: str | Iterable[str] | None) -> list[str]:
    if audience is not None:
        audiences = [audience] if isinstance(audience, str) else list(audience)
        if not audiences or not all(audiences):
            raise ValueError("audience is empty")
        if preset.audience == "fixed" and audiences != [preset.fixed_audience]:
            raise ValueError(f"{preset.name} tokens always name the audience {preset.fixed_audience!r}")
        return audiences
    if preset.audience == "configured":
        raise ValueError(f"{preset.name} tokens do not name this resource: {preset.setup}")
    if preset.audience == "fixed":
        assert preset.fixed_audience is not None
        return [preset.fixed_audience]
    return [resource]
