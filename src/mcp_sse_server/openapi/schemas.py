"""OpenAPI schemas to JSON Schema 2020-12, the dialect MCP tools declare.

Rules, kept here and nowhere else:

1. ``#/components/schemas/X`` becomes ``#/$defs/X``, and a converted schema carries only the
   definitions it reaches, transitively (a recursive model reaches itself once: the walk keeps a
   set of names done). Any other local ``$ref`` (``#/components/parameters/P``...) is inlined
   where it stands, once per chain: a ref that comes back to itself is an ``OpenApiError``.
2. A ``$ref`` that does not start with ``#`` is external: ``ExternalRef`` names it, and the
   operation that needs it is skipped (``operations.py``), never fetched.
3. Only schema positions are walked: the keys under ``properties``, ``patternProperties`` and
   ``$defs`` are names, not keywords (a property called ``$ref`` stays a property); ``enum``,
   ``const``, ``default`` and ``examples`` are values and are copied untouched.
4. OpenAPI 3.0 into 2020-12: ``nullable: true`` adds ``"null"`` to a string ``type`` (and None
   to an ``enum``), or wraps a schema without one in ``anyOf [schema, {"type": "null"}]``; a
   boolean ``exclusiveMinimum``/``exclusiveMaximum`` takes the number of ``minimum``/``maximum``;
   ``example`` becomes ``examples``. 3.1 type arrays pass through unchanged.
5. ``readOnly`` properties leave input schemas and ``writeOnly`` ones leave output schemas (and
   their ``required`` entries with them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

__all__ = ["Direction", "ExternalRef", "OpenApiError", "SchemaConverter"]

Direction = Literal["input", "output"]

_COMPONENT_PREFIX: Final = "#/components/schemas/"
_NAMED: Final = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_ONE: Final = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
_LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
_DROPPED: Final[dict[Direction, str]] = {"input": "readOnly", "output": "writeOnly"}


class OpenApiError(ValueError):
    """A spec this package cannot serve, and why."""


class ExternalRef(OpenApiError):
    """A ``$ref`` to another document (rule 2): its operation is skipped with a warning."""

    def __init__(self, ref: str) -> None:
        super().__init__(f"external $ref {ref!r} is not supported")
        self.ref = ref


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class SchemaConverter:
    """Converts the schemas of one spec (rule 1-5); definitions are converted once per direction."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self._spec = spec
        self._legacy = str(spec.get("openapi", "3.0")).startswith("3.0")
        components = spec.get("components") or {}
        self._components: Mapping[str, Any] = components.get("schemas") or {}
        self._defs: dict[tuple[Direction, str], tuple[dict[str, Any], frozenset[str]]] = {}
        self._reached: dict[tuple[Direction, str], frozenset[str]] = {}

    def resolve(self, node: Any, _seen: tuple[str, ...] = ()) -> Any:
        """``node`` with a root ``$ref`` (to a parameter, a body, a response...) followed, as given."""
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if not ref.startswith("#"):
                raise ExternalRef(ref)
            if ref in _seen:
                raise OpenApiError(f"$ref {ref!r} refers back to itself")
            _seen = (*_seen, ref)
            node = self._pointer(ref)
        return node

    def _pointer(self, ref: str) -> Any:
        node: Any = self._spec
        for token in ref[2:].split("/") if ref != "#" else ():
            key = _unescape(token)
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise OpenApiError(f"$ref {ref!r} points at nothing in the spec")
        return node

    def convert(self, schema: Any, direction: Direction) -> dict[str, Any]:
        """``schema`` as a standalone 2020-12 schema: with the ``$defs`` it reaches, and a root
        ``$ref`` to a component inlined (so that its ``type`` shows at the root)."""
        names: set[str] = set()
        root = self.resolve_root(schema)
        converted = self._walk(root, direction, names, ())
        if not isinstance(converted, dict):  # a boolean schema
            converted = {} if converted else {"not": {}}
        defs = self._closure(names, direction)
        if defs:
            converted = {**converted, "$defs": {**converted.get("$defs", {}), **defs}}
        return converted

    def resolve_root(self, schema: Any) -> Any:
        """``schema`` with root ``$ref``s followed, keeping nothing of the ref but its target."""
        return self.resolve(schema)

    def _closure(self, names: set[str], direction: Direction) -> dict[str, Any]:
        reached: set[str] = set()
        for name in names:
            reached |= self._reach(name, direction)
        return {name: self._definition(name, direction)[0] for name in sorted(reached)}

    def _reach(self, name: str, direction: Direction) -> frozenset[str]:
        """Every definition ``name`` needs, itself included (once per name and direction)."""
        key = (direction, name)
        found = self._reached.get(key)
        if found is None:
            seen = {name}
            todo = [name]
            while todo:
                for other in self._definition(todo.pop(), direction)[1]:
                    if other not in seen:
                        seen.add(other)
                        todo.append(other)
            found = self._reached[key] = frozenset(seen)
        return found

    def _definition(self, name: str, direction: Direction) -> tuple[dict[str, Any], frozenset[str]]:
        key = (direction, name)
        done = self._defs.get(key)
        if done is None:
            if name not in self._components:
                raise OpenApiError(f"$ref {_COMPONENT_PREFIX + _escape(name)!r} points at nothing in the spec")
            reached: set[str] = set()
            converted = self._walk(self._components[name], direction, reached, ())
            done = (converted if isinstance(converted, dict) else {}, frozenset(reached))
            self._defs[key] = done
        return done

    def _walk(self, node: Any, direction: Direction, names: set[str], chain: tuple[str, ...]) -> Any:
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref.startswith(_COMPONENT_PREFIX):
                name = _unescape(ref[len(_COMPONENT_PREFIX) :])
                if "/" not in ref[len(_COMPONENT_PREFIX) :]:
                    names.add(name)
                    out: dict[str, Any] = {"$ref": "#/$defs/" + _escape(name)}
                    siblings = {k: v for k, v in node.items() if k != "$ref"}
                    if siblings:  # 3.1 allows keywords beside $ref: keep them beside it
                        out.update(self._walk(siblings, direction, names, chain))
                    return out
            if not ref.startswith("#"):
                raise ExternalRef(ref)
            if ref in chain:
                raise OpenApiError(f"$ref {ref!r} refers back to itself")
            return self._walk(self._pointer(ref), direction, names, (*chain, ref))
        out = {}
        dropped = _DROPPED[direction]
        for key, value in node.items():
            if key in _NAMED and isinstance(value, Mapping):
                kept = {}
                for name, sub in value.items():
                    if key == "properties" and isinstance(sub, Mapping) and self.resolve(sub).get(dropped) is True:
                        continue
                    kept[name] = self._walk(sub, direction, names, chain)
                out[key] = kept
            elif key in _ONE:
                out[key] = self._walk(value, direction, names, chain)
            elif key in _LISTS and isinstance(value, list):
                out[key] = [self._walk(sub, direction, names, chain) for sub in value]
            elif key == "example":
                out.setdefault("examples", [value])
            elif key in ("nullable", "discriminator", "xml", "externalDocs"):
                continue
            else:
                out[key] = value
        if "properties" in out and isinstance(out.get("required"), list):
            gone = {name for name in node.get("properties", {}) if name not in out["properties"]}
            out["required"] = [name for name in out["required"] if name not in gone]
            if not out["required"]:
                del out["required"]
        if self._legacy:
            for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
                if isinstance(out.get(bound), bool) and out.pop(bound) and limit in out:
                    out[bound] = out.pop(limit)
        if node.get("nullable") is True:
            out = _nullable(out)
        return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}
