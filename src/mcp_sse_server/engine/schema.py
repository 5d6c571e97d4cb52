"""JSON Schema validation, compiled once per schema, with one-line messages.

Validators come from ``jsonschema_rs`` (Rust). A schema without ``$schema``
is JSON Schema 2020-12 (MCP's default dialect since revision 2025-11-25);
``$schema`` may name 2020-12, 2019-09, draft-07, draft-06 or draft-04, and
validation follows the named dialect; any other ``$schema`` is a ValueError
naming it (never a network fetch). Local ``$ref`` (``#/$defs/...``) resolves.
Schemas are kept as given: the server lists them verbatim. A tool's schemas
are compiled once, when it is registered on the server (which serves every
session), and each call only runs the compiled validator. Messages name the
field and never dump the schema, so they are fit to show a model.

>>> v = SchemaValidator({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]})
>>> v.first_error({})
'missing required argument "a"'
>>> v.first_error({"a": 1}) is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import jsonschema_rs
import orjson

__all__ = ["DIALECTS", "SchemaValidator", "dialect_of"]

DIALECTS: Final = {
    "json-schema.org/draft/2020-12/schema": "2020-12",
    "json-schema.org/draft/2019-09/schema": "2019-09",
    "json-schema.org/draft-07/schema": "draft-07",
    "json-schema.org/draft-06/schema": "draft-06",
    "json-schema.org/draft-04/schema": "draft-04",
}
"""The supported ``$schema`` URIs (without scheme and trailing ``#``) and their dialects."""

ENUM_LISTED: Final = 20
"""An ``enum`` violation names every allowed value when there are at most this many."""
_ENUM_CHARS: Final = 1000  # ... and they fit in this many characters
_PATH_CHARS: Final = 120  # longest field path shown whole


def _path(parts: Any) -> str:
    """``user.tags[2]``; a very long path (deep nesting) keeps its two ends around an ellipsis."""
    path = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(parts))
    return path if len(path) <= _PATH_CHARS else f"{path[: _PATH_CHARS // 2]}...{path[-_PATH_CHARS // 2 :]}"


def _depth(instance: Any) -> int:
    """How deeply ``instance`` nests arrays and objects (a scalar is 0), without recursing in Python."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(instance, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children)
    return deepest


def _json(value: Any, limit: int) -> str:
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _enum_message(instance: Any, options: Any) -> str | None:
    """'"pdf" is not one of "code", "documents" or "html"', every allowed value named; None when too many."""
    if not isinstance(options, list) or not 0 < len(options) <= ENUM_LISTED:
        return None
    names = [_json(option, 10_000) for option in options]
    if sum(map(len, names)) > _ENUM_CHARS:
        return None
    allowed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f"{_json(instance, 60)} is not one of {allowed}"


def dialect_of(schema: dict[str, Any]) -> str:
    """The dialect ``schema`` declares ("2020-12" without ``$schema``); ValueError when unsupported.

    >>> dialect_of({"type": "object"})
    '2020-12'
    >>> dialect_of({"$schema": "http://json-schema.org/draft-07/schema#"})
    'draft-07'
    """
    uri = schema.get("$schema")
    if uri is None:
        return "2020-12"
    if isinstance(uri, str):
        key = uri.removesuffix("#")
        for scheme in ("https://", "http://"):
            if key.startswith(scheme):
                dialect = DIALECTS.get(key.removeprefix(scheme))
                if dialect is not None:
                    return dialect
    supported = ", ".join(DIALECTS.values())
    raise ValueError(f"unsupported JSON Schema dialect {_json(uri, 200)} in $schema (supported: {supported})")


class SchemaValidator:
    """A compiled JSON Schema. Raises ValueError at construction for an invalid schema."""

    __slots__ = ("_validator", "is_valid", "schema")

    _validator: Any
    schema: dict[str, Any]
    is_valid: Callable[[Any], bool]
    """True when ``instance`` is valid: the compiled validator's own method, no Python frame."""

    def __init__(self, schema: dict[str, Any]) -> None:
        if not isinstance(schema, dict):
            raise ValueError("a JSON Schema must be an object")
        dialect_of(schema)
        try:
            jsonschema_rs.meta.validate(schema)
            self._validator = jsonschema_rs.validator_for(schema)
            self.is_valid = self._validator.is_valid
        except jsonschema_rs.ValidationError as error:
            raise ValueError(f"invalid JSON Schema: {error.message}") from None
        except Exception as error:  # referencing and regex failures carry their own types
            raise ValueError(f"invalid JSON Schema: {error}") from None
        self.schema = schema

    def first_error(self, instance: Any, noun: str = "argument") -> str | None:
        """A one-line description of the first violation, or None when valid."""
        if self.is_valid(instance):
            return None
        try:
            error = next(iter(self._validator.iter_errors(instance)))
        except ValueError:
            # jsonschema_rs cannot turn a value nested deeper than its recursion limit (about 255
            # levels) into an error report; is_valid already said no, so say why in one line
            return f"{noun}s nested too deeply to validate ({_depth(instance)} levels of arrays and objects)"
        except StopIteration:  # is_valid and iter_errors disagree: never seen, but never a crash
            return f"{noun}s do not match the schema"
        kind = error.kind
        where = _path(error.instance_path)
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
            field = f"{where}.{kind.property}" if where else kind.property
            return f'missing required {noun} "{field}"'
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
            names = ", ".join(f'"{where}.{u}"' if where else f'"{u}"' for u in kind.unexpected)
            return f"unexpected {noun}{'s' if len(kind.unexpected) > 1 else ''} {names}"
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.Enum):
            listed = _enum_message(error.instance, kind.options)
            if listed is not None:
                return f'{noun} "{where}": {listed}' if where else listed
        message = str(error.message)
        if len(message) > 200:
            message = message[:197] + "..."
        return f'{noun} "{where}": {message}' if where else message
