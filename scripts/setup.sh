# Sourced by the other scripts: idempotent set-up steps.
# Everything lands inside the checkout (.venv, .tools), nothing system-wide.

setup_python() {  # setup_python [extra]
  local extra=${1:-}
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
  fi
  local stamp=".venv/.installed-${extra:-base}"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    if [ -n "$extra" ]; then
      .venv/bin/python -m pip install -q -e ".[$extra]"
    else
      .venv/bin/python -m pip install -q -e .
    fi
    touch "$stamp"
  fi
}

# Node 22 (the conformance suite needs it), the conformance suite and the
# TypeScript SDK client, all from the npm registry into .tools/node.
setup_node() {
  local dir=.tools/node
  local stamp="$dir/.installed"
  if [ ! -f "$stamp" ] || [ tests/node/package.json -nt "$stamp" ]; then
    mkdir -p "$dir"
    cp tests/node/package.json "$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error)
    touch "$stamp"
  fi
  export MCP_TEST_NODE="$PWD/$dir/node_modules/node/bin/node"
  export MCP_TEST_NODE_MODULES="$PWD/$dir/node_modules"
}

# fastmcp for the peer matrix (tests/client/test_peer_matrix.py), pinned, in a virtualenv of its
# own under .tools/fastmcp: it pins its own `mcp` (4.1.6 brings mcp 2.3.0), kept apart from .venv's
# so that neither moves the other. The stamp names the pin, so changing the version reinstalls.
# Exports MCP_TEST_FASTMCP_PYTHON.
setup_fastmcp() {
  local version=4.1.6
  local dir=.tools/fastmcp
  local stamp="$dir/.installed"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "fastmcp==$version" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/python" -m pip install -q --disable-pip-version-check "fastmcp==$version"
    echo "fastmcp==$version" >"$stamp"
  fi
  export MCP_TEST_FASTMCP_PYTHON="$PWD/$dir/bin/python"
}

# The official Python SDK 1.2.1 (protocol 2024-11-05, before server/discover) as a real old server
# for the probe-recovery tests (tests/client/test_probe_recovery.py), in a virtualenv of its own
# under .tools/mcp-1.2.1: .venv has mcp 2.3. Its dependencies are pinned to releases of its time
# (early 2025): with today's pydantic it does not even import (pydantic._internal._typing_extra
# lost eval_type_backport in 2.11). The stamp names the pins, so changing one reinstalls.
# Exports MCP_TEST_OLD_SDK_PYTHON.
setup_old_sdk() {
  local dir=.tools/mcp-1.2.1
  local stamp="$dir/.installed"
  local pins="mcp==1.2.1 pydantic==2.10.6 pydantic-settings==2.7.1 anyio==4.8.0 starlette==0.45.3 sse-starlette==2.2.1 uvicorn==0.34.0 httpx==0.28.1"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$pins" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir"
    # shellcheck disable=SC2086  # one argument per pin
    "$dir/bin/python" -m pip install -q --disable-pip-version-check $pins
    echo "$pins" >"$stamp"
  fi
  export MCP_TEST_OLD_SDK_PYTHON="$PWD/$dir/bin/python"
}

# A redis-server for the Redis store tests (tests/stores start their own, on a
# loopback port). Debian's package, installed only when none is on PATH; needs
# root (CI runs as root on a fresh clone) or sudo.
setup_redis() {
  if command -v redis-server >/dev/null 2>&1; then
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
  fi
  echo "== installing redis-server (Debian package)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  # The package may start a system service on port 6379; the tests never use it.
  command -v redis-server >/dev/null 2>&1
}
