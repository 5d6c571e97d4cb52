"""A stdio MCP server built with the official Python SDK (PyPI ``mcp``), so the command is tested
against a server this project did not write. Run as a script by test_stdio.py."""

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-stdio-fixture")


@server.tool()
def shout(text: str, times: int = 1) -> str:
    """Upper-case text, repeated."""
    return " ".join([text.upper()] * times)


@server.tool()
def total(values: list[float]) -> float:
    """The sum of a list of numbers."""
    return sum(values)


@server.tool()
def getenv(name: str) -> str:
    """An environment variable of this process, or (unset)."""
    return os.environ.get(name, "(unset)")


@server.tool()
def fail(reason: str) -> str:
    """Always fails with reason."""
    raise ValueError(reason)


if __name__ == "__main__":
    server.run("stdio")
