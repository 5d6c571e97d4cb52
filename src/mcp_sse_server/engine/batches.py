"""JSON-RPC batches as revision 2025-03-26 has them (2025-06-18 removed them): the rules every
transport that serves one applies (``transport/http/batch.py``, ``transport/stdio.py``).

Rules:

1. Only a session whose revision has batches (``versions.Revision.batches``) takes one; the
   transport asks ``refusal`` before reading it.
2. An empty batch, one of more than the transport's limit of messages, and one holding
   ``initialize`` (which must not be part of a batch) are refused whole: McpError -32600.
3. Each entry is then read on its own: one that is not a JSON-RPC message gets its own -32600
   error among the answers (id null); the rest are served.
4. The answers are the requests' responses in the batch's order (a cancelled request has none),
   with those errors in their places; a batch without requests has no answer.

>>> read = read_batch([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, 7], 64)
>>> [request.method for _, request in read.requests], read.answers[1]["error"]["code"]
(['ping'], -32600)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from . import versions
from .jsonrpc import INVALID_REQUEST, JsonRpcMessage, JsonRpcRequest, McpError, message_from_dict

__all__ = ["DEFAULT_MAX_BATCH_MESSAGES", "ReadBatch", "read_batch", "refusal"]

DEFAULT_MAX_BATCH_MESSAGES: Final = 64
"""Most messages one batch may hold, unless a transport is told otherwise."""


@dataclass(slots=True)
class ReadBatch:
    """A batch read by ``read_batch``: its requests (with their places), its other messages, and
    the answers so far (None where a request's response goes; rule 3's errors in place)."""

    requests: list[tuple[int, JsonRpcRequest]] = field(default_factory=list)
    others: list[JsonRpcMessage] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)

    def in_order(self) -> list[Any]:
        """The answers in the batch's order, leaving out the places nothing went to (rule 4)."""
        return [answer for answer in self.answers if answer is not None]


def refusal(revision: str | None) -> str | None:
    """Why a session of ``revision`` (None: not initialized) takes no batch (rule 1), or None."""
    served = versions.served(revision or "")
    if served is not None and served.batches:
        return None
    where = f"this session's revision {revision} has none" if revision else "the session is not initialized"
    return f"Invalid request: a batch; {where} (only {versions.REVISION_2025_03_26} sessions take them)"


def read_batch(items: list[Any], max_messages: int) -> ReadBatch:
    """The batch ``items`` read by rules 2 and 3; McpError (-32600) when it is refused whole."""
    if not items:
        raise McpError(INVALID_REQUEST, "Invalid request: an empty batch")
    if len(items) > max_messages:
        raise McpError(INVALID_REQUEST, f"Invalid request: a batch of {len(items)} messages (limit {max_messages})")
    read = ReadBatch(answers=[None] * len(items))
    for index, item in enumerate(items):
        try:
            message = message_from_dict(item)
        except McpError as error:  # (a nested array is no message either)
            read.answers[index] = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": error.code, "message": error.message},
            }
            continue
        if type(message) is JsonRpcRequest:
            if message.method == "initialize":
                raise McpError(INVALID_REQUEST, "Invalid request: initialize must not be part of a batch")
            read.requests.append((index, message))
        else:
            read.others.append(message)
    return read
