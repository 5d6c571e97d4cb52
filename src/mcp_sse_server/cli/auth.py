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
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..auth.resource import ResourceServer

__all__ = ["AuthSettings", "auth_options"]

_F = TypeVar("_F", bound=Callable[..., Any])


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
        self, endpoint: str, *, derivable: bool, environ: Mapping[str, str] | None = None
    ) -> ResourceServer | None:
        """The ``auth=`` of ``McpHttpServer.bind`` (None when no option was given). ``endpoint``
        is the bound endpoint's URL, usable as the resource when ``derivable``. click's
        UsageError for settings the rules refuse."""
        if not self.given:
            return None
        from ..auth import IntrospectionVerifier, JwtVerifier, ResourceServer, TokenVerifier
        from ..auth.urls import check_fetch_url

        if not self.auth_issuer:
            raise click.UsageError("--auth-* options need --auth-issuer: the authorization server clients are sent to")
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
            return ResourceServer(resource, [self.auth_issuer], verifier=verifier, required_scopes=self.auth_scope)
        except ValueError as error:
            raise click.UsageError(str(error)) from error

    @staticmethod
    def _required(option: str, value: str | None) -> str:
        if not value:
            raise click.UsageError(f"introspection needs {option}")
        return value

    def _secret(self, environ: Mapping[str, str]) -> str:
        variable = self._required("--auth-client-secret-env", self.auth_client_secret_env)
        secret = environ.get(variable)
        if not secret:
            raise click.UsageError(f"--auth-client-secret-env: the environment variable {variable} is not set")
        return secret
