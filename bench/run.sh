#!/usr/bin/env bash
# The one command: install the peers and wrk (bench/setup.sh), then run every
# benchmark side by side and print the tables (bench/run.py).
#   bench/run.sh [--quick] [--servers ours,official,...,ours-redis] [--sessions N,N] [--baseline REF] [--readme]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/setup.sh"
exec python3 "$here/run.py" "$@"
