"""A deliberate subset of RFC 6570 URI templates: ``{var}`` and ``{+var}``.

``{var}`` matches one path segment (no ``/``); ``{+var}`` may span ``/``. Any
other expression (``{?q}``, ``{#f}``, ``{a,b}``, ``{var:3}``, ...) is refused in
the constructor rather than silently mis-matched.

>>> t = UriTemplate("file:///{+path}")
>>> t.match("file:///src/app.py")
{'path': 'src/app.py'}
>>> UriTemplate("users/{id}/posts").expand({"id": "42"})
'users/42/posts'
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

__all__ = ["UriTemplate"]

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9_]+$")
# RFC 6570 reserved expansion leaves reserved and unreserved characters alone.
_RESERVED_SAFE = ":/?#[]@!$&'()*+,;=-._~%"


class UriTemplate:
    """A compiled ``{var}`` / ``{+var}`` template that matches and expands URIs."""

    __slots__ = ("_regex", "template", "variables")

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        pattern: list[str] = []
        position = 0
        for expression in _EXPRESSION.finditer(template):
            literal = template[position : expression.start()]
            if "{" in literal or "}" in literal:
                raise ValueError(f"Unbalanced brace in URI template {template!r}")
            pattern.append(re.escape(literal))
            body = expression.group(1)
            reserved = body.startswith("+")
            name = body[1:] if reserved else body
            if not _NAME.match(name):
                raise ValueError(
                    f"Unsupported URI template expression {{{body}}} in {template!r}: "
                    "only {var} and {+var} are supported"
                )
            if name in self.variables:
                raise ValueError(f"Variable {name!r} appears twice in URI template {template!r}")
            self.variables.append(name)
            pattern.append(f"(?P<{name}>.+?)" if reserved else f"(?P<{name}>[^/]+?)")
            position = expression.end()
        tail = template[position:]
        if "{" in tail or "}" in tail:
            raise ValueError(f"Unbalanced brace in URI template {template!r}")
        pattern.append(re.escape(tail))
        self._regex = re.compile("^" + "".join(pattern) + "$", re.DOTALL)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables when ``uri`` matches, else None. ``{var}`` values are percent-decoded."""
        found = self._regex.match(uri)
        if found is None:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}

    def expand(self, variables: dict[str, str]) -> str:
        """Fill in the template; ``{var}`` values are percent-encoded, ``{+var}`` keep reserved characters."""

        def replace(expression: re.Match[str]) -> str:
            body = expression.group(1)
            reserved = body.startswith("+")
            name = body[1:] if reserved else body
            value = str(variables.get(name, ""))
            return quote(value, safe=_RESERVED_SAFE) if reserved else quote(value, safe="-._~")

        return _EXPRESSION.sub(replace, self.template)

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriTemplate) and other.template == self.template

    def __hash__(self) -> int:
        return hash(self.template)
