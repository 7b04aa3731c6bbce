#!/bin/bash
# Scale-out through inferd-discovery (proxyless gRPC clients, xds:///inferd)
# next to nginx, and the time from "host added to the hosts file" to
# "published" and to "receives traffic" (--poll-interval-ms 250 and 1000).
#
# Hosts are separate inferd processes on loopback, each serving the `delay`
# model latency-bound (50 ms, max_batch_size 1, one instance: 20/s per host
# whatever the CPU). Everything runs in one go (about 4 minutes) so that the
# xDS and nginx figures share the machine's noise; the details are in
# bench/discovery/discovery_bench.py.
# Writes docs/performance.md (section discovery); KEEP_JSON=FILE keeps the raw
# figures (discovery_bench.py --from-json FILE renders them again).
#   BUILD=build-dev bench/discovery/run.sh
#   MACHINE="2-core development machine" names the machine in the doc.
source "$(dirname "$0")/../lib/common.sh"
TMP=$(mktemp -d)
trap 'cleanup; rm -rf "$TMP"' EXIT
/usr/bin/python3 "$ROOT/bench/discovery/discovery_bench.py" --build "$BUILD" \
  --json "${KEEP_JSON:-$TMP/results.json}" ${MACHINE:+--machine "$MACHINE"} > "$TMP/section.md"
cat "$TMP/section.md"
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" discovery < "$TMP/section.md"
