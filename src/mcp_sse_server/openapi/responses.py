"""HTTP responses as tool results and resource contents, and the output schema of an operation.

Rules:

1. 3xx, 4xx and 5xx answers are tool errors (``isError``) whose one text block says ``HTTP <status>
   <reason>`` and an excerpt of the body (redirects are not followed: one to another origin would
   carry the API's credentials there): at most ``EXCERPT`` characters, HTML tags and runs of
   whitespace removed; the model reads what it did wrong. A request that fails (refused,
   timed out) is a tool error naming the failure's kind and its message, never a traceback.
2. A 2xx JSON answer is structured content (and its compact JSON as text): an object as it is,
   anything else as ``{"result": value}`` when the tool's output schema wraps it. Other text is
   one text block; ``image/*`` and ``audio/*`` are image and audio blocks; other bytes are an
   embedded blob at the request's URL; an empty body (204) is no content at all.
3. The output schema is the first 2xx response's JSON schema: an object schema as it is (a root
   ``$ref`` inlined, its ``$defs`` beside it), any other schema wrapped as the required property
   ``result`` of an object. No JSON schema, no output schema.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Final

import httpx
import orjson

from ..engine.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    TextContent,
    TextResourceContents,
)
from .schemas import SchemaConverter

__all__ = ["EXCERPT", "error_result", "excerpt", "failure_result", "output_schema", "resource_contents", "tool_result"]

EXCERPT: Final = 2000
"""The most characters of an error body a tool error carries (rule 1)."""

_TAGS: Final = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.IGNORECASE | re.DOTALL)
_SPACE: Final = re.compile(r"\s+")


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """``text`` without HTML tags and runs of whitespace, cut to ``limit`` characters.

    >>> excerpt("<html><body><h1>Not   found</h1></body></html>")
    'Not found'
    """
    cleaned = _SPACE.sub(" ", _TAGS.sub(" ", text)).strip()
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def _is_json(media_type: str) -> bool:
    return media_type == "application/json" or media_type.endswith("+json")


def _media_type(response: httpx.Response) -> str:
    header: str = response.headers.get("content-type", "")
    return header.split(";")[0].strip().lower()


def error_result(response: httpx.Response) -> CallToolResult:
    """Rule 1 for an answer of status 300 or above."""
    head = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
    body = excerpt(response.text) if response.content else ""
    return CallToolResult([TextContent(f"{head}: {body}" if body else head)], is_error=True)


def failure_result(error: httpx.HTTPError) -> CallToolResult:
    """Rule 1 for a request that got no answer."""
    kind = "timed out" if isinstance(error, httpx.TimeoutException) else "failed"
    detail = excerpt(str(error), 300) or type(error).__name__
    return CallToolResult([TextContent(f"The API request {kind}: {detail}")], is_error=True)


def tool_result(response: httpx.Response, wrapped: bool) -> CallToolResult:
    """Rules 1 and 2; ``wrapped``: the tool's output schema puts the value under ``result``."""
    if response.status_code >= 300:
        return error_result(response)
    if not response.content:
        return CallToolResult([])
    media_type = _media_type(response)
    if _is_json(media_type):
        try:
            value = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return CallToolResult([TextContent(response.text)])
        text = orjson.dumps(value).decode()
        if wrapped:
            return CallToolResult([TextContent(text)], structured_content={"result": value})
        return CallToolResult([TextContent(text)], structured_content=value if isinstance(value, dict) else None)
    return CallToolResult([_block(response, media_type)])


def _block(response: httpx.Response, media_type: str) -> ContentBlock:
    if media_type.startswith("text/") or media_type in ("application/xml", "application/yaml"):
        return TextContent(response.text)
    data = base64.b64encode(response.content).decode()
    if media_type.startswith("image/"):
        return ImageContent(data, media_type)
    if media_type.startswith("audio/"):
        return AudioContent(data, media_type)
    return EmbeddedResource(BlobResourceContents(str(response.request.url), data, media_type or None))


def resource_contents(uri: str, response: httpx.Response) -> ResourceContents:
    """A 2xx answer as the contents of the resource at ``uri`` (text for JSON and text, else a blob)."""
    media_type = _media_type(response)
    if _is_json(media_type) or media_type.startswith("text/"):
        return TextResourceContents(uri, response.text, media_type or None)
    return BlobResourceContents(uri, base64.b64encode(response.content).decode(), media_type or None)


def output_schema(converter: SchemaConverter, responses: Mapping[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """Rule 3: the output schema, and whether it wraps the value under ``result``."""
    for status in sorted(responses):
        if not (status.startswith("2") or (status == "default" and not any(s.startswith("2") for s in responses))):
            continue
        response = converter.resolve(responses[status])
        content = (response or {}).get("content") or {}
        media_type = next((kind for kind in content if _is_json(kind)), None)
        if media_type is None or "schema" not in (content[media_type] or {}):
            return None, False
        schema = converter.convert(content[media_type]["schema"], "output")
        if schema.get("type") == "object":
            return schema, False
        defs = schema.pop("$defs", None)
        wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        if defs:
            wrapped["$defs"] = defs
        return wrapped, True
    return None, False
