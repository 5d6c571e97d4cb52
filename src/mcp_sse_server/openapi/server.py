"""``from_openapi`` and ``from_fastapi``: an ``McpServer`` whose tools, resources and templates call
an HTTP API described by OpenAPI 3.0 or 3.1.

>>> spec = {"openapi": "3.1.0", "info": {"title": "Pets", "version": "1"}, "paths": {
...     "/pets/{id}": {"get": {"operationId": "getPet", "parameters": [
...         {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}]}}}}
>>> [tool.name for tool in from_openapi(spec, base_url="http://127.0.0.1:9").tools]
['getPet']

Rules, kept here (each piece's own are in its module: ``schemas``, ``naming``, ``routes``,
``operations``, ``responses``, ``forwarding``):

1. Everything is decided at load: kinds, names, schemas and request builders; a spec that
   cannot be served is an ``OpenApiError`` naming what is wrong. An operation whose schemas
   need an external ``$ref`` is skipped with a warning naming it (the others are served).
2. The API is called with ``client`` (an ``httpx.AsyncClient`` whose base URL is the API's), or
   one made from ``base_url`` (else the spec's first absolute ``servers`` URL) and ``headers``,
   which does not follow redirects. The caller owns a client it passes in.
3. Headers of one call, later ones winning: the operation's header and cookie arguments,
   allowlisted inbound headers (``forwarding.py``, never over the client's own), then what
   ``credentials(context)`` returns (per-request credentials: a token exchange, a per-user key).
   The MCP client's ``Authorization`` is never sent unless ``forward_headers`` names it.
4. Tools carry the operation's summary as title, summary and description as description, its
   OpenAPI tags plus ``tags`` as (server-side) tags, and hints from the method: GET read-only,
   PUT and DELETE idempotent, DELETE destructive.
5. ``validate_output=False`` declares no output schema (structured content is still sent): for
   APIs whose answers stray from their spec.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TypeAlias

import httpx

from ..engine.context import RequestContext
from ..engine.jsonrpc import INTERNAL_ERROR, McpError
from ..engine.not_found import NotFound
from ..engine.server import McpServer
from ..engine.types import CallToolResult, ReadResourceResult, Resource, ResourceTemplate, Tool, ToolAnnotations
from .forwarding import inbound_headers
from .naming import checked_name, generated_name, unique_name
from .operations import Operation, compile_operation, credential_headers
from .responses import error_result, failure_result, output_schema, resource_contents, tool_result
from .routes import Route, route_kind
from .schemas import ExternalRef, OpenApiError, SchemaConverter

__all__ = ["Credentials", "from_fastapi", "from_openapi", "load_spec"]

logger = logging.getLogger("mcp_sse_server.openapi")

Credentials: TypeAlias = Callable[[RequestContext], "Mapping[str, str] | Awaitable[Mapping[str, str] | None] | None"]
"""``credentials(context)``: headers for one API call, from the caller (``context.auth`` is its
verified access token); None adds nothing."""

_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SCHEME: Final = re.compile(r"[^a-z0-9.+-]+")


def load_spec(spec: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """The spec as a dict: given as one, or read from a JSON or YAML file (PyYAML is imported
    only for YAML). ``OpenApiError`` when it is not an OpenAPI 3 document."""
    if isinstance(spec, Mapping):
        loaded: Any = dict(spec)
    elif not isinstance(spec, (str, os.PathLike)):
        raise OpenApiError(f"a spec is a dict or the path of a JSON or YAML file, not {type(spec).__name__}")
    else:
        path = Path(spec)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise OpenApiError(f"cannot read the spec {str(path)!r}: {error.strerror or error}") from None
        try:
            if path.suffix.lower() in (".yaml", ".yml") or not text.lstrip().startswith("{"):
                import yaml

                loaded = yaml.safe_load(text)
            else:
                loaded = json.loads(text)
        except (ValueError, ImportError) as error:
            raise OpenApiError(f"cannot parse the spec {str(path)!r}: {error}") from None
        except Exception as error:  # yaml.YAMLError, without importing yaml to name it
            raise OpenApiError(f"cannot parse the spec {str(path)!r}: {error}") from None
    if not isinstance(loaded, dict) or not str(loaded.get("openapi", "")).startswith("3."):
        raise OpenApiError("not an OpenAPI 3 document (its 'openapi' member must be 3.x)")
    if not isinstance(loaded.get("paths", {}), Mapping):
        raise OpenApiError("the spec's 'paths' must be an object")
    return loaded


def _base_url(spec: Mapping[str, Any]) -> str | None:
    for server in spec.get("servers") or ():
        url = server.get("url") if isinstance(server, Mapping) else None
        if isinstance(url, str) and url.startswith(("http://", "https://")) and "{" not in url:
            return url
    return None


def from_openapi(
    spec: Mapping[str, Any] | str | os.PathLike[str],
    *,
    client: httpx.AsyncClient | None = None,
    base_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    name: str | None = None,
    routes: Iterable[Route] = (),
    names: Mapping[str, str] | None = None,
    tags: Collection[str] = (),
    validate_output: bool = True,
    forward_headers: Iterable[str] = (),
    credentials: Credentials | None = None,
    timeout: float = 30.0,
) -> McpServer:
    """An ``McpServer`` serving the operations of ``spec`` (a dict, or a JSON or YAML file).

    ``routes`` decide each operation's kind (``routes.py``; every one a tool by default),
    ``names`` its tool name by operationId or ``"METHOD /path"`` (``naming.py``). ``client``
    or ``base_url`` (+ ``headers``, ``timeout``) say how the API is reached; ``forward_headers``
    and ``credentials`` what a call adds (the module's rule 3). ``name`` defaults to the spec's
    title.
    """
    document = load_spec(spec)
    if client is None:
        url = base_url or _base_url(document)
        if url is None:
            raise OpenApiError("no base URL: pass base_url= (the spec names no absolute http(s) server URL)")
        client = httpx.AsyncClient(base_url=url, headers=dict(headers or {}), timeout=timeout, follow_redirects=False)
    info = document.get("info") or {}
    title = str(name or info.get("title") or "openapi")
    server = McpServer(title, str(info.get("version") or "0"), description=info.get("description"))
    caller = _Caller(client, frozenset(h.lower() for h in forward_headers), credentials)
    namespace = _SCHEME.sub("-", title.lower()).strip("-.+") or "openapi"
    _Builder(document, caller, list(routes), dict(names or {}), tuple(tags), validate_output, namespace).add_to(server)
    return server


def from_fastapi(app: Any, **options: Any) -> McpServer:
    """``from_openapi`` for a FastAPI (or any ASGI) app with an ``openapi()`` method, called in
    this process through ``httpx.ASGITransport``: no socket. ``options`` are ``from_openapi``'s;
    ``headers`` and ``timeout`` apply to the in-process client."""
    headers = options.pop("headers", None)
    timeout = options.pop("timeout", 30.0)
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://fastapi", headers=headers, timeout=timeout
    )
    options.setdefault("name", getattr(app, "title", None))
    return from_openapi(app.openapi(), client=client, **options)


class _Caller:
    """Sends one operation's request with the headers of rule 3."""

    def __init__(self, client: httpx.AsyncClient, forward: frozenset[str], credentials: Credentials | None) -> None:
        self.client = client
        self.forward = forward
        self.credentials = credentials

    async def send(self, operation: Operation, arguments: Mapping[str, Any], context: RequestContext) -> httpx.Response:
        request = operation.request(arguments)
        headers: dict[str, str] = request["headers"]
        if self.forward:
            inbound = inbound_headers.get() or {}
            for header in self.forward:
                if header in inbound and header not in self.client.headers and header not in headers:
                    headers[header] = inbound[header]
        if self.credentials is not None:
            extra = self.credentials(context)
            if inspect.isawaitable(extra):
                extra = await extra
            if extra:
                headers.update(extra)
        return await self.client.request(**request)


class _Builder:
    """Compiles every operation of one spec and registers it on a server (rule 1)."""

    def __init__(
        self,
        spec: dict[str, Any],
        caller: _Caller,
        routes: list[Route],
        names: dict[str, str],
        tags: tuple[str, ...],
        validate_output: bool,
        namespace: str,
    ) -> None:
        self.spec = spec
        self.caller = caller
        self.routes = routes
        self.names = names
        self.tags = tags
        self.validate_output = validate_output
        self.namespace = namespace
        self.converter = SchemaConverter(spec)

    def operations(self) -> Iterable[Operation]:
        secrets = credential_headers(self.spec)
        for path, item in (self.spec.get("paths") or {}).items():
            item = self.converter.resolve(item)
            for method in _METHODS:
                if not isinstance(item.get(method), Mapping):
                    continue
                try:
                    yield compile_operation(self.converter, method, path, item, item[method], secrets)
                except ExternalRef as error:
                    logger.warning("OpenAPI: %s %s skipped: %s", method.upper(), path, error)

    def add_to(self, server: McpServer) -> None:
        compiled = list(self.operations())
        taken: dict[str, str] = {}  # tool name -> the operation that has it
        explicit: dict[int, str] = {}
        for index, operation in enumerate(compiled):
            key = f"{operation.method} {operation.path}"
            given = self.names.get(operation.operation_id or "", self.names.get(key))
            if given is not None:
                checked_name(given, operation.operation_id or key)
                if given in taken:
                    raise OpenApiError(f"names= gives {given!r} to both {taken[given]} and {key}")
                taken[given] = key
                explicit[index] = given
        for index, operation in enumerate(compiled):
            key = f"{operation.method} {operation.path}"
            kind = route_kind(
                self.routes, operation.method, operation.path, operation.tags, operation.required_locations
            )
            if kind == "exclude":
                continue
            name = explicit.get(index)
            if name is None:
                wanted = generated_name(operation.operation_id, operation.method, operation.path)
                name = unique_name(wanted, taken)
                if name != wanted:
                    logger.warning("OpenAPI: %s is named %r: %r is %s's", key, name, wanted, taken[wanted])
                taken[name] = key
            if kind == "tool":
                server.add_tool(self.tool(name, operation))
            elif kind == "resource":
                server.add_resource(self.resource(name, operation))
            else:
                server.add_resource_template(self.template(name, operation))

    def _uri(self, operation: Operation) -> str:
        return f"api+{self.namespace}://{operation.path.lstrip('/')}"

    def _description(self, operation: Operation) -> str | None:
        parts = [part for part in (operation.summary, operation.description) if part]
        return "\n\n".join(parts) or None

    def tool(self, name: str, operation: Operation) -> Tool:
        schema, wrapped = output_schema(self.converter, operation.responses)
        caller = self.caller

        async def call(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
            try:
                response = await caller.send(operation, arguments, context)
            except httpx.HTTPError as error:
                return failure_result(error)
            return tool_result(response, wrapped)

        method = operation.method
        annotations = ToolAnnotations(
            title=operation.summary,
            read_only_hint=method in ("GET", "HEAD", "OPTIONS"),
            destructive_hint=method == "DELETE" if method not in ("GET", "HEAD", "OPTIONS") else None,
            idempotent_hint=method in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE"),
            open_world_hint=True,
        )
        return Tool(
            name,
            operation.input_schema,
            call,
            title=operation.summary,
            description=self._description(operation),
            output_schema=schema if self.validate_output else None,
            annotations=annotations,
            tags=(*operation.tags, *self.tags),
        )

    async def _read(self, uri: str, operation: Operation, arguments: dict[str, Any], context: RequestContext) -> Any:
        try:
            response = await self.caller.send(operation, arguments, context)
        except httpx.HTTPError as error:
            raise McpError(INTERNAL_ERROR, failure_result(error).content[0].to_dict()["text"]) from None
        if response.status_code == 404:
            raise NotFound(f"No resource {uri}")
        if response.status_code >= 300:
            raise McpError(INTERNAL_ERROR, error_result(response).content[0].to_dict()["text"])
        return ReadResourceResult([resource_contents(uri, response)])

    def resource(self, name: str, operation: Operation) -> Resource:
        uri = self._uri(operation)

        async def read(_uri: str, context: RequestContext) -> Any:
            return await self._read(uri, operation, {}, context)

        return Resource(
            uri, name, read, title=operation.summary, description=self._description(operation), tags=operation.tags
        )

    def template(self, name: str, operation: Operation) -> ResourceTemplate:
        template = self._uri(operation)
        arguments = {entry.wire: entry.argument for entry in operation.inputs if entry.location == "path"}

        async def read(uri: str, variables: dict[str, str], context: RequestContext) -> Any:
            values = {arguments[key]: value for key, value in variables.items() if key in arguments}
            return await self._read(uri, operation, values, context)

        return ResourceTemplate(
            template, name, read, title=operation.summary, description=self._description(operation), tags=operation.tags
        )
