"""The MCP data types a server registers and returns: tools, resources,
prompts, content blocks, results, and the shapes of server-to-client calls.

Each type is a small slotted dataclass with ``to_dict()`` giving its wire
form (camelCase, optional members omitted). Results accept the obvious
shortcuts so handlers stay short:

>>> CallToolResult.text("5").to_dict()
{'content': [{'type': 'text', 'text': '5'}]}
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, TypeAlias, TypedDict, Unpack

from .jsonrpc import dumps

if TYPE_CHECKING:
    from .context import RequestContext

__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "CompleteRequest",
    "CompleteResult",
    "ContentBlock",
    "CreateMessageRequest",
    "CreateMessageResult",
    "ElicitResult",
    "EmbeddedResource",
    "GetPromptResult",
    "Icon",
    "ImageContent",
    "ModelHint",
    "ModelPreferences",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptRef",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceInfo",
    "ResourceLink",
    "ResourceTemplate",
    "ResourceTemplateRef",
    "Root",
    "SamplingMessage",
    "TaskStarts",
    "TaskSupport",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolAnnotations",
    "ToolChoice",
    "ToolResultContent",
    "ToolUseContent",
    "UrlElicitation",
    "create_message_request_from_dict",
    "sampling_message_from_dict",
]

Role: TypeAlias = Literal["user", "assistant"]

TaskSupport: TypeAlias = Literal["forbidden", "optional", "required"]
"""Whether a tool's calls may (``optional``) or must (``required``) run as tasks (``tasks.py``)."""

TaskStarts: TypeAlias = Literal["at_call", "in_handler"]
"""When a task call becomes a task: before its handler runs, or when the handler calls
``context.start_task()`` (after the questions it asks in ``input_required`` rounds)."""


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


@dataclass(slots=True)
class Icon:
    """An icon a client may show for a tool, prompt, resource, template or the server (SEP-973).

    ``src`` is an ``https:`` or ``data:`` URI; ``sizes`` like ``["48x48"]`` or
    ``["any"]``; ``theme`` is ``"light"`` or ``"dark"``. Sent only to sessions
    at revision 2025-11-25 or later.

    >>> Icon("https://example.com/i.png", "image/png", ["48x48"]).to_dict()
    {'src': 'https://example.com/i.png', 'mimeType': 'image/png', 'sizes': ['48x48']}
    """

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"src": self.src}
        _put(out, "mimeType", self.mime_type)
        _put(out, "sizes", self.sizes)
        _put(out, "theme", self.theme)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Icon:
        src = data.get("src")
        if not isinstance(src, str):
            raise ValueError("malformed icon: src must be a string")
        sizes = data.get("sizes")
        theme = data.get("theme")
        return cls(
            src,
            data.get("mimeType") if isinstance(data.get("mimeType"), str) else None,
            list(sizes) if isinstance(sizes, list) else None,
            theme if theme in ("light", "dark") else None,
        )


def _put_icons(out: dict[str, Any], icons: Sequence[Icon] | None, wanted: bool) -> None:
    if wanted and icons:
        out["icons"] = [icon.to_dict() for icon in icons]


def _icons_from(data: Mapping[str, Any]) -> list[Icon] | None:
    raw = data.get("icons")
    if not isinstance(raw, list):
        return None
    return [Icon.from_dict(item) for item in raw if isinstance(item, dict) and isinstance(item.get("src"), str)]


@dataclass(slots=True)
class Annotations:
    """Hints for clients about how to use a content block or resource."""

    audience: list[Role] | None = None
    priority: float | None = None
    last_modified: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "audience", self.audience)
        _put(out, "priority", self.priority)
        _put(out, "lastModified", self.last_modified)
        return out


def _finish(out: dict[str, Any], annotations: Annotations | None, meta: dict[str, Any] | None) -> dict[str, Any]:
    if annotations is not None:
        out["annotations"] = annotations.to_dict()
    if meta is not None:
        out["_meta"] = meta
    return out


def _describe(
    out: dict[str, Any],
    title: str | None,
    description: str | None,
    mime_type: str | None,
    size: int | None,
    annotations: Annotations | None,
    meta: dict[str, Any] | None,
) -> dict[str, Any]:
    """The optional members every resource-like entry shares (links, listings, templates)."""
    _put(out, "title", title)
    _put(out, "description", description)
    _put(out, "mimeType", mime_type)
    _put(out, "size", size)
    return _finish(out, annotations, meta)


# --- content -----------------------------------------------------------------


@dataclass(slots=True)
class TextContent:
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.annotations is None and self.meta is None:
            return {"type": "text", "text": self.text}
        return _finish({"type": "text", "text": self.text}, self.annotations, self.meta)


@dataclass(slots=True)
class _MediaContent:
    """Base64 media; ``from_bytes`` encodes raw bytes."""

    _type: ClassVar[str]
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str) -> Self:
        return cls(base64.b64encode(data).decode("ascii"), mime_type)

    def to_dict(self) -> dict[str, Any]:
        return _finish({"type": self._type, "data": self.data, "mimeType": self.mime_type}, self.annotations, self.meta)


@dataclass(slots=True)
class ImageContent(_MediaContent):
    """An image; ``data`` is base64. Use ``from_bytes`` to encode raw bytes."""

    _type: ClassVar[str] = "image"


@dataclass(slots=True)
class AudioContent(_MediaContent):
    """Audio; ``data`` is base64. Use ``from_bytes`` to encode raw bytes."""

    _type: ClassVar[str] = "audio"


@dataclass(slots=True)
class ResourceLink:
    """A pointer to a resource the client may read, without its contents.

    ``icons`` reach sessions at 2025-11-25 or later only (the server drops them for older ones).
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    icons: list[Icon] | None = None

    def to_dict(self, icons: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        _put_icons(out, self.icons, icons)
        return _describe(out, self.title, self.description, self.mime_type, self.size, self.annotations, self.meta)


@dataclass(slots=True)
class TextResourceContents:
    uri: str
    text: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "text": self.text}
        _put(out, "mimeType", self.mime_type)
        _put(out, "_meta", self.meta)
        return out


@dataclass(slots=True)
class BlobResourceContents:
    """Binary contents; ``blob`` is base64. Use ``from_bytes`` for raw bytes."""

    uri: str
    blob: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None

    @classmethod
    def from_bytes(cls, uri: str, data: bytes, mime_type: str | None = None) -> BlobResourceContents:
        return cls(uri, base64.b64encode(data).decode("ascii"), mime_type)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "blob": self.blob}
        _put(out, "mimeType", self.mime_type)
        _put(out, "_meta", self.meta)
        return out


ResourceContents: TypeAlias = TextResourceContents | BlobResourceContents


@dataclass(slots=True)
class EmbeddedResource:
    """A resource's contents carried inside a tool result or prompt message."""

    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _finish({"type": "resource", "resource": self.resource.to_dict()}, self.annotations, self.meta)


ContentBlock: TypeAlias = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


# --- tools ---------------------------------------------------------------------


@dataclass(slots=True)
class ToolAnnotations:
    """Untrusted hints about a tool's behaviour."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "title", self.title)
        _put(out, "readOnlyHint", self.read_only_hint)
        _put(out, "destructiveHint", self.destructive_hint)
        _put(out, "idempotentHint", self.idempotent_hint)
        _put(out, "openWorldHint", self.open_world_hint)
        return out


@dataclass(slots=True)
class CallToolResult:
    """What a tool call returns.

    >>> CallToolResult.structured({"sum": 5}).to_dict()["structuredContent"]
    {'sum': 5}
    """

    content: list[ContentBlock] = field(default_factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None

    @classmethod
    def text(cls, text: str) -> CallToolResult:
        return cls([TextContent(text)])

    @classmethod
    def structured(cls, data: dict[str, Any], text: str | None = None) -> CallToolResult:
        """Structured content plus its JSON as a text block, for clients that read only text."""
        if text is None:
            text = dumps(data).decode()
        return cls([TextContent(text)], structured_content=data)

    @classmethod
    def error(cls, message: str) -> CallToolResult:
        """A failure the model can read and act on."""
        return cls([TextContent(message)], is_error=True)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": [block.to_dict() for block in self.content]}
        if self.structured_content is not None:
            out["structuredContent"] = self.structured_content
        if self.is_error:
            out["isError"] = True
        if self.meta is not None:
            out["_meta"] = self.meta
        return out


ToolResult: TypeAlias = CallToolResult | str | dict[str, Any]
ToolHandler: TypeAlias = Callable[[dict[str, Any], "RequestContext"], "ToolResult | Awaitable[ToolResult]"]

_EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object"}


@dataclass(slots=True)
class Tool:
    """A tool the model can call.

    ``handler(arguments, context)`` may be sync or async. A sync handler runs
    in a worker thread so it cannot stall other requests; that hop costs about
    70 µs per call. ``run_in_thread=False`` runs a sync handler on the event
    loop instead: only for handlers that return at once (no I/O, no heavy
    work). It returns a ``CallToolResult``, a ``str`` (one text block) or a
    ``dict`` (structured content). Arguments are validated against
    ``input_schema`` before it runs. ``scopes``: what a bearer token needs to
    call it and to see it in tools/list, on a server serving with ``auth=``
    (without authorization there is no token, and they are not checked).
    ``task_support``: whether a 2026-07-28 call that declares the Tasks
    extension runs as a task (``"optional"``, ``"required"``; ``tasks.py``),
    and ``task_starts`` when it becomes one. ``tags``: labels the visibility
    rules match (``visibility.py``), kept on the server, never sent.

    >>> Tool("echo", {"type": "object", "properties": {"s": {"type": "string"}}},
    ...      lambda args, ctx: args["s"], description="Echoes s.")  # doctest: +ELLIPSIS
    Tool(name='echo', ...)
    """

    name: str
    input_schema: dict[str, Any] = field(default_factory=lambda: dict(_EMPTY_OBJECT_SCHEMA))
    handler: ToolHandler | None = None
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    meta: dict[str, Any] | None = None
    run_in_thread: bool = True
    icons: list[Icon] | None = None
    scopes: Collection[str] = ()
    task_support: TaskSupport = "forbidden"
    task_starts: TaskStarts = "at_call"
    tags: Collection[str] = ()  # server-side only, never on the wire: what visibility rules match

    def __post_init__(self) -> None:
        if self.task_support not in ("forbidden", "optional", "required"):
            raise ValueError(f'task_support must be "forbidden", "optional" or "required", not {self.task_support!r}')
        if self.task_starts not in ("at_call", "in_handler"):
            raise ValueError(f'task_starts must be "at_call" or "in_handler", not {self.task_starts!r}')

    def to_dict(self, icons: bool = True) -> dict[str, Any]:
        """The tools/list entry; schemas are passed through verbatim. ``icons=False``: without icons."""
        out: dict[str, Any] = {"name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        out["inputSchema"] = self.input_schema
        _put(out, "outputSchema", self.output_schema)
        if self.annotations is not None:
            out["annotations"] = self.annotations.to_dict()
        _put_icons(out, self.icons, icons)
        _put(out, "_meta", self.meta)
        return out


# --- resources -----------------------------------------------------------------


@dataclass(slots=True)
class ReadResourceResult:
    contents: list[ResourceContents]
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"contents": [c.to_dict() for c in self.contents]}
        _put(out, "_meta", self.meta)
        return out


ResourceReadResult: TypeAlias = ReadResourceResult | Sequence[ResourceContents] | str | bytes
FixedReader: TypeAlias = Callable[[str, "RequestContext"], "ResourceReadResult | Awaitable[ResourceReadResult]"]


@dataclass(slots=True)
class ResourceInfo:
    """A resource as it appears in resources/list."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    icons: list[Icon] | None = None

    def to_dict(self, icons: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri, "name": self.name}
        _put_icons(out, self.icons, icons)
        return _describe(out, self.title, self.description, self.mime_type, self.size, self.annotations, self.meta)


class _FixedDetails(TypedDict, total=False):
    """The keywords ``Resource.text`` and ``Resource.blob`` take besides ``mime_type``: the
    ``Resource`` fields of the same names."""

    title: str | None
    description: str | None
    annotations: Annotations | None
    icons: list[Icon] | None
    scopes: Collection[str]
    tags: Collection[str]


@dataclass(slots=True)
class Resource:
    """A resource at a fixed URI.

    Use ``Resource.text`` or ``Resource.blob`` for fixed contents, or pass a
    ``reader(uri, context)`` that produces contents on each read. ``scopes``:
    what a bearer token needs to read it and see it listed (as ``Tool``'s).

    >>> Resource.text("config://app", "app-config", '{"debug": false}').uri
    'config://app'
    """

    uri: str
    name: str
    reader: FixedReader | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    contents: ResourceContents | None = None
    icons: list[Icon] | None = None
    scopes: Collection[str] = ()
    tags: Collection[str] = ()  # as Tool's

    @classmethod
    def text(
        cls, uri: str, name: str, text: str, *, mime_type: str = "text/plain", **details: Unpack[_FixedDetails]
    ) -> Resource:
        """Fixed text contents; ``size`` is their length in UTF-8 bytes."""
        contents = TextResourceContents(uri, text, mime_type)
        return cls(uri, name, mime_type=mime_type, size=len(text.encode()), contents=contents, **details)

    @classmethod
    def blob(
        cls,
        uri: str,
        name: str,
        data: bytes,
        *,
        mime_type: str = "application/octet-stream",
        **details: Unpack[_FixedDetails],
    ) -> Resource:
        """Fixed binary contents (sent base64-encoded); ``size`` is their length in bytes."""
        contents = BlobResourceContents.from_bytes(uri, data, mime_type)
        return cls(uri, name, mime_type=mime_type, size=len(data), contents=contents, **details)

    def info(self) -> ResourceInfo:
        return ResourceInfo(
            self.uri,
            self.name,
            self.title,
            self.description,
            self.mime_type,
            self.size,
            self.annotations,
            self.meta,
            self.icons,
        )


TemplateReader: TypeAlias = Callable[
    [str, dict[str, str], "RequestContext"], "ResourceReadResult | Awaitable[ResourceReadResult]"
]
TemplateLister: TypeAlias = Callable[[], "Sequence[ResourceInfo] | Awaitable[Sequence[ResourceInfo]]"]
Completer: TypeAlias = Callable[
    ["CompleteRequest", "RequestContext"], "CompleteResult | Sequence[str] | Awaitable[CompleteResult | Sequence[str]]"
]


@dataclass(slots=True)
class ResourceTemplate:
    """A family of resources whose URIs match an RFC 6570 template ({var}, {+var}).

    ``reader(uri, variables, context)`` reads one; ``lister()`` (optional)
    contributes concrete entries to resources/list; ``completer`` (optional)
    completes template variables. ``scopes``: what a bearer token needs to read
    its resources and see it listed (as ``Tool``'s).
    """

    uri_template: str
    name: str
    reader: TemplateReader
    lister: TemplateLister | None = None
    completer: Completer | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    icons: list[Icon] | None = None
    scopes: Collection[str] = ()
    tags: Collection[str] = ()  # as Tool's

    def to_dict(self, icons: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"uriTemplate": self.uri_template, "name": self.name}
        _put_icons(out, self.icons, icons)
        return _describe(out, self.title, self.description, self.mime_type, None, self.annotations, self.meta)


# --- prompts -------------------------------------------------------------------


@dataclass(slots=True)
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        if self.required:
            out["required"] = True
        return out


@dataclass(slots=True)
class PromptMessage:
    role: Role
    content: ContentBlock

    @classmethod
    def user(cls, content: str | ContentBlock) -> PromptMessage:
        return cls("user", TextContent(content) if isinstance(content, str) else content)

    @classmethod
    def assistant(cls, content: str | ContentBlock) -> PromptMessage:
        return cls("assistant", TextContent(content) if isinstance(content, str) else content)

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content.to_dict()}


@dataclass(slots=True)
class GetPromptResult:
    messages: list[PromptMessage]
    description: str | None = None
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "description", self.description)
        out["messages"] = [m.to_dict() for m in self.messages]
        _put(out, "_meta", self.meta)
        return out


PromptResult: TypeAlias = GetPromptResult | Sequence[PromptMessage] | str
PromptHandler: TypeAlias = Callable[[dict[str, str], "RequestContext"], "PromptResult | Awaitable[PromptResult]"]


@dataclass(slots=True)
class Prompt:
    """A prompt template. Required arguments are checked before ``handler`` runs. ``scopes``:
    what a bearer token needs to get it and see it listed (as ``Tool``'s)."""

    name: str
    handler: PromptHandler
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = field(default_factory=list)
    completer: Completer | None = None
    meta: dict[str, Any] | None = None
    icons: list[Icon] | None = None
    scopes: Collection[str] = ()
    tags: Collection[str] = ()  # as Tool's

    def to_dict(self, icons: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        _put(out, "title", self.title)
        _put(out, "description", self.description)
        if self.arguments:
            out["arguments"] = [a.to_dict() for a in self.arguments]
        _put_icons(out, self.icons, icons)
        _put(out, "_meta", self.meta)
        return out


# --- completion ----------------------------------------------------------------


@dataclass(slots=True)
class CompleteRequest:
    """What completion/complete asks for.

    ``ref_type`` is ``"ref/prompt"`` (``ref`` is the prompt name) or
    ``"ref/resource"`` (``ref`` is the template URI).
    """

    ref_type: str
    ref: str
    argument_name: str
    argument_value: str
    context_arguments: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PromptRef:
    """What ``complete`` completes an argument of: the prompt ``name``."""

    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "ref/prompt", "name": self.name}


@dataclass(frozen=True, slots=True)
class ResourceTemplateRef:
    """What ``complete`` completes a variable of: the resource template ``uri_template``."""

    uri_template: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "ref/resource", "uri": self.uri_template}


@dataclass(slots=True)
class CompleteResult:
    """Completion values; more than 100 are cut to 100 with ``has_more`` set."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        values = self.values
        has_more = self.has_more
        total = self.total
        if len(values) > 100:
            total = len(values) if total is None else total
            values = values[:100]
            has_more = True
        out: dict[str, Any] = {"values": list(values)}
        _put(out, "total", total)
        _put(out, "hasMore", has_more)
        return {"completion": out}


# --- server-to-client requests -------------------------------------------------


@dataclass(slots=True)
class ToolUseContent:
    """The model asks to call a tool (sampling with tools, SEP-1577; revision 2025-11-25)."""

    id: str
    name: str
    input: dict[str, Any]
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input}
        _put(out, "_meta", self.meta)
        return out


@dataclass(slots=True)
class ToolResultContent:
    """The result of a ``tool_use``, sent back in a user message (SEP-1577; revision 2025-11-25)."""

    tool_use_id: str
    content: list[ContentBlock] = field(default_factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool | None = None
    meta: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "tool_result",
            "toolUseId": self.tool_use_id,
            "content": [block.to_dict() for block in self.content],
        }
        _put(out, "structuredContent", self.structured_content)
        _put(out, "isError", self.is_error)
        _put(out, "_meta", self.meta)
        return out


SamplingContent: TypeAlias = TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent


@dataclass(slots=True)
class SamplingMessage:
    """One message of a sampling conversation: a content block, or a list of them (2025-11-25)."""

    role: Role
    content: SamplingContent | list[SamplingContent]

    @classmethod
    def user(cls, text: str) -> SamplingMessage:
        return cls("user", TextContent(text))

    @classmethod
    def assistant(cls, text: str) -> SamplingMessage:
        return cls("assistant", TextContent(text))

    @property
    def uses_tools(self) -> bool:
        """True when the message holds ``tool_use`` or ``tool_result`` blocks."""
        blocks = self.content if isinstance(self.content, list) else [self.content]
        return any(isinstance(block, ToolUseContent | ToolResultContent) for block in blocks)

    def to_dict(self) -> dict[str, Any]:
        content = self.content
        if isinstance(content, list):
            return {"role": self.role, "content": [block.to_dict() for block in content]}
        return {"role": self.role, "content": content.to_dict()}


@dataclass(slots=True)
class ModelHint:
    name: str


@dataclass(slots=True)
class ModelPreferences:
    hints: list[ModelHint] = field(default_factory=list)
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.hints:
            out["hints"] = [{"name": h.name} for h in self.hints]
        _put(out, "costPriority", self.cost_priority)
        _put(out, "speedPriority", self.speed_priority)
        _put(out, "intelligencePriority", self.intelligence_priority)
        return out


ToolChoice: TypeAlias = Literal["auto", "required", "none"]


@dataclass(slots=True)
class CreateMessageRequest:
    """Parameters of sampling/createMessage.

    ``tools`` (their name, description and schemas are sent) and ``tool_choice``
    need a session at 2025-11-25 whose client declared ``sampling.tools``
    (SEP-1577); the session refuses to send them otherwise.
    """

    messages: list[SamplingMessage]
    max_tokens: int
    system_prompt: str | None = None
    model_preferences: ModelPreferences | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None

    @property
    def uses_tools(self) -> bool:
        """True when sending this needs the client's ``sampling.tools`` capability."""
        return bool(self.tools) or self.tool_choice is not None or any(m.uses_tools for m in self.messages)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": [m.to_dict() for m in self.messages], "maxTokens": self.max_tokens}
        _put(out, "systemPrompt", self.system_prompt)
        if self.model_preferences is not None:
            out["modelPreferences"] = self.model_preferences.to_dict()
        _put(out, "includeContext", self.include_context)
        _put(out, "temperature", self.temperature)
        _put(out, "stopSequences", self.stop_sequences)
        _put(out, "metadata", self.metadata)
        if self.tools is not None:
            out["tools"] = [tool.to_dict() for tool in self.tools]
        if self.tool_choice is not None:
            out["toolChoice"] = {"mode": self.tool_choice}
        return out


@dataclass(slots=True)
class CreateMessageResult:
    """The client's sampling answer, content as sent (one block, or a list of them at 2025-11-25).

    ``text`` is the text of a text reply, else None; ``tool_uses`` are the
    ``tool_use`` blocks (``stop_reason`` is then ``"toolUse"``).
    """

    role: Role
    content: dict[str, Any] | list[dict[str, Any]]
    model: str
    stop_reason: str | None = None

    @property
    def blocks(self) -> list[dict[str, Any]]:
        """The content as a list of blocks."""
        return self.content if isinstance(self.content, list) else [self.content]

    @property
    def text(self) -> str | None:
        texts = [block.get("text") for block in self.blocks if block.get("type") == "text"]
        strings = [text for text in texts if isinstance(text, str)]
        return "".join(strings) if strings and len(strings) == len(texts) else None

    @property
    def tool_uses(self) -> list[ToolUseContent]:
        return [
            ToolUseContent(block["id"], block["name"], block["input"], block.get("_meta"))
            for block in self.blocks
            if block.get("type") == "tool_use"
        ]

    @classmethod
    def reply(
        cls,
        content: str | SamplingContent | list[SamplingContent],
        model: str,
        *,
        stop_reason: str | None = "endTurn",
    ) -> CreateMessageResult:
        """The assistant's answer: a text, a content block or a list of them (2025-11-25)."""
        blocks: dict[str, Any] | list[dict[str, Any]]
        if isinstance(content, str):
            blocks = TextContent(content).to_dict()
        elif isinstance(content, list):
            blocks = [block.to_dict() for block in content]
        else:
            blocks = content.to_dict()
        return cls("assistant", blocks, model, stop_reason)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content, "model": self.model}
        _put(out, "stopReason", self.stop_reason)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CreateMessageResult:
        content = data.get("content")
        role = data.get("role")
        model = data.get("model")
        blocks_ok = isinstance(content, dict) or (
            isinstance(content, list) and bool(content) and all(isinstance(block, dict) for block in content)
        )
        if not blocks_ok or role not in ("user", "assistant") or not isinstance(model, str):
            raise ValueError("malformed sampling/createMessage result: needs role, content and model")
        assert isinstance(content, dict | list)
        for block in content if isinstance(content, list) else [content]:
            if block.get("type") == "tool_use" and not (
                isinstance(block.get("id"), str)
                and isinstance(block.get("name"), str)
                and isinstance(block.get("input"), dict)
            ):
                raise ValueError("malformed sampling/createMessage result: a tool_use needs id, name and input")
        stop = data.get("stopReason")
        return cls(role, content, model, stop if isinstance(stop, str) else None)


@dataclass(slots=True)
class UrlElicitation:
    """A URL-mode elicitation (SEP-1036, revision 2025-11-25): the user opens ``url`` out of band.

    ``elicitation_id`` is generated (a UUID) when not given.
    """

    message: str
    url: str
    elicitation_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def to_dict(self) -> dict[str, Any]:
        return {"mode": "url", "elicitationId": self.elicitation_id, "url": self.url, "message": self.message}


@dataclass(slots=True)
class ElicitResult:
    """The user's answer to an elicitation: accept (with content), decline or cancel.

    Form content values are strings, numbers, booleans or lists of strings
    (multi-select). For a URL elicitation ``accept`` means the user agreed to
    open the URL; ``elicitation_id`` is then the id it was sent with.
    """

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    elicitation_id: str | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action}
        _put(out, "content", self.content)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ElicitResult:
        action = data.get("action")
        content = data.get("content")
        if action not in ("accept", "decline", "cancel"):
            raise ValueError("malformed elicitation/create result: action must be accept, decline or cancel")
        if content is not None and not isinstance(content, dict):
            raise ValueError("malformed elicitation/create result: content must be an object")
        return cls(action, content)


@dataclass(slots=True)
class Root:
    uri: str
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri}
        if self.name:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Root:
        uri = data.get("uri")
        name = data.get("name")
        if not isinstance(uri, str):
            raise ValueError("malformed root: uri must be a string")
        return cls(uri, name if isinstance(name, str) else None)


# --- reading wire forms (what clients receive) --------------------------------------


def _annotations_from(data: Mapping[str, Any]) -> Annotations | None:
    raw = data.get("annotations")
    if not isinstance(raw, dict):
        return None
    return Annotations(raw.get("audience"), raw.get("priority"), raw.get("lastModified"))


def resource_contents_from_dict(data: Mapping[str, Any]) -> ResourceContents:
    uri = data.get("uri")
    if not isinstance(uri, str):
        raise ValueError("malformed resource contents: uri must be a string")
    if isinstance(data.get("text"), str):
        return TextResourceContents(uri, data["text"], data.get("mimeType"), data.get("_meta"))
    if isinstance(data.get("blob"), str):
        return BlobResourceContents(uri, data["blob"], data.get("mimeType"), data.get("_meta"))
    raise ValueError("malformed resource contents: needs text or blob")


def content_from_dict(data: Mapping[str, Any]) -> ContentBlock:
    """A content block from its wire form; ValueError for an unknown or malformed block."""
    kind = data.get("type")
    annotations = _annotations_from(data)
    meta = data.get("_meta")
    if kind == "text" and isinstance(data.get("text"), str):
        return TextContent(data["text"], annotations, meta)
    if kind in ("image", "audio") and isinstance(data.get("data"), str) and isinstance(data.get("mimeType"), str):
        cls = ImageContent if kind == "image" else AudioContent
        return cls(data["data"], data["mimeType"], annotations, meta)
    if kind == "resource_link" and isinstance(data.get("uri"), str):
        return ResourceLink(
            data["uri"],
            str(data.get("name", "")),
            data.get("title"),
            data.get("description"),
            data.get("mimeType"),
            data.get("size"),
            annotations,
            meta,
            _icons_from(data),
        )
    if kind == "resource" and isinstance(data.get("resource"), dict):
        return EmbeddedResource(resource_contents_from_dict(data["resource"]), annotations, meta)
    raise ValueError(f"malformed or unknown content block of type {kind!r}")


def call_tool_result_from_dict(data: Mapping[str, Any]) -> CallToolResult:
    content = data.get("content")
    if not isinstance(content, list):
        raise ValueError("malformed tools/call result: content must be a list")
    structured = data.get("structuredContent")
    return CallToolResult(
        [content_from_dict(block) for block in content],
        structured if isinstance(structured, dict) else None,
        bool(data.get("isError", False)),
        data.get("_meta"),
    )


def tool_from_dict(data: Mapping[str, Any]) -> Tool:
    """A tool as listed by a server (no handler)."""
    name = data.get("name")
    schema = data.get("inputSchema")
    if not isinstance(name, str) or not isinstance(schema, dict):
        raise ValueError("malformed tool: needs a name and an inputSchema")
    raw = data.get("annotations")
    annotations = None
    if isinstance(raw, dict):
        annotations = ToolAnnotations(
            raw.get("title"),
            raw.get("readOnlyHint"),
            raw.get("destructiveHint"),
            raw.get("idempotentHint"),
            raw.get("openWorldHint"),
        )
    return Tool(
        name,
        schema,
        None,
        data.get("title"),
        data.get("description"),
        data.get("outputSchema"),
        annotations,
        data.get("_meta"),
        icons=_icons_from(data),
        task_support=_task_support_from(data),
    )


def _task_support_from(data: Mapping[str, Any]) -> TaskSupport:
    """A listed tool's ``execution.taskSupport`` (2025-11-25); ``"forbidden"`` when absent or unknown."""
    execution = data.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support if support in ("optional", "required") else "forbidden"


def resource_info_from_dict(data: Mapping[str, Any]) -> ResourceInfo:
    uri, name = data.get("uri"), data.get("name")
    if not isinstance(uri, str):
        raise ValueError("malformed resource: uri must be a string")
    return ResourceInfo(
        uri,
        name if isinstance(name, str) else uri,
        data.get("title"),
        data.get("description"),
        data.get("mimeType"),
        data.get("size"),
        _annotations_from(data),
        data.get("_meta"),
        _icons_from(data),
    )


def read_resource_result_from_dict(data: Mapping[str, Any]) -> ReadResourceResult:
    contents = data.get("contents")
    if not isinstance(contents, list):
        raise ValueError("malformed resources/read result: contents must be a list")
    return ReadResourceResult([resource_contents_from_dict(c) for c in contents], data.get("_meta"))


def complete_result_from_dict(data: Mapping[str, Any]) -> CompleteResult:
    completion = data.get("completion")
    if not isinstance(completion, dict) or not isinstance(completion.get("values"), list):
        raise ValueError("malformed completion/complete result")
    return CompleteResult(list(completion["values"]), completion.get("total"), completion.get("hasMore"))


def _sampling_content_from_dict(data: Any) -> SamplingContent:
    if not isinstance(data, dict):
        raise ValueError("malformed sampling message: a content block must be an object")
    kind = data.get("type")
    if kind == "tool_use":
        if not (isinstance(data.get("id"), str) and isinstance(data.get("name"), str)):
            raise ValueError("malformed sampling message: a tool_use needs id, name and input")
        given = data.get("input")
        return ToolUseContent(data["id"], data["name"], given if isinstance(given, dict) else {}, data.get("_meta"))
    if kind == "tool_result":
        blocks = data.get("content")
        if not isinstance(data.get("toolUseId"), str) or not isinstance(blocks, list):
            raise ValueError("malformed sampling message: a tool_result needs toolUseId and content")
        structured = data.get("structuredContent")
        return ToolResultContent(
            data["toolUseId"],
            [content_from_dict(block) for block in blocks],
            structured if isinstance(structured, dict) else None,
            data.get("isError"),
            data.get("_meta"),
        )
    block = content_from_dict(data)
    if not isinstance(block, TextContent | ImageContent | AudioContent):
        raise ValueError(f"malformed sampling message: a {kind!r} block cannot be sampled")
    return block


def sampling_message_from_dict(data: Mapping[str, Any]) -> SamplingMessage:
    """One message of a sampling/createMessage request; ValueError when malformed."""
    role = data.get("role")
    if role not in ("user", "assistant"):
        raise ValueError("malformed sampling message: role must be user or assistant")
    content = data.get("content")
    if isinstance(content, list):
        return SamplingMessage(role, [_sampling_content_from_dict(block) for block in content])
    return SamplingMessage(role, _sampling_content_from_dict(content))


def _model_preferences_from(data: Any) -> ModelPreferences | None:
    if not isinstance(data, dict):
        return None
    hints = data.get("hints")
    return ModelPreferences(
        [ModelHint(h["name"]) for h in hints if isinstance(h, dict) and isinstance(h.get("name"), str)]
        if isinstance(hints, list)
        else [],
        data.get("costPriority"),
        data.get("speedPriority"),
        data.get("intelligencePriority"),
    )


def create_message_request_from_dict(data: Mapping[str, Any]) -> CreateMessageRequest:
    """The params of sampling/createMessage as the server sent them; ValueError when malformed."""
    messages = data.get("messages")
    max_tokens = data.get("maxTokens")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ValueError("malformed sampling/createMessage request: messages must be a list of objects")
    if type(max_tokens) is not int:
        raise ValueError("malformed sampling/createMessage request: maxTokens must be an integer")
    tools = data.get("tools")
    choice = data.get("toolChoice")
    mode = choice.get("mode") if isinstance(choice, dict) else None
    stops = data.get("stopSequences")
    return CreateMessageRequest(
        [sampling_message_from_dict(message) for message in messages],
        max_tokens,
        data.get("systemPrompt"),
        _model_preferences_from(data.get("modelPreferences")),
        data.get("includeContext"),
        data.get("temperature"),
        [stop for stop in stops if isinstance(stop, str)] if isinstance(stops, list) else None,
        data.get("metadata"),
        [tool_from_dict(tool) for tool in tools if isinstance(tool, dict)] if isinstance(tools, list) else None,
        mode if mode in ("auto", "required", "none") else None,
    )
