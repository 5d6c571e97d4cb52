"""Tool arguments from the command line: ``key=value`` words read as the types a tool's input
schema gives them, and the one-line signatures ``tools`` and ``inspect`` print from the same schema."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from .values import split_pair

if TYPE_CHECKING:
    from ..engine.types import Tool


class ArgumentError(ValueError):
    """A tool argument that cannot be used; the message names it and says why."""


# Which reading of a command-line word wins when a schema allows several types.
_TYPE_ORDER: Final = ("null", "boolean", "integer", "number", "array", "object", "string")
_TRUE: Final = frozenset({"true", "yes", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "off", "0"})
_JSON_INT = r"[+-]?\d+"
_JSON_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_ARTICLES: Final = {
    "null": "null",
    "boolean": "a boolean (true or false)",
    "integer": "an integer",
    "number": "a number",
    "array": "a JSON array such as [1, 2]",
    "object": 'a JSON object such as {"k": 1}',
    "string": "a string",
}


def _resolve_ref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow local ``$ref``s (``#/...``) so the property's own type is found."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#") and seen < 32:
        node: Any = root
        for part in schema["$ref"][1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            return {}
        schema = node
        seen += 1
    return schema


def _schema_types(schema: Mapping[str, Any], root: Mapping[str, Any]) -> set[str] | None:
    """The JSON types a schema admits; None when it does not say."""
    schema = _resolve_ref(schema, root)
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            found: set[str] = set()
            for branch in branches:
                types = _schema_types(branch, root) if isinstance(branch, Mapping) else None
                if types is None:
                    return None
                found |= types
            return found
    branches = schema.get("allOf")
    if isinstance(branches, list):
        for branch in branches:
            types = _schema_types(branch, root) if isinstance(branch, Mapping) else None
            if types is not None:
                return types
    return None


def _json_or_word(raw: str) -> Any:
    """``raw`` parsed as JSON when it is JSON, the word itself otherwise."""
    import json

    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _json_number(raw: str) -> int | float | None:
    """The number ``raw`` spells in JSON: an int for an integer literal (kept exact), a finite float
    otherwise; None for anything else."""
    import math

    if re.fullmatch(_JSON_INT, raw.strip()):
        return int(raw)
    if re.fullmatch(_JSON_NUMBER, raw.strip()):
        value = float(raw)
        return value if math.isfinite(value) else None
    return None


def _read_as(kind: str, raw: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``raw`` reads as JSON type ``kind``."""
    import json

    if kind == "string":
        return True, raw
    if kind == "null":
        return raw == "null", None
    if kind == "boolean":
        word = raw.strip().lower()
        return (True, True) if word in _TRUE else (True, False) if word in _FALSE else (False, None)
    if kind == "integer":
        number = _json_number(raw)
        if isinstance(number, float) and number.is_integer():  # 3.0 and 1e3 are integers in JSON Schema
            number = int(number)
        return (True, number) if isinstance(number, int) else (False, None)
    if kind == "number":
        number = _json_number(raw)
        return number is not None, number
    if kind in ("array", "object"):
        try:
            value = json.loads(raw)
        except ValueError:
            return False, None
        return isinstance(value, list if kind == "array" else dict), value
    return False, None


def convert_value(name: str, raw: str, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """Read a command-line word as the JSON value that ``schema`` asks for.

    >>> convert_value("a", "2", {"type": "number"}), convert_value("f", "yes", {"type": "boolean"})
    (2, True)
    >>> convert_value("s", "007", {"type": "string"})
    '007'
    """
    import json

    root = schema if root is None else root
    schema = _resolve_ref(schema, root)
    enum = schema.get("enum")
    if "const" in schema:
        enum = [schema["const"]]
    if isinstance(enum, list):
        if raw in enum:
            return raw
        value = _json_or_word(raw)
        # Compare types too: in Python 1 == True, but the schema means one or the other.
        if any(member == value and type(member) is type(value) for member in enum):
            return value
        shown = ", ".join(v if isinstance(v, str) else json.dumps(v) for v in enum)
        raise ArgumentError(f"argument {name!r} must be one of: {shown}; got {raw!r}")
    types = _schema_types(schema, root)
    if types is None:
        # No declared type: take JSON when it parses (numbers, booleans, lists), the word otherwise.
        return _json_or_word(raw)
    for kind in _TYPE_ORDER:
        if kind in types:
            ok, value = _read_as(kind, raw)
            if ok:
                return value
    wanted = " or ".join(_ARTICLES.get(kind, kind) for kind in _TYPE_ORDER if kind in types) or "a value"
    raise ArgumentError(f"argument {name!r} must be {wanted}, got {raw!r}")


def _property_schema(
    key: str, schema: Mapping[str, Any], root: Mapping[str, Any], tool: str
) -> Mapping[str, Any] | None:
    """The schema for argument ``key``; None for "anything"; ArgumentError when not accepted."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    if isinstance(properties.get(key), Mapping):
        return properties[key]  # type: ignore[no-any-return]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        for pattern, sub in patterns.items():
            try:
                if re.search(pattern, key) and isinstance(sub, Mapping):
                    return sub
            except re.error:
                continue
    extra = schema.get("additionalProperties")
    # An unknown key is refused unless the schema explicitly allows extras or declares no
    # properties at all: a silently ignored typo is worse than an error.
    if extra is False or (extra is None and properties):
        known = ", ".join(properties) if properties else "no arguments"
        raise ArgumentError(f"unknown argument {key!r} for {tool}; it takes: {known}")
    return extra if isinstance(extra, Mapping) else None


def convert_arguments(
    schema: Mapping[str, Any], assignments: Sequence[str], json_text: str | None = None, *, tool: str = "the tool"
) -> dict[str, Any]:
    """Build a tool's arguments from ``key=value`` words and an optional JSON object.

    Each value is read as the type the input schema gives its key; ``key=value``
    words override keys of the JSON object. ArgumentError names the first
    problem: a word without ``=``, a key given twice, an unknown key, a value of
    the wrong type, or a missing required argument.

    >>> schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    ...           "required": ["a", "b"]}
    >>> convert_arguments(schema, ["a=2", "b=3.5"])
    {'a': 2, 'b': 3.5}
    """
    import json

    arguments: dict[str, Any] = {}
    if json_text is not None:
        try:
            loaded = json.loads(json_text)
        except ValueError as error:
            raise ArgumentError(f"--json is not valid JSON: {error}") from None
        if not isinstance(loaded, dict):
            raise ArgumentError("--json must be a JSON object such as '{\"a\": 1}'")
        for key in loaded:
            _property_schema(key, schema, schema, tool)
        arguments.update(loaded)
    seen: set[str] = set()
    for word in assignments:
        pair = split_pair(word)
        if pair is None:
            raise ArgumentError(f"{word!r} is not key=value")
        key, raw = pair
        if key in seen:
            raise ArgumentError(f"argument {key!r} is given twice")
        seen.add(key)
        sub = _property_schema(key, schema, schema, tool)
        arguments[key] = convert_value(key, raw, sub if sub is not None else {}, schema)
    required = schema.get("required")
    if isinstance(required, list):
        missing = [key for key in required if isinstance(key, str) and key not in arguments]
        if missing:
            properties = schema.get("properties")
            takes = ", ".join(properties) if isinstance(properties, Mapping) else ", ".join(required)
            raise ArgumentError(f"missing required argument {missing[0]!r} for {tool}; it takes: {takes}")
    return arguments


def _parameters(schema: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """``(name, type, required)`` for each property of an object schema; the type as the signatures
    show it: ``integer``, ``string|null``, an enum's values (``code|svg``), ``any``."""
    properties = schema.get("properties")
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    found: list[tuple[str, str, bool]] = []
    if isinstance(properties, Mapping):
        for key, sub in properties.items():
            types = _schema_types(sub, schema) if isinstance(sub, Mapping) else None
            kind = "|".join(t for t in _TYPE_ORDER if t in types) if types else "any"
            if isinstance(sub, Mapping) and isinstance(sub.get("enum"), list):
                kind = "|".join(str(v) for v in sub["enum"])
            found.append((key, kind, key in required))
    return found


def parameter_list(schema: Mapping[str, Any]) -> str:
    """``a: integer, b?: number``: an object schema's properties, optional ones marked ``?``: the one
    notation of the listings (``tools``, ``inspect``), as ``prompts`` marks a prompt's optional arguments."""
    return ", ".join(f"{key}{'' if needed else '?'}: {kind}" for key, kind, needed in _parameters(schema))


def tool_signature(tool: Tool) -> str:
    """``add(a: number, b: number, note?: string)``: the tool's arguments, optional ones marked ``?``."""
    return f"{tool.name}({parameter_list(tool.input_schema)})"


def typed_signature(tool: Tool) -> str:
    """``add(a: integer, b?: number) -> {result: integer}``: :func:`tool_signature`, and what the
    output schema promises, when there is one.

    >>> from mcp_sse_server.engine.types import Tool
    >>> typed_signature(Tool("add", {"type": "object", "properties": {"a": {"type": "integer"},
    ...     "b": {"type": "number"}}, "required": ["a"]}, output_schema={"type": "object",
    ...     "properties": {"result": {"type": "integer"}}, "required": ["result"]}))
    'add(a: integer, b?: number) -> {result: integer}'
    """
    signature = tool_signature(tool)
    output = tool.output_schema
    if not isinstance(output, Mapping):
        return signature
    if isinstance(output.get("properties"), Mapping):
        return f"{signature} -> {{{parameter_list(output)}}}"
    types = _schema_types(output, output)
    return f"{signature} -> {'|'.join(t for t in _TYPE_ORDER if t in types) if types else 'any'}"
