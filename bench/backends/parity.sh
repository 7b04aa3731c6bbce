#!/bin/bash
# Per-execution parity of the pytorch backend with direct libtorch (issue 25 §1): resnet18,
# batch 1, 2 threads; each case is one bench/backends/parity.py run (direct and inferd in
# alternating rounds, so a shared machine's load falls on both alike). Cases:
#   before: inferd as it was (OMP_WAIT_POLICY=PASSIVE, module as saved) vs direct.py as saved
#   spin:   inferd's default wait (GOMP_SPINCOUNT=10000), module as saved, vs direct as saved
#   after:  inferd's defaults (spin, optimized for inference) vs direct optimized
# direct runs with libgomp's own default (spin about 300000 loops), as direct.py does.
# PARITY_PERF=DIR records perf record -g / perf stat per phase into DIR/<case>.
# PARITY_NICE=-20 runs everything in a new scheduler autogroup at that nice value (root only):
# on a machine shared with other users' builds it approximates an idle machine.
# Takes about 2 minutes. Needs `make build models`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ROUNDS="${ROUNDS:-2}" SECONDS_PER_PHASE="${SECONDS_PER_PHASE:-4}"
if [ -n "${PARITY_NICE:-}" ] && [ -z "${PARITY_INNER:-}" ]; then
  exec setsid -w bash -c "echo $PARITY_NICE > /proc/self/autogroup && PARITY_INNER=1 exec $0"
fi
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
run() {  # run CASE DIRECT_OPTIMIZE SERVER_ENV OPTIMIZE_PARAM
  local perf=()
  [ -n "${PARITY_PERF:-}" ] && perf=(--perf "$PARITY_PERF/$1")
  /usr/bin/python3 "$ROOT/bench/backends/parity.py" --rounds "$ROUNDS" \
    --seconds "$SECONDS_PER_PHASE" --optimize "$2" --server-env "$3" \
    --config-param "OPTIMIZE_FOR_INFERENCE=$4" "${perf[@]}" 2>/dev/null |
    tee "${PARITY_PERF:-/tmp}/parity_$1.json" |
    /usr/bin/python3 -c '
import json, statistics, sys
d = json.load(sys.stdin)
med = lambda k: statistics.median(r[k] for r in d["rounds"])
print("%-7s direct %6.1f ms  inferd %6.1f ms/execution  direct/inferd %.3f (rounds: %s)" % (
    sys.argv[1], med("direct_ms"), med("inferd_compute_ms"), d["median_ratio"],
    " ".join("%.3f" % r["ratio"] for r in d["rounds"])))' "$1"
}
run before no OMP_WAIT_POLICY=PASSIVE false
run spin no INFERD_BENCH=1 false
run after yes INFERD_BENCH=1 true
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
