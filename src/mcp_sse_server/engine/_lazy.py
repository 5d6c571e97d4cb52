"""Lazy package exports, each name written once: in the package's ``if TYPE_CHECKING:`` imports.

A package's public names are the names its ``__init__.py`` imports under ``if TYPE_CHECKING:``,
each as ``from .module import Name as Name`` (the explicit re-export form, so that type checkers
see them as the package's own). At run time those imports do not run: ``lazy_exports`` reads
them from the package's source the first time a name is asked for, and imports a name's module
then. So ``import mcp_sse_server`` (and the command line's ``--help``) does not pay for orjson,
uvicorn or httpx before anything needs them, and a new public name is one import line.

``__all__`` is the same names, made when asked for (``from package import *`` asks).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports", "type_checking_exports"]


def type_checking_exports(source: str) -> dict[str, str]:
    """The names a package's source imports under ``if TYPE_CHECKING:``, each to its module as
    written there (``".engine.types"``, relative to the package)."""
    import ast  # (here: ``import mcp_sse_server`` would pay for the parser before any name is asked for)

    exports: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    module = "." * statement.level + (statement.module or "")
                    for alias in statement.names:
                        exports[alias.asname or alias.name] = module
    return exports


def lazy_exports(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``__init__.py`` is ``init_file``."""
    table: dict[str, str] = {}

    def exports() -> dict[str, str]:
        if not table:
            with open(init_file, encoding="utf-8") as source:
                table.update(type_checking_exports(source.read()))
        return table

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            value: Any = sorted(exports())
        else:
            module = exports().get(name)
            if module is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(importlib.import_module(module, package), name)
        importlib.import_module(package).__dict__[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(exports())

    return __getattr__, __dir__
