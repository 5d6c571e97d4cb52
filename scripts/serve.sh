#!/usr/bin/env bash
# Set everything up (virtualenv, the package) and serve the built-in demo
# server over Streamable HTTP on http://127.0.0.1:8080/mcp.
#   scripts/serve.sh [serve options...]     e.g. scripts/serve.sh --port 9000
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
setup_python
exec .venv/bin/mcp-sse-server serve --port "${PORT:-8080}" "$@"
