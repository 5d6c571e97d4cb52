"""Identity-provider presets for resource mode: what we know of each IdP whose tokens we verify directly.

A preset is data (``Preset``, frozen): the shape of the IdP's issuer, where its discovery
document is, which audience its access tokens name, where scopes and identities are in them,
and which allow rules it can answer. ``resource_server`` (``auth/providers/__init__.py``) turns
one into a ``ResourceServer`` after checking the IdP's own discovery document.

The values come from the digest (``identity-providers.md`` §1.1, itself from fastmcp 4.2.3's
provider code and the threads it cites), not from vendor documentation. ``oidc`` and the
Keycloak-, Auth0- and Okta-shaped cases are exercised against a real provider here
(oidc-provider 9.13.3 on loopback, mounted at those issuers' paths); none against the vendors
themselves, and WorkOS, Descope, Scalekit and Supabase only with tokens shaped like theirs.
``http`` issuers pass the shapes, but only on loopback (``discovery.py`` rule 1).

>>> PRESETS["keycloak"].issuer_problem("https://sso.example/realms/acme") is None
True
>>> PRESETS["auth0"].issuer_problem("https://acme.auth0.com")
"auth0's issuer ends with '/' (https://{tenant}.auth0.com/): give it exactly as the tenant publishes it"
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

__all__ = ["PRESETS", "Preset"]

Audience = Literal["resource", "configured", "fixed"]
TokenFormat = Literal["jwt", "opaque"]


@dataclasses.dataclass(frozen=True, slots=True)
class Preset:
    """One identity provider whose access tokens this server verifies itself (resource mode).

    ``issuer_shape``: a regular expression the issuer must match, with ``issuer_hint`` its
    readable form (an issuer of the wrong shape is refused at start-up, before any fetch).
    ``discovery``: the documents tried, in order: ``openid`` (``{issuer}/.well-known/
    openid-configuration``) and ``oauth`` (RFC 8414, path-inserted).
    ``audience``: what the token's ``aud`` must hold: ``resource`` (this resource's URI, the
    default), ``configured`` (a value the operator gives, e.g. a project id: required),
    ``fixed`` (``fixed_audience``, the same for every server of the IdP: weak, warned about).
    ``also_issuer``: a second issuer form accepted, a template of ``{issuer}`` and ``{audience}``.
    ``token_formats``: ``jwt`` (verified here against the IdP's key set) and/or ``opaque``
    (introspected, RFC 7662), the first the default.
    ``scope_claims``: claims holding scopes beyond ``scope``/``scp`` (lists of strings).
    ``claims``: for each allow-rule kind (``user``, ``email``, ``group``, ``role``, ``org``,
    ``tenant``), the claims that answer it, as dotted paths (``realm_access.roles``); a kind
    missing here is refused at start-up (``claim:NAME=VALUE`` is always there).
    ``warning``: printed at start-up (what the preset cannot defend against).
    ``setup``: what the operator must configure at the IdP for this to work (said when the
    audience is refused, the usual cause).
    """

    name: str
    issuer_shape: str
    issuer_hint: str
    discovery: tuple[Literal["openid", "oauth"], ...] = ("openid", "oauth")
    audience: Audience = "resource"
    fixed_audience: str | None = None
    also_issuer: str | None = None
    token_formats: tuple[TokenFormat, ...] = ("jwt",)
    scope_claims: tuple[str, ...] = ()
    claims: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    warning: str | None = None
    setup: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "claims", MappingProxyType({"user": ("sub",), **self.claims}))
        re.compile(self.issuer_shape)

    def issuer_problem(self, issuer: str) -> str | None:
        """Why ``issuer`` is not of this IdP's shape, or None."""
        if re.fullmatch(self.issuer_shape, issuer):
            return None
        if self.name == "auth0" and not issuer.endswith("/"):
            return f"auth0's issuer ends with '/' ({self.issuer_hint}): give it exactly as the tenant publishes it"
        return f"a {self.name} issuer looks like {self.issuer_hint}, not {issuer!r}"


_ANY_HOST: Final = r"https?://[^/?#]+"
_PATH: Final = r"(?:/[^?#]*)?"

_PRESETS: Final = (
    Preset(
        "oidc",
        issuer_shape=_ANY_HOST + _PATH,
        issuer_hint="any https URL",
        token_formats=("jwt", "opaque"),
        claims={"email": ("email",), "group": ("groups",), "role": ("roles",)},
        setup="the provider must issue access tokens whose aud is this resource (RFC 8707 resource indicators)",
    ),
    Preset(
        "keycloak",
        issuer_shape=_ANY_HOST + r"(?:/[^?#]*)?/realms/[^/?#]+",
        issuer_hint="{base}/realms/{realm}",
        discovery=("openid",),
        claims={
            "email": ("email",),
            "group": ("groups",),
            "role": ("realm_access.roles",),
            "org": ("organization",),
        },
        setup="add an Audience mapper naming this resource to a default client scope of the realm",
    ),
    Preset(
        "auth0",
        issuer_shape=r"https?://[^/?#]+/",
        issuer_hint="https://{tenant}.auth0.com/",
        discovery=("openid",),
        scope_claims=("permissions",),
        claims={"org": ("org_id",)},
        setup="create an API whose identifier is this resource (and turn on the resource parameter profile)",
    ),
    Preset(
        "okta",
        issuer_shape=r"https?://[^/?#]+/oauth2/[^/?#]+",
        issuer_hint="https://{domain}/oauth2/{authorization server id} (a custom authorization server, not the org's)",
        discovery=("openid", "oauth"),
        claims={"user": ("uid", "sub"), "email": ("email",), "group": ("groups",)},
        setup="set the custom authorization server's audience to this resource",
    ),
    Preset(
        "workos",
        issuer_shape=_ANY_HOST,
        issuer_hint="https://{app}.authkit.app",
        discovery=("oauth", "openid"),
        claims={"org": ("org_id",), "role": ("role", "roles")},
        setup="register this resource as a resource indicator in AuthKit",
    ),
    Preset(
        "descope",
        issuer_shape=_ANY_HOST + r"/v1/apps/[^?#]+",
        issuer_hint="https://api.descope.com/v1/apps/{project} "
        "(or .../agentic/{project}/{server}, .../{project}/{tenant})",
        discovery=("openid",),
        audience="configured",
        claims={"tenant": ("tenants", "dct"), "role": ("roles",), "email": ("email",)},
        setup="give the project id as the audience (Descope tokens name it, not this resource)",
    ),
    Preset(
        "scalekit",
        issuer_shape=_ANY_HOST + r"(?:/resources/[^/?#]+)?",
        issuer_hint="https://{environment}.scalekit.com (or .../resources/{resource id})",
        discovery=("oauth", "openid"),
        audience="configured",
        also_issuer="{issuer}/resources/{audience}",
        setup="give the resource id Scalekit assigned to this server as the audience",
    ),
    Preset(
        "supabase",
        issuer_shape=_ANY_HOST + r"/auth/v1",
        issuer_hint="https://{project}.supabase.co/auth/v1",
        discovery=("openid",),
        audience="fixed",
        fixed_audience="authenticated",
        claims={"email": ("email",), "role": ("app_metadata.role",)},
        warning="supabase access tokens all name the audience 'authenticated': a token of any app of the "
        "project passes here too; narrow who is admitted with an allow rule",
    ),
)

PRESETS: Final[Mapping[str, Preset]] = MappingProxyType({preset.name: preset for preset in _PRESETS})
"""The presets by name (``serve --auth-provider NAME``)."""
