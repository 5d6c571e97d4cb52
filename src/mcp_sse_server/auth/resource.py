"""``ResourceServer``: how an MCP endpoint checks bearer tokens, and what it tells clients (pure data).

Rules (the digest's RS-1 to RS-9; RFC 9728, RFC 6750):

1. ``resource`` is the endpoint's canonical URI, from configuration: never from
   a request's ``Host``. It is what clients name in ``resource=`` and what a
   token's audience must hold.
2. The protected-resource metadata (``metadata()``) lists ``resource``, the
   ``authorization_servers`` (issuers exactly as they publish them),
   ``scopes_supported`` (the baseline, never ``offline_access``) and
   ``bearer_methods_supported`` (the header only), and ``resource_name`` when
   given. It is served without authentication at ``metadata_path``:
   ``/.well-known/oauth-protected-resource`` followed by the endpoint's path,
   and at the root form ``/.well-known/oauth-protected-resource`` too unless
   ``root_metadata=False`` (a host with several MCP endpoints).
4. Scopes are RFC 6749 scope tokens (``scopes.check_scopes``): anything else is
   refused when the server is built.
5. ``implies`` maps a broader scope to the narrower ones it grants too
   (transitively): a token's scopes are read with them (``granted``), for the
   endpoint's scopes, each tool's, and what handlers see in ``context.auth``.
3. Every 401 and 403 carries ``WWW-Authenticate: Bearer`` with
   ``resource_metadata`` and ``scope`` (``challenge()``). No token: no
   ``error``; a bad one: ``invalid_token``; too few scopes:
   ``insufficient_scope`` naming what the operation needs, with the scopes the
   token already has that this server knows of (so a client that replaces its
   grant keeps them); a malformed request: ``invalid_request``.
6. DPoP (RFC 9449): ``dpop=DPoP("allowed")`` or ``DPoP("required")`` (``auth/dpop.py``);
   None, the default, is off and imports nothing of it. The metadata then lists
   ``dpop_signing_alg_values_supported`` (and ``dpop_bound_access_tokens_required``
   when required), and a challenge of the ``DPoP`` scheme carries ``algs`` too.

>>> server = ResourceServer("https://mcp.example/mcp", ("https://as.example",), verifier=None, required_scopes={"mcp"})
>>> server.metadata_path
'/.well-known/oauth-protected-resource/mcp'
>>> server.challenge("insufficient_scope", needed={"files:write"}, granted={"mcp", "other"})
'Bearer error="insufficient_scope", scope="files:write mcp", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"'
>>> admin = ResourceServer("https://mcp.example/mcp", ("https://as.example",), verifier=None,
...                        implies={"files:admin": ["files:write"], "files:write": ["files:read"]})
>>> sorted(admin.granted(frozenset({"files:admin"})))
['files:admin', 'files:read', 'files:write']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..engine.scopes import check_scopes
from ..engine.tokens import TokenVerifier

if TYPE_CHECKING:
    from .dpop import DPoP

__all__ = ["METADATA_ROOT", "ResourceServer"]

METADATA_ROOT = "/.well-known/oauth-protected-resource"


class ResourceServer:
    """The bearer-token settings of one MCP endpoint (rules above).

    ``verifier`` checks tokens (``JwtVerifier``, or any ``TokenVerifier``);
    ``required_scopes`` are needed for every request; ``scopes_supported`` are
    what the metadata lists (the required ones by default); ``resource_name``
    is a human-readable name for it; ``root_metadata`` also serves the metadata
    at the root form of its URL; ``implies`` maps a scope to those it grants too;
    ``dpop``: DPoP-bound tokens (rule 6; None: off). ``authorization_routes``: when this server
    is its own authorization server (the OAuth proxy, ``auth/proxy``), what wraps the HTTP app to
    serve its endpoints beside the MCP endpoint, outside the Origin check (they are visited by
    browsers, and defend themselves); None: none.
    """

    __slots__ = (
        "_expanded",
        "_implied",
        "authorization_routes",
        "authorization_servers",
        "dpop",
        "dpop_origin",
        "metadata_path",
        "metadata_paths",
        "metadata_url",
        "required_scopes",
        "resource",
        "resource_name",
        "scopes_supported",
        "verifier",
    )

    def __init__(
        self,
        resource: str,
        authorization_servers: Iterable[str],
        *,
        verifier: TokenVerifier | None,
        required_scopes: Iterable[str] = (),
        scopes_supported: Iterable[str] | None = None,
        resource_name: str | None = None,
        root_metadata: bool = True,
        implies: Mapping[str, Iterable[str]] | None = None,
        dpop: DPoP | None = None,
        authorization_routes: Callable[[Any], Any] | None = None,
    ) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.fragment:
            raise ValueError(f"resource must be the endpoint's absolute URL, without a fragment: {resource!r}")
        servers = tuple(authorization_servers)
        if not servers:
            raise ValueError("a protected resource names at least one authorization server")
        self.resource = resource
        self.authorization_servers = servers
        self.verifier = verifier
        self.required_scopes = check_scopes(required_scopes)
        supported = self.required_scopes if scopes_supported is None else check_scopes(scopes_supported)
        self.scopes_supported = tuple(sorted(supported - {"offline_access"}))
        self.resource_name = resource_name
        self.metadata_path = METADATA_ROOT + parts.path.rstrip("/")
        self.metadata_paths = frozenset({self.metadata_path, METADATA_ROOT} if root_metadata else {self.metadata_path})
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{self.metadata_path}"
        self._implied = _closure(implies or {})
        self._expanded: dict[frozenset[str], frozenset[str]] = {}
        self.dpop = dpop
        self.authorization_routes = authorization_routes
        self.dpop_origin = ""
        if dpop is not None:
            from .dpop import origin_of

            self.dpop_origin = origin_of(resource)  # (check 6: proofs name this origin, never Host's)

    @property
    def expands(self) -> bool:
        """True when ``implies`` grants scopes beyond a token's own."""
        return bool(self._implied)

    def granted(self, scopes: frozenset[str]) -> frozenset[str]:
        """``scopes`` with every scope they imply (rule 5); ``scopes`` itself without ``implies``."""
        if not self._implied or not scopes & self._implied.keys():
            return scopes
        expanded = self._expanded.get(scopes)
        if expanded is None:
            expanded = scopes.union(*(self._implied.get(scope, ()) for scope in scopes))
            if len(self._expanded) >= 1024:  # bounded: distinct grants are few, but tokens are the client's
                self._expanded.clear()
            self._expanded[scopes] = expanded
        return expanded

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 document (rule 2)."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            document["scopes_supported"] = list(self.scopes_supported)
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        if self.dpop is not None:
            document["dpop_signing_alg_values_supported"] = list(self.dpop.algorithms)
            if self.dpop.required:
                document["dpop_bound_access_tokens_required"] = True
        return document

    def challenge(
        self,
        error: str | None = None,
        *,
        needed: Iterable[str] = (),
        granted: Iterable[str] = (),
        description: str | None = None,
        scheme: str = "Bearer",
    ) -> str:
        """The ``WWW-Authenticate`` value of a refusal (rule 3), of ``scheme`` ``Bearer`` or
        ``DPoP`` (rule 6)."""
        scopes = set(needed) | set(self.required_scopes) | (set(granted) & set(self.scopes_supported))
        parts = []
        if error is not None:
            parts.append(f'error="{error}"')
            if description:
                parts.append(f'error_description="{_quotable(description)}"')
        if scheme == "DPoP" and self.dpop is not None:
            parts.append(f'algs="{" ".join(self.dpop.algorithms)}"')
        if scopes:
            parts.append(f'scope="{" ".join(sorted(scopes))}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        return f"{scheme} " + ", ".join(parts)


def _closure(implies: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """Each scope of ``implies`` with every scope it grants, directly or through others."""
    direct = {scope: check_scopes(narrower) for scope, narrower in implies.items()}
    check_scopes(direct)
    closed: dict[str, frozenset[str]] = {}
    for scope in direct:
        seen: set[str] = set()
        todo = list(direct[scope])
        while todo:
            narrower = todo.pop()
            if narrower not in seen:
                seen.add(narrower)
                todo.extend(direct.get(narrower, ()))
        closed[scope] = frozenset(seen)
    return closed


def _quotable(text: str) -> str:
    """RFC 6750's error_description: printable ASCII without '"' or '\\'."""
    return "".join(c for c in text if " " <= c <= "~" and c not in '"\\')
