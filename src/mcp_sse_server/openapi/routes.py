"""Route rules: which operations become tools, resources, resource templates, or nothing.

Rules:

1. ``routes=`` is an ordered list of ``Route``; the first rule that matches an operation decides
   its kind; an operation no rule matches is a tool.
2. A rule matches when every criterion it sets holds: ``methods`` (upper-case, any of them),
   ``path`` (a regular expression searched in the spec's path, ``{param}`` as written), ``tags``
   (the operation has every one) and ``params`` (``"none"``: nothing required; ``"path"``: what is
   required are path parameters, at least one, and no body).
3. A ``resource`` is read at ``api+<namespace>://<path>``; a ``template`` at the same URI with
   its path parameters as ``{variables}`` in path order (the library's URI templates have no
   query expressions, so an operation with required query parameters stays a tool).
4. ``GETS_AS_RESOURCES`` is the preset: GETs without required parameters as resources, GETs
   with only path parameters as templates, everything else tools.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = ["GETS_AS_RESOURCES", "Kind", "Route", "route_kind"]

Kind = Literal["tool", "resource", "template", "exclude"]
_KINDS: Final = ("tool", "resource", "template", "exclude")


@dataclass(frozen=True, slots=True)
class Route:
    """One rule (rule 2): the operations it matches become ``kind``."""

    kind: Kind
    methods: Collection[str] = ()
    path: str | None = None
    tags: Collection[str] = ()
    params: Literal["any", "none", "path"] = "any"
    _pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Route kind must be one of {', '.join(_KINDS)}, not {self.kind!r}")
        if self.params not in ("any", "none", "path"):
            raise ValueError(f'Route params must be "any", "none" or "path", not {self.params!r}')
        object.__setattr__(self, "methods", frozenset(method.upper() for method in self.methods))
        object.__setattr__(self, "_pattern", None if self.path is None else re.compile(self.path))

    def matches(self, method: str, path: str, tags: Collection[str], required: Collection[str]) -> bool:
        """Whether this rule takes the operation; ``required`` holds the locations of its required
        inputs (``"path"``, ``"query"``, ``"body"``...)."""
        if self.methods and method.upper() not in self.methods:
            return False
        if self._pattern is not None and self._pattern.search(path) is None:
            return False
        if not set(self.tags) <= set(tags):
            return False
        if self.params == "none":
            return not required
        if self.params == "path":
            return bool(required) and set(required) == {"path"}
        return True


GETS_AS_RESOURCES: Final = (
    Route("resource", methods=("GET",), params="none"),
    Route("template", methods=("GET",), params="path"),
)
"""The preset of rule 4."""


def route_kind(
    routes: Collection[Route], method: str, path: str, tags: Collection[str], required: Collection[str]
) -> Kind:
    """Rule 1: the kind of the first matching rule, else ``"tool"``."""
    for route in routes:
        if route.matches(method, path, tags, required):
            return route.kind
    return "tool"
