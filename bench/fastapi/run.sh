#!/bin/bash
# Against the usual alternative: the same TorchScript resnet18 and `simple`'s
# arithmetic served by inferd and by FastAPI + uvicorn + PyTorch (Debian's
# packages; bench/fastapi/server.py), same KServe v2 HTTP requests (binary
# tensors) from the same load tool (infer-perf), at concurrency 1, 8 and 32:
# throughput and p99 of both. Needs `make build models` and python3-fastapi,
# python3-uvicorn. Writes docs/performance.md (section fastapi).
source "$(dirname "$0")/../lib/common.sh"
HW=$(nproc)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT
MODELS="$ROOT/examples/models"
[ -f "$MODELS/resnet18/1/model.pt" ] || { echo "missing resnet18: run make models"; exit 1; }
/usr/bin/python3 -c "import fastapi, uvicorn" || { echo "needs python3-fastapi python3-uvicorn"; exit 1; }
LEVELS="${LEVELS:-1 8 32}"

mkdir -p "$TMP/models"
cp -r "$MODELS/simple" "$TMP/models/simple"
# inferd at its best setting on this host as bench/backends measures it: one
# single-threaded libtorch instance per core, dynamic batching (FastAPI's thread pool
# likewise runs several requests at once), the module frozen and optimized for
# inference at load; `resnet18_as_saved` is the same without that optimization.
for name in resnet18 resnet18_as_saved; do
  mkdir -p "$TMP/models/$name/1"
  sed -e "s/count: 1 }/count: $HW }/" -e "s/^name: .*/name: \"$name\"/" \
    "$MODELS/resnet18/config.pbtxt" > "$TMP/models/$name/config.pbtxt"
  echo 'parameters { key: "INTRA_OP_THREAD_COUNT" value { string_value: "1" } }' \
    >> "$TMP/models/$name/config.pbtxt"
  ln -s "$MODELS/resnet18/1/model.pt" "$TMP/models/$name/1/model.pt"
done
echo 'parameters { key: "OPTIMIZE_FOR_INFERENCE" value { string_value: "true" } }' \
  >> "$TMP/models/resnet18/config.pbtxt"
# The default is true on CPU: say false explicitly for the module as saved.
echo 'parameters { key: "OPTIMIZE_FOR_INFERENCE" value { string_value: "false" } }' \
  >> "$TMP/models/resnet18_as_saved/config.pbtxt"
start_inferd "$TMP/inferd.log" --model-repository "$TMP/models"
INFERD_PORT=$HTTP_PORT
FASTAPI_PORT=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
/usr/bin/python3 "$ROOT/bench/fastapi/server.py" "$FASTAPI_PORT" "$MODELS/resnet18/1/model.pt" \
  > "$TMP/fastapi.log" 2>&1 &
PIDS+=($!)
wait_ready() {  # wait_ready PORT MODEL
  for _ in $(seq 1 600); do
    curl -sf "127.0.0.1:$1/v2/models/$2" > /dev/null && return 0
    sleep 0.1
  done
  echo "server on port $1 never answered for $2"; cat "$TMP/fastapi.log" "$TMP/inferd.log"; exit 1
}
# inferd answers metadata before the model is ready; readiness is the check.
for _ in $(seq 1 600); do curl -sf "127.0.0.1:$INFERD_PORT/v2/health/ready" >/dev/null && break; sleep 0.1; done
wait_ready "$FASTAPI_PORT" resnet18

ROWS=""; SUMMARY=""
# perf SERVER PORT MODEL C INTERVAL_MS: one infer-perf run into $TMP/MODEL-SERVER-C.json.
perf() {
  "$PERF" -m "$3" -u "127.0.0.1:$2" --concurrency-range "$4" --measurement-interval "$5" \
    --warmup-ms 1000 --max-trials 3 --json > "$TMP/$3-$1-$4.json"
}
field() { json_field "$TMP/$1.json" "$2"; }
# measure MODEL INFERD_MODEL INTERVAL_MS: both servers at each level, back to back; FastAPI
# serves MODEL (measured once per level, reused when another inferd model is compared).
measure() {
  local model=$1 ours=$2 interval=$3 c t p99 ratio
  for c in $LEVELS; do
    perf inferd "$INFERD_PORT" "$ours" "$c" "$interval"
    [ -f "$TMP/$model-fastapi-$c.json" ] || perf fastapi "$FASTAPI_PORT" "$model" "$c" "$interval"
    eval "T_inferd_$c=$(field "$ours-inferd-$c" "d['results'][0]['throughput_infer_per_sec']")"
    eval "P_inferd_$c=$(field "$ours-inferd-$c" "d['results'][0]['latency_p99_us']/1000")"
    eval "T_fastapi_$c=$(field "$model-fastapi-$c" "d['results'][0]['throughput_infer_per_sec']")"
    eval "P_fastapi_$c=$(field "$model-fastapi-$c" "d['results'][0]['latency_p99_us']/1000")"
    ratio=$(/usr/bin/python3 -c "print(f'{$(eval echo \$T_inferd_$c)/$(eval echo \$T_fastapi_$c):.2f}')")
    echo "$ours c=$c: inferd $(eval echo \$T_inferd_$c)/s p99 $(eval echo \$P_inferd_$c) ms;" \
      "fastapi $(eval echo \$T_fastapi_$c)/s p99 $(eval echo \$P_fastapi_$c) ms; ratio $ratio"
    ROWS+="| $ours | $c | $(printf %.1f "$(eval echo \$T_inferd_$c)") | $(printf %.1f "$(eval echo \$T_fastapi_$c)") | **$ratio** | $(printf %.2f "$(eval echo \$P_inferd_$c)") | $(printf %.2f "$(eval echo \$P_fastapi_$c)") |"$'\n'
  done
  local best
  best=$(/usr/bin/python3 -c "
import json
b = lambda m, s: max(json.load(open('$TMP/%s-%s-%s.json' % (m, s, c)))['results'][0]['throughput_infer_per_sec'] for c in '$LEVELS'.split())
print(f'{b(\"$ours\", \"inferd\")/b(\"$model\", \"fastapi\"):.2f}')")
  echo "$ours: best inferd / best fastapi throughput: $best"
  SUMMARY+="$ours: best inferd throughput / best FastAPI throughput over the three levels **$best**. "
}
measure simple simple 2000
measure resnet18 resnet18 3000
measure resnet18 resnet18_as_saved 3000

/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" fastapi <<DOC
## Against FastAPI + uvicorn + PyTorch (resnet18 and simple)

Command: \`bench/fastapi/run.sh\` (measured $(date -u +%Y-%m-%d) on the $HW-core development machine,
load generator on the same cores; load average before: $LOAD_BEFORE, after:
$(cut -d' ' -f1-3 /proc/loadavg); the machine is shared by other sessions, so absolute numbers
are noisy — each pair of rows was measured back to back).

The peer, \`bench/fastapi/server.py\`: FastAPI $(/usr/bin/python3 -c "import fastapi; print(fastapi.__version__)") on uvicorn $(/usr/bin/python3 -c "import uvicorn; print(uvicorn.__version__)") with Debian's PyTorch
$(/usr/bin/python3 -c "import torch; print(torch.__version__)"), one process, the same \`model.pt\` run under \`torch.inference_mode()\` in
FastAPI's thread pool, \`simple\` as numpy add/sub; it decodes and encodes the same KServe v2
binary-tensor requests and responses. inferd serves the example repository's configs
(\`resnet18\`: the example config with one single-threaded libtorch instance per core, the
setting that came out best in the backends benchmark on this host, and
\`OPTIMIZE_FOR_INFERENCE\`, which freezes the module and runs libtorch's
optimize_for_inference passes at load; \`resnet18_as_saved\`: the same without it, against the
same FastAPI measurements). Load:
\`infer-perf\`, batch-1 requests, one keep-alive connection per concurrent client.

| model | concurrency | inferd (infer/s) | FastAPI (infer/s) | ratio | inferd p99 (ms) | FastAPI p99 (ms) |
| --- | --- | --- | --- | --- | --- | --- |
$ROWS
$SUMMARY(Goals: ≥ 1.5 on resnet18, ≥ 5 on simple, with a lower p99.)
DOC
