"""``serve``'s ``--auth-*`` options: the endpoint as a protected resource (bearer tokens checked).

Rules:

1. Any ``--auth-*`` option turns authorization on, and then ``--auth-issuer``
   (the authorization server clients are sent to) and exactly one way to check
   tokens are needed: ``--auth-jwks-uri`` (JWT access tokens, checked here
   against the issuer's keys) or ``--auth-introspection-url`` with
   ``--auth-client-id`` and ``--auth-client-secret-env`` (any token, asked
   about at the issuer, RFC 7662; the secret is read from that environment
   variable, never from the command line, where ``ps`` shows it).
2. The resource, what tokens must name as their audience and what the
   protected-resource metadata says, is ``--auth-resource`` when given (the
   public URL, behind a proxy or on another name), else the endpoint's own
   URL. Listening on every interface or on a port picked at start needs
   ``--auth-resource``: no URL clients use can be derived then.
3. ``--auth-audience`` replaces the audience (by default the resource);
   ``--auth-scope`` (repeatable) is required of every token.
4. ``http://`` key-set and introspection URLs are refused except on loopback.
5. ``--auth-dpop allowed|required`` checks DPoP-bound tokens (RFC 9449, ``auth/dpop.py``;
   ``off``, the default, loads none of it). Proofs are remembered against replay in Redis
   when ``--backend``/``--redis-url`` names one (every worker and host then shares it), else
   in the process (``--auth-dpop-replay`` chooses; ``memory`` or ``off`` with several workers
   is warned about: a proof replayed to another worker passes). ``--auth-dpop-nonce-secret-env
   VAR`` requires nonces, made from the secrets in that variable (space-separated, the first
   signs; the same in every worker), never from the command line.
6. ``--auth-provider NAME`` (``auth/providers``: oidc, keycloak, auth0, okta, workos, descope,
   scalekit, supabase) checks tokens of that identity provider at ``--auth-issuer``: the key set
   (or, for opaque tokens with ``--auth-client-id``/``--auth-client-secret-env``, the
   introspection endpoint) comes from its discovery document, fetched and checked at start-up
   (its issuer must equal ``--auth-issuer``), so ``--auth-jwks-uri`` and
   ``--auth-introspection-url`` are not given. ``--auth-allow RULE`` (repeatable; with a
   provider) admits only whom a rule matches (``user:``, ``email:``, ``domain:``, ``group:``,
   ``role:``, ``org:``, ``tenant:``, ``claim:NAME=VALUE``).
7. ``--auth-proxy PRESET`` makes this server the authorization server its clients see, in front
   of the identity provider at ``--auth-issuer`` (``auth/proxy``, docs/auth-proxy.md): clients
   register here (or name a metadata document), the user signs in at the IdP as
   ``--auth-upstream-client-id`` (its secret in the variable ``--auth-upstream-client-secret-env``
   names; ``--auth-upstream-scope`` asked, ``openid email profile`` by default), and clients get
   this server's own tokens for ``--auth-scope`` (``mcp:tools`` by default), the IdP's staying
   here. Register ``{origin of the resource}/oauth/callback`` at the IdP. ``--auth-allow`` applies
   at sign-in. ``--auth-redirect-allow URI`` (repeatable; ``*`` at the end for a prefix) lets
   clients register https redirect URIs beyond loopback. Keys: ``MCP_AUTH_SIGNING_KEYS`` (a JWKS
   file of private ES256 keys) and ``MCP_AUTH_SECRETS`` (sealing secrets), required with a Redis
   backend or several workers (every worker must sign and unseal alike); the flow state lives in
   that Redis, so any worker serves any step. ``--auth-proxy github``: GitHub (no OpenID Connect:
   the user is ``GET /user``, its numeric id the subject), github.com unless ``--auth-issuer``
   names a GitHub Enterprise Server; ``--auth-allow`` required (``user:<id>``, ``email:``,
   ``domain:``). ``--auth-proxy google``: accounts.google.com (``access_type=offline`` and
   ``prompt=consent`` for a refresh token); ``--auth-allow`` required (``org:<Workspace domain>``
   for the ``hd`` claim, ``domain:``, ``email:``). ``--auth-proxy entra --auth-tenant ID``: Entra
   ID v2.0 (``--auth-issuer`` for another cloud's login host), the subject ``tid:oid``; with
   ``organizations``/``common`` each ID token's issuer is checked against its own ``tid`` and
   ``--auth-allow`` is required (``tenant:``, ``group:``, ``role:``, ``user:<oid>``; no email
   rules: Entra's email claim is unverified). ``--auth-proxy cognito --auth-region R --auth-pool
   ID --auth-domain HOST``: an Amazon Cognito user pool, signing in at its hosted-UI domain
   (``group:`` reads ``cognito:groups``). ``--auth-dpop`` applies at our token endpoint
   too (tokens bound to the client's key).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import click

if TYPE_CHECKING:
    from ..auth.dpop import DPoP
    from ..auth.resource import ResourceServer

__all__ = ["AuthSettings", "auth_options"]

_F = TypeVar("_F", bound=Callable[..., Any])
_REDIS_SCHEMES: Final = frozenset(
    {"redis", "rediss", "unix", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel"}
)


def auth_options(command: _F) -> _F:
    """The ``--auth-*`` options (rules above), as ``AuthSettings`` fields of the same names."""
    decorators: list[Callable[[Any], Any]] = [
        click.option(
            "--auth-issuer",
            metavar="URL",
            help="Check bearer tokens: the authorization server's issuer, exactly as it publishes it.",
        ),
        click.option("--auth-jwks-uri", metavar="URL", help="JWT access tokens: the issuer's key set (JWKS) URL."),
        click.option(
            "--auth-introspection-url",
            metavar="URL",
            help="Any token, checked by RFC 7662 introspection at this URL (with --auth-client-id and "
            "--auth-client-secret-env).",
        ),
        click.option("--auth-client-id", metavar="ID", help="With introspection: this server's client id there."),
        click.option(
            "--auth-client-secret-env",
            metavar="VAR",
            help="With introspection: the environment variable holding this server's client secret.",
        ),
        click.option(
            "--auth-resource",
            metavar="URL",
            help="The endpoint's public URL (tokens' audience, the metadata's resource) when it differs from the "
            "bound one; needed with --host 0.0.0.0 or --port 0.",
        ),
        click.option("--auth-audience", metavar="URL", help="The audience tokens must name (the resource by default)."),
        click.option("--auth-scope", multiple=True, metavar="SCOPE", help="A scope every token needs (repeatable)."),
        click.option(
            "--auth-provider",
            metavar="NAME",
            help="Tokens of this identity provider (oidc, keycloak, auth0, okta, workos, descope, scalekit, "
            "supabase) at --auth-issuer, checked against its discovery document at start-up.",
        ),
        click.option(
            "--auth-allow",
            multiple=True,
            metavar="RULE",
            help="With --auth-provider: admit only whom a rule matches (user:, email:, domain:, group:, role:, "
            "org:, tenant:, claim:NAME=VALUE; repeatable, any rule admits).",
        ),
        click.option(
            "--auth-proxy",
            metavar="PRESET",
            help="Be the authorization server clients see, in front of the identity provider at --auth-issuer "
            "(an OpenID provider: oidc, keycloak, auth0, okta), or github, google, entra, cognito: clients get "
            "this server's own tokens.",
        ),
        click.option(
            "--auth-tenant",
            metavar="ID",
            help="With --auth-proxy entra: the tenant id, or organizations/common (any tenant an --auth-allow "
            "tenant: rule names).",
        ),
        click.option("--auth-region", metavar="REGION", help="With --auth-proxy cognito: the user pool's AWS region."),
        click.option("--auth-pool", metavar="ID", help="With --auth-proxy cognito: the user pool id."),
        click.option(
            "--auth-domain",
            metavar="HOST",
            help="With --auth-proxy cognito: the app's hosted-UI domain (prefix.auth.REGION.amazoncognito.com).",
        ),
        click.option(
            "--auth-upstream-client-id", metavar="ID", help="With --auth-proxy: this server's client id at the IdP."
        ),
        click.option(
            "--auth-upstream-client-secret-env",
            metavar="VAR",
            help="With --auth-proxy: the environment variable holding this server's client secret at the IdP.",
        ),
        click.option(
            "--auth-upstream-scope",
            multiple=True,
            metavar="SCOPE",
            help="With --auth-proxy: a scope asked of the IdP (repeatable; openid email profile by default).",
        ),
        click.option(
            "--auth-redirect-allow",
            multiple=True,
            metavar="URI",
            help="With --auth-proxy: an https redirect URI clients may register (repeatable; a trailing * for a "
            "prefix). Loopback ones always may.",
        ),
        click.option(
            "--auth-dpop",
            type=click.Choice(["off", "allowed", "required"]),
            help="DPoP-bound tokens (RFC 9449): off (the default), allowed beside bearer tokens, or required.",
        ),
        click.option(
            "--auth-dpop-replay",
            type=click.Choice(["redis", "memory", "off"]),
            help="Where DPoP proofs are remembered against replay (redis when --backend names one, else memory).",
        ),
        click.option(
            "--auth-dpop-nonce-secret-env",
            metavar="VAR",
            help="Require DPoP nonces, made with the secrets (32 bytes at least, space-separated) in this variable.",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


@dataclasses.dataclass(frozen=True, slots=True)
class AuthSettings:
    """The ``--auth-*`` options as given (None or empty: not given)."""

    auth_issuer: str | None = None
    auth_jwks_uri: str | None = None
    auth_introspection_url: str | None = None
    auth_client_id: str | None = None
    auth_client_secret_env: str | None = None
    auth_resource: str | None = None
    auth_audience: str | None = None
    auth_scope: tuple[str, ...] = ()
    auth_provider: str | None = None
    auth_allow: tuple[str, ...] = ()
    auth_proxy: str | None = None
    auth_tenant: str | None = None
    auth_region: str | None = None
    auth_pool: str | None = None
    auth_domain: str | None = None
    auth_upstream_client_id: str | None = None
    auth_upstream_client_secret_env: str | None = None
    auth_upstream_scope: tuple[str, ...] = ()
    auth_redirect_allow: tuple[str, ...] = ()
    auth_dpop: str | None = None
    auth_dpop_replay: str | None = None
    auth_dpop_nonce_secret_env: str | None = None

    @classmethod
    def take(cls, options: dict[str, Any]) -> AuthSettings:
        """The settings among a command's ``options``, removed from them."""
        return cls(
            **{field.name: options.pop(field.name) for field in dataclasses.fields(cls) if field.name in options}
        )

    @property
    def given(self) -> bool:
        return any(getattr(self, field.name) for field in dataclasses.fields(self))

    def resource_server(
        self,
        endpoint: str,
        *,
        derivable: bool,
        environ: Mapping[str, str] | None = None,
        backend: str | None = None,
        workers: int = 1,
    ) -> ResourceServer | None:
        """The ``auth=`` of ``McpHttpServer.bind`` (None when no option was given). ``endpoint``
        is the bound endpoint's URL, usable as the resource when ``derivable``; ``backend`` the
        serve's backend URL and ``workers`` its processes (rule 5). click's UsageError for
        settings the rules refuse."""
        if not self.given:
            return None
        from ..auth import IntrospectionVerifier, JwtVerifier, ResourceServer, TokenVerifier
        from ..auth.urls import check_fetch_url

        if self.auth_proxy is not None:
            return self._proxy_server(endpoint, derivable, os.environ if environ is None else environ, backend, workers)
        if not self.auth_issuer:
            raise click.UsageError("--auth-* options need --auth-issuer: the authorization server clients are sent to")
        upstream_options = (
            self.auth_tenant,
            self.auth_region,
            self.auth_pool,
            self.auth_domain,
            self.auth_upstream_client_id,
            self.auth_upstream_client_secret_env,
            self.auth_upstream_scope,
            self.auth_redirect_allow,
        )
        if any(upstream_options):
            raise click.UsageError(
                "--auth-upstream-*, --auth-redirect-allow, --auth-tenant, --auth-region, --auth-pool and "
                "--auth-domain go with --auth-proxy"
            )
        if self.auth_provider is not None:
            return self._provider_server(endpoint, derivable, environ, backend, workers)
        if self.auth_allow:
            raise click.UsageError(
                "--auth-allow goes with --auth-provider (--auth-provider oidc for any OpenID provider)"
            )
        if (self.auth_jwks_uri is None) == (self.auth_introspection_url is None):
            raise click.UsageError(
                "check tokens one way: --auth-jwks-uri (JWT access tokens) or --auth-introspection-url (RFC 7662)"
            )
        if self.auth_resource is None and not derivable:
            raise click.UsageError(
                "--auth-resource URL is needed when listening on every interface or on --port 0: tokens must "
                "name the URL clients reach this server at"
            )
        resource = self.auth_resource or endpoint
        audience = self.auth_audience or resource
        verifier: TokenVerifier
        try:
            for option, url in (
                ("--auth-jwks-uri", self.auth_jwks_uri),
                ("--auth-introspection-url", self.auth_introspection_url),
            ):
                if url is not None:
                    check_fetch_url(option, url)
            if self.auth_jwks_uri is not None:
                if self.auth_client_id or self.auth_client_secret_env:
                    raise click.UsageError("--auth-client-id and --auth-client-secret-env go with introspection")
                verifier = JwtVerifier(issuer=self.auth_issuer, audience=audience, jwks_uri=self.auth_jwks_uri)
            else:
                assert self.auth_introspection_url is not None
                verifier = IntrospectionVerifier(
                    endpoint=self.auth_introspection_url,
                    client_id=self._required("--auth-client-id", self.auth_client_id),
                    client_secret=self._secret(os.environ if environ is None else environ),
                    audience=audience,
                    issuer=self.auth_issuer,
                )
            return ResourceServer(
                resource,
                [self.auth_issuer],
                verifier=verifier,
                required_scopes=self.auth_scope,
                dpop=self._dpop(os.environ if environ is None else environ, backend, workers),
            )
        except ValueError as error:
            raise click.UsageError(str(error)) from error

    def _provider_server(
        self, endpoint: str, derivable: bool, environ: Mapping[str, str] | None, backend: str | None, workers: int
    ) -> ResourceServer:
        """Rule 6: the resource server of an identity-provider preset."""
        from ..auth.providers import resource_server

        assert self.auth_issuer is not None and self.auth_provider is not None
        if self.auth_jwks_uri is not None or self.auth_introspection_url is not None:
            raise click.UsageError(
                "with --auth-provider the key set (or introspection endpoint) comes from the provider's discovery "
                "document: leave out --auth-jwks-uri and --auth-introspection-url"
            )
        if self.auth_resource is None and not derivable:
            raise click.UsageError(
                "--auth-resource URL is needed when listening on every interface or on --port 0: tokens must "
                "name the URL clients reach this server at"
            )
        env = os.environ if environ is None else environ
        opaque = self.auth_client_id is not None or self.auth_client_secret_env is not None
        try:
            return resource_server(
                self.auth_provider,
                issuer=self.auth_issuer,
                resource=self.auth_resource or endpoint,
                audience=self.auth_audience,
                allow=self.auth_allow,
                token_format="opaque" if opaque else None,
                client_id=self._required("--auth-client-id", self.auth_client_id) if opaque else None,
                client_secret=self._secret(env) if opaque else None,
                required_scopes=self.auth_scope,
                dpop=self._dpop(env, backend, workers),
                warn=lambda message: click.echo(f"Warning: {message}", err=True),
            )
        except ValueError as error:
            raise click.UsageError(str(error)) from error

    def _proxy_server(
        self, endpoint: str, derivable: bool, environ: Mapping[str, str], backend: str | None, workers: int
    ) -> ResourceServer:
        """Rule 7: the OAuth proxy in front of the IdP at ``--auth-issuer``, and its resource server."""
        from urllib.parse import urlsplit

        from ..auth.providers import PRESETS, AllowPolicy
        from ..auth.providers.discovery import fetch_discovery
        from ..auth.proxy import (
            GITHUB_CLAIMS,
            GOOGLE_CLAIMS,
            AuthProxy,
            MemoryProxyStore,
            ProxyStore,
            Sealer,
            SigningKeys,
            Upstream,
        )

        assert self.auth_proxy is not None
        if self.auth_provider or self.auth_jwks_uri or self.auth_introspection_url or self.auth_audience:
            raise click.UsageError(
                "--auth-proxy issues this server's own tokens: leave out --auth-provider, --auth-jwks-uri, "
                "--auth-introspection-url and --auth-audience"
            )
        from ..auth.proxy.upstream import (
            COGNITO_CLAIMS,
            ENTRA_CLAIMS,
            ENTRA_MULTI_TENANT,
            cognito_issuer,
            entra_document,
        )

        github, google = self.auth_proxy == "github", self.auth_proxy == "google"
        entra, cognito = self.auth_proxy == "entra", self.auth_proxy == "cognito"
        vendor = github or google or entra or cognito  # (the IdP's address is known, or built from options)
        preset = PRESETS.get("oidc" if vendor else self.auth_proxy)
        if not github and (preset is None or "jwt" not in preset.token_formats):
            raise click.UsageError(
                f"--auth-proxy {self.auth_proxy}: not github, google, entra, cognito or an OpenID provider preset "
                "(oidc, keycloak, auth0, okta)"
            )
        if not entra and self.auth_tenant:
            raise click.UsageError("--auth-tenant goes with --auth-proxy entra")
        if not cognito and (self.auth_region or self.auth_pool or self.auth_domain):
            raise click.UsageError("--auth-region, --auth-pool and --auth-domain go with --auth-proxy cognito")
        if entra and not self.auth_tenant:
            raise click.UsageError("--auth-proxy entra needs --auth-tenant (the tenant id, or organizations/common)")
        if cognito and not (self.auth_domain and (self.auth_issuer or (self.auth_region and self.auth_pool))):
            raise click.UsageError(
                "--auth-proxy cognito needs --auth-region, --auth-pool and --auth-domain (the user pool, and the "
                "app's hosted-UI domain)"
            )
        multi_tenant = entra and self.auth_tenant in ENTRA_MULTI_TENANT
        if (github or google or multi_tenant) and not self.auth_allow:
            rules = {
                "github": "user:<numeric id>, email:, domain:",
                "google": "org:<Workspace domain>, domain:, email:",
                "entra": "tenant:<tid>, group:, role:, user:<oid>",
            }[self.auth_proxy]
            raise click.UsageError(
                f"--auth-proxy {self.auth_proxy} needs --auth-allow ({rules}): anyone with an account there can sign in"
            )
        if not vendor and not self.auth_issuer:
            raise click.UsageError("--auth-proxy needs --auth-issuer: the identity provider users sign in at")
        if self.auth_resource is None and not derivable:
            raise click.UsageError(
                "--auth-resource URL is needed when listening on every interface or on --port 0: it names the "
                "issuer and callback the IdP and clients use"
            )
        client_id = self.auth_upstream_client_id
        variable = self.auth_upstream_client_secret_env
        if not client_id or not variable:
            raise click.UsageError(
                "--auth-proxy needs --auth-upstream-client-id and --auth-upstream-client-secret-env (the app "
                "registered at the IdP)"
            )
        secret = environ.get(variable)
        if not secret:
            raise click.UsageError(f"--auth-upstream-client-secret-env: the environment variable {variable} is not set")
        redis = backend is not None and backend.partition(":")[0].lower() in _REDIS_SCHEMES
        shared = redis or workers > 1
        if workers > 1 and not redis:
            raise click.UsageError("--auth-proxy with --workers above 1 needs --backend redis://... (the flow state)")
        resource = self.auth_resource or endpoint
        parts = urlsplit(resource)
        try:
            keys = SigningKeys.from_env(environ)
            sealer = Sealer.from_env(environ=environ)
        except (OSError, ValueError) as error:
            raise click.UsageError(f"MCP_AUTH_SIGNING_KEYS / MCP_AUTH_SECRETS: {error}") from error
        if shared and (keys is None or sealer is None):
            raise click.UsageError(
                "--auth-proxy with a Redis backend or several workers needs MCP_AUTH_SIGNING_KEYS (a JWKS file of "
                "private ES256 keys) and MCP_AUTH_SECRETS (sealing secrets of 32 bytes or more): every worker "
                "must sign and unseal alike"
            )
        if keys is None or sealer is None:
            click.echo(
                "Warning: MCP_AUTH_SIGNING_KEYS or MCP_AUTH_SECRETS is not set: keys made for this process; "
                "tokens and sign-ins in progress end with it.",
                err=True,
            )
        store: ProxyStore = MemoryProxyStore()
        if redis:
            from ..auth.proxy.redis_store import RedisProxyStore

            assert backend is not None
            store = RedisProxyStore.from_url(backend)
        if not self.auth_allow:
            click.echo(
                f"Warning: --auth-proxy without --auth-allow: anyone {self.auth_issuer or self.auth_proxy} "
                "signs in may use this server.",
                err=True,
            )
        dpop = self._dpop(environ, backend, workers)  # (the same settings at our token endpoint and here)
        try:
            if github:
                # GitHub.com, or GitHub Enterprise Server at --auth-issuer (its API under /api/v3).
                web = (self.auth_issuer or "https://github.com").rstrip("/")
                api = "https://api.github.com" if web == "https://github.com" else web + "/api/v3"
                upstream = Upstream.github(
                    client_id=client_id,
                    client_secret=secret,
                    scopes=self.auth_upstream_scope or ("read:user", "user:email"),
                    web=web,
                    api=api,
                )
                name = "github"
                claims: Mapping[str, tuple[str, ...]] = GITHUB_CLAIMS
            elif google:
                # accounts.google.com (or a stand-in at --auth-issuer), checked as any OpenID provider.
                assert preset is not None
                document = fetch_discovery(preset, self.auth_issuer or "https://accounts.google.com")
                upstream = Upstream.google(
                    document,
                    client_id=client_id,
                    client_secret=secret,
                    scopes=self.auth_upstream_scope or ("openid", "email", "profile"),
                )
                name, claims = "google", GOOGLE_CLAIMS
            elif entra:
                # login.microsoftonline.com, or another cloud's login host (or a stand-in) at --auth-issuer.
                assert self.auth_tenant is not None
                authority = self.auth_issuer or "https://login.microsoftonline.com"
                upstream = Upstream.entra(
                    entra_document(self.auth_tenant, authority),
                    tenant=self.auth_tenant,
                    client_id=client_id,
                    client_secret=secret,
                    scopes=self.auth_upstream_scope or ("openid", "profile", "offline_access"),
                    authority=authority,
                )
                name, claims = "entra", ENTRA_CLAIMS
            elif cognito:
                # The pool's issuer at cognito-idp (or a stand-in at --auth-issuer); sign-in at --auth-domain.
                assert preset is not None and self.auth_domain is not None
                if self.auth_issuer:
                    issuer = self.auth_issuer
                else:
                    assert self.auth_region is not None and self.auth_pool is not None
                    issuer = cognito_issuer(self.auth_region, self.auth_pool)
                upstream = Upstream.cognito(
                    fetch_discovery(preset, issuer),
                    domain=self.auth_domain,
                    client_id=client_id,
                    client_secret=secret,
                    scopes=self.auth_upstream_scope or ("openid", "email", "profile"),
                )
                name, claims = "cognito", COGNITO_CLAIMS
            else:
                assert preset is not None and self.auth_issuer is not None
                document = fetch_discovery(preset, self.auth_issuer)
                upstream = Upstream.from_discovery(
                    document,
                    client_id=client_id,
                    client_secret=secret,
                    scopes=self.auth_upstream_scope or ("openid", "email", "profile"),
                )
                name, claims = preset.name, preset.claims
            proxy = AuthProxy(
                issuer=f"{parts.scheme}://{parts.netloc}",
                resource=resource,
                upstream=upstream,
                idp=name,
                allow=AllowPolicy(self.auth_allow, claims=claims),
                scopes=self.auth_scope or ("mcp:tools",),
                store=store,
                keys=keys,
                sealer=sealer,
                redirect_allow=self.auth_redirect_allow,
                dpop=dpop,
            )
            return proxy.resource_server(self.auth_scope, dpop=dpop)
        except ValueError as error:
            raise click.UsageError(str(error)) from error

    @staticmethod
    def _required(option: str, value: str | None) -> str:
        if not value:
            raise click.UsageError(f"introspection needs {option}")
        return value

    def _dpop(self, environ: Mapping[str, str], backend: str | None, workers: int) -> DPoP | None:
        """Rule 5: the DPoP settings, None when off."""
        if self.auth_dpop in (None, "off"):
            if self.auth_dpop_replay is not None or self.auth_dpop_nonce_secret_env is not None:
                raise click.UsageError("--auth-dpop-replay and --auth-dpop-nonce-secret-env go with --auth-dpop")
            return None
        from ..auth.dpop import DPoP, DPoPNonces, RedisReplay, ReplayCache

        redis = backend is not None and backend.partition(":")[0].lower() in _REDIS_SCHEMES
        where = self.auth_dpop_replay or ("redis" if redis else "memory")
        replay: ReplayCache | Literal["memory"] | None
        if where == "redis":
            if not redis:
                raise click.UsageError("--auth-dpop-replay redis needs --backend redis://... (or --redis-url)")
            assert backend is not None
            replay = RedisReplay.from_url(backend)
        else:
            replay = "memory" if where == "memory" else None
            if workers > 1:
                click.echo(
                    f"Warning: --auth-dpop-replay {where} with --workers {workers}: a DPoP proof replayed to "
                    "another worker passes; give --backend redis://... to share the replay cache.",
                    err=True,
                )
        nonces = None
        if self.auth_dpop_nonce_secret_env is not None:
            secrets = environ.get(self.auth_dpop_nonce_secret_env, "").split()
            if not secrets:
                raise click.UsageError(
                    f"--auth-dpop-nonce-secret-env: the environment variable {self.auth_dpop_nonce_secret_env} "
                    "is not set"
                )
            nonces = DPoPNonces(secrets)
        mode: Literal["allowed", "required"] = "required" if self.auth_dpop == "required" else "allowed"
        return DPoP(mode, replay=replay, nonces=nonces)

    def _secret(self, environ: Mapping[str, str]) -> str:
        variable = self._required("--auth-client-secret-env", self.auth_client_secret_env)
        secret = environ.get(variable)
        if not secret:
            raise click.UsageError(f"--auth-client-secret-env: the environment variable {variable} is not set")
        return secret
