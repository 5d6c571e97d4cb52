"""Which OAuth scopes a request needs for what it names: a pure function over the server's registries.

Rules (``McpServer.scopes_needed`` applies them; the HTTP endpoint asks before serving):

1. A tool, prompt, resource or resource template registered with ``scopes=``
   needs them; the rest need none.
2. A request needs (``needed``):
   - ``tools/call``: the named tool's scopes;
   - ``prompts/get``: the named prompt's;
   - ``resources/read`` and ``resources/subscribe``: those of what would read
     the URI (the fixed resource at it, else the first template matching it);
   - ``completion/complete``: the referenced prompt's or template's;
   - anything else, or an unknown name: none (the request then fails as it
     would without authorization).
3. A listing shows an entry only to a token holding its scopes: a client is
   not offered what it cannot use.
4. Scopes are checked where a token is: the HTTP endpoint served with ``auth=``.
   Without one (stdio, in-process, HTTP without authorization) nothing is.
5. A scope is an RFC 6749 scope token: one or more printable ASCII characters
   but space, double quote and backslash (``check_scopes``, at registration).

>>> registry = {("tool", "deploy"): ["ops:write"]}
>>> sorted(needed("tools/call", {"name": "deploy"}, lambda kind, key: registry.get((kind, key), ())))
['ops:write']
>>> needed("tools/call", {"name": "echo"}, lambda kind, key: registry.get((kind, key), ()))
frozenset()
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from typing import Any, Final, Literal, TypeAlias

__all__ = ["NO_SCOPES", "Kind", "ScopesOf", "check_scopes", "needed"]

NO_SCOPES: Final[frozenset[str]] = frozenset()

_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")

Kind: TypeAlias = Literal["tool", "prompt", "resource", "template"]
"""What a key names: a tool or prompt by name, a resource by URI (resolved as the server reads
it), a template by its URI template."""

ScopesOf: TypeAlias = Callable[[Kind, str], Collection[str]]
"""The scopes of the registered entry ``kind`` ``key`` (empty when it has none or is unknown)."""


def needed(method: str, params: Any, scopes_of: ScopesOf) -> frozenset[str]:
    """The scopes a request needs (rule 2)."""
    if type(params) is not dict:
        return NO_SCOPES
    if method == "tools/call":
        return _of(scopes_of, "tool", params.get("name"))
    if method == "prompts/get":
        return _of(scopes_of, "prompt", params.get("name"))
    if method in ("resources/read", "resources/subscribe"):
        return _of(scopes_of, "resource", params.get("uri"))
    if method == "completion/complete":
        ref = params.get("ref")
        if type(ref) is dict:
            if ref.get("type") == "ref/prompt":
                return _of(scopes_of, "prompt", ref.get("name"))
            if ref.get("type") == "ref/resource":
                return _of(scopes_of, "template", ref.get("uri"))
    return NO_SCOPES


def _of(scopes_of: ScopesOf, kind: Kind, key: object) -> frozenset[str]:
    if type(key) is not str:
        return NO_SCOPES
    scopes = scopes_of(kind, key)
    return frozenset(scopes) if scopes else NO_SCOPES


def check_scopes(scopes: Iterable[str]) -> frozenset[str]:
    """``scopes`` as a frozenset; ValueError for one that is not a scope token (rule 5).

    >>> check_scopes(["files:read", "files:read"])
    frozenset({'files:read'})
    >>> check_scopes(["files read"])
    Traceback (most recent call last):
        ...
    ValueError: not an OAuth scope (printable ASCII but space, double quote and backslash): 'files read'
    """
    if isinstance(scopes, str):
        raise ValueError(f"scopes are a collection of scope strings, not one string: {scopes!r}")
    checked = frozenset(scopes)
    for scope in checked:
        if not isinstance(scope, str) or _SCOPE_TOKEN.fullmatch(scope) is None:
            raise ValueError(f"not an OAuth scope (printable ASCII but space, double quote and backslash): {scope!r}")
    return checked
