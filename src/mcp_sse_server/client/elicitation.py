"""The client side of elicitation (revision 2025-11-25): which modes a client
declares, the check that a request uses one of them, schema defaults filled
into an accepted form answer, and the error a server raises when a request
needs a URL-mode elicitation first.

>>> schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}
>>> fill_defaults(schema, {})
{'n': 3}
>>> fill_defaults(schema, {"n": 5})
{'n': 5}
"""

from __future__ import annotations

from typing import Any, Final

from ..engine.jsonrpc import INVALID_PARAMS, McpError

__all__ = [
    "URL_ELICITATION_REQUIRED",
    "UrlElicitationRequiredError",
    "check_mode",
    "complete_answer",
    "fill_defaults",
]

# The JSON-RPC error a server answers when a request cannot go on until the
# user completes the URL-mode elicitations listed in ``data.elicitations``.
URL_ELICITATION_REQUIRED: Final = -32042


class UrlElicitationRequiredError(McpError):
    """The server needs the user to complete URL-mode elicitations before it
    can answer (error -32042).

    ``elicitations`` lists them as sent, each ``{"mode": "url",
    "elicitationId", "url", "message"}``: show each URL to the user (never
    open it without their consent), then retry the request, for example once
    ``notifications/elicitation/complete`` names its ``elicitationId``.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(URL_ELICITATION_REQUIRED, message, data)
        items = data.get("elicitations") if isinstance(data, dict) else None
        self.elicitations: list[dict[str, Any]] = [
            item for item in (items if isinstance(items, list) else []) if isinstance(item, dict)
        ]

    def __str__(self) -> str:
        urls = ", ".join(str(item.get("url")) for item in self.elicitations if item.get("url"))
        return f"{self.message} (complete the URL elicitation first: {urls})" if urls else self.message


def check_mode(params: dict[str, Any], declared: tuple[str, ...]) -> str:
    """The request's mode (absent means form); McpError -32602 unless the client declared it."""
    mode = params.get("mode", "form")
    if mode not in declared:
        raise McpError(
            INVALID_PARAMS,
            f"Elicitation mode {mode!r} is not supported by this client (it declared {', '.join(declared)})",
        )
    return str(mode)


def _choices(schema: dict[str, Any]) -> list[Any] | None:
    """The allowed values of a single-select enum shape (untitled, titled, legacy), or None."""
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return [option.get("const") for option in options if isinstance(option, dict) and "const" in option]
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _default_fits(schema: dict[str, Any], value: Any) -> bool:
    """True when ``value`` is a valid answer for the primitive or enum ``schema``."""
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        allowed = _choices(items) if isinstance(items, dict) else None
        return (
            isinstance(value, list)
            and all(isinstance(item, str) for item in value)
            and (allowed is None or all(item in allowed for item in value))
        )
    allowed = _choices(schema)
    if allowed is not None and value not in allowed:
        return False
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return _is_number(value) and float(value).is_integer()
    if kind == "number":
        return _is_number(value)
    if kind == "boolean":
        return isinstance(value, bool)
    return False


def fill_defaults(schema: Any, content: dict[str, Any]) -> dict[str, Any]:
    """``content`` with every field it leaves out (or sets to None) that has a valid
    ``default`` in ``schema`` filled in; a new dict, ``content`` is not changed."""
    filled = dict(content)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return filled
    for name, field in properties.items():
        if filled.get(name) is not None or not isinstance(field, dict) or "default" not in field:
            continue
        if _default_fits(field, field["default"]):
            filled[name] = field["default"]
    return filled


def complete_answer(params: dict[str, Any], mode: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The handler's ``answer`` as sent: an accepted form answer gets the schema's defaults."""
    if mode != "form" or not isinstance(answer, dict) or answer.get("action") != "accept":
        return answer
    content = answer.get("content")
    given = content if isinstance(content, dict) else {}
    return {**answer, "content": fill_defaults(params.get("requestedSchema"), given)}
