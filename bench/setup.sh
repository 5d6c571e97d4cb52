#!/usr/bin/env bash
# Installs everything the benchmark needs; idempotent, safe to re-run.
#   bench/setup.sh
# - wrk from Debian's packages (load generator);
# - the peers, each in its own environment under bench/.peers/ (git-ignored),
#   never as dependencies of this project: official Python SDK and fastmcp in
#   separate virtualenvs (they pin different `mcp` versions), the TypeScript
#   SDK with npm into bench/.peers/ts/ beside its peer script;
# - matplotlib in bench/.peers/plot/, for plot.py's chart only (never a dependency of
#   this project; run.py skips the chart, saying so, when it is missing);
# - this project in the checkout's own .venv (the one scripts/setup.sh makes
#   and the tests use), so the benchmark measures the working tree.
# A stamp file per step skips work already done; delete bench/.peers to redo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
peers="$here/.peers"
mkdir -p "$peers"

# Exact versions, so figures from two runs compare the same peers.
MCP_VERSION=2.3.0
FASTMCP_VERSION=4.1.6
UVICORN_VERSION=0.54.0
HTTPTOOLS_VERSION=0.9.0
UVLOOP_VERSION=0.23.0
TS_SDK_VERSION=1.32.2
ZOD_VERSION=4.6.7
MATPLOTLIB_VERSION=3.11.2  # bench-only: plot.py's chart, in a virtualenv of its own

log() { echo "[bench/setup] $*" >&2; }

if ! command -v wrk >/dev/null 2>&1; then
  log "installing wrk"
  if ! apt-get install -y -q wrk >/dev/null 2>&1; then
    apt-get update -q >/dev/null
    apt-get install -y -q wrk >/dev/null
  fi
fi
command -v taskset >/dev/null || { log "taskset (util-linux) is missing"; exit 1; }

# make_venv DIR STAMP_TEXT PACKAGES...: a virtualenv holding exactly PACKAGES.
make_venv() {
  local dir=$1 want=$2; shift 2
  if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
    return
  fi
  log "creating $dir"
  rm -rf "$dir"
  python3 -m venv "$dir" || return 1
  "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@" || return 1
  echo "$want" >"$dir/.installed"
}

# A peer that cannot be installed is skipped by run.py (it says so); the rest still runs.
py_common=("uvicorn==$UVICORN_VERSION" "httptools==$HTTPTOOLS_VERSION" "uvloop==$UVLOOP_VERSION")
make_venv "$peers/official" "mcp=$MCP_VERSION uvicorn=$UVICORN_VERSION" "mcp==$MCP_VERSION" "${py_common[@]}" \
  || { log "the official SDK could not be installed: it will be skipped"; rm -rf "$peers/official"; }
make_venv "$peers/fastmcp" "fastmcp=$FASTMCP_VERSION uvicorn=$UVICORN_VERSION" \
  "fastmcp==$FASTMCP_VERSION" "${py_common[@]}" \
  || { log "fastmcp could not be installed: it will be skipped"; rm -rf "$peers/fastmcp"; }

make_venv "$peers/plot" "matplotlib=$MATPLOTLIB_VERSION" "matplotlib==$MATPLOTLIB_VERSION" \
  || { log "matplotlib could not be installed: run.py will skip the chart"; rm -rf "$peers/plot"; }

install_ts() {
  local ts=$1 want=$2
  if [ ! -f "$ts/.installed" ] || [ "$(cat "$ts/.installed")" != "$want" ]; then
    command -v npm >/dev/null || { log "npm is missing (Node.js 18 or newer is needed)"; return 1; }
    log "installing the TypeScript SDK into $ts"
    rm -rf "$ts" && mkdir -p "$ts" || return 1
    printf '{"name":"mcp-bench-ts-peer","private":true,"type":"module"}\n' >"$ts/package.json"
    (cd "$ts" && npm install --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/sdk@$TS_SDK_VERSION" "zod@$ZOD_VERSION") || return 1
    echo "$want" >"$ts/.installed"
  fi
  # ESM resolves packages relative to the script, so it lives beside node_modules.
  cp "$here/peers/peer_typescript_sdk.mjs" "$ts/peer_typescript_sdk.mjs"
}
install_ts "$peers/ts" "sdk=$TS_SDK_VERSION zod=$ZOD_VERSION" \
  || { log "the TypeScript SDK could not be installed: it will be skipped"; rm -rf "$peers/ts"; }

# This project: the checkout's .venv, made the way scripts/setup.sh makes it.
# run.py also puts src/ on PYTHONPATH, so when the editable install cannot be
# made yet (a half-built checkout) the runtime dependencies are enough. An
# install with any extra (scripts/setup.sh's stamp newer than pyproject.toml)
# holds the base one: then nothing is reinstalled under tests using .venv.
installed() {
  local stamp
  for stamp in "$root"/.venv/.installed-*; do
    [ -f "$stamp" ] && [ ! "$root/pyproject.toml" -nt "$stamp" ] && return 0
  done
  return 1
}
if installed; then
  :
elif ! (cd "$root" && source scripts/setup.sh && setup_python) >"$peers/project-install.log" 2>&1; then
  log "editable install of the project failed (see $peers/project-install.log);" \
    "installing its runtime dependencies only"
  deps=$(python3 -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' \
    "$root/pyproject.toml")
  mapfile -t dep_list <<<"$deps"
  "$root/.venv/bin/python" -m pip install -q --disable-pip-version-check "${dep_list[@]}"
fi
log "ready"
