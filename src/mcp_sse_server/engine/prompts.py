"""PromptRegistry: a server's prompts, and ``prompts/list`` and ``prompts/get``.

>>> prompts = PromptRegistry()
>>> prompts.add(Prompt("greet", lambda arguments, ctx: "Say hello."))
>>> [prompt.name for prompt in prompts], prompts.get("greet") is not None
(['greet'], True)

Rules, kept here and nowhere else (the shared ones are ``registry.py``'s):

1. ``prompts/get``: an unknown prompt is -32602; ``arguments`` must be an object of strings,
   and every required argument must be there (-32602 naming the first missing one), before
   the handler runs.
   A handler that raises ``NotFound`` is -32602 naming the prompt and carrying its message
   (``not_found.py`` rule 2).
2. A handler returns a ``GetPromptResult``, a ``str`` (one user message) or a list of
   messages; a result without a description gets the prompt's.
3. A prompt the request's visibility rules hide is unknown, and left out of ``prompts/list``
   (``visibility.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any, Final

from .context import RequestContext
from .handlers import HandlerRegistry
from .jsonrpc import INVALID_PARAMS, McpError
from .not_found import NotFound
from .registry import (
    OnChange,
    Pager,
    Registry,
    Scoped,
    call,
    drop_link_icons,
    has_link_icons,
    is_async,
    params_str,
    rules_of,
    shown_items,
    visible,
)
from .types import GetPromptResult, Prompt, PromptMessage
from .versions import Revision

__all__ = ["PromptRegistry"]

_LIST_CHANGED: Final = "notifications/prompts/list_changed"


class PromptRegistry(Registry):
    """The prompts of a server (the module's rules): ``add``, ``remove``, ``get``, iteration in
    registration order, and the handlers of ``prompts/list`` and ``prompts/get``."""

    __slots__ = ("_prompts",)

    capability = "prompts"

    def __init__(
        self, pager: Pager | None = None, on_change: OnChange | None = None, scoped: Scoped | None = None
    ) -> None:
        super().__init__(pager, on_change, scoped)
        self._prompts: dict[str, Prompt] = {}

    # --- the registry ---------------------------------------------------------------------

    def add(self, prompt: Prompt) -> None:
        """Register (or replace) a prompt; ValueError for scopes that are not scope tokens."""
        if self.guard is not None:  # (registry.py rule 7)
            self.guard("prompt", prompt.name)
        self._mark_scoped("prompt", prompt.name, prompt.scopes, f"Prompt {prompt.name!r}")
        self._prompts[prompt.name] = prompt
        self._changed("prompts", _LIST_CHANGED)

    def remove(self, name: str) -> bool:
        """Remove a prompt; True when it existed."""
        removed = self._prompts.pop(name, None) is not None
        self._scoped.discard(("prompt", name))
        if removed:
            self._changed("prompts", _LIST_CHANGED)
        return removed

    def get(self, name: str) -> Prompt | None:
        """The prompt called ``name``, or None."""
        return self._prompts.get(name)

    def __iter__(self) -> Iterator[Prompt]:
        return iter(self._prompts.values())

    def __len__(self) -> int:
        return len(self._prompts)

    def __contains__(self, name: object) -> bool:
        return name in self._prompts

    @property
    def has_completers(self) -> bool:
        """True when a prompt completes its arguments."""
        return any(prompt.completer for prompt in self._prompts.values())

    def scopes_of(self, name: str) -> Collection[str]:
        """The scopes a get of prompt ``name`` needs (none for an unknown one)."""
        prompt = self._prompts.get(name)
        return prompt.scopes if prompt is not None else ()

    def _entries(self, collection: str, revision: Revision) -> list[dict[str, Any]]:
        icons = revision.icons
        return [prompt.to_dict(icons) for prompt in self._prompts.values()]

    # --- the methods ------------------------------------------------------------------------

    def install(self, handlers: HandlerRegistry) -> None:
        """Serve ``prompts/list`` and ``prompts/get`` from this registry."""
        handlers.register("prompts/list", self.handle_list)
        handlers.register("prompts/get", self.handle_get)

    async def handle_list(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``prompts/list``: the prompts the request may see, paged."""
        self._require(bool(self._prompts))
        items = visible(self._listing("prompts", context.session.protocol), "name", self.scopes_of, context)
        if self.visibility is not None:  # (rule 3)
            items = shown_items(items, rules_of(self, context), "prompt", self._describe)
        return self.pager.page("prompts", "prompts", items, params)

    def _describe(self, item: dict[str, Any]) -> tuple[tuple[str], Collection[str]]:
        name = item["name"]
        return (name,), self._prompts[name].tags

    async def handle_get(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``prompts/get`` (rules 1 and 2)."""
        name = params_str(params, "name")
        prompt = self._prompts.get(name)
        if prompt is None or (
            self.visibility is not None and not self.visibility.shows(context, "prompt", (name,), prompt.tags)
        ):  # a hidden prompt is an unknown one (rule 3)
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if type(arguments) is not dict or not all(isinstance(v, str) for v in arguments.values()):
            raise McpError(INVALID_PARAMS, 'Invalid "arguments": expected an object of string values')
        for argument in prompt.arguments:
            if argument.required and argument.name not in arguments:
                raise McpError(INVALID_PARAMS, f"Missing required argument {argument.name!r} for prompt {name}")
        try:
            value = await call(prompt.handler, is_async(prompt.handler), arguments, context)
        except NotFound as error:  # the arguments name nothing there (rule 1)
            message = f"Prompt {name}: {error.message}" if error.given else f"Prompt {name}: not found"
            raise McpError(INVALID_PARAMS, message) from None
        if isinstance(value, GetPromptResult):
            result = value
        elif isinstance(value, str):
            result = GetPromptResult([PromptMessage.user(value)])
        else:
            result = GetPromptResult(list(value))
        if result.description is None and prompt.description is not None:
            result.description = prompt.description
        out = result.to_dict()
        if has_link_icons([message.content for message in result.messages]):
            for message in out["messages"]:
                drop_link_icons([message["content"]], context)
        return out
