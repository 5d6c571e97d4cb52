"""Typed forms of what a client receives that ``types.py`` has no reader for: prompts and
resource templates as listed (``Prompt`` and ``ResourceTemplate`` there are server-side
registrations, which need a handler and a reader), and prompts/get results.

Each reader raises ValueError for a malformed entry, like the readers in ``types.py``.

>>> prompt_info_from_dict({"name": "greet", "arguments": [{"name": "who", "required": True}]})
PromptInfo(name='greet', title=None, description=None, arguments=[PromptArgument(name='who', description=None, \
required=True, title=None)], meta=None, icons=None)
>>> get_prompt_result_from_dict({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}]})
GetPromptResult(messages=[PromptMessage(role='user', content=TextContent(text='Hi', annotations=None, meta=None))], \
description=None, meta=None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engine.types import (
    Annotations,
    GetPromptResult,
    Icon,
    PromptArgument,
    PromptMessage,
    _annotations_from,
    _describe,
    _icons_from,
    _put_icons,
    content_from_dict,
)

__all__ = [
    "LogMessage",
    "PromptInfo",
    "ResourceTemplateInfo",
    "get_prompt_result_from_dict",
    "prompt_argument_from_dict",
    "prompt_info_from_dict",
    "resource_template_info_from_dict",
]


class LogMessage(dict[str, Any]):
    """notifications/message as ``on_log`` receives it: its params, with typed properties (a
    handler that reads ``params["level"]`` keeps working).

    >>> message = LogMessage({"level": "info", "logger": "db", "data": {"rows": 3}})
    >>> message.level, message.logger, message.data
    ('info', 'db', {'rows': 3})
    """

    __slots__ = ()

    @property
    def level(self) -> str:
        """The syslog level name (``"debug"`` ... ``"emergency"``)."""
        return str(self.get("level", ""))

    @property
    def logger(self) -> str | None:
        """The logger's name, when the server gave one."""
        return _text(self, "logger")

    @property
    def data(self) -> Any:
        """What was logged: any JSON value."""
        return self.get("data")


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _meta(data: Mapping[str, Any]) -> dict[str, Any] | None:
    meta = data.get("_meta")
    return meta if isinstance(meta, dict) else None


@dataclass(slots=True)
class PromptInfo:
    """A prompt as it appears in prompts/list (``Prompt`` is the server's, with its handler)."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = field(default_factory=list)
    meta: dict[str, Any] | None = None
    icons: list[Icon] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The prompts/list entry."""
        out: dict[str, Any] = {"name": self.name}
        for key, value in (("title", self.title), ("description", self.description)):
            if value is not None:
                out[key] = value
        if self.arguments:
            out["arguments"] = [argument.to_dict() for argument in self.arguments]
        if self.icons:
            out["icons"] = [icon.to_dict() for icon in self.icons]
        if self.meta is not None:
            out["_meta"] = self.meta
        return out


@dataclass(slots=True)
class ResourceTemplateInfo:
    """A resource template as it appears in resources/templates/list (``ResourceTemplate`` is the
    server's, with its reader)."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    icons: list[Icon] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The resources/templates/list entry (as ``ResourceTemplate.to_dict`` writes it)."""
        out: dict[str, Any] = {"uriTemplate": self.uri_template, "name": self.name}
        _put_icons(out, self.icons, True)
        return _describe(out, self.title, self.description, self.mime_type, None, self.annotations, self.meta)


def prompt_argument_from_dict(data: Mapping[str, Any]) -> PromptArgument:
    """One entry of a listed prompt's ``arguments``."""
    name = data.get("name")
    if not isinstance(name, str):
        raise ValueError("malformed prompt argument: name must be a string")
    return PromptArgument(name, _text(data, "description"), data.get("required") is True, _text(data, "title"))


def prompt_info_from_dict(data: Mapping[str, Any]) -> PromptInfo:
    """A prompts/list entry."""
    name = data.get("name")
    if not isinstance(name, str):
        raise ValueError("malformed prompt: name must be a string")
    arguments = data.get("arguments")
    if arguments is not None and not (isinstance(arguments, list) and all(isinstance(a, dict) for a in arguments)):
        raise ValueError(f"malformed prompt {name!r}: arguments must be a list of objects")
    return PromptInfo(
        name,
        _text(data, "title"),
        _text(data, "description"),
        [prompt_argument_from_dict(argument) for argument in arguments or ()],
        _meta(data),
        _icons_from(data),
    )


def resource_template_info_from_dict(data: Mapping[str, Any]) -> ResourceTemplateInfo:
    """A resources/templates/list entry (a missing name is taken to be the template, as for resources)."""
    template = data.get("uriTemplate")
    if not isinstance(template, str):
        raise ValueError("malformed resource template: uriTemplate must be a string")
    return ResourceTemplateInfo(
        template,
        _text(data, "name") or template,
        _text(data, "title"),
        _text(data, "description"),
        _text(data, "mimeType"),
        _annotations_from(data),
        _meta(data),
        _icons_from(data),
    )


def get_prompt_result_from_dict(data: Mapping[str, Any]) -> GetPromptResult:
    """A prompts/get result: ``messages`` (role and one content block each), ``description``, ``_meta``."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ValueError("malformed prompts/get result: messages must be a list")
    parsed: list[PromptMessage] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role not in ("user", "assistant") or not isinstance(content, dict):
            raise ValueError("malformed prompts/get result: a message needs a role and a content block")
        parsed.append(PromptMessage(role, content_from_dict(content)))
    return GetPromptResult(parsed, _text(data, "description"), _meta(data))
