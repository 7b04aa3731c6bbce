# Shared helpers for bench/*/run.sh (sourced). Servers listen on loopback
# ports picked by the OS; everything started here is stopped on exit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
INFERD="$BUILD/bin/inferd"
PERF="$BUILD/bin/infer-perf"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# start_inferd LOG ARGS...: starts inferd on a free HTTP port; sets HTTP_PORT.
start_inferd() {
  local log="$1"; shift
  "$INFERD" --http-address 127.0.0.1 --http-port 0 --allow-grpc=false --allow-metrics=false "$@" \
    2> "$log" &
  PIDS+=($!)
  for _ in $(seq 1 300); do
    HTTP_PORT=$(sed -n 's/^inferd: HTTP listening on .*:\([0-9]*\)$/\1/p' "$log" | head -1)
    [ -n "$HTTP_PORT" ] && return 0
    sleep 0.1
  done
  echo "inferd did not start:"; cat "$log"; exit 1
}

# json_field FILE EXPR: evaluates a Python expression on the JSON in FILE (as `d`).
json_field() { /usr/bin/python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }
