"""``completion/complete``: the completers of a server's prompts and resource templates.

Rules:

1. The method is served only by a server with a completer (a prompt's or a template's):
   -32601 otherwise, as the ``completions`` capability is advertised only then.
2. ``ref`` names a prompt (``ref/prompt``, by name) or a template (``ref/resource``, by its URI
   template); an unknown one, or a malformed ``ref`` or ``argument``, is -32602.
3. What has no completer completes to nothing; a completer returns a ``CompleteResult`` or a
   list of values, and gets the other arguments the client sent
   (``CompleteRequest.context_arguments``).
"""

from __future__ import annotations

from typing import Any

from .context import RequestContext
from .handlers import HandlerRegistry
from .jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from .prompts import PromptRegistry
from .registry import call, is_async, params_str
from .resources import ResourceRegistry
from .types import CompleteRequest, CompleteResult, Prompt, ResourceTemplate

__all__ = ["Completion"]


class Completion:
    """Serves ``completion/complete`` from ``prompts`` and ``resources`` (the module's rules)."""

    __slots__ = ("prompts", "resources")

    def __init__(self, prompts: PromptRegistry, resources: ResourceRegistry) -> None:
        self.prompts = prompts
        self.resources = resources

    @property
    def offered(self) -> bool:
        """True when a prompt or a template has a completer (rule 1)."""
        return self.prompts.has_completers or self.resources.has_completers

    def install(self, handlers: HandlerRegistry) -> None:
        """Serve ``completion/complete``."""
        handlers.register("completion/complete", self.handle)

    async def handle(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``completion/complete`` (rules 2 and 3)."""
        if not self.offered:
            raise McpError(METHOD_NOT_FOUND, "This server does not offer completions")
        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise McpError(INVALID_PARAMS, 'completion/complete needs "ref" and "argument" objects')
        argument_name = argument.get("name")
        argument_value = argument.get("value")
        if not isinstance(argument_name, str) or not isinstance(argument_value, str):
            raise McpError(INVALID_PARAMS, '"argument" needs a string "name" and "value"')
        ref_type = ref.get("type")
        found: Prompt | ResourceTemplate | None
        if ref_type == "ref/prompt":
            target, what = params_str(ref, "name"), "prompt"
            found = self.prompts.get(target)
        elif ref_type == "ref/resource":
            target, what = params_str(ref, "uri"), "resource template"
            found = self.resources.template(target)
        else:
            raise McpError(INVALID_PARAMS, 'Invalid "ref.type": expected "ref/prompt" or "ref/resource"')
        if found is None:
            raise McpError(INVALID_PARAMS, f"Unknown {what}: {target}")
        completer = found.completer
        if completer is None:
            return CompleteResult([]).to_dict()
        extra = params.get("context")
        known = extra.get("arguments") if isinstance(extra, dict) else None
        request = CompleteRequest(
            ref_type, target, argument_name, argument_value, dict(known) if isinstance(known, dict) else {}
        )
        value = await call(completer, is_async(completer), request, context)
        result = value if isinstance(value, CompleteResult) else CompleteResult(list(value))
        return result.to_dict()
