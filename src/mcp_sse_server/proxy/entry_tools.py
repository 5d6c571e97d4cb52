"""A gateway entry's ``tools`` key: its backend's tools renamed, redescribed, hidden, and their
arguments renamed, redescribed, defaulted or fixed, on the wire (the backend is not ours to
change: ``engine/transform.py`` is the same for a local ``Tool``).

``{"tools": {"search": {"name": "find", "title": ..., "description": ..., "enabled": true,
"tags": [...], "arguments": {"q": {"name": "query", "description": ..., "default": ...,
"hide": true, "value": ...}}}}, "include_tags": [...], "exclude_tags": [...]}``

Rules:

1. Read once, when the entry is: a key of the wrong type, a hidden argument without ``value``,
   ``value`` on an argument that is not hidden, two tools or two arguments given one front
   name are a ``ConfigError`` naming the key.
2. Lists: a tool with ``"enabled": false`` is left out; the others get their front name, title
   and description; in the input schema a renamed argument keeps its schema under its front
   name (``required`` follows), a hidden one is removed, a default is written into its schema
   and it is no longer required. Tools the key does not name pass unchanged.
3. Calls: a front name is mapped back to the backend's (a backend name that was renamed or
   disabled is unknown, as it is in lists); front arguments are renamed back, a missing one
   with a default gets it, a hidden one gets its ``value`` (what the client sent under a hidden
   argument's name, or under the backend name of a renamed one, is dropped). The backend
   validates what it receives, under its own names.
4. The ``Mcp-Param-*`` headers of a transformed tool are read from its front schema.
5. Tags: a tool's are those its rule gives (MCP carries no tags on the wire). With
   ``include_tags`` only tools holding one of them are served; a tool holding one of
   ``exclude_tags`` is not; either way one not served is unknown, as a disabled one is.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..engine.stateless_meta import MirroredHeader, mirrored_headers

__all__ = ["EntryTools"]

_TOOL_KEYS: Final = frozenset({"name", "title", "description", "enabled", "tags", "arguments"})
_ARGUMENT_KEYS: Final = frozenset({"name", "description", "default", "hide", "value"})
_UNSET: Final[Any] = object()


@dataclass(slots=True)
class _Argument:
    front: str
    description: str | None = None
    default: Any = _UNSET
    hidden: bool = False
    value: Any = _UNSET


@dataclass(slots=True)
class _Tool:
    front: str
    title: str | None = None
    description: str | None = None
    arguments: dict[str, _Argument] = field(default_factory=dict)  # backend name -> its rule
    headers: tuple[MirroredHeader, ...] = ()  # from the last front schema listed (rule 4)
    to_back: dict[str, str] = field(default_factory=dict)  # front argument name -> backend's
    dropped: frozenset[str] = frozenset()  # names a client may not send: hidden, or renamed away


class EntryTools:
    """The ``tools`` key of one entry, compiled (rules in the module docstring)."""

    __slots__ = ("_back", "_disabled", "_only_named", "_tools")

    def __init__(
        self,
        config: Mapping[str, Any],
        where: tuple[str, ...],
        include_tags: Any = None,
        exclude_tags: Any = None,
    ) -> None:
        from ..client.config import ConfigError

        self._tools: dict[str, _Tool] = {}  # backend name -> its rule
        self._disabled: set[str] = set()  # backend names (disabled, or not served for their tags)
        self._back: dict[str, str] = {}  # front name -> backend name
        # With include_tags, a tool the key does not name holds no tag: it is not served (rule 5).
        self._only_named = include_tags is not None
        include = _tags((*where[:-1], "include_tags"), include_tags)
        exclude = _tags((*where[:-1], "exclude_tags"), exclude_tags)
        for name, rule in config.items():
            at = (*where, name)
            if not isinstance(rule, Mapping) or not set(rule) <= _TOOL_KEYS:
                raise ConfigError(at, f"expected an object with some of {', '.join(sorted(_TOOL_KEYS))}")
            tags = _tags((*at, "tags"), rule.get("tags"))
            if (
                rule.get("enabled", True) is False
                or tags & exclude
                or (include_tags is not None and not tags & include)
            ):
                self._disabled.add(name)
                continue
            front = rule.get("name", name)
            for key in ("name", "title", "description"):
                if key in rule and not isinstance(rule[key], str):
                    raise ConfigError((*at, key), "expected a string")
            if front in self._back:
                raise ConfigError((*at, "name"), f"{front!r} is already another tool's front name")
            self._back[front] = name
            tool = _Tool(front, rule.get("title"), rule.get("description"))
            arguments = rule.get("arguments", {})
            if not isinstance(arguments, Mapping):
                raise ConfigError((*at, "arguments"), "expected an object of argument rules")
            fronts: set[str] = set()
            for argument, spec in arguments.items():
                there = (*at, "arguments", argument)
                if not isinstance(spec, Mapping) or not set(spec) <= _ARGUMENT_KEYS:
                    raise ConfigError(there, f"expected an object with some of {', '.join(sorted(_ARGUMENT_KEYS))}")
                hidden = spec.get("hide", False)
                if not isinstance(hidden, bool):
                    raise ConfigError((*there, "hide"), "expected true or false")
                if hidden != ("value" in spec):
                    raise ConfigError(there, "a hidden argument needs a value, and only a hidden one has one")
                renamed = spec.get("name", argument)
                if not isinstance(renamed, str) or renamed in fronts:
                    raise ConfigError((*there, "name"), f"{renamed!r} is not a free argument name")
                fronts.add(renamed)
                tool.arguments[argument] = _Argument(
                    renamed, spec.get("description"), spec.get("default", _UNSET), hidden, spec.get("value", _UNSET)
                )
            tool.to_back = {rule.front: back for back, rule in tool.arguments.items() if not rule.hidden}
            hidden = {back for back, rule in tool.arguments.items() if rule.hidden}
            tool.dropped = frozenset((hidden | set(tool.arguments)) - set(tool.to_back))
            self._tools[name] = tool

    def listed(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The backend's tools as the front lists them (rule 2)."""
        out = []
        for item in tools:
            name = item.get("name")
            if name in self._disabled:
                continue
            tool = self._tools.get(name) if isinstance(name, str) else None
            if tool is None and self._only_named:
                continue
            if tool is None:
                if isinstance(name, str) and name in self._back and self._back[name] != name:
                    continue  # (a renamed tool's front name taken by another backend tool: the rename wins)
                out.append(item)
                continue
            front = {**item, "name": tool.front}
            if tool.title is not None:
                front["title"] = tool.title
            if tool.description is not None:
                front["description"] = tool.description
            schema = item.get("inputSchema")
            if type(schema) is dict and tool.arguments:
                front["inputSchema"] = schema = _front_schema(schema, tool.arguments)
            try:
                tool.headers = mirrored_headers(schema) if type(schema) is dict else ()
            except ValueError:
                tool.headers = ()
            out.append(front)
        return out

    def back_name(self, front: str) -> str | None:
        """The backend's name of front tool ``front`` (None: no such front tool, rule 3)."""
        back = self._back.get(front)
        if back is not None:
            return back
        if front in self._disabled or front in self._tools or self._only_named:
            return None  # (renamed, disabled or not served for its tags: unknown under that name)
        return front

    def back_arguments(self, front: str, arguments: Any) -> Any:
        """The call's arguments under the backend's names (rule 3)."""
        tool = self._tools.get(self._back.get(front, ""))
        if tool is None or not tool.arguments:
            return arguments
        given = arguments if isinstance(arguments, Mapping) else {}
        to_back, dropped = tool.to_back, tool.dropped
        out = {to_back.get(key, key): value for key, value in given.items() if key not in dropped}
        for back, rule in tool.arguments.items():
            if rule.hidden:
                out[back] = copy.deepcopy(rule.value)
            elif back not in out and rule.default is not _UNSET:
                out[back] = copy.deepcopy(rule.default)
        return out

    def headers(self, front: str) -> tuple[MirroredHeader, ...] | None:
        """A transformed tool's mirrored headers (rule 4); None for a tool passed unchanged."""
        tool = self._tools.get(self._back.get(front, ""))
        return None if tool is None else tool.headers


def _tags(where: tuple[str, ...], given: Any) -> frozenset[str]:
    from ..client.config import ConfigError

    if given is None:
        return frozenset()
    if not isinstance(given, list) or not all(isinstance(tag, str) for tag in given):
        raise ConfigError(where, "expected a list of strings")
    return frozenset(given)


def _front_schema(schema: dict[str, Any], arguments: dict[str, _Argument]) -> dict[str, Any]:
    properties = schema.get("properties")
    if type(properties) is not dict:
        return schema
    required = schema.get("required")
    required = list(required) if isinstance(required, list) else []
    front_properties: dict[str, Any] = {}
    front_required: list[str] = []
    for name, prop in properties.items():
        rule = arguments.get(name)
        if rule is None:
            front_properties[name] = prop
            if name in required:
                front_required.append(name)
            continue
        if rule.hidden:
            continue
        prop = dict(prop) if type(prop) is dict else {}
        if rule.description is not None:
            prop["description"] = rule.description
        if rule.default is not _UNSET:
            prop["default"] = rule.default
        front_properties[rule.front] = prop
        if name in required and rule.default is _UNSET:
            front_required.append(rule.front)
    front = {**schema, "properties": front_properties}
    if front_required:
        front["required"] = front_required
    else:
        front.pop("required", None)
    return front
