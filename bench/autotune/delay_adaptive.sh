#!/bin/bash
# Adaptive batching against the best fixed max_batch_size (issue 25): the `delay` model with a
# GPU-like cost curve (execute_delay_batch_exponent 0.3: a batch of b rows sleeps
# execute_delay_ms * b^0.3) and one instance, under closed-loop batch-1 HTTP clients
# (infer-perf). "adaptive": `dynamic_batching { }` with no preferred sizes and
# max_batch_size 32; "fixed B": `batching: fixed` (classic dynamic batching, preferred size =
# max_batch_size) with max_batch_size B. All models in one server, measured one after the
# other at each concurrency, adaptive both first and last (its figure: the mean of the two).
# Prints a markdown table; bench/autotune/run.sh puts it in docs/performance.md.
# Needs `make build`. About 2.5 minutes.
source "$(dirname "$0")/../lib/common.sh"
DELAY_MS="${DELAY_MS:-10}"
EXPONENT="${EXPONENT:-0.3}"
QUEUE_DELAY_US="${QUEUE_DELAY_US:-5000}"
CONCURRENCIES="${CONCURRENCIES:-4 16}"
FIXED="${FIXED:-1 2 4 8 16 32}"
INTERVAL_MS="${INTERVAL_MS:-2000}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d); trap 'cleanup; rm -rf "$TMP"' EXIT

model() {  # model NAME MAX_BATCH EXTRA
  mkdir -p "$TMP/models/$1/1"
  cat > "$TMP/models/$1/config.pbtxt" <<CFG
backend: "delay"
max_batch_size: $2
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
parameters { key: "execute_delay_ms" value { string_value: "$DELAY_MS" } }
parameters { key: "execute_delay_batch_exponent" value { string_value: "$EXPONENT" } }
instance_group [ { kind: KIND_CPU count: 1 } ]
dynamic_batching { max_queue_delay_microseconds: $QUEUE_DELAY_US }
$3
CFG
}
model adaptive 32 ""
for b in $FIXED; do
  model "fixed_$b" "$b" 'parameters { key: "batching" value { string_value: "fixed" } }'
done
start_inferd "$TMP/inferd.log" --model-repository "$TMP/models"

measure() {  # measure MODEL CONCURRENCY OUT
  # A warm-up window first: adaptive batching explores and settles under the new load.
  "$PERF" -m "$1" -u 127.0.0.1:$HTTP_PORT --concurrency-range "$2" --warmup-ms 2000 \
    --measurement-interval "$INTERVAL_MS" --max-trials 3 --json > "$3"
}
ROWS=""
for c in $CONCURRENCIES; do
  measure adaptive "$c" "$TMP/adaptive_${c}_a.json"
  for b in $FIXED; do measure "fixed_$b" "$c" "$TMP/fixed_${b}_$c.json"; done
  measure adaptive "$c" "$TMP/adaptive_${c}_b.json"
  ROWS+="$c"$'\n'
done

/usr/bin/python3 - "$TMP" "$FIXED" <<PY
import json, sys
tmp, fixed = sys.argv[1], sys.argv[2].split()
def r(name):
    return json.load(open("%s/%s.json" % (tmp, name)))["results"][0]
print("Command: \`bench/autotune/delay_adaptive.sh\` (delay model, ${DELAY_MS} ms * rows^${EXPONENT}, "
      "one instance, max_queue_delay ${QUEUE_DELAY_US} us; load average at the start: $LOAD_BEFORE)")
print()
print("| concurrency | adaptive infer/s (avg batch) | best fixed max_batch_size: infer/s (avg batch) | "
      "all fixed (infer/s) | adaptive / best fixed |")
print("| --- | --- | --- | --- | --- |")
for c in """$ROWS""".split():
    a = [r("adaptive_%s_a" % c), r("adaptive_%s_b" % c)]
    tp = sum(x["throughput_infer_per_sec"] for x in a) / 2
    batch = sum(x.get("server_avg_batch", 0) for x in a) / 2
    f = {b: r("fixed_%s_%s" % (b, c)) for b in fixed}
    best = max(fixed, key=lambda b: f[b]["throughput_infer_per_sec"])
    ftp = f[best]["throughput_infer_per_sec"]
    print("| %s | %.1f (%.1f) | %s: %.1f (%.1f) | %s | **%.3f** |" % (
        c, tp, batch, best, ftp, f[best].get("server_avg_batch", 0),
        ", ".join("%s: %.0f" % (b, f[b]["throughput_infer_per_sec"]) for b in fixed), tp / ftp))
PY
