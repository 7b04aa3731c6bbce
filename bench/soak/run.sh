#!/bin/bash
# Soak: N requests on `simple` over HTTP and gRPC, 200 load/unload cycles of
# `digits`; RSS and open-fd growth of the inferd process (goal: < 20 MB, none).
# usage: bench/soak/run.sh [--requests N] [--cycles C] [--threads T]
# (defaults: 10^6 requests per protocol, 200 cycles). Writes its table to
# docs/performance.md (section soak) with the command that produced it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
INFERD_BIN="${INFERD_BIN:-$ROOT/build/bin/inferd}" /usr/bin/python3 "$ROOT/bench/soak/soak.py" "$@" | tee "$out"
rc=${PIPESTATUS[0]}
set -e
{
  echo "## Soak (bench/soak)"
  echo
  echo "\`bench/soak/run.sh $*\` on $(nproc) cores, $(date -u +%Y-%m-%d):"
  echo
  cat "$out"
} | /usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" soak
exit "$rc"
