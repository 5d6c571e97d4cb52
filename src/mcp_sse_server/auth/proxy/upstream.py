"""The upstream identity provider, as the proxy's own OAuth client of it (OpenID Connect).

Rules:

1. Endpoints come from the IdP's discovery document, checked at start-up (``auth/providers/
   discovery.py``: the issuer exactly as published; https, or http on loopback).
2. The authorize URL carries only what the proxy decides (an allowlist): ``response_type=code``,
   our client id, our callback, the upstream scopes, ``state`` (the transaction id), our own S256
   challenge and an OIDC ``nonce``, plus the preset's extra parameters. Never the client's
   ``state``, ``redirect_uri``, ``resource`` or challenge.
3. The code is exchanged with our verifier and client secret (``client_secret_basic``);
   ``Accept: application/json``, and an ``error`` field is an error whatever the status
   (GitHub answers errors with 200).
4. Identity: the ID token, verified against the IdP's key set (issuer, audience = our client id,
   our nonce, expiry), merged with userinfo when the IdP has one and its ``sub`` agrees. The
   upstream access token is never inspected as a JWT (opaque tokens are the norm).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlencode

import httpx
import jwt

__all__ = [
    "COGNITO_CLAIMS",
    "ENTRA_CLAIMS",
    "ENTRA_MULTI_TENANT",
    "GITHUB_CLAIMS",
    "GOOGLE_CLAIMS",
    "Upstream",
    "UpstreamError",
    "cognito_issuer",
    "entra_document",
    "entra_issuer",
]

GITHUB_CLAIMS: Final = {"user": ("sub",), "email": ("email",)}
"""Allow-rule claims of a GitHub sign-in: ``user:<numeric id>``, ``email:``/``domain:`` (the
public email)."""

GOOGLE_CLAIMS: Final = {"email": ("email",), "org": ("hd",)}
"""Allow-rule claims of a Google sign-in: ``domain:``/``email:`` (verified email only) and
``org:<Workspace domain>`` (the ``hd`` claim)."""

ENTRA_CLAIMS: Final = {"user": ("oid",), "tenant": ("tid",), "group": ("groups",), "role": ("roles",)}
"""Allow-rule claims of an Entra ID sign-in: ``user:<oid>``, ``tenant:<tid>``, ``group:<group object
id>`` (the app's groups claim), ``role:<app role>``. No ``email:``/``domain:``: Entra's ``email``
claim is not verified by Entra (any tenant admin can set it), so it proves nothing."""

COGNITO_CLAIMS: Final = {"email": ("email",), "group": ("cognito:groups",)}
"""Allow-rule claims of an Amazon Cognito sign-in: ``user:<sub>``, ``email:``/``domain:`` (not when
``email_verified`` is false), ``group:<user pool group>`` (``cognito:groups``)."""

ENTRA_MULTI_TENANT: Final = frozenset({"organizations", "common"})
"""Entra tenants that stand for many: the issuer is a template, checked per token (``tid``)."""

_TENANT_ID: Final = "{tenantid}"
_TENANT: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")
_TIMEOUT: Final = 10.0


def entra_issuer(tenant: str, authority: str = "https://login.microsoftonline.com") -> str:
    """The v2.0 issuer of Entra ``tenant`` (its id), or for ``organizations``/``common`` the
    issuer template Entra publishes for them (``{tenantid}`` in place of the id)."""
    return f"{authority.rstrip('/')}/{_TENANT_ID if tenant in ENTRA_MULTI_TENANT else tenant}/v2.0"


def entra_document(
    tenant: str, authority: str = "https://login.microsoftonline.com", *, timeout: float = _TIMEOUT
) -> dict[str, Any]:
    """The discovery document of Entra ``tenant`` (v2.0), unchecked: ``Upstream.entra`` checks its
    issuer, which for ``organizations``/``common`` is a template no generic check accepts.
    ValueError when it cannot be had."""
    from ..urls import check_fetch_url

    if not _TENANT.fullmatch(tenant):
        raise ValueError(f"Entra tenant {tenant!r}: expected a tenant id, organizations or common")
    url = f"{authority.rstrip('/')}/{tenant}/v2.0/.well-known/openid-configuration"
    check_fetch_url("the Entra authority", url)
    try:
        response = httpx.get(url, headers={"accept": "application/json"}, timeout=timeout)
    except httpx.HTTPError as error:
        raise ValueError(f"no Entra discovery document at {url}: {type(error).__name__}") from None
    document = _json(response)
    if response.status_code != 200 or document is None:
        raise ValueError(f"no Entra discovery document at {url} ({response.status_code})")
    return document


def cognito_issuer(region: str, pool_id: str) -> str:
    """The issuer of an Amazon Cognito user pool."""
    return f"https://cognito-idp.{region}.amazonaws.com/{pool_id}"


_MAX_BYTES: Final = 256 * 1024


class UpstreamError(Exception):
    """The IdP refused or failed a step; the message never holds a token or a code. ``error``: the
    IdP's OAuth error code when it answered one (``invalid_grant``: the grant is gone there)."""

    def __init__(self, message: str, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


@dataclasses.dataclass(frozen=True, slots=True)
class Upstream:
    """The IdP's endpoints and our registration there (module docstring).

    ``iss_parameter``: the IdP sends RFC 9207 ``iss`` on its redirects (then checked: mix-up).
    ``extra``: preset parameters added to the authorize URL (``access_type=offline``...).
    ``tenant_issuer``: an issuer template with ``{tenantid}`` (Entra multi-tenant): each ID token's
    issuer must be the template filled with that token's own ``tid`` claim.
    ``subject_claims``: the claims whose values, joined by ``:``, make the stable subject (Entra:
    ``tid`` and ``oid``, its ``sub`` being pairwise per app); ``sub`` when empty.
    ``token_scope``: the token requests name the scopes too (Entra refuses a code exchange
    without them, AADSTS28003).
    """

    issuer: str
    client_id: str
    client_secret: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str | None = None
    userinfo_endpoint: str | None = None
    revocation_endpoint: str | None = None
    scopes: tuple[str, ...] = ("openid",)
    iss_parameter: bool = False
    extra: Mapping[str, str] = dataclasses.field(default_factory=dict)
    openid: bool = True
    subject: str = "sub"
    id_token_issuers: tuple[str, ...] = ()
    tenant_issuer: str | None = None
    subject_claims: tuple[str, ...] = ()
    token_scope: bool = False

    @classmethod
    def entra(
        cls,
        document: Mapping[str, Any],
        *,
        tenant: str,
        client_id: str,
        client_secret: str,
        scopes: tuple[str, ...] = ("openid", "profile", "offline_access"),
        authority: str = "https://login.microsoftonline.com",
    ) -> Upstream:
        """Entra ID (v2.0 endpoints), from the discovery document of ``{authority}/{tenant}/v2.0``:
        ``tenant`` a tenant id (its issuer checked exactly), or ``organizations``/``common``, whose
        document names the issuer template ``{authority}/{tenantid}/v2.0`` (then every ID token's
        ``iss`` must be the template with its own ``tid``; which tenants may sign in is the allow
        policy's ``tenant:`` rules). The stable subject is ``tid:oid``. ``authority``: another
        cloud's login host, or a stand-in in tests."""
        if not _TENANT.fullmatch(tenant):
            raise ValueError(f"Entra tenant {tenant!r}: expected a tenant id, organizations or common")
        expected = entra_issuer(tenant, authority)
        if document.get("issuer") != expected:
            raise ValueError(
                f"the Entra discovery document names the issuer {document.get('issuer')!r}, not {expected!r}"
            )
        upstream = cls.from_discovery(
            {**document, "issuer": expected}, client_id=client_id, client_secret=client_secret, scopes=scopes
        )
        return dataclasses.replace(
            upstream,
            tenant_issuer=expected if tenant in ENTRA_MULTI_TENANT else None,
            subject_claims=("tid", "oid"),
            token_scope=True,
        )

    @classmethod
    def cognito(
        cls,
        document: Mapping[str, Any],
        *,
        domain: str,
        client_id: str,
        client_secret: str,
        scopes: tuple[str, ...] = ("openid", "email", "profile"),
    ) -> Upstream:
        """An Amazon Cognito user pool, from its checked discovery document (issuer
        ``cognito_issuer(region, pool_id)``; keys from there). Sign-in, token, userinfo and
        revocation are on the app's hosted-UI ``domain`` (``{prefix}.auth.{region}.amazoncognito.com``
        or a custom domain; a URL with a scheme for a stand-in), at ``/oauth2/*``; discovery does not
        list ``/oauth2/revoke``. Cognito has no ``offline_access`` scope (dropped): a refresh token
        comes with every code, and it is not rotated."""
        from ..urls import check_fetch_url

        base = (domain if "://" in domain else "https://" + domain).rstrip("/")
        check_fetch_url("the Cognito domain", base)
        upstream = cls.from_discovery(
            document,
            client_id=client_id,
            client_secret=client_secret,
            scopes=tuple(scope for scope in scopes if scope != "offline_access"),
        )
        return dataclasses.replace(
            upstream,
            authorization_endpoint=base + "/oauth2/authorize",
            token_endpoint=base + "/oauth2/token",
            userinfo_endpoint=base + "/oauth2/userInfo",
            revocation_endpoint=base + "/oauth2/revoke",
        )

    @classmethod
    def google(
        cls,
        document: Mapping[str, Any],
        *,
        client_id: str,
        client_secret: str,
        scopes: tuple[str, ...] = ("openid", "email", "profile"),
    ) -> Upstream:
        """Google, from its checked discovery document (``https://accounts.google.com``): a refresh
        token comes only with ``access_type=offline`` and again only with ``prompt=consent``;
        Google has no ``offline_access`` scope (dropped); its ID tokens name the issuer with or
        without ``https://``."""
        upstream = cls.from_discovery(
            document,
            client_id=client_id,
            client_secret=client_secret,
            scopes=tuple(scope for scope in scopes if scope != "offline_access"),
            extra={"access_type": "offline", "prompt": "consent"},
        )
        bare = upstream.issuer.removeprefix("https://")
        return dataclasses.replace(upstream, id_token_issuers=(bare,) if bare != upstream.issuer else ())

    @classmethod
    def github(
        cls,
        *,
        client_id: str,
        client_secret: str,
        scopes: tuple[str, ...] = ("read:user", "user:email"),
        web: str = "https://github.com",
        api: str = "https://api.github.com",
    ) -> Upstream:
        """GitHub (an OAuth App, or a GitHub App's user authorization): no OpenID Connect, so
        identity is ``GET {api}/user`` at the callback, its numeric ``id`` the stable subject
        (never ``login``, which can be renamed). ``web``/``api``: the hosts (GitHub Enterprise
        Server, or a stand-in in tests)."""
        from ..urls import check_fetch_url

        for name, url in (("web", web), ("api", api)):
            check_fetch_url(name, url)
        return cls(
            issuer=web.rstrip("/"),
            client_id=client_id,
            client_secret=client_secret,
            authorization_endpoint=web.rstrip("/") + "/login/oauth/authorize",
            token_endpoint=web.rstrip("/") + "/login/oauth/access_token",
            userinfo_endpoint=api.rstrip("/") + "/user",
            scopes=scopes,
            openid=False,
            subject="id",
        )

    @classmethod
    def from_discovery(
        cls,
        document: Mapping[str, Any],
        *,
        client_id: str,
        client_secret: str,
        scopes: tuple[str, ...] = ("openid", "email", "profile"),
        extra: Mapping[str, str] | None = None,
    ) -> Upstream:
        """Our client of the IdP whose checked discovery ``document`` is given."""
        from ..urls import check_fetch_url

        for field in ("authorization_endpoint", "token_endpoint"):
            if not isinstance(document.get(field), str):
                raise ValueError(f"the identity provider's discovery document has no {field}")
            check_fetch_url(field, document[field])
        return cls(
            issuer=str(document["issuer"]),
            client_id=client_id,
            client_secret=client_secret,
            authorization_endpoint=document["authorization_endpoint"],
            token_endpoint=document["token_endpoint"],
            jwks_uri=document.get("jwks_uri"),
            userinfo_endpoint=document.get("userinfo_endpoint"),
            revocation_endpoint=document.get("revocation_endpoint"),
            scopes=scopes,
            iss_parameter=document.get("authorization_response_iss_parameter_supported") is True,
            extra=dict(extra or {}),
        )

    def authorize_url(self, *, callback: str, state: str, challenge: str, nonce: str) -> str:
        """Where the user signs in at the IdP (rule 2)."""
        params = {
            **self.extra,
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": callback,
            "scope": " ".join(self.scopes),
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        if self.openid:  # (an OpenID nonce, checked in the ID token; others have no use for it)
            params["nonce"] = nonce
        joiner = "&" if "?" in self.authorization_endpoint else "?"
        return self.authorization_endpoint + joiner + urlencode(params)

    async def exchange(self, http: httpx.AsyncClient, *, code: str, callback: str, verifier: str) -> dict[str, Any]:
        """The IdP's token response for ``code`` (rule 3)."""
        data = {"grant_type": "authorization_code", "code": code, "redirect_uri": callback, "code_verifier": verifier}
        return await self._token(http, data)

    async def refresh(self, http: httpx.AsyncClient, refresh_token: str) -> dict[str, Any]:
        """The IdP's token response to our refresh token (``UpstreamError`` with ``error``
        ``invalid_grant`` when the IdP no longer honours it)."""
        return await self._token(http, {"grant_type": "refresh_token", "refresh_token": refresh_token})

    async def _token(self, http: httpx.AsyncClient, data: Mapping[str, str]) -> dict[str, Any]:
        if self.token_scope:
            data = {**data, "scope": " ".join(self.scopes)}
        try:
            response = await http.post(
                self.token_endpoint,
                data=dict(data),
                auth=(self.client_id, self.client_secret),
                headers={"accept": "application/json"},
                timeout=_TIMEOUT,
            )
        except httpx.HTTPError as error:
            raise UpstreamError(f"the identity provider's token endpoint: {type(error).__name__}") from None
        answer = _json(response)
        if response.status_code != 200 or answer is None or "error" in answer:
            code = answer.get("error") if answer else None
            raise UpstreamError(
                f"the identity provider refused the grant ({response.status_code}, {code!r})",
                code if isinstance(code, str) else None,
            )
        if not isinstance(answer.get("access_token"), str):
            raise UpstreamError("the identity provider's token response has no access_token")
        return answer

    async def identity(self, http: httpx.AsyncClient, tokens: Mapping[str, Any], *, nonce: str) -> dict[str, Any]:
        """The user's claims (rule 4): the verified ID token, plus userinfo."""
        claims: dict[str, Any] = {}
        id_token = tokens.get("id_token")
        if isinstance(id_token, str):
            claims = await self._id_token(http, id_token, nonce)
        if self.userinfo_endpoint is not None:
            try:
                response = await http.get(
                    self.userinfo_endpoint,
                    headers={"authorization": f"Bearer {tokens['access_token']}", "accept": "application/json"},
                    timeout=_TIMEOUT,
                )
            except httpx.HTTPError as error:
                raise UpstreamError(f"the identity provider's userinfo: {type(error).__name__}") from None
            info = _json(response)
            if response.status_code == 200 and info is not None:
                if not self.openid:
                    # No ID token: the user's record is the identity; its stable id is the subject.
                    stable = info.get(self.subject)
                    if isinstance(stable, str | int) and not isinstance(stable, bool):
                        info["sub"] = str(stable)
                    else:
                        info.pop("sub", None)
                elif claims and info.get("sub") != claims.get("sub"):
                    raise UpstreamError("userinfo names another subject than the ID token")
                claims = {**info, **claims}
        if self.subject_claims:
            parts = [claims.get(name) for name in self.subject_claims]
            if not all(isinstance(part, str) and part for part in parts):
                raise UpstreamError(f"the identity provider named no {' and '.join(self.subject_claims)}")
            claims["sub"] = ":".join(str(part) for part in parts)
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise UpstreamError("the identity provider named no subject")
        return claims

    async def _id_token(self, http: httpx.AsyncClient, token: str, nonce: str) -> dict[str, Any]:
        if self.jwks_uri is None:
            raise UpstreamError("an ID token came, but the identity provider publishes no key set")
        try:
            response = await http.get(self.jwks_uri, timeout=_TIMEOUT)
        except httpx.HTTPError as error:
            raise UpstreamError(f"the identity provider's key set: {type(error).__name__}") from None
        keys = _json(response)
        if keys is None:
            raise UpstreamError("the identity provider's key set is not JSON")
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            found = [k for k in jwt.PyJWKSet.from_dict(keys).keys if kid is None or k.key_id == kid]
            if not found:
                raise UpstreamError("the ID token's key is not in the identity provider's key set")
            claims: dict[str, Any] = jwt.decode(
                token,
                found[0].key,
                algorithms=["ES256", "RS256", "PS256", "EdDSA", "ES384", "RS384", "RS512"],
                audience=self.client_id,
                # A template issuer is checked below, against the token's own tenant.
                issuer=None if self.tenant_issuer else [self.issuer, *self.id_token_issuers],
                leeway=30,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as error:
            raise UpstreamError(f"the ID token does not verify ({type(error).__name__})") from None
        if self.tenant_issuer is not None:
            tid = claims.get("tid")
            if (
                not isinstance(tid, str)
                or not tid
                or "/" in tid
                or claims["iss"] != self.tenant_issuer.replace(_TENANT_ID, tid)
            ):
                # One tenant's keys are every tenant's: without this, any tenant's token names any issuer.
                raise UpstreamError("the ID token's issuer is not its own tenant's (tid)")
        if claims.get("nonce") != nonce:
            raise UpstreamError("the ID token's nonce is not this sign-in's")
        if float(claims["exp"]) < time.time() - 30:
            raise UpstreamError("the ID token expired")
        return claims

    async def revoke(self, http: httpx.AsyncClient, token: str, hint: str) -> None:
        """Ask the IdP to revoke ``token`` (RFC 7009), when it can; failures are ignored."""
        if self.revocation_endpoint is None:
            return
        try:
            await http.post(
                self.revocation_endpoint,
                data={"token": token, "token_type_hint": hint},
                auth=(self.client_id, self.client_secret),
                timeout=_TIMEOUT,
            )
        except httpx.HTTPError:
            pass


def _json(response: httpx.Response) -> dict[str, Any] | None:
    if len(response.content) > _MAX_BYTES:
        return None
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
