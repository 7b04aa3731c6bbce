#!/bin/bash
# Rate limiter cost on the hot path: `simple` (add_sub, 16 INT32) over HTTP
# through infer-perf, at concurrency 1 and 4, in three settings:
#   off          --rate-limit=off (the default), the model as shipped
#   on, unlimited --rate-limit=execution_count, the model without rate_limiter
#   on, limited  --rate-limit=execution_count, the model with one instance
#                group rate_limiter { resources [ { name: "R" count: 1 } ] }
# (a limited instance acquires and releases R around each execution and is
# never lent for inline execution, so this includes the thread hand-off).
# Prints the figures and writes docs/performance.md (section rate_limiter).
#   bench/rate_limiter/run.sh        (INTERVAL_MS=2000 per measurement)
source "$(dirname "$0")/../lib/common.sh"
INTERVAL_MS="${INTERVAL_MS:-2000}"
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT
for m in simple simple_limited; do
  mkdir -p "$TMP/models/$m/1"
  sed "s/^name: .*/name: \"$m\"/" "$ROOT/examples/models/simple/config.pbtxt" \
    > "$TMP/models/$m/config.pbtxt"
done
echo 'instance_group [ { kind: KIND_CPU count: 1 rate_limiter { resources [ { name: "R" count: 1 } ] } } ]' \
  >> "$TMP/models/simple_limited/config.pbtxt"
echo 'instance_group [ { kind: KIND_CPU count: 1 } ]' >> "$TMP/models/simple/config.pbtxt"

run() {  # run NAME MODEL CONCURRENCY -> $TMP/NAME-CONC.json
  "$PERF" -m "$2" -u 127.0.0.1:$HTTP_PORT --concurrency-range "$3" \
    --measurement-interval "$INTERVAL_MS" --max-trials 3 --stability-percentage 50 --json \
    > "$TMP/$1-$3.json"
}
start_inferd "$TMP/off.log" --model-repository "$TMP/models" --rate-limit=off
for c in 1 4; do run off simple $c; done
kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true; PIDS=()
start_inferd "$TMP/on.log" --model-repository "$TMP/models" --rate-limit=execution_count
for c in 1 4; do run unlimited simple $c; run limited simple_limited $c; done

row() {  # row LABEL NAME CONC
  local f="$TMP/$2-$3.json"
  printf '| %s | %s | %.0f | %.0f | %.0f |\n' "$1" "$3" \
    "$(json_field "$f" "d['results'][0]['throughput_infer_per_sec']")" \
    "$(json_field "$f" "d['results'][0]['latency_p50_us']")" \
    "$(json_field "$f" "d['results'][0]['latency_p99_us']")"
}
TABLE=$(for c in 1 4; do
  row "--rate-limit=off" off $c
  row "execution_count, model not limited" unlimited $c
  row "execution_count, model limited (R: 1)" limited $c
done)
echo "$TABLE"
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" rate_limiter <<DOC
## Rate limiter (\`simple\`, HTTP)

Command: \`bench/rate_limiter/run.sh\` (\`infer-perf\` over HTTP, one instance, measured
$(date -u +%Y-%m-%d) on the shared 2-core development machine, load generator on the same
machine: compare rows with each other, not with other sections).

| setting | concurrency | throughput (infer/s) | p50 (µs) | p99 (µs) |
| --- | --- | --- | --- | --- |
$TABLE

With \`--rate-limit=execution_count\` a model without \`rate_limiter\` takes the same path as with
the limiter off (its instances are not registered). The two unlimited rows differ only by this machine's
run-to-run noise (about ±10 % here, more for p99). A limited instance pays a limiter
acquire/release per execution (two uncontended mutex sections) and, more visibly at concurrency
1, runs every request on its instance thread instead of inline on the caller's thread
(docs/rate_limiter.md).
DOC
