#!/bin/bash
# Dynamic batching benchmark: the `delay` model (20 ms per execution,
# whatever the batch size, max_batch_size 32, one instance) under 64
# concurrent batch-1 clients. Ideal: 32 inferences / 20 ms = 1600/s.
# Reports throughput as a fraction of ideal, and the same model without
# batching for contrast. Writes docs/performance.md (section batching).
source "$(dirname "$0")/../lib/common.sh"
INTERVAL_MS="${INTERVAL_MS:-4000}"
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT
for m in batched unbatched; do
  mkdir -p "$TMP/models/$m/1"
  extra=""; [ $m = batched ] && extra="dynamic_batching { max_queue_delay_microseconds: 2000 }"
  cat > "$TMP/models/$m/config.pbtxt" <<CFG
backend: "delay"
max_batch_size: 32
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
parameters { key: "execute_delay_ms" value { string_value: "20" } }
instance_group [ { kind: KIND_CPU count: 1 } ]
$extra
CFG
done
start_inferd "$TMP/inferd.log" --model-repository "$TMP/models"
for m in batched unbatched; do
  "$PERF" -m $m -u 127.0.0.1:$HTTP_PORT --concurrency-range 64 --measurement-interval "$INTERVAL_MS" \
    --max-trials 4 --json > "$TMP/$m.json"
done
B=$(json_field "$TMP/batched.json" "d['results'][0]['throughput_infer_per_sec']")
U=$(json_field "$TMP/unbatched.json" "d['results'][0]['throughput_infer_per_sec']")
BB=$(json_field "$TMP/batched.json" "d['results'][0]['server_avg_batch']")
BP99=$(json_field "$TMP/batched.json" "d['results'][0]['latency_p99_us']/1000")
UP99=$(json_field "$TMP/unbatched.json" "d['results'][0]['latency_p99_us']/1000")
RATIO=$(/usr/bin/python3 -c "print(f'{$B/1600:.3f}')")
echo "batched: $B infer/s (ratio to ideal 1600/s: $RATIO, average batch $BB); unbatched: $U infer/s"
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" batching <<DOC
## Dynamic batching (\`delay\` model, 20 ms per execution)

Command: \`bench/batching/run.sh\` (64 concurrent batch-1 HTTP clients through \`infer-perf\`,
one instance, \`max_batch_size: 32\`, \`max_queue_delay_microseconds: 2000\`; measured $(date -u +%Y-%m-%d)
on the 2-core development machine, load generator on the same machine).

| configuration | throughput (infer/s) | average batch | p99 latency (ms) |
| --- | --- | --- | --- |
| dynamic batching | $(printf %.0f "$B") | $(printf %.1f "$BB") | $(printf %.1f "$BP99") |
| no batching | $(printf %.0f "$U") | 1.0 | $(printf %.1f "$UP99") |

Throughput with batching is **$RATIO** of the ideal 32 / 20 ms = 1,600 inferences/s (goal ≥ 0.9);
without batching the same model does one request per 20 ms.
DOC
