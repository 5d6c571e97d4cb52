"""``AllowPolicy``: whom a server admits among those its identity provider vouches for.

A valid token says the IdP knows the user; an allow policy says this server wants them. Rules,
one a string, are checked against the verified token's claims; a token is admitted when **any**
rule matches it (a union: ``org:acme`` and ``user:bob`` admit Acme and Bob). No rule admits
everyone the IdP issues tokens to for this resource.

Grammar (``KIND:VALUE``; the kind is case-insensitive, the value is not, except for domains):

- ``user:ID``: the subject (``sub``; Okta's ``uid`` too);
- ``email:ADDRESS``: the ``email`` claim, compared without case;
- ``domain:NAME``: the domain of the ``email`` claim, compared without case;
- ``group:NAME``, ``role:NAME``, ``org:ID``, ``tenant:ID``: membership in the claims the preset
  names for them (a list holding it, a string equal to it, or an object with it as a key);
- ``claim:PATH=VALUE``: any claim by dotted path (``realm_access.roles=admin``), matched the
  same way (numbers and booleans by their JSON text: ``claim:email_verified=true``).

An ``email`` or ``domain`` rule never matches a token whose ``email_verified`` is ``false``.
A kind the preset has no claim for is refused when the policy is built (``claim:`` names it).

>>> policy = AllowPolicy(["domain:Acme.example", "group:ops"], claims={"email": ("email",), "group": ("groups",)})
>>> policy.admits({"sub": "u1", "email": "ann@acme.example"}), policy.admits({"sub": "u2", "groups": ["dev"]})
(True, False)
>>> policy.admits({"sub": "u3", "email": "eve@acme.example", "email_verified": False})
False
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["KINDS", "AllowPolicy", "AllowRule"]

KINDS: Final = ("user", "email", "domain", "group", "role", "org", "tenant", "claim")
"""The rule kinds, in the grammar's order."""


@dataclasses.dataclass(frozen=True, slots=True)
class AllowRule:
    """One rule: its ``kind``, the claim paths it reads, and the ``value`` it wants."""

    kind: str
    paths: tuple[str, ...]
    value: str

    def matches(self, claims: Mapping[str, Any]) -> bool:
        """True when ``claims`` satisfy this rule."""
        if self.kind in ("email", "domain"):
            if claims.get("email_verified") is False:
                return False
            for path in self.paths:
                email = _at(claims, path)
                if not isinstance(email, str):
                    continue
                if self.kind == "email" and email.lower() == self.value:
                    return True
                if self.kind == "domain" and email.rpartition("@")[2].lower() == self.value:
                    return True
            return False
        return any(_holds(_at(claims, path), self.value) for path in self.paths)

    def __str__(self) -> str:
        if self.kind == "claim":
            return f"claim:{self.paths[0]}={self.value}"
        return f"{self.kind}:{self.value}"


class AllowPolicy:
    """Rules in the grammar above; ``claims`` maps each kind to the claim paths that answer it
    (a preset's ``claims``; ``user`` is ``sub`` unless given). ValueError for a rule that does not
    parse or whose kind has no claim here."""

    __slots__ = ("rules",)

    def __init__(self, rules: Iterable[str], *, claims: Mapping[str, tuple[str, ...]] | None = None) -> None:
        paths = {"user": ("sub",), **(claims or {})}
        if "domain" not in paths and "email" in paths:
            paths["domain"] = paths["email"]
        parsed = []
        for rule in rules:
            kind, colon, value = rule.partition(":")
            kind = kind.strip().lower()
            if not colon or kind not in KINDS or not value:
                raise ValueError(f"allow rule {rule!r}: expected KIND:VALUE, KIND one of {', '.join(KINDS)}")
            if kind == "claim":
                path, equals, wanted = value.partition("=")
                if not equals or not path or not wanted:
                    raise ValueError(f"allow rule {rule!r}: expected claim:NAME=VALUE")
                parsed.append(AllowRule("claim", (path,), wanted))
                continue
            if kind not in paths:
                raise ValueError(
                    f"allow rule {rule!r}: this identity provider's tokens have no {kind} claim known here; "
                    "name the claim with claim:NAME=VALUE"
                )
            parsed.append(AllowRule(kind, paths[kind], value.lower() if kind in ("email", "domain") else value))
        self.rules: tuple[AllowRule, ...] = tuple(parsed)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def admits(self, claims: Mapping[str, Any]) -> bool:
        """True when no rule is set or any rule matches ``claims``."""
        return not self.rules or any(rule.matches(claims) for rule in self.rules)

    def __repr__(self) -> str:
        return f"AllowPolicy({[str(rule) for rule in self.rules]!r})"


def _at(claims: Mapping[str, Any], path: str) -> Any:
    """The claim at a dotted ``path`` (a claim whose own name has dots is found whole first)."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _holds(claim: Any, wanted: str) -> bool:
    """``claim`` is, or holds, ``wanted``: a string equal to it, a list with it, a mapping keyed by it."""
    if isinstance(claim, str):
        return claim == wanted
    if isinstance(claim, bool):
        return ("true" if claim else "false") == wanted
    if isinstance(claim, int | float):
        return str(claim) == wanted
    if isinstance(claim, Mapping):
        return wanted in claim
    if isinstance(claim, list | tuple):
        return any(_holds(item, wanted) for item in claim if not isinstance(item, list | tuple | Mapping))
    return False
