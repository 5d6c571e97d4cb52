"""ResultLimit: a cap on the size of a tool call's result, as an error or by truncating its text.

>>> from mcp_sse_server import McpServer
>>> server = McpServer("s", middleware=[ResultLimit(64_000, on_oversize="truncate")])

Rules, kept here and nowhere else:

1. The size is that of the ``tools/call`` result serialized as JSON (UTF-8 bytes), as the
   handler made it, before an older revision's shaping (which only removes members).
2. ``on_oversize="error"`` (the default): the result is replaced by a tool error (``isError``)
   saying the result was too large and the limit, so the model may ask for less. Nothing of the
   oversized result is sent.
3. ``on_oversize="truncate"``: the text blocks are cut, from the last one back, each cut one
   ending with ``marker``, until the result fits. A result with ``structuredContent`` (whose
   text mirrors it: cutting one would contradict the other), or one that would not fit even
   with its texts emptied (big images, say), is refused as in rule 2.
4. A task's creation result is small and passes; the task's own result is not checked here.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import orjson

from ..engine.context import RequestContext
from ..engine.middleware import CallNext, Middleware

__all__ = ["DEFAULT_MARKER", "ResultLimit"]

DEFAULT_MARKER: Final = "\n[truncated]"
"""What ends a text block ``ResultLimit`` cut."""


def _size(result: dict[str, Any]) -> int:
    return len(orjson.dumps(result))


class ResultLimit(Middleware):
    """Caps ``tools/call`` results at ``max_bytes`` (the module's rules)."""

    def __init__(
        self,
        max_bytes: int,
        *,
        on_oversize: Literal["error", "truncate"] = "error",
        marker: str = DEFAULT_MARKER,
    ) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        if on_oversize not in ("error", "truncate"):
            raise ValueError('on_oversize must be "error" or "truncate"')
        self.max_bytes = max_bytes
        self.on_oversize = on_oversize
        self.marker = marker

    async def on_call_tool(
        self, context: RequestContext, params: dict[str, Any], call_next: CallNext
    ) -> dict[str, Any]:
        result = await call_next(params)
        size = _size(result)
        if size <= self.max_bytes:
            return result
        if self.on_oversize == "truncate" and "structuredContent" not in result:
            cut = self._truncated(result, size)
            if cut is not None:
                return cut
        return self._refusal(size)

    def _refusal(self, size: int) -> dict[str, Any]:
        text = f"The tool's result was too large ({size} bytes; the limit is {self.max_bytes}): ask for less."
        return {"content": [{"type": "text", "text": text}], "isError": True}

    def _truncated(self, result: dict[str, Any], size: int) -> dict[str, Any] | None:
        """``result`` with its text blocks cut to fit (rule 3); None when it cannot fit."""
        content = result.get("content")
        if not isinstance(content, list):
            return None
        blocks = [dict(block) if isinstance(block, dict) else block for block in content]
        texts = [i for i, block in enumerate(blocks) if isinstance(block, dict) and isinstance(block.get("text"), str)]
        excess = size - self.max_bytes
        for index in reversed(texts):
            if excess <= 0:
                break
            text: str = blocks[index]["text"]
            encoded = _json_length(text)
            cut = _prefix(text, encoded - excess - _json_length(self.marker)) + self.marker
            excess -= encoded - _json_length(cut)  # the result shrinks by what its string's JSON did
            blocks[index]["text"] = cut
        if excess > 0:
            return None
        return {**result, "content": blocks}


def _json_length(text: str) -> int:
    """The bytes ``text`` takes in the serialized result (escapes included, quotes not)."""
    return len(orjson.dumps(text)) - 2


def _prefix(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose JSON form takes at most ``budget`` bytes."""
    low, high = 0, len(text)  # invariant: text[:low] fits
    while low < high:
        middle = (low + high + 1) // 2
        if _json_length(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]
