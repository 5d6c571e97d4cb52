"""What a session of an older revision sees: the wire forms of newer features, cut down to what
its revision has (``versions.Revision``'s properties say which revision has what).

Rules:

1. Without ``titles`` (before 2025-06-18): no ``title`` on a tool, prompt, prompt argument,
   resource, resource template or serverInfo.
2. Without ``structured_output`` (before 2025-06-18): no tool ``outputSchema``; a result's
   ``structuredContent`` is left out, and when no text block carries it already, its JSON is
   added as one (the content is what such a client reads); a ``resource_link`` block becomes a
   text block naming the link's URI.
3. Without ``tool_annotations`` (2024-11-05): no tool ``annotations``, no ``completions``
   capability, no progress ``message``; an ``audio`` block becomes a text block saying what was
   left out (its media type).
4. A revision of None is the latest: nothing changes. Nothing registered is changed either:
   a function returns a new object when it changes anything (wire forms are shared by every
   session) and the same object when it does not.
5. ``current(revision)`` is the one check the hot paths make: True when none of this applies.

>>> from mcp_sse_server.engine import versions
>>> tool = {"name": "add", "title": "Add", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
>>> listed(tool, versions.REVISION_2025_03_26)
{'name': 'add', 'inputSchema': {'type': 'object'}}
>>> tool_result({"content": [], "structuredContent": {"result": 5}}, versions.REVISION_2025_03_26)
{'content': [{'type': 'text', 'text': '{"result":5}'}]}
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from .versions import Revision

__all__ = [
    "capabilities",
    "content",
    "current",
    "listed",
    "progress_message",
    "prompt_result",
    "server_info",
    "tool_result",
]

# The members each rule removes from a listed item (a tool, prompt, resource or template).
_TITLE: Final = "title"
_NEWER_TOOL_MEMBERS: Final = ("outputSchema",)
_ANNOTATIONS: Final = "annotations"


def current(revision: Revision | None) -> bool:
    """True when ``revision`` (None: the latest) sees every feature: nothing here applies."""
    return revision is None or revision.structured_output


def listed(item: dict[str, Any], revision: Revision | None) -> dict[str, Any]:
    """A tools/prompts/resources/templates list entry as a session of ``revision`` sees it."""
    if current(revision):
        return item
    assert revision is not None
    drop: list[str] = []
    if not revision.titles:
        drop.append(_TITLE)
    if not revision.structured_output:
        drop.extend(_NEWER_TOOL_MEMBERS)
    if not revision.tool_annotations and "inputSchema" in item:  # a tool's annotations, not a resource's
        drop.append(_ANNOTATIONS)
    arguments = item.get("arguments")
    if revision.titles or not isinstance(arguments, list) or not any(_TITLE in a for a in arguments):
        arguments = None  # (a prompt's arguments carry no title to remove)
    if arguments is None and not any(key in item for key in drop):
        return item
    out = {key: value for key, value in item.items() if key not in drop}
    if arguments is not None:
        out["arguments"] = [{k: v for k, v in argument.items() if k != _TITLE} for argument in arguments]
    return out


def content(blocks: list[dict[str, Any]], revision: Revision | None) -> list[dict[str, Any]]:
    """Content blocks as a session of ``revision`` can read them (rules 2 and 3)."""
    if current(revision):
        return blocks
    assert revision is not None
    if all(_block_ok(block, revision) for block in blocks):
        return blocks
    return [block if _block_ok(block, revision) else _as_text(block) for block in blocks]


def _block_ok(block: dict[str, Any], revision: Revision) -> bool:
    kind = block.get("type")
    if kind == "resource_link":
        return revision.structured_output
    if kind == "audio":
        return revision.tool_annotations
    return True


def _as_text(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "resource_link":
        return {"type": "text", "text": str(block.get("uri", ""))}
    return {
        "type": "text",
        "text": f"[{block.get('mimeType', 'audio')} audio left out: this session's revision has none]",
    }


def tool_result(out: dict[str, Any], revision: Revision | None) -> dict[str, Any]:
    """A tools/call result (wire form) as a session of ``revision`` sees it (rules 2 and 3)."""
    if current(revision):
        return out
    assert revision is not None
    blocks = out.get("content")
    shown = content(blocks, revision) if isinstance(blocks, list) else blocks
    structured = out.get("structuredContent") if not revision.structured_output else None
    if shown is blocks and structured is None:
        return out
    result = {key: value for key, value in out.items() if key != "structuredContent" or revision.structured_output}
    if structured is not None:
        text = orjson.dumps(structured).decode()
        listed_blocks = list(shown) if isinstance(shown, list) else []
        if not any(block.get("type") == "text" for block in listed_blocks):
            listed_blocks.append({"type": "text", "text": text})
        shown = listed_blocks
    result["content"] = shown
    return result


def prompt_result(out: dict[str, Any], revision: Revision | None) -> dict[str, Any]:
    """A prompts/get result as a session of ``revision`` sees it: each message's content (rules 2, 3)."""
    if current(revision):
        return out
    assert revision is not None
    messages = out.get("messages")
    if not isinstance(messages, list):
        return out
    shown = []
    changed = False
    for message in messages:
        block = message.get("content") if isinstance(message, dict) else None
        if isinstance(block, dict) and not _block_ok(block, revision):
            shown.append({**message, "content": _as_text(block)})
            changed = True
        else:
            shown.append(message)
    return {**out, "messages": shown} if changed else out


def capabilities(declared: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """Server capabilities as ``initialize`` answers a session of ``revision`` (rule 3)."""
    if revision.tool_annotations or "completions" not in declared:
        return declared
    return {key: value for key, value in declared.items() if key != "completions"}


def server_info(info: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """serverInfo for a session of ``revision`` (rule 1)."""
    if revision.titles or _TITLE not in info:
        return info
    return {key: value for key, value in info.items() if key != _TITLE}


def progress_message(revision: Revision | None) -> bool:
    """True when notifications/progress to a session of ``revision`` may carry a ``message`` (rule 3)."""
    return revision is None or revision.tool_annotations
