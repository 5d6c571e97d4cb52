#!/usr/bin/env bash
# Refresh the locks on purpose: every test-time and tool dependency at the newest release its
# input allows, with hashes. Nothing else ever changes a lock; scripts/setup.sh only reads them.
#   scripts/lock.sh            the Python locks (locks/*.txt from locks/*.in and pyproject.toml)
#   scripts/lock.sh --npm      the npm lock too (tests/node/package-lock.json from package.json)
# Then run scripts/test.sh (it rebuilds every environment whose lock changed) and commit the
# locks with the code they pass with. locks/README.md says what is locked where.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

npm_too=0
for argument in "$@"; do
  case "$argument" in
    --npm) npm_too=1 ;;
    *) echo "usage: scripts/lock.sh [--npm]" >&2; exit 2 ;;
  esac
done

# The resolver, in an environment of its own, from its own lock.
make_env .tools/uv locks/uv.txt
uv=.tools/uv/bin/uv
compile() {  # compile OUTPUT INPUT... [uv options]
  local output=$1; shift
  echo "== $output"
  "$uv" pip compile --quiet --upgrade --generate-hashes --python-version "$LOCK_PYTHON" -o "$output" "$@"
}

compile locks/pip.txt locks/pip.in
compile locks/uv.txt locks/uv.in
compile locks/test.txt pyproject.toml locks/build.in --extra test --extra redis
# The demo's environment: the runtime dependencies at the test lock's versions, so that the
# environment the tests pass in also serves the demo.
compile locks/runtime.txt pyproject.toml locks/build.in --extra redis --constraint locks/test.txt
compile locks/fastmcp.txt locks/fastmcp.in
compile locks/mcp-1.2.1.txt locks/mcp-1.2.1.in

if [ "$npm_too" -eq 1 ]; then
  echo "== tests/node/package-lock.json"
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  cp tests/node/package.json "$scratch/"
  (cd "$scratch" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund --loglevel=error)
  cp "$scratch/package-lock.json" tests/node/package-lock.json
fi
git status --short locks tests/node/package-lock.json
