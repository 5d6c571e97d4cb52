"""Typed handlers for what a server asks of the client: elicitation, sampling and roots.

Rules:

1. A handler receives the request's params as a dict with typed properties (``ElicitRequest``,
   ``SamplingRequest``): a handler written for the dict keeps working unchanged, a typed one
   reads ``request.message``, ``request.requested_schema``, ``request.messages``.
2. An elicitation handler answers with a pydantic model or dataclass instance (accept, its
   fields as the content), ``Accept(value)`` (the same, or a dict of fields; ``Accept()`` for a
   URL elicitation), ``Decline()``, ``Cancel()``, an ``ElicitResult``, or the wire dict, which
   is sent as it is (with the schema's defaults, as before).
3. Typed content goes through the same pydantic adapter a server builds for a typed form
   (``engine/typed.py``'s ``elicitation_form``, one converter for both sides), leaves out fields
   that are None (a form never sends null), gets the schema's defaults, and is checked against
   the requested schema, fields it does not name refused: what does not fit is an
   ``ElicitationAnswerError`` naming the field, raised in place of an answer (the server gets
   it as the error of its request), never sent as content.
4. A sampling handler answers with a ``CreateMessageResult`` (``CreateMessageResult.reply(text,
   model)``) or the wire dict.
5. ``roots`` is a list of ``Root`` (or of ``{"uri", "name"?}`` dicts), or a function, sync or
   async, returning one: it is called at every roots/list, so the roots may change.
6. pydantic is imported only when a model or dataclass answer is converted, the JSON Schema
   validator only when a typed answer is checked: a client that never gets one starts as fast.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ..engine.jsonrpc import INTERNAL_ERROR, McpError
from ..engine.types import (
    CreateMessageRequest,
    CreateMessageResult,
    ElicitResult,
    ModelPreferences,
    Root,
    SamplingMessage,
    Tool,
    ToolChoice,
    create_message_request_from_dict,
)
from .elicitation import complete_answer, fill_defaults

if TYPE_CHECKING:
    from typing import TypeGuard

__all__ = [
    "Accept",
    "Cancel",
    "Decline",
    "ElicitRequest",
    "ElicitationAnswerError",
    "ElicitationHandler",
    "RootsSource",
    "SamplingHandler",
    "SamplingRequest",
    "answer_elicitation",
    "answer_sampling",
    "list_roots",
]

logger = logging.getLogger("mcp_sse_server.client")


class ElicitRequest(dict[str, Any]):
    """elicitation/create as a handler receives it: its params, with typed properties."""

    __slots__ = ()

    @property
    def message(self) -> str:
        """What to ask the user."""
        return str(self.get("message", ""))

    @property
    def mode(self) -> Literal["form", "url"]:
        """``"form"`` (absent on the wire) or ``"url"``."""
        return "url" if self.get("mode") == "url" else "form"

    @property
    def requested_schema(self) -> dict[str, Any] | None:
        """The form's JSON Schema (a flat object of primitives); None in URL mode."""
        schema = self.get("requestedSchema")
        return schema if isinstance(schema, dict) else None

    @property
    def url(self) -> str | None:
        """The URL a URL-mode elicitation asks the user to open (never without their consent)."""
        url = self.get("url")
        return url if isinstance(url, str) else None

    @property
    def elicitation_id(self) -> str | None:
        """A URL-mode elicitation's id, as ``notifications/elicitation/complete`` will name it."""
        value = self.get("elicitationId")
        return value if isinstance(value, str) else None


class SamplingRequest(dict[str, Any]):
    """sampling/createMessage as a handler receives it: its params, with typed properties
    (read on first use; a malformed request is ValueError then)."""

    @cached_property
    def request(self) -> CreateMessageRequest:
        """The whole request, typed."""
        return create_message_request_from_dict(self)

    @property
    def messages(self) -> list[SamplingMessage]:
        return self.request.messages

    @property
    def max_tokens(self) -> int:
        return self.request.max_tokens

    @property
    def system_prompt(self) -> str | None:
        return self.request.system_prompt

    @property
    def temperature(self) -> float | None:
        return self.request.temperature

    @property
    def stop_sequences(self) -> list[str] | None:
        return self.request.stop_sequences

    @property
    def model_preferences(self) -> ModelPreferences | None:
        return self.request.model_preferences

    @property
    def tools(self) -> list[Tool] | None:
        """The tools the model may call (sampling with tools, 2025-11-25)."""
        return self.request.tools

    @property
    def tool_choice(self) -> ToolChoice | None:
        return self.request.tool_choice


@dataclass(frozen=True, slots=True)
class Accept:
    """The user accepted: ``value`` is a pydantic model or dataclass instance, or a dict of
    fields (``Accept()``: nothing to send, as for a URL elicitation)."""

    value: object = None


@dataclass(frozen=True, slots=True)
class Decline:
    """The user said no."""


@dataclass(frozen=True, slots=True)
class Cancel:
    """The user dismissed the question without answering."""


class ElicitationAnswerError(McpError):
    """An elicitation handler's answer that cannot be sent: content that does not fit the
    requested schema, or a value that is no answer (rule 3 of the module)."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


ElicitationHandler: TypeAlias = Callable[[ElicitRequest], Awaitable[object]]
"""Answers elicitation/create; a handler taking and returning a dict is one too."""
SamplingHandler: TypeAlias = Callable[[SamplingRequest], Awaitable[CreateMessageResult | dict[str, Any]]]
"""Answers sampling/createMessage; a handler taking and returning a dict is one too."""
RootsSource: TypeAlias = (
    Sequence[Root | Mapping[str, Any]]
    | Callable[[], Sequence[Root | Mapping[str, Any]] | Awaitable[Sequence[Root | Mapping[str, Any]]]]
)
"""What answers roots/list: the roots, or a function returning them."""


def _is_wire(answer: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(answer, dict)


async def answer_elicitation(handler: ElicitationHandler, params: dict[str, Any], mode: str) -> dict[str, Any]:
    """The elicitation/create result for ``params`` (in ``mode``, already checked) from ``handler``."""
    answer = await handler(ElicitRequest(params))
    if _is_wire(answer):
        return complete_answer(params, mode, answer)
    try:
        return _typed_answer(params, mode, answer)
    except ElicitationAnswerError as error:
        logger.warning("not answering elicitation/create: %s", error.message)
        raise


def _typed_answer(params: dict[str, Any], mode: str, answer: object) -> dict[str, Any]:
    if isinstance(answer, Decline):
        return {"action": "decline"}
    if isinstance(answer, Cancel):
        return {"action": "cancel"}
    if isinstance(answer, ElicitResult):
        if not answer.accepted:
            return answer.to_dict()
        content: object = answer.content
    else:
        content = answer.value if isinstance(answer, Accept) else answer
    if mode == "url":
        if content is not None:
            raise ElicitationAnswerError("a URL elicitation is accepted without content: answer Accept()")
        return {"action": "accept"}
    schema = params.get("requestedSchema")
    fields = fill_defaults(schema, _fields(content))
    if isinstance(schema, dict):
        _check(schema, fields)
    return {"action": "accept", "content": fields}


def _fields(content: object) -> dict[str, Any]:
    """The content of an accepted form: a dict as it is, a model or dataclass through its form's adapter."""
    if content is None:
        return {}
    if isinstance(content, dict):
        return dict(content)
    from ..engine.typed import elicitation_form  # pydantic, only now (rule 6)

    try:
        form = elicitation_form(type(content))
    except TypeError as error:
        raise ElicitationAnswerError(
            f"an elicitation handler answered {type(content).__name__!r}, which is not an answer: return a pydantic "
            f"model or dataclass instance, Accept(...), Decline(), Cancel(), an ElicitResult or a dict ({error})"
        ) from None
    dumped = form.adapter.dump_python(content, mode="json", by_alias=True)
    return {name: value for name, value in dumped.items() if value is not None}


def _check(schema: dict[str, Any], fields: dict[str, Any]) -> None:
    """ElicitationAnswerError unless ``fields`` fit ``schema``, naming no field it does not list."""
    from ..engine.schema import SchemaValidator  # jsonschema_rs: not on a client's import path (rule 6)

    if isinstance(schema.get("properties"), dict) and "additionalProperties" not in schema:
        schema = {**schema, "additionalProperties": False}
    try:
        problem = SchemaValidator(schema).first_error(fields, "field")
    except ValueError as error:
        raise ElicitationAnswerError(f"cannot check the answer against the requested schema: {error}") from None
    if problem is not None:
        raise ElicitationAnswerError(f"the elicitation answer does not fit the requested schema: {problem}")


async def answer_sampling(handler: SamplingHandler, params: dict[str, Any]) -> dict[str, Any]:
    """The sampling/createMessage result for ``params`` from ``handler``."""
    answer: object = await handler(SamplingRequest(params))
    if _is_wire(answer):
        return answer
    if isinstance(answer, CreateMessageResult):
        return answer.to_dict()
    raise McpError(
        INTERNAL_ERROR,
        f"a sampling handler answered {type(answer).__name__!r}: return a CreateMessageResult "
        "(CreateMessageResult.reply(text, model)) or a dict",
    )


async def list_roots(roots: RootsSource) -> dict[str, Any]:
    """The roots/list result: ``roots``, or what calling it returns now."""
    current: Any = roots() if callable(roots) else roots
    if inspect.isawaitable(current):
        current = await current
    try:
        return {"roots": [(root if isinstance(root, Root) else Root.from_dict(root)).to_dict() for root in current]}
    except (TypeError, ValueError, AttributeError) as error:
        raise McpError(INTERNAL_ERROR, f"roots must be a list of Root or of {{'uri', 'name'}} dicts: {error}") from None
