"""What a TARGET names, read one way by every command: ``serve``, ``dev``, ``install`` and the
client commands (``tools``, ``call``, ``resources``, ``prompts``, ``inspect``).

The grammar, by spelling first (nothing is imported to decide what kind a TARGET is):

1. ``http://...`` or ``https://...``: a remote server (client commands and ``install`` only).
2. ``path/to/file.py``, ``path/to/file.py:attr`` or ``module:attr``: your Python, loaded in this
   process. ``attr`` (dots allowed) is an ``McpServer`` or a factory returning one.
3. A built-in name (``demo``, ``math``, ``artifact_instructions``).
4. A name in the server registry (``mcp_server.json``'s ``mcpServers``): client commands and
   ``install`` look it up (``reach.py``).
5. Anything else is a command line for a stdio server: quote it.

A bare ``file.py`` serves the first of ``server``, ``mcp`` and ``app`` it defines that is an
``McpServer`` or a function; failing those, the one ``McpServer`` among its globals. It says which
on stderr, in one line, and a file with none or several is a usage error naming the candidates.

:func:`resolve_target` loads a Python or built-in TARGET as a :class:`Target`; :func:`target_source`
finds its file without running it (for ``dev``); :func:`is_python_target` tells one by spelling.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

import click

from .builtin import DEMO, builtin_servers
from .errors import BadUsage
from .render import safe_stem

if TYPE_CHECKING:
    from ..engine.server import McpServer
    from ..engine.skills import SkillCatalog

# The attributes a bare file.py is searched for, in this order (the names people give a server).
DEFAULT_ATTRIBUTES: Final = ("server", "mcp", "app")
_ATTRIBUTE: Final = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def is_bare_file(word: str) -> bool:
    """Whether ``word`` is ``path/to/file.py`` with no attribute: one word ending in ``.py``.

    >>> is_bare_file("app.py"), is_bare_file("src/app.py"), is_bare_file("python app.py"), is_bare_file("app.py:mcp")
    (True, True, False, False)
    """
    return word.endswith(".py") and not any(character.isspace() for character in word)


def is_python_target(word: str) -> bool:
    """Whether ``word`` has the shape of ``file.py``, ``file.py:attr`` or ``module:attr``, by its
    spelling alone (nothing is imported): how a command tells it from a command line or a URL.

    >>> is_python_target("my_app:build"), is_python_target("app/server.py:mcp"), is_python_target("server.py")
    (True, True, True)
    >>> is_python_target("python server.py"), is_python_target("http://h:8080/mcp"), is_python_target("host:8080")
    (False, False, False)
    """
    if is_bare_file(word):
        return True
    location, _, attribute = word.rpartition(":")
    if not location or any(character.isspace() for character in word) or not _ATTRIBUTE.fullmatch(attribute):
        return False
    return location.endswith(".py") or "/" in location or os.sep in location or bool(_ATTRIBUTE.fullmatch(location))


def split_target(target: str) -> tuple[str, str, bool]:
    """``(location, attribute, is_file)`` of ``module:attr`` or ``path/to/file.py:attr``; BadUsage for another shape."""
    location, _, attribute = target.rpartition(":")
    if not location or not attribute:
        raise BadUsage(f"{target!r} is not path/to/file.py, path/to/file.py:factory or module:factory")
    return location, attribute, location.endswith(".py") or os.sep in location or "/" in location


def _importable_from_cwd() -> None:
    # Like `python -m`: modules in the current directory are importable.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())


def _load_module(location: str, is_file: bool) -> ModuleType:
    """The module at ``location``: a file run as ``python file.py`` would see it, or a module imported."""
    import importlib
    import importlib.util

    if not is_file:
        _importable_from_cwd()
        try:
            return importlib.import_module(location)
        except ModuleNotFoundError as error:
            if error.name and location.startswith(error.name):
                raise BadUsage(f"no module named {location!r}") from None
            raise
    path = os.path.abspath(location)
    if not os.path.isfile(path):
        raise BadUsage(f"no such file: {location}")
    # The file's directory goes on sys.path so it can import its neighbours, as `python file.py` would.
    sys.path.insert(0, os.path.dirname(path))
    name = "_mcp_target_" + safe_stem(os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BadUsage(f"cannot load {location} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _attribute(module: ModuleType, location: str, attribute: str) -> Any:
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise BadUsage(f"{location} has no attribute {attribute!r}") from None
    return value


def default_attribute(module: ModuleType, location: str) -> tuple[str, str]:
    """``(attribute, why)``: what a bare ``location`` (a file.py) serves, by the rule in the module
    docstring. BadUsage naming the candidates when there is none or more than one."""
    import inspect

    from ..engine.server import McpServer

    for name in DEFAULT_ATTRIBUTES:
        value = getattr(module, name, None)
        if isinstance(value, McpServer):
            return name, f"the McpServer named {name}"
        if inspect.isfunction(value):
            return name, f"the factory named {name}"
    found: dict[int, str] = {}  # one name per server object, the first it has
    for name, value in vars(module).items():
        if isinstance(value, McpServer) and not name.startswith("_"):
            found.setdefault(id(value), name)
    names = list(found.values())
    if len(names) == 1:
        return names[0], "the only McpServer it defines"
    looked = ", ".join(DEFAULT_ATTRIBUTES)
    if not names:
        raise BadUsage(
            f"{location} defines no McpServer: none named {looked}, and no other at module level; "
            f"name a factory, as {location}:build"
        )
    raise BadUsage(f"{location} defines several McpServers ({', '.join(names)}): name one, as {location}:{names[0]}")


def python_target(target: str) -> tuple[str, Any]:
    """``(label, object)`` for a Python TARGET: ``file.py`` (its attribute chosen and said on
    stderr), ``file.py:attr`` or ``module:attr``. The label always names the attribute."""
    if is_bare_file(target):
        module = _load_module(target, True)
        attribute, why = default_attribute(module, target)
        click.echo(f"Using {target}:{attribute} ({why})", err=True)
        return f"{target}:{attribute}", getattr(module, attribute)
    location, attribute, is_file = split_target(target)
    return target, _attribute(_load_module(location, is_file), location, attribute)


def target_source(target: str | None) -> str:
    """The source file of TARGET, found without running it: the file of ``file.py`` or
    ``file.py:attr``, the module's file of ``module:attr`` (a package's ``__init__.py``), the
    built-in servers' package for a built-in. BadUsage when there is none."""
    import importlib.util

    name = target or DEMO
    if name in builtin_servers():
        found = importlib.util.find_spec("..servers", __package__)
        assert found is not None and found.origin is not None  # this package's own
        return found.origin
    if not is_python_target(name):
        raise BadUsage(unknown_target(name))
    location, _, is_file = (name, "", True) if is_bare_file(name) else split_target(name)
    if is_file:
        if not os.path.isfile(location):
            raise BadUsage(f"no such file: {location}")
        return os.path.abspath(location)
    _importable_from_cwd()
    try:
        spec = importlib.util.find_spec(location)  # imports the parent packages of a dotted name, not the module
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        raise BadUsage(f"no module named {location!r}")
    if spec.origin is None or not os.path.isfile(spec.origin):
        raise BadUsage(f"{location} has no source file to watch")
    return spec.origin


@dataclasses.dataclass(frozen=True)
class Target:
    """What a Python or built-in TARGET names: its ``label``, a ``factory`` of its server, and
    whether one server may serve every session (``shared``) or each session gets its own."""

    label: str
    factory: Callable[[], McpServer]
    shared: bool
    instance: bool = False  # TARGET is an McpServer itself, not a factory

    def served(self, *, per_session: bool = False) -> McpServer | Callable[[], McpServer]:
        """One server for every session, or the factory to call once per session.

        The isolation rule: a server object and a built-in are shared; a
        ``module:factory`` keeps the seed's contract (called once per session)
        unless it is marked with ``shared_server``; ``per_session`` calls any
        factory per session.
        """
        if per_session and self.instance:
            raise BadUsage(f"--server-per-session needs a factory: {self.label} is an McpServer itself")
        if per_session or not self.shared:
            return self.factory
        return self.factory()

    def with_skills(self, catalogs: Sequence[SkillCatalog]) -> Target:
        """This target with ``catalogs`` added to every server it builds (``--skills``): the first
        server is built now, so that a skill clashing with the target's resources fails before the
        port opens, and is what the factory's next call returns."""
        from ..engine.skill_format import SkillFormatError

        if not catalogs:
            return self
        factory = self.factory

        def build() -> McpServer:
            server = factory()
            for catalog in catalogs:
                server.add_skills(catalog)
            return server

        try:
            first = [build()]
        except SkillFormatError as error:
            raise BadUsage(f"--skills: {error}") from None

        def skilled() -> McpServer:
            return first.pop() if first else build()

        return dataclasses.replace(self, factory=skilled)


def unknown_target(name: str) -> str:
    """The usage error for a TARGET ``serve`` cannot load, saying what it takes."""
    from ..engine.transports import is_url

    known = ", ".join(sorted(builtin_servers()))
    if is_url(name):
        return f"{name} is a URL: serve serves your Python or a built-in ({known}); `tools {name}` uses a URL"
    return (
        f"unknown server {name!r}; use a built-in ({known}), path/to/file.py, path/to/file.py:factory or module:factory"
    )


def resolve_target(target: str | None) -> Target:
    """The :class:`Target` of a Python or built-in TARGET: none (the demo), a built-in name,
    ``file.py``, ``file.py:attr`` or ``module:attr`` (a factory or an McpServer).

    The factory is called once now, so a broken one fails before the port
    opens; that first server is what the factory's next call returns, so no
    server is built in vain.
    """
    from ..engine.server import McpServer, is_shared_server
    from ..engine.transports import is_url

    builtins = builtin_servers()
    name = target or DEMO
    if is_url(name):
        raise BadUsage(unknown_target(name))
    if name in builtins:
        factory = builtins[name]
        shared = True  # ours: no per-client state, nothing sent outside a request
    elif is_python_target(name) or ":" in name:
        name, factory = python_target(name)
        if isinstance(factory, McpServer):
            instance = factory
            return Target(name, lambda: instance, shared=True, instance=True)
        if not callable(factory):
            raise BadUsage(f"{name} is not callable")
        shared = is_shared_server(factory)
    else:
        raise BadUsage(unknown_target(name))
    first = factory()
    if not isinstance(first, McpServer):
        raise BadUsage(f"{name} returned {type(first).__name__}, not an McpServer")
    pending = [first]

    def built() -> McpServer:
        if pending:
            return pending.pop()
        server = factory()
        if not isinstance(server, McpServer):
            raise TypeError(f"{name} returned {type(server).__name__}, not an McpServer")
        return server

    return Target(name, built, shared=shared)
