"""JSON Schema validation, compiled once per schema, with one-line messages.

Validators come from ``jsonschema_rs`` (Rust, Draft 2020-12 by default): a
tool's schemas are compiled when it is registered, and each call only runs
the compiled validator. Messages name the field and never dump the schema,
so they are fit to show a model.

>>> v = SchemaValidator({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]})
>>> v.first_error({})
'missing required argument "a"'
>>> v.first_error({"a": 1}) is None
True
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs

__all__ = ["SchemaValidator"]


def _path(parts: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(parts))


class SchemaValidator:
    """A compiled JSON Schema. Raises ValueError at construction for an invalid schema."""

    __slots__ = ("_validator", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        if not isinstance(schema, dict):
            raise ValueError("a JSON Schema must be an object")
        try:
            jsonschema_rs.meta.validate(schema)
            self._validator = jsonschema_rs.validator_for(schema)
        except jsonschema_rs.ValidationError as error:
            raise ValueError(f"invalid JSON Schema: {error.message}") from None
        except Exception as error:  # referencing and regex failures carry their own types
            raise ValueError(f"invalid JSON Schema: {error}") from None
        self.schema = schema

    def is_valid(self, instance: Any) -> bool:
        return bool(self._validator.is_valid(instance))

    def first_error(self, instance: Any, noun: str = "argument") -> str | None:
        """A one-line description of the first violation, or None when valid."""
        if self._validator.is_valid(instance):
            return None
        error = next(iter(self._validator.iter_errors(instance)))
        kind = error.kind
        where = _path(error.instance_path)
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
            field = f"{where}.{kind.property}" if where else kind.property
            return f'missing required {noun} "{field}"'
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
            names = ", ".join(f'"{where}.{u}"' if where else f'"{u}"' for u in kind.unexpected)
            return f"unexpected {noun}{'s' if len(kind.unexpected) > 1 else ''} {names}"
        message = str(error.message)
        if len(message) > 200:
            message = message[:197] + "..."
        return f'{noun} "{where}": {message}' if where else message
