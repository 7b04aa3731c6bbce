#!/bin/bash
# Framework backend benchmark: resnet18 (examples/models, TorchScript) through
# inferd with batch-1 HTTP clients at concurrency 16 (infer-perf), against the
# same module run directly in one process at its best batch size and thread
# count (direct.py). Also the onnx backend (OpenCV DNN) against libtorch on
# the same network. Needs `make build models`. Writes docs/performance.md
# (section backends).
source "$(dirname "$0")/../lib/common.sh"
INTERVAL_MS="${INTERVAL_MS:-5000}"
HW=$(nproc)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT
MODELS="$ROOT/examples/models"
for f in resnet18/1/model.pt resnet18_onnx/1/model.onnx; do
  [ -f "$MODELS/$f" ] || { echo "missing $MODELS/$f: run make models"; exit 1; }
done

echo "direct libtorch, as saved and optimized, OpenMP waiting actively and passively (three minutes)..."
OMP_WAIT_POLICY=ACTIVE /usr/bin/python3 "$ROOT/bench/backends/direct.py" --threads "1,$HW" \
  > "$TMP/direct_active.json"
OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$ROOT/bench/backends/direct.py" --threads "1,$HW" \
  > "$TMP/direct_passive.json"
/usr/bin/python3 - "$TMP" <<'PY'
import json, sys
runs = {p: json.load(open("%s/direct_%s.json" % (sys.argv[1], p))) for p in ("active", "passive")}
for p, d in runs.items():
    for r in d["results"]:
        r["wait_policy"] = p
results = runs["active"]["results"] + runs["passive"]["results"]
best = max(results, key=lambda r: r["images_per_sec"])
json.dump({"results": results, "best": best}, open("%s/direct.json" % sys.argv[1], "w"))
PY
DIRECT=$(json_field "$TMP/direct.json" "d['best']['images_per_sec']")
DIRECT_CFG=$(json_field "$TMP/direct.json" "'batch %d, %d threads, OpenMP waiting %s, %s' % (d['best']['batch'], d['best']['threads'], d['best']['wait_policy'], 'optimized for inference' if d['best']['optimized'] else 'as saved')")
DIRECT_B1=$(json_field "$TMP/direct.json" "max(r['images_per_sec'] for r in d['results'] if r['batch']==1 and not r['optimized'])")
DIRECT_SAVED=$(json_field "$TMP/direct.json" "max(r['images_per_sec'] for r in d['results'] if not r['optimized'])")

# model NAME SOURCE FILE PLATFORM INSTANCES THREADS BATCHING [OPTIMIZE]
model() {
  local name=$1 src=$2 file=$3 platform=$4 count=$5 threads=$6 batching=$7 optimize=${8:-no}
  mkdir -p "$TMP/models/$name/1"
  ln -s "$MODELS/$src/1/$file" "$TMP/models/$name/1/$file"
  cat > "$TMP/models/$name/config.pbtxt" <<CFG
platform: "$platform"
max_batch_size: 32
input [ { name: "input" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] } ]
instance_group [ { kind: KIND_CPU count: $count } ]
parameters { key: "INTRA_OP_THREAD_COUNT" value { string_value: "$threads" } }
$([ "$batching" = yes ] && echo "dynamic_batching { max_queue_delay_microseconds: 2000 }")
parameters { key: "OPTIMIZE_FOR_INFERENCE" value { string_value: "$([ "$optimize" = yes ] && echo true || echo false)" } }
CFG
}
model pt_1x${HW}_batch resnet18 model.pt pytorch_libtorch 1 "$HW" yes
model pt_${HW}x1_batch resnet18 model.pt pytorch_libtorch "$HW" 1 yes
model pt_1x${HW}_nobatch resnet18 model.pt pytorch_libtorch 1 "$HW" no
model pt_${HW}x1_nobatch resnet18 model.pt pytorch_libtorch "$HW" 1 no
model pt_1x${HW}_batch_opt resnet18 model.pt pytorch_libtorch 1 "$HW" yes yes
model pt_${HW}x1_batch_opt resnet18 model.pt pytorch_libtorch "$HW" 1 yes yes
model onnx_1x${HW}_batch resnet18_onnx model.onnx onnxruntime_onnx 1 "$HW" yes
model onnx_1x${HW}_nobatch resnet18_onnx model.onnx onnxruntime_onnx 1 "$HW" no

ROWS=""
run() {  # run MODEL CONCURRENCY LABEL
  "$PERF" -m "$1" -u 127.0.0.1:$HTTP_PORT --concurrency-range "$2" --measurement-interval \
    "$INTERVAL_MS" --max-trials 4 --json > "$TMP/$1_$2.json"
  local t b p99
  t=$(json_field "$TMP/$1_$2.json" "d['results'][0]['throughput_infer_per_sec']")
  b=$(json_field "$TMP/$1_$2.json" "d['results'][0]['server_avg_batch']")
  p99=$(json_field "$TMP/$1_$2.json" "d['results'][0]['latency_p99_us']/1000")
  echo "$3 (concurrency $2): $t infer/s, average batch $b, p99 $p99 ms"
  ROWS+="| $3 | $2 | $(printf %.1f "$t") | $(printf %.1f "$b") | $(printf %.0f "$p99") |"$'\n'
  eval "T_$1_$2=$t"
}
for m in "$TMP"/models/*; do
  name=$(basename "$m")
  start_inferd "$TMP/inferd_$name.log" --model-repository "$TMP/models" \
    --model-control-mode=explicit --load-model="$name"
  backend=libtorch; [[ $name == onnx* ]] && backend="OpenCV DNN"
  inst=${name#*_}; inst=${inst%%_*}
  batching=dynamic; [[ $name == *nobatch ]] && batching=none
  label="$backend, ${inst%x*} instance(s) x ${inst#*x} thread(s), batching: $batching"
  [[ $name == *_opt ]] && label+=", optimized for inference"
  run "$name" 16 "$label"
  [[ $name == *_1x${HW}_nobatch ]] && run "$name" 1 "$label"
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
done

max_of() { /usr/bin/python3 -c "import sys; print(max(float(x) for x in sys.argv[1:]))" "$@"; }
BEST_SAVED=$(max_of "$(eval echo \$T_pt_1x${HW}_batch_16)" "$(eval echo \$T_pt_${HW}x1_batch_16)" \
  "$(eval echo \$T_pt_1x${HW}_nobatch_16)" "$(eval echo \$T_pt_${HW}x1_nobatch_16)")
BEST=$(max_of "$BEST_SAVED" "$(eval echo \$T_pt_1x${HW}_batch_opt_16)" \
  "$(eval echo \$T_pt_${HW}x1_batch_opt_16)")
RATIO=$(/usr/bin/python3 -c "print(f'{$BEST/$DIRECT:.3f}')")
RATIO_SAVED=$(/usr/bin/python3 -c "print(f'{$BEST_SAVED/$DIRECT_SAVED:.3f}')")
PT1=$(eval echo \$T_pt_1x${HW}_nobatch_1); OX1=$(eval echo \$T_onnx_1x${HW}_nobatch_1)
echo "best through inferd: $BEST images/s; direct: $DIRECT images/s ($DIRECT_CFG); ratio $RATIO"
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" backends <<DOC
## Framework backends (resnet18, TorchScript on libtorch; ONNX on OpenCV DNN)

Command: \`bench/backends/run.sh\` (measured $(date -u +%Y-%m-%d) on the $HW-core development
machine; the load generator \`infer-perf\` runs on the same cores, with batch-1 HTTP clients
sending binary FP32 inputs of 3x224x224; random weights, seed 0; load average before the run:
$LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg) — anything above 0 here is other work sharing
the cores, and the numbers move with it).

The peer: the same \`model.pt\` run directly in one Python process with the same libtorch
(\`bench/backends/direct.py\`, \`torch.inference_mode()\`), best of batch sizes 1-16, 1 or $HW
threads, OpenMP waiting actively or passively, and the module as saved or frozen through
\`torch.jit.optimize_for_inference\` (what the backend's \`OPTIMIZE_FOR_INFERENCE\` does):
**$(printf %.1f "$DIRECT") images/s** ($DIRECT_CFG; as saved: $(printf %.1f "$DIRECT_SAVED"); batch 1, as saved: $(printf %.1f "$DIRECT_B1")).

| configuration | concurrency | images/s | average batch | p99 latency (ms) |
| --- | --- | --- | --- | --- |
$ROWS
Best through inferd / direct best: **$RATIO** (goal ≥ 0.95); as saved on both sides:
$RATIO_SAVED ($(printf %.1f "$BEST_SAVED") / $(printf %.1f "$DIRECT_SAVED")). Batch 1, one client, $HW threads:
libtorch $(printf %.1f "$PT1") images/s, OpenCV DNN $(printf %.1f "$OX1") images/s.
DOC
