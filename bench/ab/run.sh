#!/bin/bash
# Two inferd builds side by side (bench/ab/ab.py): `simple` over HTTP and
# gRPC, rounds alternating A and B; throughput and server CPU per inference,
# medians and ratios B/A. A is the baseline build directory (e.g. a worktree
# of an earlier commit, built with `make build`); B defaults to this
# checkout's build. Both are driven by B's infer-perf.
#   bench/ab/run.sh OLD_BUILD_DIR [NEW_BUILD_DIR]      (CALLGRIND=1: also instructions
#                                                     per inference under callgrind)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
A="${1:?usage: bench/ab/run.sh OLD_BUILD_DIR [NEW_BUILD_DIR]}"
B="${2:-$ROOT/build}"
exec /usr/bin/python3 "$ROOT/bench/ab/ab.py" --a "$A/bin/inferd" --b "$B/bin/inferd" \
  --perf "$B/bin/infer-perf" --rounds "${ROUNDS:-4}" --interval-ms "${INTERVAL_MS:-2000}" \
  --concurrency "${CONC:-1,4}" ${CALLGRIND:+--callgrind}
