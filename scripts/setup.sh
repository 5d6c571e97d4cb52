# Sourced by the other scripts: idempotent set-up steps.
# Everything lands inside the checkout (.venv, .tools), nothing system-wide.

# Every environment is built from a lock in locks/ (exact versions with hashes; scripts/lock.sh
# refreshes them, nothing here does), and rebuilt from scratch when its lock changes, so that
# what a fresh clone installs is what the last green run had, whatever upstream releases since.
LOCK_PYTHON=3.11  # the Python the locks are resolved for (major.minor)

# check_python: python3 is the Python the locks were made for.
check_python() {
  local version
  version=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$version" != "$LOCK_PYTHON" ]; then
    echo "setup: python3 is $version; the locks are for Python $LOCK_PYTHON" >&2
    return 1
  fi
}

# make_env DIR LOCK: a virtualenv at DIR holding exactly what LOCK names, with pip from
# locks/pip.txt. Kept while its stamp (the locks' digest) matches; otherwise made anew. pip's
# output goes to DIR.log and is shown only when it fails.
make_env() {
  local dir=$1 lock=$2
  local want
  want=$(cat "$lock" locks/pip.txt | sha256sum | cut -c1-32)
  if [ -f "$dir/.lock" ] && [ "$(cat "$dir/.lock")" = "$want" ]; then
    return 0
  fi
  check_python
  echo "== setting up $dir from $lock (once per lock change, about 30 s; pip's log: $dir.log)"
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  python3 -m venv "$dir"
  local pip=("$dir/bin/python" -m pip install --disable-pip-version-check --no-input --require-hashes --no-deps)
  if ! { "${pip[@]}" -r locks/pip.txt && "${pip[@]}" -r "$lock"; } >"$dir.log" 2>&1; then
    cat "$dir.log" >&2
    echo "setup: installing $lock into $dir failed (log above)" >&2
    return 1
  fi
  echo "$want" >"$dir/.lock"
}

# setup_python [test]: .venv with this package in place, from locks/runtime.txt (the demo's) or
# locks/test.txt (everything the suite and the linters need; it serves the demo too).
setup_python() {
  local lock=locks/runtime.txt
  if [ "${1:-}" = test ]; then
    lock=locks/test.txt
  elif [ -f .venv/.lock ] && [ "$(cat .venv/.lock)" = "$(cat locks/test.txt locks/pip.txt | sha256sum | cut -c1-32)" ]; then
    lock=locks/test.txt  # the test environment holds the runtime's pins: keep it
  fi
  local project
  project=$(sha256sum pyproject.toml | cut -c1-16)
  make_env .venv "$lock" || return 1
  if [ ! -f .venv/.project ] || [ "$(cat .venv/.project)" != "$project" ]; then
    # In place, with the build backend from the lock (no isolated build fetching its own).
    echo "== installing this checkout into .venv (editable)"
    if ! .venv/bin/python -m pip install --disable-pip-version-check --no-input --no-deps --no-build-isolation \
      -e . >.venv.log 2>&1; then
      cat .venv.log >&2
      return 1
    fi
    echo "$project" >.venv/.project
  fi
}

# setup_latest: .venv-latest, this package with the newest release of every dependency its ranges
# (pyproject.toml) allow, test tools included; no lock. For scripts/test.sh --latest, to find
# upstream drift on purpose. Remade on every call.
setup_latest() {
  check_python
  echo "== setting up .venv-latest (newest releases, no lock)"
  rm -rf .venv-latest
  python3 -m venv .venv-latest
  if ! .venv-latest/bin/python -m pip install --disable-pip-version-check --no-input --upgrade \
    -e ".[test,redis]" >.venv-latest.log 2>&1; then
    cat .venv-latest.log >&2
    return 1
  fi
  .venv-latest/bin/python -m pip freeze --exclude-editable >.venv-latest/versions.txt 2>/dev/null
}

# Node 22 (the conformance suite needs it), the conformance suite and the TypeScript SDK, all
# from the npm registry into .tools/node, as tests/node/package-lock.json has them (npm ci).
setup_node() {
  local dir=.tools/node
  local want
  want=$(cat tests/node/package.json tests/node/package-lock.json | sha256sum | cut -c1-32)
  if [ ! -f "$dir/.lock" ] || [ "$(cat "$dir/.lock")" != "$want" ]; then
    echo "== setting up $dir from tests/node/package-lock.json"
    rm -rf "$dir"
    mkdir -p "$dir"
    cp tests/node/package.json tests/node/package-lock.json "$dir/"
    if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$dir.log" 2>&1; then
      cat "$dir.log" >&2
      echo "setup: npm ci in $dir failed (log above)" >&2
      return 1
    fi
    echo "$want" >"$dir/.lock"
  fi
  export MCP_TEST_NODE="$PWD/$dir/node_modules/node/bin/node"
  export MCP_TEST_NODE_MODULES="$PWD/$dir/node_modules"
}

# fastmcp for the peer matrix (tests/client/test_peer_matrix.py), from locks/fastmcp.txt, in a
# virtualenv of its own under .tools/fastmcp: it pins its own `mcp`, kept apart from .venv's so
# that neither moves the other. Exports MCP_TEST_FASTMCP_PYTHON.
setup_fastmcp() {
  make_env .tools/fastmcp locks/fastmcp.txt || return 1
  export MCP_TEST_FASTMCP_PYTHON="$PWD/.tools/fastmcp/bin/python"
}

# The official Python SDK 1.2.1 (protocol 2024-11-05, before server/discover) as a real old server
# for the probe-recovery tests (tests/client/test_probe_recovery.py), from locks/mcp-1.2.1.txt, in a
# virtualenv of its own under .tools/mcp-1.2.1 (.venv has mcp 2.3). Exports MCP_TEST_OLD_SDK_PYTHON.
setup_old_sdk() {
  make_env .tools/mcp-1.2.1 locks/mcp-1.2.1.txt || return 1
  export MCP_TEST_OLD_SDK_PYTHON="$PWD/.tools/mcp-1.2.1/bin/python"
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

# Debian's Chromium for the browser tests (MCP Apps rendered by playwright-core from the npm lock,
# which drives this binary and downloads none). Installed only when none is on PATH; needs root
# or sudo, like setup_redis. Exports MCP_TEST_CHROMIUM.
setup_chromium() {
  if ! command -v chromium >/dev/null 2>&1; then
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      sudo="sudo"
    fi
    echo "== installing chromium (Debian package)"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  command -v chromium >/dev/null 2>&1 || return 1
  export MCP_TEST_CHROMIUM
  MCP_TEST_CHROMIUM=$(command -v chromium)
}
