"""Tools, prompts and resources from typed Python functions: the sans-I/O part behind decorators.

Rules:

* A signature is read once, at registration (``ToolSignature.of``, ``PromptSignature.of``,
  ``ResourceSignature.of``); every call only runs what was precomputed then. Anything the
  rules below cannot describe is ``SignatureError`` there, naming the function and parameter.
* Parameters are keyword arguments: ``*args``, ``**kwargs`` and positional-only parameters are
  refused. A parameter annotated ``RequestContext`` (any name, also ``RequestContext | None``)
  receives the request's context and is left out of schemas and argument lists; at most one.
* Annotations are resolved with the function's globals (``from __future__ import annotations``
  works); ``RequestContext`` resolves even when imported only under ``TYPE_CHECKING``.
* A tool's ``inputSchema`` is the JSON Schema pydantic generates for one model built from the
  parameters: ``Annotated[T, Field(...)]`` constraints and descriptions count, a parameter with a
  default is optional (its default shown when JSON can hold it), and a docstring's description of a
  parameter is used when its ``Field`` has none. The root has ``"type": "object"``, every ``$defs``
  sits at the root, and no generated ``title`` appears (an explicit ``Field(title=...)`` stays).
  Unknown arguments are refused (``"additionalProperties": false``). A default written as
  ``= Field(...)`` is refused: write ``Annotated[T, Field(...)] = default``.
* Arguments are converted after the engine validated them against that schema: ``int``, ``float``,
  ``str``, ``bool``, unions of them with ``None``, ``Any`` and unannotated parameters pass as they
  are; every other parameter goes through its own ``pydantic.TypeAdapter`` (lax), so a model
  parameter receives a model, an enum its member, a ``set[int]`` a set. A failure is
  ``ArgumentError`` naming the field (``user.tags[2]``).
* A tool's ``outputSchema`` comes from its return annotation: an object type (model, dataclass,
  TypedDict, ``dict[str, X]``) is the schema itself; any other type is wrapped as
  ``{"result": <schema>}``; ``str``, ``None``, ``Any``, no annotation, ``CallToolResult`` and content
  blocks give none.
* A tool's return value: ``CallToolResult`` passes; a content block or a list of them is the
  content; anything else is serialised as its annotation says (``mode="json"``; JSON scalars its
  annotation names pass as they are) and then becomes ``{"result": value}`` when the output schema
  wraps, else one text block for a string, an empty result for ``None``, ``structuredContent`` for an
  object; each structured result also carries one text block of its JSON. A value its annotation
  does not describe is ``TypeError``.
* Prompt arguments and URI-template values are strings: converted to the annotated type in lax mode
  (``"3"`` -> 3), a string starting with ``[`` or ``{`` parsed as JSON when that fails.
* This module imports pydantic when it is imported: the server imports it only where typed
  functions are registered, so ``import mcp_sse_server`` stays free of it.
* Dependency injection. A parameter whose default is ``Depends(provider)`` (or annotated
  ``Annotated[T, Depends(provider)]``), or annotated ``AccessToken`` (``| None``: the request's
  verified token, None without one), is filled by the server and left out of schemas and
  argument lists. The providers are planned at registration, depth first in declaration order:
  a provider's own parameters are other ``Depends``, a ``RequestContext`` or an ``AccessToken``
  (any other parameter needs a default), and a cycle is ``SignatureError``. A provider is a
  function, a coroutine function, or a generator or async generator function that yields its
  value once: what follows its ``yield`` is its cleanup.
* Per request (``scope="request"``, the default) each provider runs at most once, however many
  parameters and providers ask for it, and its cleanups run in reverse order once the function
  has returned or raised (the exception is thrown in at the ``yield``); a cleanup that fails is
  logged, never sent. A ``scope="server"`` provider runs once per server, under a lock, and is
  cleaned up by ``McpServer.close()``; it may depend only on other server-scoped providers.
  Everything a provider raises is what the function would have raised (a tool's ``isError``, an
  ``McpError`` as given). Providers run on the event loop (keep a sync one cheap); a sync
  function with providers then runs in a worker thread. A 2026-07-28 call that asks the client
  something runs again each round, its request-scoped providers with it; a task's run in its job.

>>> def add(a: int, b: int = 2) -> int:
...     '''Adds two numbers.'''
...     return a + b
>>> tool = ToolSignature.of(add)
>>> tool.input_schema["required"], tool.wraps_result
(['a'], True)
>>> tool.to_result(add(**tool.call_arguments({"a": 3}, None))).structured_content
{'result': 5}
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import logging
import re
import types
import typing
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import EllipsisType, NoneType
from typing import Annotated, Any, Final, Literal

import pydantic
from pydantic import TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaWarningKind
from pydantic_core import PydanticSerializationError

from .context import RequestContext
from .elicitation_schema import check_elicitation_schema
from .jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, McpError, dumps
from .schema import _path
from .tokens import AccessToken
from .types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    content_from_dict,
)

logger = logging.getLogger("mcp_sse_server.engine.server")

__all__ = [
    "ArgumentError",
    "Dependency",
    "Depends",
    "PromptSignature",
    "ResourceSignature",
    "SignatureError",
    "ToolSignature",
    "docstring_parts",
    "prompt_handler",
    "resource_reader",
    "tool_handler",
]


class SignatureError(ValueError):
    """A function whose signature cannot be served; raised at registration."""


class ArgumentError(Exception):
    """An argument that could not be converted to its parameter's type.

    ``field`` is the dotted path (``user.role``), ``message`` what is wrong with it.
    """

    def __init__(self, field: str, message: str, noun: str = "argument") -> None:
        super().__init__(f'{noun} "{field}": {message}')
        self.field = field
        self.message = message


# --- docstrings ----------------------------------------------------------------------------

_PARAMETER_SECTIONS: Final = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "other parameters"}
)
_GOOGLE_HEADER: Final = re.compile(
    r"(args|arguments|parameters|params|keyword args|keyword arguments|other parameters|returns?|raises|"
    r"yields?|examples?|notes?|warnings?|attributes|see also|references|todo)\s*:(.*)",
    re.IGNORECASE,
)
_GOOGLE_ENTRY: Final = re.compile(r"\**(\w+)\s*(?:\([^)]*\))?\s*:(.*)")
_NUMPY_ENTRY: Final = re.compile(r"(\**\w+(?:\s*,\s*\**\w+)*)\s*(?::.*)?")
_DASHES: Final = re.compile(r"-{3,}")
_SPHINX_PARAM: Final = re.compile(r":(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\**(\w+)\s*:(.*)")
_SPHINX_FIELD: Final = re.compile(r":\w[^:]*:")


def docstring_parts(function: Callable[..., Any]) -> tuple[str | None, dict[str, str]]:
    """The description of ``function`` and of each parameter, from a Google, NumPy or Sphinx docstring.

    The description is the text outside sections (``Args``, ``Returns``, ``Raises``, ...) and fields.

    >>> def f(x):
    ...     '''Doubles.
    ...
    ...     Args:
    ...         x: the number.
    ...     '''
    >>> docstring_parts(f)
    ('Doubles.', {'x': 'the number.'})
    """
    doc = getattr(function, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    parameters: dict[str, list[str]] = {}
    # section: None (description), "google", "numpy" or "sphinx"; reading: a parameter section
    section: str | None = None
    reading = False
    entry: list[str] | None = None  # the lines of the parameter being read; None while dropping text
    entry_depth: int | None = None  # the indentation of a Google section's entries
    index = 0
    while index < len(lines):
        line = lines[index]
        text = line.strip()
        depth = len(line) - len(line.lstrip())
        index += 1
        if depth == 0 and text and index < len(lines) and _DASHES.fullmatch(lines[index].strip()):
            section, reading, entry = "numpy", text.lower() in _PARAMETER_SECTIONS, None
            index += 1  # the underline
            continue
        if depth == 0 and (header := _GOOGLE_HEADER.fullmatch(text)):
            section, reading, entry, entry_depth = "google", header[1].lower() in _PARAMETER_SECTIONS, None, None
            continue
        if depth == 0 and (param := _SPHINX_PARAM.match(text)):
            section, entry = "sphinx", parameters.setdefault(param[1], [])
            entry.append(param[2].strip())
            continue
        if depth == 0 and _SPHINX_FIELD.match(text):
            section, entry = "sphinx", None
            continue
        if section in ("google", "sphinx") and text and depth == 0:
            section = None  # back at the margin: the section is over
        if section is None:
            description.append(line)
        elif not text:
            continue
        elif section == "google" and reading and (entry_depth is None or depth <= entry_depth):
            found = _GOOGLE_ENTRY.fullmatch(text)
            if found:
                entry_depth = depth
                entry = parameters.setdefault(found[1], [])
                entry.append(found[2].strip())
            elif entry is not None:
                entry.append(text)
        elif section == "numpy" and reading and depth == 0 and (found := _NUMPY_ENTRY.fullmatch(text)):
            entry = []
            for name in found[1].split(","):
                parameters[name.strip().lstrip("*")] = entry  # "x, y : int" describes both
        elif entry is not None:
            entry.append(text)
    summary = "\n".join(description).strip()
    described = {name: " ".join(part for part in parts if part) for name, parts in parameters.items()}
    return summary or None, {name: text for name, text in described.items() if text}


# --- reading a function ----------------------------------------------------------------------

_CONTENT_TYPES: Final = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
_MESSAGE_TYPES: Final = (str, PromptMessage, dict, *_CONTENT_TYPES)  # a prompt result that is one message
_CONTENTS_TYPES: Final = (TextResourceContents, BlobResourceContents)
_TOOL_PRIMITIVES: Final = frozenset({int, float, str, bool})
_STRINGS: Final = frozenset({str})
_EMPTY: Final = inspect.Parameter.empty


class _Schema(GenerateJsonSchema):
    """pydantic's JSON Schema without generated field titles and without warnings for defaults JSON cannot hold."""

    ignored_warning_kinds: set[JsonSchemaWarningKind] = {"skipped-choice", "non-serializable-default"}

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _qualname(function: Callable[..., Any]) -> str:
    return str(getattr(function, "__qualname__", None) or getattr(function, "__name__", None) or repr(function))


def _is_async(function: Callable[..., Any]) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 - objects with an async __call__
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _split(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """``Annotated[T, *metadata]`` as ``(T, metadata)``; any other annotation with no metadata."""
    if typing.get_origin(annotation) is Annotated:
        base, *metadata = typing.get_args(annotation)
        return base, tuple(metadata)
    return annotation, ()


def _union_members(annotation: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return None


def _members(annotation: Any) -> tuple[Any, ...]:
    """A union's members, or the annotation alone; ``None`` as ``NoneType``."""
    return tuple(NoneType if member is None else member for member in _union_members(annotation) or (annotation,))


def _is_a(annotation: Any, kind: type) -> bool:
    """``kind`` (or a subclass), also inside ``Annotated`` or ``| None``."""
    base = _split(annotation)[0]
    members = _union_members(base)
    if members is not None:
        others = [member for member in members if member is not NoneType]
        base = others[0] if len(others) == 1 else None
    return isinstance(base, type) and issubclass(base, kind)


def _is_context(annotation: Any) -> bool:
    """``RequestContext`` (or a subclass), also inside ``Annotated`` or ``| None``."""
    return _is_a(annotation, RequestContext)


def _passes_through(annotation: Any, primitives: frozenset[type]) -> bool:
    """True when a validated JSON value already is what the parameter wants: no conversion needed."""
    base, metadata = _split(annotation)
    if not all(isinstance(item, FieldInfo) for item in metadata):  # validators, converters: pydantic's work
        return False
    if base is _EMPTY or base is Any:
        return True
    return all(member in primitives or member is NoneType for member in _members(base))


def _native_types(annotation: Any) -> tuple[type, ...]:
    """The exact types of return values that are their own JSON form (``-> int | None``: int and None)."""
    if not _passes_through(annotation, _TOOL_PRIMITIVES):
        return ()
    base = _split(annotation)[0]
    if base is _EMPTY or base is Any:
        return (int, float, str, bool, NoneType)
    return _members(base)


def _is_content(annotation: Any) -> bool:
    """True for ``CallToolResult``, content blocks, and unions and lists of them: results that carry no data."""
    base = _split(annotation)[0]
    if base is CallToolResult or base in _CONTENT_TYPES:
        return True
    members = _union_members(base)
    if members is None and typing.get_origin(base) in (list, Sequence, tuple):
        members = tuple(arg for arg in typing.get_args(base) if arg is not Ellipsis)
    return bool(members) and all(_is_content(member) for member in members or ())


# --- dependency injection (the module's rules on Depends) -----------------------------------------


class Dependency:
    """The marker ``Depends`` returns: ``provider`` and its ``scope`` (the module's rules on injection)."""

    __slots__ = ("provider", "scope")

    def __init__(self, provider: Callable[..., Any], scope: str) -> None:
        self.provider = provider
        self.scope = scope

    def __repr__(self) -> str:
        return f"Depends({_qualname(self.provider)}, scope={self.scope!r})"


def Depends(provider: Callable[..., Any], *, scope: Literal["request", "server"] = "request") -> Any:
    """A parameter the server fills with what ``provider`` gives: ``db: Db = Depends(database)``
    or ``db: Annotated[Db, Depends(database)]`` (the module's rules on injection). Typed ``Any``
    so that it type-checks as the parameter's default.

    >>> async def database():  # doctest: +SKIP
    ...     connection = await connect()
    ...     try:
    ...         yield connection
    ...     finally:
    ...         await connection.close()
    >>> @server.tool()  # doctest: +SKIP
    ... async def count(table: str, db: Connection = Depends(database)) -> int:
    ...     return await db.count(table)
    """
    if not callable(provider):
        raise TypeError(f"Depends() takes a callable provider, not {type(provider).__name__}")
    if scope not in ("request", "server"):
        raise ValueError(f'a provider\'s scope is "request" or "server", not {scope!r}')
    return Dependency(provider, scope)


_CONTEXT: Final = "context"  # (inputs that are not providers: the request's context, its access token)
_TOKEN: Final = "token"
_CALL, _AWAIT, _GENERATOR, _ASYNC_GENERATOR = range(4)  # how a provider gives its value


@dataclass(frozen=True, slots=True, eq=False)
class _Provider:
    """A provider as planned at registration: how to call it and what to pass it."""

    function: Callable[..., Any]
    name: str
    server_scoped: bool
    kind: int
    inputs: tuple[tuple[str, _Provider | str], ...]  # keyword -> a provider, _CONTEXT or _TOKEN


Injected: typing.TypeAlias = tuple[tuple[str, "_Provider | str"], ...]


def _injection(parameter: inspect.Parameter) -> Dependency | str | None:
    """What fills ``parameter``: a ``Dependency``, _TOKEN, or None for an argument (the context is apart)."""
    if isinstance(parameter.default, Dependency):
        return parameter.default
    for item in _split(parameter.annotation)[1]:
        if isinstance(item, Dependency):
            return item
    return _TOKEN if _is_a(parameter.annotation, AccessToken) else None


def _kind(function: Callable[..., Any]) -> int:
    call = getattr(function, "__call__", None)  # noqa: B004 - objects with an async __call__
    if inspect.isasyncgenfunction(function) or inspect.isasyncgenfunction(call):
        return _ASYNC_GENERATOR
    if inspect.isgeneratorfunction(function) or inspect.isgeneratorfunction(call):
        return _GENERATOR
    return _AWAIT if _is_async(function) else _CALL


def _plan(depends: Dependency, planned: dict[tuple[Any, bool], _Provider], path: tuple[Any, ...]) -> _Provider:
    """``depends``'s provider and, depth first, those it needs (the module's rules); one per
    (provider, scope) however often it is asked for."""
    function, server_scoped = depends.provider, depends.scope == "server"
    found = planned.get((function, server_scoped))
    if found is not None:
        return found
    name = _qualname(function)
    if function in path:
        chain = " -> ".join(_qualname(each) for each in (*path[path.index(function) :], function))
        raise SignatureError(f"providers depend on each other in a cycle: {chain}")
    try:
        signature = inspect.signature(function, eval_str=True, locals=_KNOWN)
    except (NameError, SyntaxError, TypeError, ValueError) as error:
        raise SignatureError(f"provider {name}: cannot read its signature: {error}") from None
    inputs: list[tuple[str, _Provider | str]] = []
    for parameter in signature.parameters.values():
        where = f"provider {name}: parameter {parameter.name!r}"
        what: Dependency | str | None = _CONTEXT if _is_context(parameter.annotation) else _injection(parameter)
        if what is None:
            if parameter.default is _EMPTY and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise SignatureError(f"{where}: a provider is passed only Depends, RequestContext and AccessToken")
            continue
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise SignatureError(f"{where}: positional-only parameters cannot be passed by name")
        given = what if isinstance(what, str) else _plan(what, planned, (*path, function))
        if server_scoped and (isinstance(given, str) or not given.server_scoped):
            raise SignatureError(f"{where}: a server-scoped provider cannot depend on the request")
        inputs.append((parameter.name, given))
    provider = _Provider(function, name, server_scoped, _kind(function), tuple(inputs))
    planned[(function, server_scoped)] = provider
    return provider


_KNOWN: Final = {"RequestContext": RequestContext, "AccessToken": AccessToken}


class _Resolution:
    """One call's provided values, and the generators whose cleanup follows the call."""

    __slots__ = ("context", "opened", "values")

    def __init__(self, context: RequestContext) -> None:
        self.context = context
        self.values: dict[_Provider, Any] = {}
        self.opened: list[tuple[_Provider, Any]] = []

    async def keywords(self, injected: Injected) -> dict[str, Any]:
        return {name: await self._input(given) for name, given in injected}

    async def _input(self, given: _Provider | str) -> Any:
        if given == _CONTEXT:
            return self.context
        if given == _TOKEN:
            return self.context.auth
        assert isinstance(given, _Provider)
        if given.server_scoped:
            return await _server_value(given, self.context)
        values = self.values
        if given in values:
            return values[given]
        value = values[given] = await self.make(given)
        return value

    async def make(self, provider: _Provider) -> Any:
        arguments = await self.keywords(provider.inputs)
        kind = provider.kind
        if kind == _CALL:
            return provider.function(**arguments)
        if kind == _AWAIT:
            return await provider.function(**arguments)
        opened = provider.function(**arguments)
        try:
            value = next(opened) if kind == _GENERATOR else await anext(opened)
        except (StopIteration, StopAsyncIteration):
            raise RuntimeError(f"provider {provider.name} did not yield a value") from None
        self.opened.append((provider, opened))
        return value

    async def close(self, error: BaseException | None) -> None:
        """Run the cleanups, last opened first; ``error`` (what the call raised) is thrown in."""
        while self.opened:
            provider, opened = self.opened.pop()
            try:
                if provider.kind == _GENERATOR:
                    opened.throw(error) if error is not None else next(opened)
                else:
                    await (opened.athrow(error) if error is not None else anext(opened))
            except (StopIteration, StopAsyncIteration):
                continue
            except BaseException as raised:
                if raised is not error:
                    logger.exception("cleanup of provider %s failed", provider.name)
                continue
            logger.error("provider %s yielded more than once: the rest of it is not run", provider.name)


# Server-scoped values: by server (weakly: a server dropped takes its values along), then provider.
_server_values: weakref.WeakKeyDictionary[Any, dict[_Provider, Any]] = weakref.WeakKeyDictionary()
_server_locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()
_server_opened: weakref.WeakKeyDictionary[Any, _Resolution] = weakref.WeakKeyDictionary()


async def _server_value(provider: _Provider, context: RequestContext) -> Any:
    server = context.server
    values = _server_values.setdefault(server, {})
    if provider in values:
        return values[provider]
    async with _server_locks.setdefault(server, asyncio.Lock()):
        if provider not in values:
            resolution = _server_opened.setdefault(server, _Resolution(context))
            values[provider] = await resolution.make(provider)
    return values[provider]


async def close_server_scope(server: Any) -> None:
    """Clean up the server-scoped providers of ``server`` (``McpServer.close()``), last made first."""
    _server_values.pop(server, None)
    resolution = _server_opened.pop(server, None)
    if resolution is not None:
        await resolution.close(None)


async def _call_injected(
    function: Callable[..., Any], is_async: bool, injected: Injected, keywords: dict[str, Any], context: RequestContext
) -> Any:
    """``function(**keywords)`` with its providers' values, their cleanups after it (the module's rules)."""
    resolution = _Resolution(context)
    try:
        keywords.update(await resolution.keywords(injected))
        value = await function(**keywords) if is_async else await asyncio.to_thread(function, **keywords)
    except BaseException as error:
        await resolution.close(error)
        raise
    await resolution.close(None)
    return value


@dataclass(frozen=True, slots=True)
class _Function:
    """What every signature needs from a function: read once, checked once."""

    name: str
    parameters: tuple[inspect.Parameter, ...]  # without the context parameter and the injected ones
    returns: Any
    context: str | None
    description: str | None
    docs: dict[str, str]
    is_async: bool
    injected: Injected = ()  # the parameters the server fills (Depends, AccessToken), planned

    @classmethod
    def read(cls, function: Callable[..., Any]) -> _Function:
        name = _qualname(function)
        if not callable(function):
            raise SignatureError(f"{name}: not callable")
        try:
            # RequestContext named here too: handlers often import it only under TYPE_CHECKING
            signature = inspect.signature(function, eval_str=True, locals=_KNOWN)
        except (NameError, SyntaxError, TypeError) as error:
            raise SignatureError(f"{name}: cannot resolve its annotations: {error}") from None
        except ValueError as error:
            raise SignatureError(f"{name}: {error}") from None
        context: str | None = None
        parameters: list[inspect.Parameter] = []
        injected: list[tuple[str, _Provider | str]] = []
        planned: dict[tuple[Any, bool], _Provider] = {}
        for parameter in signature.parameters.values():
            where = f"{name}: parameter {parameter.name!r}"
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise SignatureError(f"{where}: *args and **kwargs cannot be described; name each argument")
            if parameter.kind is parameter.POSITIONAL_ONLY:
                raise SignatureError(f"{where}: positional-only parameters cannot receive named arguments")
            if _is_context(parameter.annotation):
                if context is not None:
                    raise SignatureError(f"{where}: a second RequestContext parameter (the first is {context!r})")
                context = parameter.name
                continue
            what = _injection(parameter)
            if what is not None:
                injected.append((parameter.name, what if isinstance(what, str) else _plan(what, planned, (function,))))
                continue
            if isinstance(parameter.default, FieldInfo):
                raise SignatureError(f"{where}: write Annotated[T, Field(...)] = default instead of = Field(...)")
            parameters.append(parameter)
        description, docs = docstring_parts(function)
        return cls(
            name,
            tuple(parameters),
            signature.return_annotation,
            context,
            description,
            docs,
            _is_async(function),
            tuple(injected),
        )

    def adapter(self, annotation: Any, what: str) -> TypeAdapter[Any]:
        """The TypeAdapter of one annotation; pydantic's refusal as SignatureError naming ``what``."""
        try:
            return TypeAdapter(Any if annotation is _EMPTY else annotation)
        except (pydantic.PydanticUserError, TypeError, NameError) as error:
            raise SignatureError(f"{self.name}: {what}: {_first_line(error)}") from None

    def converters(self, primitives: frozenset[type]) -> dict[str, TypeAdapter[Any] | None]:
        """Each parameter's TypeAdapter, None for those that pass through."""
        return {
            p.name: None
            if _passes_through(p.annotation, primitives)
            else self.adapter(p.annotation, f"parameter {p.name!r}")
            for p in self.parameters
        }


def _first_line(error: BaseException) -> str:
    """pydantic's message without its "For further information visit ..." lines."""
    text = str(getattr(error, "message", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _argument_error(name: str, error: ValidationError, noun: str = "argument") -> ArgumentError:
    first = error.errors(include_url=False)[0]
    return ArgumentError(_path((name, *first["loc"])), " ".join(first["msg"].split()), noun)


def _from_string(adapter: TypeAdapter[Any], name: str, value: str, noun: str) -> Any:
    """A string converted in lax mode; JSON when it looks like an array or object and nothing else fits."""
    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        if value.lstrip()[:1] in ("[", "{"):
            try:
                return adapter.validate_json(value)
            except ValidationError:
                pass
        raise _argument_error(name, error, noun) from None


def _convert_strings(
    converters: dict[str, TypeAdapter[Any] | None], values: Mapping[str, str], noun: str
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in values.items():
        if name in converters:
            adapter = converters[name]
            out[name] = value if adapter is None else _from_string(adapter, name, value, noun)
    return out


# --- tools --------------------------------------------------------------------------------------


def _input_schema(function: _Function) -> dict[str, Any]:
    """The JSON Schema of one pydantic model holding the parameters."""
    fields: dict[str, Any] = {}
    for index, parameter in enumerate(function.parameters):
        base, metadata = _split(Any if parameter.annotation is _EMPTY else parameter.annotation)
        doc = function.docs.get(parameter.name)
        # The docstring's description first, so the parameter's own Field overrides it; the alias last, so the
        # property keeps the parameter's name (model fields are p0, p1, ...: no clash with BaseModel's names).
        extras = (
            *((pydantic.Field(description=doc),) if doc else ()),
            *metadata,
            pydantic.Field(alias=parameter.name),
        )
        annotated = Annotated.__class_getitem__((base, *extras))  # type: ignore[attr-defined]
        fields[f"p{index}"] = (annotated, ... if parameter.default is _EMPTY else parameter.default)
    try:
        model: type[pydantic.BaseModel] = pydantic.create_model(f"{function.name}.arguments", **fields)
        generated = model.model_json_schema(schema_generator=_Schema)
    except (pydantic.PydanticUserError, TypeError, NameError) as error:
        raise SignatureError(f"{function.name}: its parameters cannot be described: {_first_line(error)}") from None
    generated.pop("title", None)
    schema: dict[str, Any] = {"type": "object", "properties": generated.pop("properties", {})}
    for key in ("required", "$defs"):
        if key in generated:
            schema[key] = generated.pop(key)
    generated.pop("type", None)
    schema.update(generated)  # anything else pydantic puts at the root
    # An argument the function does not take is refused (an isError result naming it), not dropped:
    # a model that misspells a parameter learns it instead of getting the default.
    schema["additionalProperties"] = False
    return schema


def _output_schema(adapter: TypeAdapter[Any], function: _Function) -> tuple[dict[str, Any], bool]:
    """The output schema of a return annotation, and whether it wraps the value as ``{"result": value}``."""
    try:
        schema = adapter.json_schema(mode="serialization", schema_generator=_Schema)
    except pydantic.PydanticUserError as error:
        raise SignatureError(f"{function.name}: return annotation: {_first_line(error)}") from None
    schema.pop("title", None)
    target = schema
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):  # a recursive model is a $ref to itself
        target = schema.get("$defs", {}).get(reference.removeprefix("#/$defs/"), {})
    if target.get("type") == "object":
        return {"type": "object", **schema}, False
    defs = schema.pop("$defs", None)
    wrapper: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapper["$defs"] = defs  # hoisted: the wrapped schema's $refs point at the root
    return wrapper, True


_ANY: Final[TypeAdapter[Any]] = TypeAdapter(Any)


@dataclass(frozen=True, slots=True)
class ToolSignature:
    """A tool's schemas and conversions, read from a typed function once at registration."""

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wraps_result: bool
    description: str | None
    context_parameter: str | None
    is_async: bool
    _name: str = field(repr=False, compare=False)
    _converters: dict[str, TypeAdapter[Any] | None] = field(repr=False, compare=False)
    _returns: TypeAdapter[Any] | None = field(repr=False, compare=False)  # None: content results only
    _native: tuple[type, ...] = field(repr=False, compare=False)  # return values that are their own JSON
    # Parameters that pass through and want an int but no float: JSON Schema's "integer" admits 5.0.
    _integers: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    injected: Injected = field(default=(), repr=False, compare=False)  # (the module's rules on injection)

    @classmethod
    def of(
        cls, function: Callable[..., Any], *, output_schema: dict[str, Any] | EllipsisType | None = ...
    ) -> ToolSignature:
        """Read ``function``. ``output_schema``: ``...`` infers it from the return annotation, None declares
        none, a dict is used as given."""
        read = _Function.read(function)
        converters = read.converters(_TOOL_PRIMITIVES)  # first: a type pydantic refuses is named with its parameter
        input_schema = _input_schema(read)
        returns = read.returns
        plain = _split(returns)[0]
        adapter: TypeAdapter[Any] | None
        if _is_content(returns):
            adapter = None
        elif plain is _EMPTY or plain is Any:
            adapter = _ANY
        else:
            adapter = read.adapter(returns, "return annotation")
        wraps = False
        if output_schema is ...:
            output_schema = None
            if adapter is not None and plain not in (_EMPTY, Any, str, None, NoneType):
                output_schema, wraps = _output_schema(adapter, read)
        return cls(
            input_schema,
            output_schema,
            wraps,
            read.description,
            read.context,
            read.is_async,
            read.name,
            converters,
            adapter,
            _native_types(returns) if adapter is not None else (),
            frozenset(
                p.name
                for p in read.parameters
                if converters[p.name] is None
                and int in (members := _members(_split(p.annotation)[0]))
                and float not in members
            ),
            read.injected,
        )

    def call_arguments(self, arguments: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        """The keyword arguments for the function, from arguments already validated against ``input_schema``."""
        converters = self._converters
        kwargs: dict[str, Any] = {}
        integers = self._integers
        for name, value in arguments.items():
            if name in converters:
                adapter = converters[name]
                if adapter is not None:
                    try:
                        value = adapter.validate_python(value)
                    except ValidationError as error:
                        raise _argument_error(name, error) from None
                elif type(value) is float and name in integers:
                    value = int(value)  # 5.0, valid as an integer: the function gets the int it declared
                kwargs[name] = value
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        return kwargs

    def to_result(self, value: Any) -> CallToolResult:
        """The function's return value as a CallToolResult; TypeError when its annotation does not describe it."""
        if isinstance(value, CallToolResult):
            return value
        if isinstance(value, _CONTENT_TYPES):
            return CallToolResult([value])
        if isinstance(value, list | tuple) and value and all(isinstance(block, _CONTENT_TYPES) for block in value):
            return CallToolResult(list(value))
        data = self._serialise(value)
        if self.wraps_result:
            return CallToolResult([TextContent(dumps(data).decode())], structured_content={"result": data})
        if isinstance(data, str):
            return CallToolResult.text(data)
        if data is None:
            return CallToolResult()
        if isinstance(data, dict):
            return CallToolResult.structured(data)
        return CallToolResult.text(dumps(data).decode())  # no object to put in structuredContent

    def _serialise(self, value: Any) -> Any:
        if type(value) in self._native:
            return value
        if type(value) is bool:  # not native here, so the annotation has no bool; pydantic would pass it as an int
            raise TypeError(f"tool {self._name} returned a bool, which its return annotation does not describe")
        if self._returns is None:
            raise TypeError(f"tool {self._name} returned {type(value).__name__}, not the content it declares")
        try:
            return self._returns.dump_python(value, mode="json", warnings="error")
        except PydanticSerializationError as error:
            raise TypeError(
                f"tool {self._name} returned {type(value).__name__}, which its return annotation does not describe"
            ) from error


# --- prompts ------------------------------------------------------------------------------------


def _message(item: Any) -> PromptMessage:
    """One prompt message: a PromptMessage, a string or content block (a user message), or a role/content dict."""
    if isinstance(item, PromptMessage):
        return item
    if isinstance(item, (str, *_CONTENT_TYPES)):
        return PromptMessage.user(item)
    if isinstance(item, dict) and item.get("role") in ("user", "assistant"):
        content = item.get("content")
        if isinstance(content, dict):
            try:
                content = content_from_dict(content)
            except ValueError as error:
                raise TypeError(f"a prompt message with malformed content: {error}") from None
        if isinstance(content, (str, *_CONTENT_TYPES)):
            return PromptMessage(item["role"], TextContent(content) if isinstance(content, str) else content)
    raise TypeError(f"a prompt message must be a PromptMessage, str or role/content dict, not {type(item).__name__}")


@dataclass(frozen=True, slots=True)
class PromptSignature:
    """A prompt's arguments and conversions, read from a typed function once at registration."""

    arguments: list[PromptArgument]
    description: str | None
    context_parameter: str | None
    is_async: bool
    _converters: dict[str, TypeAdapter[Any] | None] = field(repr=False, compare=False)
    _required: tuple[str, ...] = field(repr=False, compare=False)
    injected: Injected = field(default=(), repr=False, compare=False)

    @classmethod
    def of(cls, function: Callable[..., Any]) -> PromptSignature:
        """Read ``function``: each parameter is an argument, required unless it has a default."""
        read = _Function.read(function)
        converters = read.converters(_STRINGS)
        arguments = []
        for parameter in read.parameters:
            info = FieldInfo.from_annotation(Any if parameter.annotation is _EMPTY else parameter.annotation)
            description = info.description or read.docs.get(parameter.name)
            arguments.append(PromptArgument(parameter.name, description, parameter.default is _EMPTY, info.title))
        required = tuple(argument.name for argument in arguments if argument.required)
        return cls(arguments, read.description, read.context, read.is_async, converters, required, read.injected)

    def call_arguments(self, arguments: dict[str, str], context: RequestContext) -> dict[str, Any]:
        """The keyword arguments for the function; ArgumentError for a missing or unconvertible argument."""
        for name in self._required:
            if name not in arguments:
                raise ArgumentError(name, "Field required")
        kwargs = _convert_strings(self._converters, arguments, "argument")
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        return kwargs

    def to_result(self, value: Any) -> GetPromptResult:
        """The function's return value as a GetPromptResult; TypeError for anything else."""
        if isinstance(value, GetPromptResult):
            result = value
        elif isinstance(value, _MESSAGE_TYPES):
            result = GetPromptResult([_message(value)])
        elif isinstance(value, list | tuple):
            result = GetPromptResult([_message(item) for item in value])
        else:
            raise TypeError(f"a prompt must return messages, str or GetPromptResult, not {type(value).__name__}")
        if result.description is None:
            result.description = self.description
        return result


# --- resources ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceSignature:
    """A resource template's reader, read from a typed function once at registration."""

    variables: tuple[str, ...]
    description: str | None
    context_parameter: str | None
    is_async: bool
    _converters: dict[str, TypeAdapter[Any] | None] = field(repr=False, compare=False)
    injected: Injected = field(default=(), repr=False, compare=False)

    @classmethod
    def of(cls, function: Callable[..., Any], variables: Sequence[str]) -> ResourceSignature:
        """Read ``function``: each template variable fills the parameter of that name."""
        read = _Function.read(function)
        names = {parameter.name for parameter in read.parameters}
        for variable in variables:
            if variable not in names:
                raise SignatureError(f"{read.name}: URI template variable {variable!r} has no parameter of that name")
        for parameter in read.parameters:
            if parameter.name not in variables and parameter.default is _EMPTY:
                raise SignatureError(
                    f"{read.name}: parameter {parameter.name!r} is not a URI template variable and has no default"
                )
        converters = {name: adapter for name, adapter in read.converters(_STRINGS).items() if name in variables}
        return cls(tuple(variables), read.description, read.context, read.is_async, converters, read.injected)

    def call_arguments(self, values: dict[str, str], context: RequestContext) -> dict[str, Any]:
        """The keyword arguments for the function from the template's values; ArgumentError naming a variable."""
        kwargs = _convert_strings(self._converters, values, "variable")
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        return kwargs

    def to_result(self, uri: str, value: Any, mime_type: str | None) -> ReadResourceResult:
        """The function's return value as a ReadResourceResult; TypeError for what JSON cannot hold."""
        if isinstance(value, ReadResourceResult):
            return value
        if isinstance(value, _CONTENTS_TYPES):
            return ReadResourceResult([value])
        if isinstance(value, list) and value and all(isinstance(c, _CONTENTS_TYPES) for c in value):
            return ReadResourceResult(list(value))
        if isinstance(value, str):
            return ReadResourceResult([TextResourceContents(uri, value, mime_type or "text/plain")])
        if isinstance(value, bytes | bytearray | memoryview):
            blob = base64.b64encode(value).decode("ascii")
            return ReadResourceResult([BlobResourceContents(uri, blob, mime_type or "application/octet-stream")])
        try:
            data = _ANY.dump_python(value, mode="json", warnings="error")
        except PydanticSerializationError as error:
            raise TypeError(f"a resource cannot be read as {type(value).__name__}") from error
        return ReadResourceResult([TextResourceContents(uri, dumps(data).decode(), mime_type or "application/json")])


# --- handlers: a typed function as the engine calls it -------------------------------------------
# Each adapter is async exactly when the function is, so a plain ``def`` keeps the engine's rule for
# sync handlers (a worker thread unless run_in_thread=False).


def _wrong_return(name: str, error: TypeError) -> McpError:
    """A value its annotation does not describe is the server's bug: an internal error on the wire."""
    logger.error("tool %s returned a value its annotation does not describe: %s", name, error)
    return McpError(INTERNAL_ERROR, "Internal error")


def tool_handler(function: Callable[..., Any], signature: ToolSignature, name: str) -> Callable[..., Any]:
    """``function`` as a ``Tool`` handler ``(arguments, context)``: arguments converted (an ``isError``
    result naming the field when they cannot be), the return value as ``to_result`` makes it."""
    call_arguments, to_result = signature.call_arguments, signature.to_result
    invalid = f"Invalid arguments for tool {name}: "

    if signature.injected:
        injected, is_async = signature.injected, signature.is_async

        async def run_injected(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
            try:
                keywords = call_arguments(arguments, context)
            except ArgumentError as error:
                return CallToolResult.error(invalid + str(error))
            value = await _call_injected(function, is_async, injected, keywords, context)
            try:
                return to_result(value)
            except TypeError as error:
                raise _wrong_return(name, error) from None

        return run_injected

    if signature.is_async:

        async def run_async(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
            try:
                keywords = call_arguments(arguments, context)
            except ArgumentError as error:
                return CallToolResult.error(invalid + str(error))
            value = await function(**keywords)
            try:
                return to_result(value)
            except TypeError as error:
                raise _wrong_return(name, error) from None

        return run_async

    def run(arguments: dict[str, Any], context: RequestContext) -> CallToolResult:
        try:
            keywords = call_arguments(arguments, context)
        except ArgumentError as error:
            return CallToolResult.error(invalid + str(error))
        value = function(**keywords)
        try:
            return to_result(value)
        except TypeError as error:
            raise _wrong_return(name, error) from None

    return run


def _keywords(
    signature: PromptSignature | ResourceSignature, problem: str
) -> Callable[[dict[str, str], RequestContext], dict[str, Any]]:
    """The keyword arguments for string values (prompt arguments, URI variables); one that cannot be
    converted is a JSON-RPC invalid-params error, ``problem: <what is wrong>``."""

    def keywords(values: dict[str, str], context: RequestContext) -> dict[str, Any]:
        try:
            return signature.call_arguments(values, context)
        except ArgumentError as error:
            raise McpError(INVALID_PARAMS, f"{problem}: {error}") from None

    return keywords


def prompt_handler(function: Callable[..., Any], signature: PromptSignature) -> Callable[..., Any]:
    """``function`` as a ``Prompt`` handler ``(arguments, context)``; an argument that cannot be
    converted is a JSON-RPC invalid-params error naming it."""

    keywords = _keywords(signature, "Invalid arguments for prompt")

    if signature.injected:
        injected, is_async = signature.injected, signature.is_async

        async def run_injected(arguments: dict[str, str], context: RequestContext) -> GetPromptResult:
            given = keywords(arguments, context)
            return signature.to_result(await _call_injected(function, is_async, injected, given, context))

        return run_injected

    if signature.is_async:

        async def run_async(arguments: dict[str, str], context: RequestContext) -> GetPromptResult:
            return signature.to_result(await function(**keywords(arguments, context)))

        return run_async

    def run(arguments: dict[str, str], context: RequestContext) -> GetPromptResult:
        return signature.to_result(function(**keywords(arguments, context)))

    return run


def resource_reader(
    function: Callable[..., Any], signature: ResourceSignature, mime_type: str | None
) -> Callable[..., Any]:
    """``function`` as a template reader ``(uri, variables, context)``; a variable that cannot be
    converted is a JSON-RPC invalid-params error naming it. A fixed resource has no variables:
    wrap this in ``lambda uri, context: reader(uri, {}, context)``."""

    keywords = _keywords(signature, "Invalid resource URI")

    if signature.injected:
        injected, is_async = signature.injected, signature.is_async

        async def read_injected(uri: str, values: dict[str, str], context: RequestContext) -> ReadResourceResult:
            given = keywords(values, context)
            value = await _call_injected(function, is_async, injected, given, context)
            return signature.to_result(uri, value, mime_type)

        return read_injected

    if signature.is_async:

        async def read_async(uri: str, values: dict[str, str], context: RequestContext) -> ReadResourceResult:
            return signature.to_result(uri, await function(**keywords(values, context)), mime_type)

        return read_async

    def read(uri: str, values: dict[str, str], context: RequestContext) -> ReadResourceResult:
        return signature.to_result(uri, function(**keywords(values, context)), mime_type)

    return read


# --- typed elicitation ------------------------------------------------------------------------------
# ``session.elicit(message, schema=Model)`` comes here (and only then is pydantic imported): the form's
# requested schema is generated from ``Model`` once, and an accepted answer is converted into one.

_T = typing.TypeVar("_T")
_FORM_KINDS: Final = frozenset({"string", "number", "integer", "boolean", "array"})
_FORMS_KEPT: Final = 256  # generated forms cached, by type (a model made in a loop must not grow it forever)
_NULL: Final = {"type": "null"}


@dataclass(frozen=True, slots=True)
class ElicitationForm(typing.Generic[_T]):
    """A type as an elicitation form: its ``schema`` (shared: do not mutate) and the conversion back.

    ``nullable`` names the properties of ``T | None`` fields whose schema shows no default: a form
    cannot send null, so they are not required and an answer without them gets None.
    """

    schema: dict[str, Any]
    adapter: TypeAdapter[_T] = field(repr=False)
    nullable: tuple[str, ...] = ()

    def convert(self, content: Mapping[str, Any] | None) -> _T:
        """The accepted content as a ``T``; ArgumentError naming the first field that does not fit."""
        values = dict(content or {})
        for name in self.nullable:
            values.setdefault(name, None)
        try:
            return self.adapter.validate_python(values)
        except ValidationError as error:
            first = error.errors(include_url=False)[0]
            raise ArgumentError(_path(first["loc"]), " ".join(first["msg"].split()), "field") from None


_forms: dict[Any, ElicitationForm[Any]] = {}


def elicitation_form(model: type[_T]) -> ElicitationForm[_T]:
    """The elicitation form of a pydantic model or dataclass (a TypedDict works too) of primitive fields.

    Fields may be str, int, float, bool, string enums (``Literal`` or ``Enum``), lists of those
    (multi-select), and ``| None`` of any of them; ``Field(description=..., title=...)`` and defaults
    are kept. ``$ref`` s are inlined and generated titles dropped, so the schema is the flat object
    ``check_elicitation_schema`` accepts. TypeError naming the field for what a form cannot express.
    """
    try:
        cached = _forms.get(model)
    except TypeError:  # an unhashable annotation: generated each time
        return _make_form(model)
    if cached is None:
        cached = _make_form(model)
        if len(_forms) >= _FORMS_KEPT:
            del _forms[next(iter(_forms))]
        _forms[model] = cached
    return cached


def _make_form(model: type[_T]) -> ElicitationForm[_T]:
    name = _qualname(model)
    try:
        adapter: TypeAdapter[_T] = TypeAdapter(model)
        generated = adapter.json_schema(schema_generator=_Schema)
    except (pydantic.PydanticUserError, TypeError, NameError) as error:
        raise TypeError(f"{name} cannot be an elicitation form: {_first_line(error)}") from None
    properties = generated.get("properties")
    if generated.get("type") != "object" or not isinstance(properties, dict):
        raise TypeError(f"{name} cannot be an elicitation form: it needs a pydantic model or dataclass of fields")
    defs = generated.get("$defs", {})
    form: dict[str, Any] = {}
    nullable: list[str] = []
    for key, prop in properties.items():
        form[key], is_nullable = _form_property(name, key, prop, defs)
        if is_nullable and "default" not in form[key]:
            nullable.append(key)
    required = [key for key in generated.get("required", ()) if key not in nullable]
    # Only what requestedSchema may hold: the model's title, docstring and $defs stay behind.
    schema: dict[str, Any] = {"type": "object", "properties": form}
    if required:
        schema["required"] = required
    try:
        check_elicitation_schema(schema)  # defaults and enums: the engine's own rules, named by property
    except ValueError as error:
        raise TypeError(f"{name} cannot be an elicitation form: {error}") from None
    return ElicitationForm(schema, adapter, tuple(nullable))


def _inline(prop: dict[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """``prop`` with its ``$ref`` (an Enum's definition) merged in, the definition's title and docstring left out."""
    reference = prop.get("$ref")
    if not isinstance(reference, str) or not reference.startswith("#/$defs/"):
        return prop
    target = defs.get(reference.removeprefix("#/$defs/"))
    if not isinstance(target, dict):
        return prop
    merged = {k: v for k, v in target.items() if k not in ("title", "description")}
    merged.update((k, v) for k, v in prop.items() if k != "$ref")
    return merged


def _single_enum(prop: dict[str, Any]) -> dict[str, Any]:
    """``Literal["x"]`` is generated as a ``const``; forms know it as a one-value enum."""
    if "const" in prop and "enum" not in prop:
        prop = {**prop, "enum": [prop["const"]]}
        del prop["const"]
    return prop


def _form_property(model: str, key: str, prop: Any, defs: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """One property as a form allows it, and whether the field is nullable; TypeError naming it otherwise."""
    nullable = False
    if isinstance(prop, dict) and isinstance(prop.get("anyOf"), list):
        members = [member for member in prop["anyOf"] if member != _NULL]
        if len(members) == 1 and len(prop["anyOf"]) == 2:
            nullable = True  # a form leaves a field out, it never sends null
            prop = {**members[0], **{k: v for k, v in prop.items() if k != "anyOf"}}
            if "default" in prop and prop["default"] is None:
                del prop["default"]
    if isinstance(prop, dict):
        prop = dict(_single_enum(_inline(prop, defs)))  # a copy: "items" is replaced below
        if isinstance(prop.get("items"), dict):
            prop["items"] = _single_enum(_inline(prop["items"], defs))
    if (
        not isinstance(prop, dict)
        or prop.get("type") not in _FORM_KINDS
        or any(word in prop for word in ("$ref", "anyOf", "allOf", "properties"))
    ):
        raise TypeError(
            f"{model}.{key} cannot be asked in an elicitation form: a field must be a str, int, float, bool, "
            "string enum (Literal or Enum), a list of string enum values, or one of those | None "
            "(no nested models, unions or free lists)"
        )
    return prop, nullable
