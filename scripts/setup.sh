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
