"""One OpenAPI operation, compiled at load: its flat input schema and its request builder.

Rules:

1. Every input is one argument of one flat object: path, query, header and cookie parameters and
   the request body. An argument is named as its parameter; only when two inputs share a name
   does each of them get its location as a suffix (``id__path``, ``id__query``), so names stay
   short in the usual case.
2. A JSON or form body whose schema is an object with ``properties`` is flattened into the
   arguments when none of its property names is a parameter's; otherwise (a clash, an array, a
   union, a scalar, any other media type) the whole body is the one argument ``body``.
3. Credentials are never arguments: a header parameter named ``Authorization`` or ``Cookie``, or
   named by an ``apiKey`` security scheme, is left out (the API's credentials come from the
   client, ``credentials=`` or the forwarding allowlist: ``server.py``).
4. Requests: each path value is percent-encoded as one segment (``/`` and a bare ``.`` or ``..``
   included, so no value changes which path is called); query values follow their ``style``
   (``form`` exploded or comma-joined, ``deepObject`` as ``name[key]``); booleans are sent as
   ``true``/``false``; an argument left out is not sent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

from .schemas import OpenApiError, SchemaConverter

__all__ = ["Input", "Operation", "compile_operation", "credential_headers"]

_LOCATIONS: Final = ("path", "query", "header", "cookie")
_JSON: Final = "application/json"
_FORM: Final = "application/x-www-form-urlencoded"
_MULTIPART: Final = "multipart/form-data"
_ABSENT: Final = object()


@dataclass(frozen=True, slots=True)
class Input:
    """One argument: where it goes (``location``, ``"body"`` for a flattened body property or
    ``"body*"`` for the whole body) and under which wire name."""

    argument: str
    wire: str
    location: str
    required: bool
    schema: dict[str, Any]
    style: str = "form"
    explode: bool = True


@dataclass(slots=True)
class Operation:
    """What a tool, resource or template calls: built by ``compile_operation``."""

    method: str
    path: str
    operation_id: str | None
    summary: str | None
    description: str | None
    tags: tuple[str, ...]
    inputs: list[Input]
    media_type: str | None
    input_schema: dict[str, Any]
    responses: Mapping[str, Any] = field(default_factory=dict)

    @property
    def required_locations(self) -> set[str]:
        """Where the required inputs go (what route rules' ``params`` look at)."""
        return {
            "body" if entry.location.startswith("body") else entry.location for entry in self.inputs if entry.required
        }

    def request(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of ``httpx.AsyncClient.request`` for these (validated) arguments."""
        path = self.path
        query: list[tuple[str, str]] = []
        headers: dict[str, str] = {}
        cookies: list[str] = []
        body: dict[str, Any] = {}
        whole: Any = _ABSENT
        for entry in self.inputs:
            if entry.argument not in arguments:
                continue
            value = arguments[entry.argument]
            if entry.location == "path":
                path = path.replace("{" + entry.wire + "}", _segment(value))
            elif entry.location == "query":
                query.extend(_query(entry, value))
            elif entry.location == "header":
                headers[entry.wire] = _text(value)
            elif entry.location == "cookie":
                cookies.append(f"{entry.wire}={quote(_text(value), safe='')}")
            elif entry.location == "body":
                body[entry.wire] = value
            else:
                whole = value
        if cookies:
            headers["cookie"] = "; ".join(cookies)
        out: dict[str, Any] = {"method": self.method, "url": path, "params": query, "headers": headers}
        if self.body_flattened:
            payload: Any = body
        elif whole is not _ABSENT:
            payload = whole
        else:
            return out
        if self.media_type == _JSON or (self.media_type or "").endswith("+json"):
            out["json"] = payload
        elif self.media_type == _FORM:
            out["data"] = (
                {key: _text(value) for key, value in payload.items()} if isinstance(payload, dict) else payload
            )
        elif self.media_type == _MULTIPART and isinstance(payload, dict):
            out["files"] = {key: (None, _text(value)) for key, value in payload.items()}
        else:
            out["content"] = payload if isinstance(payload, bytes) else _text(payload)
            out["headers"]["content-type"] = self.media_type
        return out

    @property
    def body_flattened(self) -> bool:
        return any(entry.location == "body" for entry in self.inputs)


def _where(entry: Input) -> str:
    """The location an input is sent in, a flattened body property's and the body's as ``body``."""
    return "body" if entry.location.startswith("body") else entry.location


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _segment(value: Any) -> str:
    text = ",".join(_text(item) for item in value) if isinstance(value, list) else _text(value)
    encoded = quote(text, safe="")
    return encoded.replace(".", "%2E") if set(text) <= {"."} else encoded


def _query(entry: Input, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        if entry.style == "deepObject":
            yield from ((f"{entry.wire}[{key}]", _text(item)) for key, item in value.items())
        elif entry.explode:
            yield from ((key, _text(item)) for key, item in value.items())
        else:
            yield entry.wire, ",".join(f"{key},{_text(item)}" for key, item in value.items())
    elif isinstance(value, list):
        if entry.explode:
            yield from ((entry.wire, _text(item)) for item in value)
        else:
            delimiter = {"spaceDelimited": " ", "pipeDelimited": "|"}.get(entry.style, ",")
            yield entry.wire, delimiter.join(_text(item) for item in value)
    elif value is not None:
        yield entry.wire, _text(value)


def credential_headers(spec: Mapping[str, Any]) -> frozenset[str]:
    """Header names that carry credentials in this spec (rule 3), lower-case."""
    names = {"authorization", "cookie", "proxy-authorization"}
    schemes = (spec.get("components") or {}).get("securitySchemes") or {}
    for scheme in schemes.values():
        if isinstance(scheme, Mapping) and scheme.get("type") == "apiKey" and scheme.get("in") == "header":
            names.add(str(scheme.get("name", "")).lower())
    return frozenset(names)


def compile_operation(
    converter: SchemaConverter,
    method: str,
    path: str,
    item: Mapping[str, Any],
    operation: Mapping[str, Any],
    secret_headers: frozenset[str],
) -> Operation:
    """The operation at ``method path`` (``item`` is its path item, for shared parameters).
    ``ExternalRef`` or ``OpenApiError`` when its schemas cannot be served."""
    parameters: dict[tuple[str, str], Mapping[str, Any]] = {}
    for raw in [*item.get("parameters", ()), *operation.get("parameters", ())]:
        parameter = converter.resolve(raw)
        location = parameter.get("in")
        if location not in _LOCATIONS or not isinstance(parameter.get("name"), str):
            raise OpenApiError(f"{method.upper()} {path}: a parameter needs a name and an 'in' of {_LOCATIONS}")
        if location == "header" and parameter["name"].lower() in secret_headers:
            continue
        parameters[(location, parameter["name"])] = parameter  # the operation's own wins (spec rule)
    raw_inputs: list[Input] = []
    for (location, name), parameter in parameters.items():
        schema = parameter.get("schema")
        if schema is None:  # "content" with one media type
            content: Mapping[str, Any] = parameter.get("content") or {}
            schema = next(iter(content.values()), None) or {}
            schema = schema.get("schema", {})
        converted = converter.convert(schema, "input")
        if parameter.get("description") and "description" not in converted:
            converted = {**converted, "description": parameter["description"]}
        style = parameter.get("style", "simple" if location in ("path", "header") else "form")
        explode = parameter.get("explode", style == "form")
        needed = location == "path" or bool(parameter.get("required"))
        raw_inputs.append(Input(name, name, location, needed, converted, style, explode))
    media_type, body_inputs = _body(converter, operation, {entry.wire for entry in raw_inputs})
    inputs = _suffixed([*raw_inputs, *body_inputs])
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for entry in inputs:
        schema = dict(entry.schema)
        defs.update(schema.pop("$defs", {}))
        properties[entry.argument] = schema
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [entry.argument for entry in inputs if entry.required]
    if required:
        input_schema["required"] = required
    if defs:
        input_schema["$defs"] = dict(sorted(defs.items()))
    return Operation(
        method=method.upper(),
        path=path,
        operation_id=operation.get("operationId"),
        summary=operation.get("summary"),
        description=operation.get("description"),
        tags=tuple(operation.get("tags", ())),
        inputs=inputs,
        media_type=media_type,
        input_schema=input_schema,
        responses=operation.get("responses") or {},
    )


def _body(
    converter: SchemaConverter, operation: Mapping[str, Any], parameter_names: set[str]
) -> tuple[str | None, list[Input]]:
    """The body's media type and its inputs (rule 2)."""
    if "requestBody" not in operation:
        return None, []
    body = converter.resolve(operation["requestBody"])
    content: Mapping[str, Any] = body.get("content") or {}
    if not content:
        return None, []
    media_type = next((kind for kind in (_JSON, _FORM, _MULTIPART) if kind in content), None)
    if media_type is None:
        media_type = next((kind for kind in content if kind.endswith("+json")), next(iter(content)))
    schema = converter.convert((content[media_type] or {}).get("schema", {}), "input")
    required = bool(body.get("required"))
    structured = media_type in (_JSON, _FORM, _MULTIPART) or media_type.endswith("+json")
    properties = schema.get("properties")
    flat = (
        structured
        and schema.get("type") == "object"
        and isinstance(properties, dict)
        and not (set(properties) & parameter_names)
        and not any(key in schema for key in ("allOf", "anyOf", "oneOf", "additionalProperties"))
    )
    if not flat:
        if not structured:
            schema = {"type": "string", **({"description": body["description"]} if body.get("description") else {})}
        elif body.get("description") and "description" not in schema:
            schema = {**schema, "description": body["description"]}
        return media_type, [Input("body", "body", "body*", required, schema)]
    assert isinstance(properties, dict)
    needed = set(schema.get("required", ())) if required else set()
    defs = schema.get("$defs", {})
    inputs = []
    for name, sub in properties.items():
        sub_schema = {**sub, "$defs": defs} if defs and isinstance(sub, dict) else sub
        inputs.append(Input(name, name, "body", name in needed, sub_schema))
    return media_type, inputs


def _suffixed(inputs: list[Input]) -> list[Input]:
    """Rule 1: ``name__location`` for every input whose name another input has too."""
    counts: dict[str, int] = {}
    for entry in inputs:
        counts[entry.argument] = counts.get(entry.argument, 0) + 1
    out = []
    for entry in inputs:
        if counts[entry.argument] > 1:
            entry = Input(
                f"{entry.argument}__{_where(entry)}",
                entry.wire,
                entry.location,
                entry.required,
                entry.schema,
                entry.style,
                entry.explode,
            )
        out.append(entry)
    return out
