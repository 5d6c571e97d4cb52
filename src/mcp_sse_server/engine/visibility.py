"""Which tools, resources, templates and prompts a request sees: tags, and rules that enable or
disable components by name, tag or kind, for the whole server or for one session.

>>> rules = [Rule.of(False, tags={"admin"}), Rule.of(True, names={"audit"})]
>>> shown(rules, "tool", ("reset",), {"admin"}), shown(rules, "tool", ("audit",), {"admin"})
(False, True)

Rules, kept here and in the registries that apply them:

1. A component's ``tags`` (``Tool.tags`` and the like) are server-side labels, never sent.
2. A rule matches the components of its ``kinds`` (``"tool"``, ``"resource"``, ``"template"``,
   ``"prompt"``; none given: every kind) whose name is one of ``names`` or that have one of
   ``tags``; with neither, every component of its kinds. A rule with no names, tags or kinds is
   a ValueError (it would hide or show everything by accident). A resource is named by its URI
   or its name, a template by its URI template or its name.
3. Rules are an ordered list and the last one matching wins; a component no rule matches is
   shown. ``enable(..., only=True)`` also hides every other component of its kinds. The
   server's rules come first, then the session's (or, on 2026-07-28, the principal's).
4. Hidden is unknown: a hidden component is left out of its list and answers a call, read or
   get exactly as an unknown one (-32602 "Unknown tool", the revision's resource-not-found,
   -32602 "Unknown prompt"), so that its existence does not leak. Lists are filtered into a
   copy: the shared cached lists are never changed (``registry.py`` rule 1).
5. Until the first rule, the registries hold no ``ServerVisibility`` and a request pays one
   None check; a server that has had rules (or has served a session record carrying some)
   checks every listing and lookup.
6. A session's rules live in its record (``SessionRecord.visibility``, plain dicts) and change
   through a ``RecordChange``, so a shared store carries them to every worker; a change sends
   that session, and no other, the list-changed notifications of the kinds it covers. The
   server's rules (``McpServer.enable``/``disable``) change every session's lists, and tell all.
7. On 2026-07-28 there is no session: ``context.session.visibility`` keeps rules per principal
   (the verified token's issuer, subject and client), in this process. Without a token a
   change is a RuntimeError: there is no one to keep them for. A change is published on the
   event bus with a digest of the principal (``principal_digest``), and only that
   principal's ``subscriptions/listen`` streams pass it on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, TypeAlias

from .background import in_background
from .records import RecordChange, SessionRecord
from .tokens import AccessToken, current_access_token

__all__ = ["KINDS", "Kind", "Rule", "ServerVisibility", "SessionVisibility", "principal_digest", "shown"]

Kind: TypeAlias = Literal["tool", "resource", "template", "prompt"]
KINDS: Final[frozenset[str]] = frozenset({"tool", "resource", "template", "prompt"})

# The list-changed notification that tells a client a kind's list changed.
_LIST_CHANGED: Final = {
    "tool": "notifications/tools/list_changed",
    "resource": "notifications/resources/list_changed",
    "template": "notifications/resources/list_changed",
    "prompt": "notifications/prompts/list_changed",
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule (rule 2): ``enable`` or hide what it matches; ``only``: hide the rest of its kinds."""

    enable: bool
    names: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    only: bool = False

    @classmethod
    def of(
        cls,
        enable: bool,
        *,
        names: Iterable[str] = (),
        tags: Iterable[str] = (),
        kinds: Iterable[str] = (),
        only: bool = False,
    ) -> Rule:
        """A checked rule; ValueError for one that matches nothing named, an unknown kind or a
        string where a collection of names was meant."""
        for what, given in (("names", names), ("tags", tags), ("kinds", kinds)):
            if isinstance(given, str):
                raise ValueError(f"{what} must be a collection of strings, not the string {given!r}")
        rule = cls(enable, frozenset(names), frozenset(tags), frozenset(kinds), only)
        unknown = rule.kinds - KINDS
        if unknown:
            raise ValueError(f"unknown kinds {sorted(unknown)}; expected some of {sorted(KINDS)}")
        if not (rule.names or rule.tags or rule.kinds):
            raise ValueError("a visibility rule needs names=, tags= or kinds= (it would match everything)")
        if only and not enable:
            raise ValueError("only= is enable's: disable hides what it matches and nothing else")
        return rule

    def to_dict(self) -> dict[str, Any]:
        """The rule as plain data, as a session record keeps it."""
        return {
            "enable": self.enable,
            "names": sorted(self.names),
            "tags": sorted(self.tags),
            "kinds": sorted(self.kinds),
            "only": self.only,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        """A rule from ``to_dict``'s form (what a store gave back)."""
        return cls(
            bool(data.get("enable")),
            frozenset(data.get("names") or ()),
            frozenset(data.get("tags") or ()),
            frozenset(data.get("kinds") or ()),
            bool(data.get("only")),
        )

    def covers(self, kind: str) -> bool:
        """True when the rule may change ``kind``'s list."""
        return not self.kinds or kind in self.kinds


def shown(rules: Sequence[Rule], kind: str, names: Sequence[str], tags: Collection[str]) -> bool:
    """Whether a component of ``kind``, called any of ``names`` and tagged ``tags``, is shown (rule 3)."""
    visible = True
    for rule in rules:
        if rule.kinds and kind not in rule.kinds:
            continue
        if (
            (not rule.names and not rule.tags)
            or not rule.names.isdisjoint(names)
            or (bool(tags) and not rule.tags.isdisjoint(tags))
        ):
            visible = rule.enable
        elif rule.only:
            visible = False
    return visible


def _principal_key(token: AccessToken | None) -> str | None:
    if token is None:
        return None
    issuer, subject, client = token.principal
    return "\x1f".join((issuer, subject or "", client or ""))


def principal_digest(token: AccessToken | None) -> str | None:
    """Who a 2026-07-28 rule change is for, as the event bus carries it (rule 7): a digest of the
    token's principal, so that the bus (Redis, say) never holds who it is; None without a token."""
    key = _principal_key(token)
    return hashlib.sha256(key.encode()).hexdigest()[:32] if key is not None else None


class _Context(Protocol):
    """What the rules of a request are read from (``RequestContext`` is one)."""

    @property
    def session(self) -> Any: ...

    @property
    def auth(self) -> AccessToken | None: ...


class ServerVisibility:
    """The server's rules (rule 3), the principals' on 2026-07-28 (rule 7), and how a request's
    rules are put together. The registries share one, made with the first rule (rule 5)."""

    __slots__ = ("_notify", "principals", "rules")

    def __init__(self, notify: Callable[[str], None]) -> None:
        self.rules: list[Rule] = []
        self.principals: dict[str, list[Rule]] = {}
        self._notify = notify  # tells every session and listener (the registries' change hook)

    def add(self, rule: Rule) -> None:
        """Append a server rule and tell everyone the lists it covers changed."""
        self.rules.append(rule)
        for method in _methods([rule]):
            self._notify(method)

    def reset(self) -> None:
        """Drop the server's rules (sessions' and principals' stay) and tell everyone."""
        dropped, self.rules = self.rules, []
        for method in _methods(dropped):
            self._notify(method)

    def rules_for(self, context: _Context) -> Sequence[Rule]:
        """The rules of ``context``'s request: the server's, then its session's or principal's."""
        session = context.session
        protocol = session.protocol
        if protocol is not None and not protocol.handshake:  # 2026-07-28: by principal
            key = _principal_key(context.auth)
            own = self.principals.get(key) if key is not None else None
            return self.rules + own if own else self.rules
        kept = session.record.visibility
        if not kept:
            return self.rules
        return self.rules + [Rule.from_dict(data) for data in kept]

    def shows(self, context: _Context, kind: str, names: Sequence[str], tags: Collection[str]) -> bool:
        """Whether the request sees a component (rule 3)."""
        rules = self.rules_for(context)
        return not rules or shown(rules, kind, names, tags)


def _methods(rules: Iterable[Rule]) -> list[str]:
    """The list-changed notifications of the kinds ``rules`` cover, each once."""
    kinds: set[str] = set()
    for rule in rules:
        kinds.update(rule.kinds or KINDS)
    return list(dict.fromkeys(_LIST_CHANGED[kind] for kind in sorted(kinds)))


class _Session(Protocol):
    """What a session's rules need of it (``ServerSession`` is one)."""

    record: SessionRecord

    @property
    def server(self) -> Any: ...

    @property
    def protocol(self) -> Any: ...

    def notify_soon(self, method: str, params: dict[str, Any] | None = None) -> None: ...


class SessionVisibility:
    """``context.session.visibility``: this client's own rules (rules 6 and 7).

    ``disable(tags={"admin"})`` hides, ``enable(names={"audit"})`` shows (``only=True``: and hides
    the rest of its kinds), ``reset()`` drops this client's rules; each tells this client, and no
    other, that its lists changed.
    """

    __slots__ = ("_change", "_session")

    def __init__(self, session: _Session, change: Callable[[RecordChange], None]) -> None:
        self._session = session
        self._change = change

    @property
    def rules(self) -> list[Rule]:
        """This client's rules, oldest first."""
        if self._stateless:
            key = self._key()
            return list(self._server().principals.get(key, ()))
        return [Rule.from_dict(data) for data in self._session.record.visibility or ()]

    def disable(self, *, names: Iterable[str] = (), tags: Iterable[str] = (), kinds: Iterable[str] = ()) -> None:
        """Hide what matches from this client (``visibility.py`` rule 2)."""
        self._add(Rule.of(False, names=names, tags=tags, kinds=kinds))

    def enable(
        self, *, names: Iterable[str] = (), tags: Iterable[str] = (), kinds: Iterable[str] = (), only: bool = False
    ) -> None:
        """Show what matches to this client; ``only=True`` also hides the rest of its kinds."""
        self._add(Rule.of(True, names=names, tags=tags, kinds=kinds, only=only))

    def reset(self) -> None:
        """Drop this client's rules (the server's stay)."""
        dropped = self.rules
        if not dropped:
            return
        if self._stateless:
            self._server().principals.pop(self._key(), None)
        else:
            self._change(_SetRules(None))
        self._tell(dropped)

    @property
    def _stateless(self) -> bool:
        protocol = self._session.protocol
        return protocol is not None and not protocol.handshake

    def _key(self) -> str:
        key = _principal_key(current_access_token.get())  # what RequestContext.auth reads
        if key is None:
            raise RuntimeError(
                "visibility rules of a 2026-07-28 request are kept per principal, and this request "
                "has no verified token: serve with auth= to change them"
            )
        return key

    def _server(self) -> ServerVisibility:
        visibility: ServerVisibility = self._session.server.visibility
        return visibility

    def _add(self, rule: Rule) -> None:
        server = self._server()  # made now if it was not: the registries check from here on (rule 5)
        if self._stateless:
            server.principals.setdefault(self._key(), []).append(rule)
        else:
            self._change(_AddRule(rule.to_dict()))
        self._tell([rule])

    def _tell(self, rules: Iterable[Rule]) -> None:
        server = self._session.server
        offered = {
            "notifications/tools/list_changed": bool(server.tool_registry),
            "notifications/resources/list_changed": bool(server.resource_registry),
            "notifications/prompts/list_changed": bool(server.prompt_registry),
        }
        methods = [method for method in _methods(rules) if offered[method]]
        if not self._stateless:
            for method in methods:
                self._session.notify_soon(method)
            return
        # 2026-07-28 sends nothing unasked: the principal's own listeners hear it (lifecycle.py rule 3).
        digest = principal_digest(current_access_token.get())
        bus = server.event_bus
        for method in methods:
            in_background(bus.publish({"kind": method.split("/")[1], "principal": digest}))


# --- the changes to a session record (``RecordChange``): made again on a newer copy if stale ----


@dataclass(frozen=True, slots=True)
class _AddRule:
    rule: dict[str, Any]

    def __call__(self, record: SessionRecord) -> None:
        record.visibility = [*(record.visibility or ()), self.rule]


@dataclass(frozen=True, slots=True)
class _SetRules:
    rules: list[dict[str, Any]] | None

    def __call__(self, record: SessionRecord) -> None:
        record.visibility = self.rules
