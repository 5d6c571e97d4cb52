"""Discovery and the checks around it: which URLs to try, what their metadata says, and
what the client does with it (pure: no I/O).

Rules (the digest's §2, §5; RFC 9728, RFC 8414, OpenID Connect Discovery, RFC 9207, RFC 7636):

1. A well-known URL is built from a URL by dropping one trailing ``/`` from its
   path and putting the well-known segment between the authority and the path;
   the query stays. The protected-resource metadata (PRM) is tried at the
   ``resource_metadata`` URL of the challenge (verbatim), then at the
   path-inserted form of the server URL, then at the root form
   (``protected_resource_urls``).
2. An issuer with a path has its metadata at the RFC 8414 path-inserted URL,
   then the OIDC path-inserted one, then the OIDC path-appended one, and never
   at the root RFC 8414 URL (it belongs to another issuer). An issuer without
   a path: RFC 8414 root, then OIDC root (``authorization_server_urls``).
3. Without any PRM the server is a 2025-03-26 one: its authorization server is
   its origin, the path dropped (``legacy_base``), with default endpoints
   ``/authorize``, ``/token`` and ``/register`` when it publishes no metadata
   (``legacy_authorization_server``).
4. Metadata strings are kept exactly as the JSON has them (``resource``,
   ``authorization_servers``, ``issuer``, endpoints): never normalized, since
   they are compared and sent back byte for byte. AS metadata is usable only
   when its ``issuer`` equals the expected issuer as a plain string.
5. The PRM ``resource`` must name the server: same scheme, host and port, and
   the server's path at or under the resource's path (``resource_matches``).
6. OAuth URLs are ``https``; ``http`` only on loopback (``check_oauth_url``).
   Authorization needs PKCE ``S256`` listed (``AuthorizationServer.supports_pkce``).
7. The scope asked for first is the challenge's, else all of the PRM's
   ``scopes_supported``, else none; ``offline_access`` is added to a scope
   that is sent anyway when the authorization server lists it
   (``initial_scope``). A step-up asks for what was requested, granted and
   challenged, in that order (``step_up_scope``), and is pointless when the
   challenge asks for nothing not granted (``step_up_hopeless``).
8. An authorization response is checked in this order: ``state`` (constant
   time), then ``iss``, and only then ``error`` and ``code``: an error that
   fails the ``iss`` check is never shown (``authorization_code``).
9. The token-endpoint auth method: ask DCR for ``none`` if listed, else
   ``client_secret_basic``, else ``client_secret_post``; use the registered
   method, else ``none`` without a secret, else the first of
   ``client_secret_basic``, ``client_secret_post``, ``none`` listed. An absent
   list means ``client_secret_basic`` (RFC 8414 §2).

>>> protected_resource_urls("https://host/path/mcp", None)
['https://host/.well-known/oauth-protected-resource/path/mcp', 'https://host/.well-known/oauth-protected-resource']
>>> authorization_server_urls("https://auth.example/tenant1")[0]
'https://auth.example/.well-known/oauth-authorization-server/tenant1'
>>> resource_matches("https://host:443/mcp", "https://HOST/")
True
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import SplitResult, urlsplit

from .errors import OAuthError

__all__ = [
    "AuthorizationServer",
    "ProtectedResource",
    "authorization_code",
    "authorization_server_urls",
    "check_oauth_url",
    "effective_auth_method",
    "initial_scope",
    "legacy_authorization_server",
    "legacy_base",
    "legacy_metadata_url",
    "new_state",
    "parse_authorization_server",
    "parse_protected_resource",
    "pkce_pair",
    "protected_resource_urls",
    "requested_auth_method",
    "resource_matches",
    "step_up_hopeless",
    "step_up_scope",
]

PRM_SEGMENT: Final = "/.well-known/oauth-protected-resource"
OAUTH_SEGMENT: Final = "/.well-known/oauth-authorization-server"
OIDC_SEGMENT: Final = "/.well-known/openid-configuration"

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_RFC8414_DEFAULT_METHODS: Final = ("client_secret_basic",)
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]+")


# ------------------------------------------------------------------------------------------
# URLs (rules 1 to 3, 5, 6)


def _split_http(url: str, what: str) -> SplitResult:
    """``url`` split; ValueError unless it is an absolute http(s) URL (a caller's argument)."""
    parts = urlsplit(url)
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        raise ValueError(f"{what} must be an absolute http(s) URL: {url!r}")
    return parts


def _inserted(parts: SplitResult, segment: str) -> str:
    """The well-known URL of ``parts`` for ``segment`` (rule 1): one trailing ``/`` dropped,
    the segment before the path, the query kept, the fragment dropped."""
    path = parts.path[:-1] if parts.path.endswith("/") else parts.path
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}{segment}{path}{query}"


def protected_resource_urls(server_url: str, header_url: str | None) -> list[str]:
    """PRM candidates in order (rule 1): the header URL verbatim if given, then the
    path-inserted form, then the root form (only the root form when the server URL has
    neither a path beyond ``/`` nor a query); duplicates dropped, order kept.

    >>> protected_resource_urls("https://host/", "https://host/custom/metadata.json")
    ['https://host/custom/metadata.json', 'https://host/.well-known/oauth-protected-resource']
    """
    parts = _split_http(server_url, "the server URL")
    candidates = [header_url] if header_url else []
    candidates.append(_inserted(parts, PRM_SEGMENT))
    candidates.append(f"{parts.scheme}://{parts.netloc}{PRM_SEGMENT}")
    return list(dict.fromkeys(candidates))


def authorization_server_urls(issuer: str) -> list[str]:
    """AS metadata candidates for ``issuer`` (rule 2); OAuthError for an issuer that is no
    http(s) URL or has a query or fragment (RFC 8414 §2 forbids both).

    >>> authorization_server_urls("https://auth.example")
    ['https://auth.example/.well-known/oauth-authorization-server', 'https://auth.example/.well-known/openid-configuration']
    """
    parts = urlsplit(issuer)
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc or parts.query or parts.fragment:
        raise OAuthError(f"the authorization server issuer is not an http(s) URL without query or fragment: {issuer!r}")
    path = parts.path[:-1] if parts.path.endswith("/") else parts.path
    origin = f"{parts.scheme}://{parts.netloc}"
    if not path:
        return [origin + OAUTH_SEGMENT, origin + OIDC_SEGMENT]
    # Never the root RFC 8414 URL: it describes the host's root issuer, not this one.
    return [origin + OAUTH_SEGMENT + path, origin + OIDC_SEGMENT + path, origin + path + OIDC_SEGMENT]


def legacy_base(server_url: str) -> str:
    """The 2025-03-26 authorization base: the server's origin, path, query and user info
    dropped, scheme and host in lower case, a default port left out (RFC 6454).

    >>> legacy_base("https://Host.example:443/path/mcp?x=1")
    'https://host.example'
    """
    parts = _split_http(server_url, "the server URL")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}"


def legacy_metadata_url(server_url: str) -> str:
    """Where a 2025-03-26 server's authorization server metadata is: the origin's RFC 8414 URL.

    >>> legacy_metadata_url("http://localhost:3000/mcp")
    'http://localhost:3000/.well-known/oauth-authorization-server'
    """
    return legacy_base(server_url) + OAUTH_SEGMENT


def _origin(parts: SplitResult) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` with the host in lower case and the port explicit; None when
    the URL is no http(s) URL or its port is not a number."""
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return parts.scheme, parts.hostname.lower(), _DEFAULT_PORTS[parts.scheme] if port is None else port


def resource_matches(server_url: str, resource: str) -> bool:
    """True when the PRM ``resource`` names the server at ``server_url`` (rule 5): same
    scheme, host (case-insensitive) and port (default ports made explicit), and the server's
    path equal to or under the resource's, segment-wise. A resource with a fragment never
    matches; one with a query matches only the same query.

    >>> resource_matches("https://host/mcp", "https://host/mc")
    False
    >>> resource_matches("http://localhost:1234/mcp", "http://localhost:1234")
    True
    """
    server = _split_http(server_url, "the server URL")
    named = urlsplit(resource)
    if named.fragment or (named.query and named.query != server.query):
        return False
    origin = _origin(named)
    if origin is None or origin != _origin(server):
        return False
    # "/" and "" both name the root; a trailing "/" does not make another segment.
    parent = named.path.rstrip("/")
    path = server.path.rstrip("/")
    return path == parent or path.startswith(parent + "/")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback  # 127.0.0.0/8 and ::1, never "127.evil.example"
    except ValueError:
        return False


def check_oauth_url(url: str, what: str, *, allow_loopback_http: bool = True) -> str:
    """``url`` if it is ``https``, or ``http`` on loopback (``localhost``, 127.0.0.0/8, ``::1``)
    while ``allow_loopback_http`` (rule 6); else OAuthError naming ``what``. A fragment is
    refused too: no OAuth URL has one.

    >>> check_oauth_url("http://127.0.0.1:8080/token", "the token endpoint")
    'http://127.0.0.1:8080/token'
    >>> check_oauth_url("http://as.example/token", "the token endpoint")
    Traceback (most recent call last):
        ...
    mcp_sse_server.client.oauth.errors.OAuthError: the token endpoint must be https (http only on loopback): 'http://as.example/token'
    """
    parts = urlsplit(url)
    try:
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        raise OAuthError(f"{what} has an invalid port: {url!r}") from None
    host = parts.hostname or ""
    ok = parts.scheme == "https" or (parts.scheme == "http" and allow_loopback_http and _is_loopback(host))
    if not ok or not host:
        qualifier = "http only on loopback" if allow_loopback_http else "http is not allowed"
        raise OAuthError(f"{what} must be https ({qualifier}): {url!r}")
    if parts.fragment or url.endswith("#"):
        raise OAuthError(f"{what} must not have a fragment: {url!r}")
    return url


# ------------------------------------------------------------------------------------------
# Metadata (rule 4)


@dataclass(frozen=True, slots=True)
class ProtectedResource:
    """RFC 9728 protected-resource metadata, its strings exactly as served."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    url: str
    raw: Mapping[str, Any]


def _strings(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    """``data[key]`` as a tuple of strings; None when absent or null; OAuthError for another type."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not list or not all(type(item) is str for item in value):
        raise OAuthError(f"{where}: {key} is not a list of strings")
    return tuple(value)


def _string(data: Mapping[str, Any], key: str, where: str) -> str | None:
    """``data[key]`` as a non-empty string; None when absent or null; OAuthError otherwise."""
    value = data.get(key)
    if value is None:
        return None
    if type(value) is not str or not value:
        raise OAuthError(f"{where}: {key} is not a non-empty string")
    return value


def _flag(data: Mapping[str, Any], key: str, where: str) -> bool:
    """``data[key]`` as a boolean; False when absent or null; OAuthError for another type (a
    string "true" is a broken server, not a promise)."""
    value = data.get(key)
    if value is None:
        return False
    if type(value) is not bool:
        raise OAuthError(f"{where}: {key} is not a boolean")
    return value


def parse_protected_resource(data: object, url: str) -> ProtectedResource:
    """The PRM document ``data`` (decoded JSON) fetched from ``url``; OAuthError unless it is
    an object with a string ``resource`` and a non-empty list of string ``authorization_servers``.

    >>> parse_protected_resource({"resource": "http://localhost:1234", "authorization_servers": ["http://as"]},
    ...                          "http://localhost:1234/.well-known/oauth-protected-resource").resource
    'http://localhost:1234'
    """
    where = f"the protected resource metadata at {url}"
    if type(data) is not dict:
        raise OAuthError(f"{where} is not a JSON object")
    resource = _string(data, "resource", where)
    if resource is None:
        raise OAuthError(f"{where} has no resource")
    servers = _strings(data, "authorization_servers", where)
    if not servers or not all(servers):
        raise OAuthError(f"{where} names no authorization server")
    return ProtectedResource(
        resource=resource,
        authorization_servers=servers,
        scopes_supported=_strings(data, "scopes_supported", where),
        url=url,
        raw=data,
    )


@dataclass(frozen=True, slots=True)
class AuthorizationServer:
    """RFC 8414 (or OpenID Connect) authorization server metadata, its strings exactly as served.

    ``token_endpoint_auth_methods_supported`` is None when absent (RFC 8414 then means
    ``client_secret_basic``); ``url`` is None for the 2025-03-26 defaults.
    """

    issuer: str
    authorization_endpoint: str | None
    token_endpoint: str
    registration_endpoint: str | None
    scopes_supported: tuple[str, ...] | None
    code_challenge_methods_supported: tuple[str, ...]
    token_endpoint_auth_methods_supported: tuple[str, ...] | None
    grant_types_supported: tuple[str, ...] | None
    iss_parameter_supported: bool
    client_id_metadata_document_supported: bool
    dpop_signing_alg_values_supported: tuple[str, ...] | None
    token_endpoint_auth_signing_alg_values_supported: tuple[str, ...] | None
    url: str | None
    raw: Mapping[str, Any]

    def supports_pkce(self) -> bool:
        """True when ``S256`` is listed: without it the client refuses to authorize (CL-7)."""
        return "S256" in self.code_challenge_methods_supported


def parse_authorization_server(data: object, url: str, expected_issuer: str) -> AuthorizationServer:
    """The AS metadata ``data`` (decoded JSON) fetched from ``url`` for ``expected_issuer``;
    OAuthError if it is not an object, if its ``issuer`` is not ``expected_issuer`` (plain
    string equality: no trailing-slash or case forgiveness), or if it has no ``token_endpoint``.

    >>> parse_authorization_server({"issuer": "https://as/", "token_endpoint": "https://as/token"},
    ...                            "https://as/.well-known/openid-configuration", "https://as")
    Traceback (most recent call last):
        ...
    mcp_sse_server.client.oauth.errors.OAuthError: the authorization server metadata at \
https://as/.well-known/openid-configuration names issuer 'https://as/', not 'https://as'
    """
    where = f"the authorization server metadata at {url}"
    if type(data) is not dict:
        raise OAuthError(f"{where} is not a JSON object")
    issuer = data.get("issuer")
    if issuer != expected_issuer:
        raise OAuthError(f"{where} names issuer {_one_line(repr(issuer))}, not {expected_issuer!r}")
    token_endpoint = _string(data, "token_endpoint", where)
    if token_endpoint is None:
        raise OAuthError(f"{where} has no token_endpoint")
    return AuthorizationServer(
        issuer=expected_issuer,
        authorization_endpoint=_string(data, "authorization_endpoint", where),
        token_endpoint=token_endpoint,
        registration_endpoint=_string(data, "registration_endpoint", where),
        scopes_supported=_strings(data, "scopes_supported", where),
        code_challenge_methods_supported=_strings(data, "code_challenge_methods_supported", where) or (),
        token_endpoint_auth_methods_supported=_strings(data, "token_endpoint_auth_methods_supported", where),
        grant_types_supported=_strings(data, "grant_types_supported", where),
        iss_parameter_supported=_flag(data, "authorization_response_iss_parameter_supported", where),
        client_id_metadata_document_supported=_flag(data, "client_id_metadata_document_supported", where),
        dpop_signing_alg_values_supported=_strings(data, "dpop_signing_alg_values_supported", where),
        token_endpoint_auth_signing_alg_values_supported=_strings(
            data, "token_endpoint_auth_signing_alg_values_supported", where
        ),
        url=url,
        raw=data,
    )


def legacy_authorization_server(server_url: str) -> AuthorizationServer:
    """The 2025-03-26 defaults for a server that publishes no metadata (rule 3): ``/authorize``,
    ``/token`` and ``/register`` at its origin, which is the issuer; PKCE ``S256`` assumed,
    since it cannot be checked and is used anyway.

    >>> legacy_authorization_server("http://localhost:3000/mcp").token_endpoint
    'http://localhost:3000/token'
    """
    base = legacy_base(server_url)
    return AuthorizationServer(
        issuer=base,
        authorization_endpoint=base + "/authorize",
        token_endpoint=base + "/token",
        registration_endpoint=base + "/register",
        scopes_supported=None,
        code_challenge_methods_supported=("S256",),
        token_endpoint_auth_methods_supported=None,
        grant_types_supported=None,
        iss_parameter_supported=False,
        client_id_metadata_document_supported=False,
        dpop_signing_alg_values_supported=None,
        token_endpoint_auth_signing_alg_values_supported=None,
        url=None,
        raw={},
    )


# ------------------------------------------------------------------------------------------
# Scopes (rule 7)


def _ordered_union(*scopes: str | None) -> str | None:
    merged = dict.fromkeys(token for scope in scopes if scope for token in scope.split())
    return " ".join(merged) or None


def initial_scope(
    challenge_scope: str | None,
    resource: ProtectedResource | None,
    server: AuthorizationServer,
    *,
    want_refresh: bool = True,
) -> str | None:
    """The ``scope`` of the first authorization request, None to leave it out (rule 7).

    The challenge's scope is authoritative: nothing is assumed about how it relates to
    ``scopes_supported``. The authorization server's own ``scopes_supported`` is never a
    fallback (it lists every scope it has, for every resource).

    >>> prm = ProtectedResource("https://host/mcp", ("https://as",), ("mcp:basic", "mcp:read"), "u", {})
    >>> asm = legacy_authorization_server("https://as")
    >>> initial_scope("mcp:basic", prm, asm), initial_scope(None, prm, asm), initial_scope(None, None, asm)
    ('mcp:basic', 'mcp:basic mcp:read', None)
    """
    if challenge_scope and challenge_scope.split():
        scopes = challenge_scope.split()
    elif resource is not None and resource.scopes_supported:
        scopes = list(resource.scopes_supported)
    else:
        return None
    # offline_access only joins a scope that is sent anyway, and only when this AS knows it:
    # asking an AS for a scope it does not list can fail the whole request.
    if want_refresh and "offline_access" in (server.scopes_supported or ()):
        scopes.append("offline_access")
    return _ordered_union(" ".join(scopes))


def step_up_scope(requested: str | None, granted: str | None, challenged: str | None) -> str | None:
    """The scope to ask for after a 403 ``insufficient_scope`` (rule 7): requested, then
    granted, then challenged scopes, each once, in that order; None when all are empty.

    >>> step_up_scope("mcp:basic", "mcp:basic other", "mcp:write mcp:basic")
    'mcp:basic other mcp:write'
    """
    return _ordered_union(requested, granted, challenged)


def step_up_hopeless(granted: str | None, challenged: str | None) -> bool:
    """True when the challenge asks for nothing the token was not already granted (rule 7):
    authorizing again would not satisfy the server. A challenge without a scope asks for
    nothing new, so it is hopeless too.

    >>> step_up_hopeless("a b", "b"), step_up_hopeless("a", "a c")
    (True, False)
    """
    return set((challenged or "").split()) <= set((granted or "").split())


# ------------------------------------------------------------------------------------------
# The authorization request and response (rule 8)


def pkce_pair() -> tuple[str, str]:
    """A fresh ``(code_verifier, code_challenge)`` for PKCE ``S256`` (RFC 7636): a verifier of
    86 unreserved characters, its SHA-256 in unpadded base64url.

    >>> verifier, challenge = pkce_pair()
    >>> len(verifier), len(challenge), challenge == _s256(verifier)
    (86, 43, True)
    """
    verifier = secrets.token_urlsafe(64)
    return verifier, _s256(verifier)


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_state() -> str:
    """A fresh ``state`` for one authorization request: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def _one_line(text: str, limit: int = 200) -> str:
    """Server text fit for a one-line message: control characters folded, length bounded."""
    text = _CONTROL.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def authorization_code(params: Mapping[str, str], *, state: str, issuer: str, iss_supported: bool) -> str:
    """The ``code`` of the authorization response ``params`` (the redirect's query, decoded), for
    the request sent with ``state`` to ``issuer`` (rule 8). OAuthError when ``state`` is missing
    or wrong; when ``iss`` is wrong, or missing although ``iss_supported``; when the response is
    an ``error`` (its ``data`` holds ``error`` and ``error_description``); when ``code`` is missing.

    >>> authorization_code({"code": "c", "state": "s", "iss": "https://as"}, state="s", issuer="https://as",
    ...                    iss_supported=True)
    'c'
    """
    if not state:
        raise ValueError("state must be the non-empty state sent with the authorization request")
    got_state = params.get("state")
    if got_state is None or not hmac.compare_digest(got_state.encode(), state.encode()):
        raise OAuthError("the authorization response's state is missing or not the one sent: response ignored")
    iss = params.get("iss")
    # Plain equality (RFC 9207 §2.4): "https://as/" for "https://as" is a mix-up, not a spelling.
    if iss is not None and iss != issuer:
        raise OAuthError(f"the authorization response comes from issuer {_one_line(iss)!r}, not {issuer!r}")
    if iss is None and iss_supported:
        raise OAuthError(f"the authorization response has no iss, although {issuer} promises one (RFC 9207)")
    error = params.get("error")
    if error is not None:
        description = params.get("error_description")
        detail = f": {_one_line(description)}" if description else ""
        raise OAuthError(
            f"the authorization server refused the authorization: {_one_line(error)}{detail}",
            {"error": error, "error_description": description},
        )
    code = params.get("code")
    if not code:
        raise OAuthError("the authorization response has no code")
    return code


# ------------------------------------------------------------------------------------------
# Client authentication at the token endpoint (rule 9)


def requested_auth_method(server: AuthorizationServer) -> str:
    """The ``token_endpoint_auth_method`` to ask for in dynamic client registration (rule 9).

    >>> requested_auth_method(legacy_authorization_server("https://host"))
    'client_secret_basic'
    """
    supported = server.token_endpoint_auth_methods_supported or _RFC8414_DEFAULT_METHODS
    if "none" in supported:
        return "none"
    return "client_secret_basic" if "client_secret_basic" in supported else "client_secret_post"


def effective_auth_method(registered_method: str | None, has_secret: bool, server: AuthorizationServer) -> str:
    """The method to authenticate with at the token endpoint (rule 9): ``registered_method``
    (from the registration response or the pre-registered configuration) when set; ``none``
    without a secret; else the first of ``client_secret_basic``, ``client_secret_post`` and
    ``none`` the server lists. OAuthError when it lists none of them.

    >>> effective_auth_method(None, True, legacy_authorization_server("https://host"))
    'client_secret_basic'
    """
    if registered_method:
        return registered_method
    if not has_secret:
        return "none"
    supported = server.token_endpoint_auth_methods_supported or _RFC8414_DEFAULT_METHODS
    for method in ("client_secret_basic", "client_secret_post", "none"):
        if method in supported:
            return method
    listed = _one_line(", ".join(supported))
    raise OAuthError(f"{server.issuer} supports no token endpoint auth method this client can use (it lists: {listed})")
