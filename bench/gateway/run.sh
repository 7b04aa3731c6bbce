#!/bin/bash
# Gateway benchmark: the latency infer-gateway adds in front of inferd. One
# closed-loop client (bench/gateway/latency.py, one keep-alive HTTP
# connection, one request at a time) classifies the held-out digit PNGs
# through digits_pipeline (digits_preprocess -> digits) three ways in the
# same run, interleaved in rounds:
#   direct       HTTP to inferd (KServe v2 binary BYTES input)
#   gateway      HTTP to infer-gateway, which calls inferd over gRPC
#   gateway_shm  the same, inputs through system shared memory
# The figure is the gateway's added median latency (gateway p50 - direct
# p50) and the ratio gateway p50 / direct p50. Writes docs/performance.md
# (section gateway).
#
# Environment: BUILD (default build/), ROUNDS (5), PER_ROUND (200).
source "$(dirname "$0")/../lib/common.sh"
ROUNDS="${ROUNDS:-5}"
PER_ROUND="${PER_ROUND:-200}"
GATEWAY="$BUILD/bin/infer-gateway"
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT

[ -f "$ROOT/examples/models/digits/1/model.pt" ] && [ -f "$ROOT/examples/data/digits_images/index.json" ] ||
  { echo "run make models first (examples/models/digits, examples/data/digits_images)"; exit 1; }
cmake --build "$BUILD" --target inferd infer-gateway inferd_backend_plugins > "$TMP/build.log" 2>&1 ||
  { cat "$TMP/build.log"; exit 1; }
mkdir -p "$TMP/models"
for m in digits digits_preprocess digits_pipeline; do cp -r "$ROOT/examples/models/$m" "$TMP/models/"; done

# wait_port LOG PREFIX: prints the port of the first "PREFIX:<port>" line of LOG.
wait_port() {
  for _ in $(seq 1 300); do
    local p; p=$(sed -n "s/^$2:\([0-9]*\)$/\1/p" "$1" | head -1)
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.1
  done
  echo "did not start:" >&2; cat "$1" >&2; exit 1
}

"$INFERD" --model-repository "$TMP/models" --http-address 127.0.0.1 --http-port 0 \
  --grpc-address 127.0.0.1 --grpc-port 0 --allow-metrics=false --allow-client-shm=true \
  2> "$TMP/inferd.log" &
PIDS+=($!)
HTTP_PORT=$(wait_port "$TMP/inferd.log" "inferd: HTTP listening on 127.0.0.1")
GRPC_PORT=$(wait_port "$TMP/inferd.log" "inferd: gRPC listening on 127.0.0.1")
LABELS="digits_pipeline=$ROOT/examples/models/digits_pipeline/labels.txt"
for mode in none system; do
  "$GATEWAY" --inferd-url 127.0.0.1:$GRPC_PORT --http-address 127.0.0.1 --http-port 0 \
    --grpc-port -1 --labels "$LABELS" --shared-memory $mode 2> "$TMP/gateway_$mode.log" &
  PIDS+=($!)
done
GW=$(wait_port "$TMP/gateway_none.log" "infer-gateway: HTTP listening on 127.0.0.1")
GW_SHM=$(wait_port "$TMP/gateway_system.log" "infer-gateway: HTTP listening on 127.0.0.1")

LOAD=$(cut -d' ' -f1 /proc/loadavg)
/usr/bin/python3 "$ROOT/bench/gateway/latency.py" --images "$ROOT/examples/data/digits_images" \
  --rounds "$ROUNDS" --per-round "$PER_ROUND" \
  --target direct=$HTTP_PORT:direct --target gateway=$GW:gateway \
  --target gateway_shm=$GW_SHM:gateway > "$TMP/result.json"
cat "$TMP/result.json"
f() { json_field "$TMP/result.json" "$1"; }
D50=$(f "d['direct']['p50_us']"); G50=$(f "d['gateway']['p50_us']"); S50=$(f "d['gateway_shm']['p50_us']")
ADDED=$(/usr/bin/python3 -c "print(f'{($G50-$D50)/1000:.3f}')")
ADDED_SHM=$(/usr/bin/python3 -c "print(f'{($S50-$D50)/1000:.3f}')")
RATIO=$(/usr/bin/python3 -c "print(f'{$G50/$D50:.2f}')")
RATIO_SHM=$(/usr/bin/python3 -c "print(f'{$S50/$D50:.2f}')")
row() { printf "| %s | %.2f | %.2f | %.2f |\n" "$1" "$(f "d['$2']['p50_us']/1000")" \
  "$(f "d['$2']['p90_us']/1000")" "$(f "d['$2']['p99_us']/1000")"; }
echo "gateway adds $ADDED ms at the median (ratio $RATIO); with shared memory $ADDED_SHM ms ($RATIO_SHM)"
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" gateway <<DOC
## Gateway added latency (\`digits_pipeline\`)

Command: \`bench/gateway/run.sh\` (one closed-loop client, one request at a time on one keep-alive
HTTP connection, $ROUNDS interleaved rounds of $PER_ROUND held-out digit PNGs per target, after 50
warm-up requests each; inferd, two gateways and the client on the same machine; measured
$(date -u +%Y-%m-%d) on the 2-core development machine, 1-minute load average $LOAD at the start:
other work shared the cores, which the interleaving spreads over all three paths).

| path | p50 (ms) | p90 (ms) | p99 (ms) |
| --- | --- | --- | --- |
$(row "client → inferd (HTTP, binary BYTES input)" direct)
$(row "client → infer-gateway → inferd (HTTP, then gRPC)" gateway)
$(row "same, input through system shared memory" gateway_shm)

The gateway adds **$ADDED ms** at the median (gateway / direct = **$RATIO**); with
\`--shared-memory system\` it adds $ADDED_SHM ms ($RATIO_SHM). The added time is one more HTTP hop
and a gRPC call on loopback, plus top-k and JSON in the gateway. For these images (a few hundred
bytes each) shared memory saves no copy worth measuring; it is meant for large inputs.
DOC
