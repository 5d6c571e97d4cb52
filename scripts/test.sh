#!/usr/bin/env bash
# Set everything up (virtualenv, Python packages, Node 22, the conformance
# suite and the TypeScript SDK, fastmcp, the official SDK 1.2.1, redis-server) and run the whole test suite.
#   scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
setup_python test
setup_node
setup_fastmcp
setup_old_sdk
setup_redis

echo "== ruff"; .venv/bin/ruff check src tests examples bench conftest.py
.venv/bin/ruff format --check src tests examples conftest.py
echo "== mypy"; .venv/bin/mypy
echo "== pytest"  # tests/ and the doctests of src/ (testpaths, conftest.py)
export MCP_TEST_NO_SKIP=1
set +e
.venv/bin/pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest ran no test: failing" >&2
  exit 1
fi
exit "$status"
