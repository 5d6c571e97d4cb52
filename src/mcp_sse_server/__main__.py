"""``python -m mcp_sse_server``: the same as the ``mcp-sse-server`` command."""

from .cli import main

if __name__ == "__main__":
    main()
