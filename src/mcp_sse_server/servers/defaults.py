"""The built-in servers a new ``mcp_server.json`` lists: plain data, importing nothing else.

``McpServerProvider`` adds these entries to a registry that lacks them (see its
module docstring); pass ``default_servers=`` to it for another set.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

__all__ = ["DEFAULT_SERVERS"]

DEFAULT_SERVERS: Final[Mapping[str, Mapping[str, Any]]] = MappingProxyType(
    {
        "Math": MappingProxyType({"type": "inmemory", "command": "math"}),
        "Artifact Instructions": MappingProxyType({"type": "inmemory", "command": "artifact_instructions"}),
    }
)
