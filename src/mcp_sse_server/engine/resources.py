"""ResourceRegistry: a server's resources and resource templates, and the ``resources/*`` methods.

>>> resources = ResourceRegistry()
>>> resources.add(Resource.text("config://app", "app-config", "{}"))
>>> resources.add_template(ResourceTemplate("users://{id}", "user", lambda uri, variables, ctx: variables["id"]))
>>> [resource.uri for resource in resources], [t.uri_template for t in resources.templates]
(['config://app'], ['users://{id}'])

Rules, kept here and nowhere else (the shared ones are ``registry.py``'s):

1. A fixed resource has a reader or fixed contents (ValueError otherwise); a template's URI
   template is RFC 6570 ``{var}``/``{+var}`` only (ValueError otherwise).
2. ``resources/read`` looks a URI up in this order: the fixed resource at it, then the files
   served unlisted (``serve_files``: the skills' files), then the templates in registration
   order, the first that matches reading it; nothing found is -32002 naming the URI.
3. ``resources/list`` lists the fixed resources, then what each template's ``lister`` lists;
   a lister that fails is logged and left out, and the result's ``_meta`` says
   ``degraded`` with the failed templates' names.
4. A reader returns a ``ReadResourceResult``, contents, ``str`` (text) or ``bytes`` (a blob);
   None, or raising ``NotFound``, is the resource-not-found error of rule 2 (with the
   ``NotFound`` message when it has one; ``not_found.py``).
5. ``resources/subscribe`` and ``unsubscribe`` record the URI on the session (any URI: a
   resource may appear later); both are -32601 on a server with no resources.
6. A resource or template the request's visibility rules hide (``visibility.py``) is left out
   of its list, with what a hidden template lists, and a read passes it by as if it were not
   registered.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

from . import downlevel
from .context import RequestContext
from .handlers import HandlerRegistry
from .jsonrpc import RESOURCE_NOT_FOUND, McpError
from .not_found import NotFound
from .registry import (
    OnChange,
    Pager,
    Registry,
    Scoped,
    call,
    is_async,
    is_shown,
    params_str,
    rules_of,
    shown_items,
    visible,
)
from .types import (
    BlobResourceContents,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceTemplate,
    TextResourceContents,
)
from .uri_template import UriTemplate
from .versions import Revision

__all__ = ["ResourceRegistry", "ServedFile"]

logger = logging.getLogger("mcp_sse_server")

_LIST_CHANGED: Final = "notifications/resources/list_changed"


class ServedFile(Protocol):
    """A file served unlisted (rule 2): ``skills.SkillFile`` is one."""

    def contents(self) -> ResourceContents:
        """The file as ``resources/read`` returns it."""


class ResourceRegistry(Registry):
    """The resources and resource templates of a server (the module's rules): fixed resources by
    URI (iteration gives them in registration order), ``templates`` by URI template, and the
    handlers of ``resources/list``, ``resources/templates/list``, ``resources/read``,
    ``resources/subscribe`` and ``resources/unsubscribe``.
    """

    __slots__ = ("_files", "_resources", "_templates")

    capability = "resources"

    def __init__(
        self, pager: Pager | None = None, on_change: OnChange | None = None, scoped: Scoped | None = None
    ) -> None:
        super().__init__(pager, on_change, scoped)
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, tuple[UriTemplate, ResourceTemplate]] = {}
        self._files: Mapping[str, ServedFile] = {}

    # --- the registry ---------------------------------------------------------------------

    def add(self, resource: Resource) -> None:
        """Register (or replace) a fixed resource (rule 1)."""
        if resource.reader is None and resource.contents is None:
            raise ValueError(f"Resource {resource.uri!r} needs a reader or fixed contents")
        if self.guard is not None:  # (registry.py rule 7)
            self.guard("resource", resource.uri)
        self._mark_scoped("resource", resource.uri, resource.scopes, f"Resource {resource.uri!r}")
        self._resources[resource.uri] = resource
        self._changed("resources", _LIST_CHANGED)

    def remove(self, uri: str) -> bool:
        """Remove the fixed resource at ``uri``; True when it existed."""
        removed = self._resources.pop(uri, None) is not None
        self._scoped.discard(("resource", uri))
        if removed:
            self._changed("resources", _LIST_CHANGED)
        return removed

    def add_template(self, template: ResourceTemplate) -> None:
        """Register (or replace) a resource template (rule 1)."""
        what = f"Resource template {template.uri_template!r}"
        if self.guard is not None:  # (registry.py rule 7)
            self.guard("template", template.uri_template)
        self._mark_scoped("template", template.uri_template, template.scopes, what)
        self._templates[template.uri_template] = (UriTemplate(template.uri_template), template)
        self._changed("resourceTemplates", _LIST_CHANGED)

    def remove_template(self, uri_template: str) -> bool:
        """Remove a resource template; True when it existed."""
        removed = self._templates.pop(uri_template, None) is not None
        self._scoped.discard(("template", uri_template))
        if removed:
            self._changed("resourceTemplates", _LIST_CHANGED)
        return removed

    def serve_files(self, files: Mapping[str, ServedFile]) -> None:
        """Serve ``files`` (URI -> file) to ``resources/read``, unlisted (rule 2), in place of the
        ones served before."""
        self._files = files

    def serves(self, uri: str) -> bool:
        """True when ``resources/read`` of ``uri`` would find an entry here (a fixed resource, a
        served file or a matching template: rule 2), whatever the request's rules."""
        if uri in self._resources or uri in self._files:
            return True
        return any(matcher.match(uri) is not None for matcher, _ in self._templates.values())

    def get(self, uri: str) -> Resource | None:
        """The fixed resource at ``uri``, or None."""
        return self._resources.get(uri)

    def template(self, uri_template: str) -> ResourceTemplate | None:
        """The template registered as ``uri_template``, or None."""
        found = self._templates.get(uri_template)
        return found[1] if found is not None else None

    @property
    def templates(self) -> list[ResourceTemplate]:
        """The templates, in registration order."""
        return [template for _, template in self._templates.values()]

    def __iter__(self) -> Iterator[Resource]:
        return iter(self._resources.values())

    def __len__(self) -> int:
        return len(self._resources)

    def __contains__(self, uri: object) -> bool:
        return uri in self._resources

    def __bool__(self) -> bool:
        """True when there is a fixed resource or a template: the server offers resources."""
        return bool(self._resources or self._templates)

    @property
    def has_completers(self) -> bool:
        """True when a template completes its variables."""
        return any(template.completer for _, template in self._templates.values())

    def scopes_of(self, uri: str) -> Collection[str]:
        """The scopes a read of ``uri`` needs: those of what would read it (rule 2's order)."""
        resource = self._resources.get(uri)
        if resource is not None:
            return resource.scopes
        for matcher, template in self._templates.values():
            if matcher.match(uri) is not None:
                return template.scopes
        return ()

    def template_scopes(self, uri_template: str) -> Collection[str]:
        """The scopes of the template registered as ``uri_template`` (none for an unknown one)."""
        found = self._templates.get(uri_template)
        return found[1].scopes if found is not None else ()

    def _entries(self, collection: str, revision: Revision) -> list[dict[str, Any]]:
        icons = revision.icons
        if collection == "resources":
            return [resource.info().to_dict(icons) for resource in self._resources.values()]
        return [template.to_dict(icons) for _, template in self._templates.values()]

    # --- the methods ------------------------------------------------------------------------

    def install(self, handlers: HandlerRegistry) -> None:
        """Serve the ``resources/*`` methods from this registry."""
        handlers.register("resources/list", self.handle_list)
        handlers.register("resources/templates/list", self.handle_list_templates)
        handlers.register("resources/read", self.handle_read)
        handlers.register("resources/subscribe", self.handle_subscribe)
        handlers.register("resources/unsubscribe", self.handle_unsubscribe)

    async def handle_list(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``resources/list`` (rule 3): the fixed resources and the templates' listed ones, paged."""
        self._require(bool(self))
        protocol = context.session.protocol
        items = visible(self._listing("resources", protocol), "uri", self.scopes_of, context)
        listers = [template for _, template in self._templates.values() if template.lister is not None]
        rules = rules_of(self, context)
        if rules:  # (rule 6: a hidden template's listed resources are hidden with it)
            items = shown_items(items, rules, "resource", self._describe)
            listers = [t for t in listers if is_shown(rules, "template", (t.uri_template, t.name), t.tags)]
        token = context.auth
        if token is not None:  # a template's listed resources need its scopes
            listers = [template for template in listers if token.scopes.issuperset(template.scopes)]
        if listers:
            items = list(items)  # listed entries are added to a copy: the cached fixed entries stay as they are
        icons = protocol is None or protocol.icons
        failed: list[str] = []
        for template in listers:
            assert template.lister is not None
            try:
                listed = await call(template.lister, is_async(template.lister))
                items.extend(downlevel.listed(info.to_dict(icons), protocol) for info in listed)
            except Exception:
                logger.exception("lister of resource template %s failed", template.name)
                failed.append(template.name)
        result = self.pager.page("resources", "resources", items, params)
        if failed:
            result["_meta"] = {"degraded": True, "failedListers": failed}
        return result

    async def handle_list_templates(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``resources/templates/list``: the templates the request may see, paged."""
        self._require(bool(self))
        listing = self._listing("resourceTemplates", context.session.protocol)
        items = visible(listing, "uriTemplate", self.template_scopes, context)
        if self.visibility is not None:  # (rule 6)
            items = shown_items(items, rules_of(self, context), "template", self._describe_template)
        return self.pager.page("resourceTemplates", "resourceTemplates", items, params)

    def _describe(self, item: dict[str, Any]) -> tuple[tuple[str, str], Collection[str]]:
        resource = self._resources[item["uri"]]
        return (resource.uri, resource.name), resource.tags

    def _describe_template(self, item: dict[str, Any]) -> tuple[tuple[str, str], Collection[str]]:
        template = self._templates[item["uriTemplate"]][1]
        return (template.uri_template, template.name), template.tags

    async def handle_read(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``resources/read`` (rules 2 and 4)."""
        uri = params_str(params, "uri")
        rules = rules_of(self, context)
        resource = self._resources.get(uri)
        if resource is not None and (not rules or is_shown(rules, "resource", (uri, resource.name), resource.tags)):
            if resource.reader is None:
                assert resource.contents is not None
                return {"contents": [resource.contents.to_dict()]}
            try:
                value = await call(resource.reader, is_async(resource.reader), uri, context)
            except NotFound as error:
                raise _not_found(uri, error) from None
            return _as_read_result(uri, value, resource.mime_type).to_dict()
        served = self._files.get(uri)
        if served is not None:
            return {"contents": [served.contents().to_dict()]}
        for matcher, template in self._templates.values():
            variables = matcher.match(uri)
            if variables is not None:
                if rules and not is_shown(rules, "template", (template.uri_template, template.name), template.tags):
                    continue  # hidden: as if it were not registered (rule 6)
                try:
                    value = await call(template.reader, is_async(template.reader), uri, variables, context)
                except NotFound as error:
                    raise _not_found(uri, error) from None
                return _as_read_result(uri, value, template.mime_type).to_dict()
        raise _not_found(uri)

    async def handle_subscribe(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``resources/subscribe`` (rule 5)."""
        self._require(bool(self))
        context.session.subscribe(params_str(params, "uri"))
        return {}

    async def handle_unsubscribe(self, params: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """``resources/unsubscribe`` (rule 5)."""
        self._require(bool(self))
        context.session.unsubscribe(params_str(params, "uri"))
        return {}


def _not_found(uri: str, error: NotFound | None = None) -> McpError:
    """The resource-not-found error for ``uri`` (-32002; 2026-07-28 makes it -32602), with the
    reader's message when it gave one (rule 4)."""
    message = error.message if error is not None and error.given else f"Resource not found: {uri}"
    return McpError(RESOURCE_NOT_FOUND, message, {"uri": uri})


def _as_read_result(uri: str, value: Any, mime_type: str | None) -> ReadResourceResult:
    if value is None:  # the reader has nothing at this URI (rule 4)
        raise _not_found(uri)
    if isinstance(value, ReadResourceResult):
        return value
    if isinstance(value, str):
        return ReadResourceResult([TextResourceContents(uri, value, mime_type)])
    if isinstance(value, bytes | bytearray):
        return ReadResourceResult([BlobResourceContents.from_bytes(uri, bytes(value), mime_type)])
    if isinstance(value, Sequence):
        contents: list[ResourceContents] = list(value)
        return ReadResourceResult(contents)
    raise TypeError(
        f"a resource reader must return ReadResourceResult, contents, str or bytes, not {type(value).__name__}"
    )
