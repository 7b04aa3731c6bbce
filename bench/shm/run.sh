#!/bin/bash
# Shared-memory benchmark (issue 9): resnet18 (examples/models, TorchScript)
# at concurrency 8 with batch-1 clients, its input (602 KB of FP32) and output
# passed three ways, measured side by side by the same load tool (infer-perf)
# against one inferd: binary HTTP, gRPC (raw contents), and system shared
# memory (inputs and outputs in a registered POSIX region, the request itself
# over HTTP). Plus `simple` the same three ways, where the transport is all
# there is. Needs `make build models`. Writes docs/performance.md (section shm).
#
# Environment: BUILD (default build/), INTERVAL_MS (default 4000), CONC (8).
source "$(dirname "$0")/../lib/common.sh"
INTERVAL_MS="${INTERVAL_MS:-4000}"
CONC="${CONC:-8}"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT
MODELS="$ROOT/examples/models"
[ -f "$MODELS/resnet18/1/model.pt" ] || { echo "missing resnet18: run make models"; exit 1; }

"$INFERD" --model-repository "$MODELS" --model-control-mode explicit --load-model resnet18 \
  --load-model simple --http-address 127.0.0.1 --http-port 0 --grpc-address 127.0.0.1 \
  --grpc-port 0 --allow-metrics=false --allow-client-shm=true 2> "$TMP/inferd.log" &
PIDS+=($!)
for _ in $(seq 1 600); do
  HTTP_PORT=$(sed -n 's/^inferd: HTTP listening on .*:\([0-9]*\)$/\1/p' "$TMP/inferd.log" | head -1)
  GRPC_PORT=$(sed -n 's/^inferd: gRPC listening on .*:\([0-9]*\)$/\1/p' "$TMP/inferd.log" | head -1)
  [ -n "$HTTP_PORT" ] && [ -n "$GRPC_PORT" ] && break
  sleep 0.1
done
[ -n "${GRPC_PORT:-}" ] || { echo "inferd did not start:"; cat "$TMP/inferd.log"; exit 1; }

# perf MODEL MODE OUT: one closed-loop point; prints infer/s.
perf() {
  local model=$1 mode=$2 out=$3 args=()
  case $mode in
    http) args=(-i http -u "127.0.0.1:$HTTP_PORT") ;;
    grpc) args=(-i grpc -u "127.0.0.1:$GRPC_PORT") ;;
    shm) args=(-i http -u "127.0.0.1:$HTTP_PORT" --shared-memory system) ;;
  esac
  "$PERF" -m "$model" "${args[@]}" --concurrency-range "$CONC" \
    --measurement-interval "$INTERVAL_MS" --max-trials 3 --json > "$out"
  json_field "$out" "round(d['results'][0]['throughput_infer_per_sec'], 1)"
}
p99() { json_field "$1" "round(d['results'][0]['latency_p99_us'] / 1000, 2)"; }

# ROUNDS rounds, the three transports alternating (http grpc shm, then
# shm grpc http, ...), so drift in the machine's load spreads over all three;
# each transport keeps its best round.
ROUNDS="${ROUNDS:-2}"
ROWS=""
declare -A T
for model in resnet18 simple; do
  order="http grpc shm"
  for r in $(seq 1 "$ROUNDS"); do
    for mode in $order; do
      t=$(perf "$model" "$mode" "$TMP/$model.$mode.$r.json")
      echo "$model $mode round $r: $t infer/s, p99 $(p99 "$TMP/$model.$mode.$r.json") ms"
      if [ -z "${T[$model.$mode]:-}" ] || /usr/bin/python3 -c "import sys; sys.exit(0 if $t > ${T[$model.$mode]} else 1)"; then
        T[$model.$mode]=$t
        cp "$TMP/$model.$mode.$r.json" "$TMP/$model.$mode.json"
      fi
    done
    order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
  done
  for mode in http grpc shm; do
    ROWS+="| $model | $mode | ${T[$model.$mode]} | $(p99 "$TMP/$model.$mode.json") |"$'\n'
  done
done
ratio() { /usr/bin/python3 -c "print(f'{$1/$2:.2f}')"; }
R_HTTP=$(ratio "${T[resnet18.shm]}" "${T[resnet18.http]}")
R_GRPC=$(ratio "${T[resnet18.shm]}" "${T[resnet18.grpc]}")
S_HTTP=$(ratio "${T[simple.shm]}" "${T[simple.http]}")
S_GRPC=$(ratio "${T[simple.shm]}" "${T[simple.grpc]}")
echo "resnet18 shm/http $R_HTTP, shm/grpc $R_GRPC; simple shm/http $S_HTTP, shm/grpc $S_GRPC"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" shm <<DOC
## System shared memory against binary HTTP and gRPC

Command: \`bench/shm/run.sh\` (measured $(date -u +%Y-%m-%d) on the $(nproc)-core development
machine; load average $LOAD_BEFORE before, $LOAD_AFTER after). One inferd; \`infer-perf\` with
batch-1 clients at concurrency $CONC, ${INTERVAL_MS} ms windows until stable; $ROUNDS rounds with
the transports alternating, best round of each. \`shm\`: inputs
and outputs in a POSIX region registered with the server, the request over HTTP (JSON header
only). resnet18's input is 602 KB of FP32 per request, \`simple\`'s 128 bytes.

| model | transport | infer/s | p99 (ms) |
| --- | --- | --- | --- |
${ROWS}
Shared memory / binary HTTP: **$R_HTTP** on resnet18, $S_HTTP on \`simple\`; shared memory /
gRPC: **$R_GRPC** on resnet18, $S_GRPC on \`simple\`.
DOC
