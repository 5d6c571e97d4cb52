"""MemoryServerFactory: maps a config ``command`` to a built-in server.

>>> server = MemoryServerFactory.create_memory_server("math")
>>> MemoryServerFactory.register("echo", lambda: McpServer("echo", "1.0.0"))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ..engine.server import McpServer

__all__ = ["MemoryServerFactory", "UnknownServerError"]


class UnknownServerError(LookupError):
    """No in-memory server is registered under that command."""


def _math() -> McpServer:
    from .math import MathServer

    return MathServer()


def _artifacts() -> McpServer:
    from .artifact_instructions import ArtifactInstructionsServer

    return ArtifactInstructionsServer()


class MemoryServerFactory:
    """Builds in-memory servers by command name; ``register`` adds your own."""

    _builders: ClassVar[dict[str, Callable[[], McpServer]]] = {
        "math": _math,
        "artifact_instructions": _artifacts,
    }

    @classmethod
    def register(cls, command: str, builder: Callable[[], McpServer]) -> None:
        """Make ``command`` build a server with ``builder()`` (replacing any earlier one)."""
        if not command or not isinstance(command, str):
            raise ValueError("command must be a non-empty string")
        cls._builders[command] = builder

    @classmethod
    def unregister(cls, command: str) -> None:
        cls._builders.pop(command, None)

    @classmethod
    def commands(cls) -> list[str]:
        return sorted(cls._builders)

    @classmethod
    def create_memory_server(cls, command: str) -> McpServer:
        """A new server for ``command``; UnknownServerError lists the known ones."""
        builder = cls._builders.get(command)
        if builder is None:
            raise UnknownServerError(
                f"Unknown in-memory server {command!r}; known servers: {', '.join(cls.commands())}"
            )
        return builder()
