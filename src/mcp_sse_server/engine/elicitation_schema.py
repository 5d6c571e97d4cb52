"""Which JSON Schemas a form elicitation may send: flat objects of primitives (SEP-1034, SEP-1330).

Pure checks on plain data, below every module that sends or builds a form:
``ServerSession.elicit`` checks the schema it is given, ``typed.py`` the one
it generates from a model.
"""

from __future__ import annotations

from typing import Any, Final

from . import versions

__all__ = ["check_elicitation_schema"]

_ELICIT_TYPES: Final = {"string", "number", "integer", "boolean"}


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)


def _titled_options(options: Any) -> list[str] | None:
    """The consts of ``[{"const": str, "title": str}, ...]``, else None."""
    if not isinstance(options, list) or not options:
        return None
    consts: list[str] = []
    for option in options:
        if not isinstance(option, dict) or not isinstance(option.get("const"), str):
            return None
        if "title" in option and not isinstance(option["title"], str):
            return None
        consts.append(option["const"])
    return consts


def _check_default(name: str, prop: dict[str, Any], choices: list[str] | None) -> None:
    if "default" not in prop:
        return
    default = prop["default"]
    kind = prop["type"]
    if kind == "array":
        fits = isinstance(default, list) and all(
            isinstance(v, str) and (choices is None or v in choices) for v in default
        )
    elif kind == "string":
        fits = isinstance(default, str) and (choices is None or default in choices)
    elif kind == "boolean":
        fits = isinstance(default, bool)
    elif kind == "integer":
        fits = isinstance(default, int) and not isinstance(default, bool)
    else:
        fits = isinstance(default, int | float) and not isinstance(default, bool)
    if not fits:
        allowed = " (it must be one of the allowed values)" if choices is not None else ""
        raise ValueError(f"requested_schema property {name!r}: default {default!r} does not fit type {kind}{allowed}")


def _check_string(name: str, prop: dict[str, Any]) -> list[str] | None:
    """The allowed values of a string property (None: free text); ValueError for a malformed enum."""
    choices: list[str] | None = None
    if "enum" in prop:
        if not _is_str_list(prop["enum"]):
            raise ValueError(f"requested_schema property {name!r}: enum must be a non-empty list of strings")
        choices = list(prop["enum"])
        names = prop.get("enumNames")
        if names is not None and (not _is_str_list(names) or len(names) != len(choices)):
            raise ValueError(f"requested_schema property {name!r}: enumNames must be strings, one per enum value")
    elif "enumNames" in prop:
        raise ValueError(f"requested_schema property {name!r}: enumNames needs enum")
    if "oneOf" in prop:
        if choices is not None:
            raise ValueError(f"requested_schema property {name!r}: use enum or oneOf, not both")
        choices = _titled_options(prop["oneOf"])
        if choices is None:
            raise ValueError(
                f'requested_schema property {name!r}: oneOf must list {{"const": string, "title": string}} options'
            )
    return choices


def _check_multi_select(name: str, prop: dict[str, Any]) -> list[str]:
    items = prop.get("items")
    choices: list[str] | None = None
    if isinstance(items, dict):
        if items.get("type") == "string" and "enum" in items and "anyOf" not in items:
            choices = list(items["enum"]) if _is_str_list(items["enum"]) else None
        elif "anyOf" in items and "enum" not in items:
            choices = _titled_options(items["anyOf"])
    if choices is None:
        raise ValueError(
            f"requested_schema property {name!r}: an array must be a multi-select enum, with items "
            '{"type": "string", "enum": [...]} or {"anyOf": [{"const": ..., "title": ...}, ...]}'
        )
    for bound in ("minItems", "maxItems"):
        if bound in prop and (type(prop[bound]) is not int or prop[bound] < 0):
            raise ValueError(f"requested_schema property {name!r}: {bound} must be a non-negative integer")
    return choices


def check_elicitation_schema(schema: dict[str, Any], *, multi_select: bool = True) -> None:
    """ValueError unless ``schema`` is a flat object of primitives, as form elicitation allows.

    Every primitive may carry a ``default`` of its type (SEP-1034). Enums take
    the five shapes of SEP-1330: ``enum`` (untitled), ``oneOf`` of
    ``{const, title}`` (titled), ``enum`` + ``enumNames`` (legacy), and, with
    ``multi_select`` (sessions at 2025-11-25), arrays whose ``items`` are
    ``{"type": "string", "enum": [...]}`` or ``{"anyOf": [{const, title}, ...]}``.
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError('requested_schema must be an object schema ("type": "object")')
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise ValueError('requested_schema needs a "properties" object')
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        if kind == "array" and isinstance(prop, dict):
            if not multi_select:
                raise ValueError(
                    f"requested_schema property {name!r}: multi-select arrays need protocol revision "
                    f"{versions.REVISION_2025_11_25}; this session negotiated an older one"
                )
            _check_default(name, prop, _check_multi_select(name, prop))
            continue
        if not isinstance(prop, dict) or kind not in _ELICIT_TYPES:
            raise ValueError(
                f"requested_schema property {name!r} must be a string, number, integer or boolean "
                "(or a multi-select array of strings; nested objects are not allowed)"
            )
        if kind != "string" and ("enum" in prop or "oneOf" in prop):
            raise ValueError(f"requested_schema property {name!r}: enum is only allowed on strings")
        _check_default(name, prop, _check_string(name, prop) if kind == "string" else None)
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in properties for r in required):
        raise ValueError("requested_schema required must list declared properties")
