#!/bin/bash
# Where to put pre-processing (docs/placement.md): in process (an ensemble in
# inferd), in the pod (a middleman sending the tensor through registered
# system shared memory) or in another pod (the tensor in the gRPC request
# body: loopback, and across a veth pair into another network namespace, as
# between two pods on one node). The driver (placement.py) measures every
# variant with one client, alternating them in rounds: data movement alone
# on an identity model with resnet50's input tensor ([1,3,224,224] FP32,
# 602,112 bytes, there and back), and end to end with resnet50. Not a test:
# the figures go to docs/performance.md (section placement).
# Needs `make build models`; the veth variant needs root and iproute2
# (skipped otherwise, or with NETNS=0).
#
# Environment: BUILD (default build/), ROUNDS (5), IDENTITY_REQUESTS (400),
# MODEL_REQUESTS (10): requests per variant and round; PERF_ROUNDS (3):
# rounds of the infer-perf cross-check.
source "$(dirname "$0")/../lib/common.sh"
ROUNDS="${ROUNDS:-5}"
IDENTITY_REQUESTS="${IDENTITY_REQUESTS:-400}"
MODEL_REQUESTS="${MODEL_REQUESTS:-10}"
MODELS="$ROOT/examples/models"
[ -f "$MODELS/resnet50/1/model.pt" ] || { echo "missing resnet50: run make models"; exit 1; }
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d)
NS=""; VETH=""
# Deleting the namespace deletes the veth pair with it; the link is removed
# here only if the namespace never got its end.
teardown() {
  cleanup
  if [ -n "$NS" ]; then
    ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$NS" 2>/dev/null || true
  fi
  if [ -n "$VETH" ] && ip link show "$VETH" > /dev/null 2>&1; then ip link del "$VETH" || true; fi
  rm -rf "$TMP"
}
trap teardown EXIT

# identity_224: the example `identity` backend with resnet50's input shape,
# in a second repository beside examples/models.
mkdir -p "$TMP/models/identity_224/1"
cat > "$TMP/models/identity_224/config.pbtxt" <<'EOF'
name: "identity_224"
backend: "identity"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1, 3, 224, 224 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1, 3, 224, 224 ] } ]
EOF
INFERD_ARGS=(--model-repository "$MODELS" --model-repository "$TMP/models"
  --model-control-mode explicit --load-model identity_224 --load-model resnet50_preprocess
  --load-model resnet50 --load-model resnet50_pipeline --allow-metrics=false
  --allow-client-shm=true)

# wait_ports LOG: sets HTTP_PORT and GRPC_PORT from inferd's listening lines.
wait_ports() {
  for _ in $(seq 1 1200); do
    HTTP_PORT=$(sed -n 's/^inferd: HTTP listening on .*:\([0-9]*\)$/\1/p' "$1" | head -1)
    GRPC_PORT=$(sed -n 's/^inferd: gRPC listening on .*:\([0-9]*\)$/\1/p' "$1" | head -1)
    [ -n "$HTTP_PORT" ] && [ -n "$GRPC_PORT" ] && return 0
    sleep 0.1
  done
  echo "inferd did not start:"; cat "$1"; exit 1
}

"$INFERD" "${INFERD_ARGS[@]}" --http-address 127.0.0.1 --http-port 0 --grpc-address 127.0.0.1 \
  --grpc-port 0 2> "$TMP/inferd.log" &
INFERD_PID=$!; PIDS+=($INFERD_PID)
wait_ports "$TMP/inferd.log"
LOCAL_HTTP=$HTTP_PORT; LOCAL_GRPC=$GRPC_PORT
DRIVER_ARGS=(--grpc "127.0.0.1:$LOCAL_GRPC" --http "127.0.0.1:$LOCAL_HTTP" --pid "$INFERD_PID")

# The other pod: the same inferd in its own network namespace, reached
# through a veth pair (10.78.N.1 here, 10.78.N.2 there).
VETH_NOTE="not measured (needs root and iproute2; NETNS=0 turns it off)"
if [ "${NETNS:-1}" != 0 ] && [ "$(id -u)" = 0 ] && command -v ip > /dev/null; then
  N=$(( $$ % 200 + 20 ))
  NS="inferd-placement-$$"; VETH="ipl$$a"
  ip netns add "$NS"
  ip link add "$VETH" type veth peer name "ipl$$b"
  ip link set "ipl$$b" netns "$NS"
  ip addr add "10.78.$N.1/30" dev "$VETH"; ip link set "$VETH" up
  ip -n "$NS" addr add "10.78.$N.2/30" dev "ipl$$b"; ip -n "$NS" link set "ipl$$b" up
  ip -n "$NS" link set lo up
  ip netns exec "$NS" "$INFERD" "${INFERD_ARGS[@]}" --http-address 0.0.0.0 --http-port 8000 \
    --grpc-address 0.0.0.0 --grpc-port 8001 2> "$TMP/inferd-veth.log" &
  PIDS+=($!)
  wait_ports "$TMP/inferd-veth.log"
  VETH_PID=$(ip netns pids "$NS" | head -1)
  DRIVER_ARGS+=(--veth-grpc "10.78.$N.2:8001" --veth-pid "$VETH_PID")
  VETH_NOTE="an inferd in another network namespace over a veth pair (MTU $(cat /sys/class/net/$VETH/mtu))"
fi

CMD="bench/placement/run.sh (ROUNDS=$ROUNDS IDENTITY_REQUESTS=$IDENTITY_REQUESTS MODEL_REQUESTS=$MODEL_REQUESTS)"
/usr/bin/python3 "$ROOT/bench/placement/placement.py" "${DRIVER_ARGS[@]}" --proto-dir "$ROOT/proto" \
  --rounds "$ROUNDS" --identity-requests "$IDENTITY_REQUESTS" --model-requests "$MODEL_REQUESTS" \
  > "$TMP/results.json"

# Cross-check with the C++ load tool: infer-perf on identity_224 (gRPC with
# the tensor in the bodies, gRPC with input and output in shared memory,
# binary HTTP), concurrency 1, alternating in PERF_ROUNDS rounds. infer-perf
# writes its input into the region once, not per request.
PERF_ROUNDS="${PERF_ROUNDS:-3}"
order="grpc shm http"
: > "$TMP/perf.txt"
for r in $(seq 1 "$PERF_ROUNDS"); do
  for mode in $order; do
    case $mode in
      grpc) args=(-i grpc -u "127.0.0.1:$LOCAL_GRPC") ;;
      shm) args=(-i grpc -u "127.0.0.1:$LOCAL_GRPC" --shared-memory system) ;;
      http) args=(-i http -u "127.0.0.1:$LOCAL_HTTP") ;;
    esac
    "$PERF" -m identity_224 "${args[@]}" --measurement-interval 2000 --max-trials 3 --json \
      > "$TMP/perf.$mode.$r.json"
    echo "$mode $(json_field "$TMP/perf.$mode.$r.json" "d['results'][0]['latency_p50_us'] / 1000") $(json_field "$TMP/perf.$mode.$r.json" "d['results'][0]['throughput_infer_per_sec']")" >> "$TMP/perf.txt"
  done
  order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
done
cat "$TMP/perf.txt"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
cp "$TMP/results.json" "${RESULTS:-/dev/null}" 2>/dev/null || true
cat "$TMP/results.json"

/usr/bin/python3 "$ROOT/bench/placement/report.py" "$TMP/results.json" "$CMD" "$(date -u +%Y-%m-%d)" \
  "$(nproc)" "$LOAD_BEFORE" "$LOAD_AFTER" "$VETH_NOTE" "$TMP/perf.txt" | /usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" placement
