#!/usr/bin/env bash
# Set everything up from the locks (virtualenv, Python packages, Node 22, the conformance suite and
# the TypeScript SDK, fastmcp, the official SDK 1.2.1, redis-server) and run the whole suite:
# ruff, the format check, mypy and pytest, each to its end with a verdict line of its own; the
# exit status is non-zero when any stage failed, so one lint finding never hides the tests.
#   scripts/test.sh [pytest args...]
#   scripts/test.sh --latest [pytest args...]   the same against the newest release of every Python
#                                               dependency (.venv-latest, no lock): drift, on purpose
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

venv=.venv
if [ "${1:-}" = --latest ]; then
  shift
  venv=.venv-latest
fi

verdicts=()
failed=0
# stage NAME COMMAND...: run it to its end, say how it went in one line, remember the verdict.
stage() {
  local name=$1; shift
  local started=$SECONDS status
  echo "== $name"
  "$@"
  status=$?
  local verdict="ok"
  if [ "$status" -ne 0 ]; then
    verdict="FAILED (exit $status)"
    failed=1
  fi
  verdicts+=("$(printf '%-8s %s (%ds)' "$name" "$verdict" $((SECONDS - started)))")
  echo "== $name: $verdict"
}

set_up() {
  setup_python test || return 1
  if [ "$venv" = .venv-latest ]; then
    setup_latest || return 1
    echo "newest releases: $(tr '\n' ' ' <.venv-latest/versions.txt)"
  fi
  setup_node && setup_fastmcp && setup_old_sdk && setup_redis && setup_chromium
}

pytest_stage() {  # tests/ and the doctests of src/ (testpaths, conftest.py)
  MCP_TEST_NO_SKIP=1 "$venv/bin/pytest" "$@"
  local status=$?
  if [ "$status" -eq 5 ]; then
    echo "pytest ran no test" >&2
    return 1
  fi
  return "$status"
}

stage setup set_up
if [ "$failed" -ne 0 ]; then
  echo "== setup failed: nothing else can run" >&2
  exit 1
fi
stage ruff "$venv/bin/ruff" check src tests examples bench conftest.py
stage format "$venv/bin/ruff" format --check src tests examples conftest.py
stage mypy "$venv/bin/mypy"
stage pytest pytest_stage "$@"

echo "== verdicts"
printf '   %s\n' "${verdicts[@]}"
exit "$failed"
