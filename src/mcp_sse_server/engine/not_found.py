"""``NotFound``: how a resource reader, a prompt or a tool says that what it was asked for is not there.

>>> from mcp_sse_server import NotFound
>>> def read_note(id: str) -> str:
...     raise NotFound(f"No note {id}")

Rules, kept here and in the registries that apply them:

1. From a resource reader (fixed or template) it is the revision's resource-not-found error:
   -32002 with ``data.uri`` on the handshake revisions, -32602 on 2026-07-28 (``stateless.py``
   rule 5). A reader that returns None says the same (``resources.py``), so
   ``return notes.get(id)`` is enough.
2. From a prompt it is -32602 (invalid params) naming the prompt: the arguments name nothing.
3. From a tool it is a tool error result (``isError``) carrying the message: the call was well
   formed and the model, which chose the arguments, is the one to read that nothing matched.
4. Anything else that lets it through answers -32002 with the message, as ``McpError`` would.

The message is sent as it is: say what was not found, nothing secret.
"""

from __future__ import annotations

from .jsonrpc import RESOURCE_NOT_FOUND, McpError

__all__ = ["NotFound"]


class NotFound(McpError):
    """Raise from a resource reader, a prompt or a tool to say that what it was asked for does not
    exist (the module's rules say what each answers); ``message`` defaults to one naming it."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(RESOURCE_NOT_FOUND, message or "Not found")
        self.given = bool(message)  # False: the registry names what was asked for
