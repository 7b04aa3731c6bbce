#!/bin/bash
# Tracing's cost on the request path: `simple` (add_sub, 16 INT32) over HTTP
# through infer-perf, one inferd, three settings switched through the trace
# API between measurements (so every setting runs in the same process, with
# the same threads and memory), in alternating rounds:
#   off          level OFF (tracing configured, nothing sampled: the
#                request path's one relaxed load)
#   rate 1000    level TIMESTAMPS, every 1000th request traced to the
#                Triton trace file (Triton's default rate)
#   rate 1       level TIMESTAMPS, every request traced to the file
# Each round measures the three in a rotated order; the table gives the
# median of the rounds and its ratio to off. Goal: rate 1000 within 3 % of off.
# Prints the figures and writes docs/performance.md (section trace).
#   bench/trace/overhead.sh   (ROUNDS=5, CONCURRENCY=8, INTERVAL_MS=2000)
source "$(dirname "$0")/../lib/common.sh"
ROUNDS="${ROUNDS:-5}"
CONCURRENCY="${CONCURRENCY:-8}"
INTERVAL_MS="${INTERVAL_MS:-2000}"
TMP=$(mktemp -d); trap 'cleanup; rm -rf "$TMP"' EXIT
mkdir -p "$TMP/models/simple/1"
cp "$ROOT/examples/models/simple/config.pbtxt" "$TMP/models/simple/config.pbtxt"

start_inferd "$TMP/inferd.log" --model-repository "$TMP/models" \
  --trace-config "triton,file=$TMP/trace.json"

set_trace() {  # set_trace LEVEL RATE
  curl -sf -X POST "127.0.0.1:$HTTP_PORT/v2/trace/setting" \
    -d "{\"trace_level\":[\"$1\"],\"trace_rate\":\"$2\"}" > /dev/null
}
measure() {  # measure NAME ROUND -> $TMP/NAME-ROUND.json
  case "$1" in
    off) set_trace OFF 1000 ;;
    r1000) set_trace TIMESTAMPS 1000 ;;
    r1) set_trace TIMESTAMPS 1 ;;
  esac
  "$PERF" -m simple -u "127.0.0.1:$HTTP_PORT" --concurrency-range "$CONCURRENCY" \
    --measurement-interval "$INTERVAL_MS" --max-trials 3 --stability-percentage 50 --json \
    > "$TMP/$1-$2.json"
}
ORDER=(off r1000 r1)
for r in $(seq 1 "$ROUNDS"); do
  for i in 0 1 2; do measure "${ORDER[$(((i + r) % 3))]}" "$r"; done
  echo "round $r done" >&2
done
TRACE_MB=$(( $(stat -c %s "$TMP/trace.json") / 1000000 ))

TABLE=$(/usr/bin/python3 - "$TMP" "$ROUNDS" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def field(name, key):
    return [json.load(open("%s/%s-%d.json" % (tmp, name, r)))["results"][0][key]
            for r in range(1, rounds + 1)]
off = statistics.median(field("off", "throughput_infer_per_sec"))
for name, label in (("off", "off (level OFF)"), ("r1000", "TIMESTAMPS, rate 1000"),
                    ("r1", "TIMESTAMPS, rate 1")):
    tp = field(name, "throughput_infer_per_sec")
    p99 = statistics.median(field(name, "latency_p99_us"))
    med = statistics.median(tp)
    print("| %s | %s | %.0f | %.3f | %.0f |" % (label, " / ".join("%.0f" % t for t in tp), med,
                                              med / off, p99))
PY
)
echo "$TABLE"
echo "trace file: $TRACE_MB MB"
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" trace <<DOC
## Tracing overhead (\`simple\`, HTTP, Triton trace file)

Command: \`bench/trace/overhead.sh\` (\`infer-perf\` over HTTP at concurrency $CONCURRENCY, windows of
${INTERVAL_MS} ms, $ROUNDS alternating rounds; one inferd, the setting switched through
\`POST /v2/trace/setting\` between measurements; measured $(date -u +%Y-%m-%d) on the shared 2-core
development machine, load generator on the same cores, load average at the end:
$(cut -d' ' -f1-3 /proc/loadavg)).

| setting | throughput per round (infer/s) | median | / off | p99, median (µs) |
| --- | --- | --- | --- | --- |
$TABLE

The trace file grew to $TRACE_MB MB over the run (nearly all of it at rate 1). Off, a request pays one relaxed atomic load at the
front end and a null pointer in the request (docs/tracing.md); at rate 1000 one request in a
thousand also allocates its trace, takes ~15 timestamps and appends ~1 KB to the file.
DOC
