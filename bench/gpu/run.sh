#!/bin/bash
# GPU benchmark of inferd, in one call on the GPU machine (device tool), after
# bench/gpu/bundle.sh here:
#   run(command="bench/gpu/run.sh", carry=[".gpu-bundle"], timeout_s=600)
# Steps, each under its own timeout, all output under $OUT (run.log,
# results.json, summary.md, metrics.txt):
#   1. builds the pytorch backend against that machine's CUDA libtorch;
#   2. makes resnet50 and resnet18 there with torch (seed 0, TorchScript);
#   3. starts the bundled inferd (2 instances of each model on GPU 0,
#      dynamic batching) and checks it sees the GPU and NVML metrics;
#   4. resnet50 through inferd with infer-perf over binary HTTP and gRPC
#      (concurrency sweep), and through CUDA shared memory (cuda_shm_client.py);
#   5. the same model run directly with torch on the same GPU at its best
#      batch size (direct_torch.py) -> ratio inferd / direct;
#   6. resnet50 and resnet18 interleaved on the GPU: each one's throughput as
#      a fraction of what it reaches alone, summed;
#   7. if time is left, latency-bounded load on resnet50: Poisson arrivals at
#      fractions of its best throughput, p99 against 3x the single latency;
#   8. if time is left, 4 and 5 again in fp16 + channels-last.
# --dry-run: here, without a GPU: the local build (bundled first, like the
# real run), tiny models on KIND_CPU, short windows, no CUDA shared memory;
# proves the script end to end (tests/e2e/test_gpu_bench.py runs it).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
OUT="${OUT:-$(mktemp -d /tmp/inferd-gpu-out.XXXXXX)}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/inferd-gpu.XXXXXX)"
BUDGET_S="${BUDGET_S:-540}"  # the device tool stops a command at 600 s
START=$(date +%s)
exec > >(tee -a "$OUT/run.log") 2>&1
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  for l in "$WORK"/inferd*.log; do
    [ -f "$l" ] && { echo "---- tail of $(basename "$l")"; tail -n 40 "$l"; }
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
say() { echo "[run.sh +$(($(date +%s) - START))s] $*" >&2; }  # stdout may be a result file
# step NAME SECONDS CMD...: runs CMD under a timeout; its status is returned.
step() {
  local name=$1 secs=$2; shift 2
  [ "$(left)" -lt 10 ] && { say "$name: skipped, out of time"; return 124; }
  [ "$secs" -gt "$(left)" ] && secs=$(left)
  say "$name (timeout ${secs}s): $*"
  timeout "$secs" "$@"
  local rc=$?
  say "$name: exit $rc"
  return $rc
}

if [ "$DRY" = 1 ]; then
  PY=/usr/bin/python3
  BUNDLE="$WORK/bundle"
  step bundle 120 "$ROOT/bench/gpu/bundle.sh" --no-build "$BUNDLE" || exit 1
  BACKEND_SO="${BUILD:-$ROOT/build}/lib/inferd/backends/libinferd_pytorch.so"
  KIND=cpu MODEL_FLAGS=(--tiny --count 1) INTERVAL=300 TRIALS=2 LEVELS=(1 2) INTERLEAVE_C=2
  FRACTIONS=(0.5 0.9)
  DIRECT=(--device cpu --batches "1,4" --seconds 0.5)
else
  PY=python3
  BUNDLE="${BUNDLE:-$ROOT/.gpu-bundle}"
  [ -x "$BUNDLE/bin/inferd" ] || { say "no bundle at $BUNDLE: run bench/gpu/bundle.sh and carry .gpu-bundle"; exit 1; }
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  TORCH_PREFIX=$($PY -c 'import torch; print(torch.utils.cmake_prefix_path)')
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
  CUDA_HINTS=""
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    CUDA_HINTS="-DCUDAToolkit_ROOT=/usr/local/cuda -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc"
  fi
  step build_backend 300 bash -c "cmake -S '$BUNDLE/src/bench/gpu/backend' -B '$WORK/ptb' -G Ninja \
      -DCMAKE_PREFIX_PATH='$TORCH_PREFIX' -DINFERD_SRC='$BUNDLE/src' $CUDA_HINTS \
      > '$WORK/cmake.log' 2>&1 || { tail -n 60 '$WORK/cmake.log'; exit 1; }
      grep -E 'pytorch backend|CUDA' '$WORK/cmake.log' | head -n 20
      cmake --build '$WORK/ptb' -j \$(nproc) 2>&1 | tail -n 30; exit \${PIPESTATUS[0]}" || {
    # Without the backend nothing can be served; the direct torch figure is still worth having.
    say "the pytorch backend did not build: measuring direct torch only"
    $PY "$ROOT/bench/gpu/make_models.py" "$WORK/models" --kind gpu > /dev/null &&
      step "direct fp32" 120 $PY "$ROOT/bench/gpu/direct_torch.py" \
        "$WORK/models/resnet50/1/model.pt" --device cuda --batches "1,8,16,32,64" --seconds 2 \
        > "$WORK/direct_fp32.json"
    $PY "$ROOT/bench/gpu/summarize.py" "$WORK" "$OUT" 0
    exit 1
  }
  BACKEND_SO="$WORK/ptb/libinferd_pytorch.so"
  KIND=gpu MODEL_FLAGS=(--count 2) INTERVAL=2000 TRIALS=3 LEVELS=(1 4 16 64) INTERLEAVE_C=16
  FRACTIONS=(0.5 0.7 0.8 0.9)
  DIRECT=(--device cuda --batches "1,8,16,32,64" --seconds 2)
fi
head -n 2 "$BUNDLE/MANIFEST"
mkdir -p "$WORK/backends"
ln -s "$BUNDLE"/backends/*.so "$WORK/backends/"
ln -s "$BACKEND_SO" "$WORK/backends/libinferd_pytorch.so"
LIBPATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # for inferd and infer-perf only

make_models() {  # make_models PRECISION
  step "models ($1)" 240 $PY "$ROOT/bench/gpu/make_models.py" "$WORK/models" --kind "$KIND" \
    --precision "$1" "${MODEL_FLAGS[@]}"
}

HTTP_PORT="" GRPC_PORT="" METRICS_PORT=""
start_inferd() {  # start_inferd TAG
  local log="$WORK/inferd_$1.log"
  env LD_LIBRARY_PATH="$LIBPATH" "$BUNDLE/bin/inferd" --model-repository "$WORK/models" \
    --backend-directory "$WORK/backends" --model-control-mode=explicit --load-model=resnet50 \
    --load-model=resnet18 --http-address 127.0.0.1 --http-port 0 --grpc-address 127.0.0.1 \
    --grpc-port 0 --metrics-port 0 --metrics-interval-ms 500 --allow-client-shm=true \
    2> "$log" &
  PIDS+=($!)
  for _ in $(seq 1 1200); do
    HTTP_PORT=$(sed -n 's/^inferd: HTTP listening on .*:\([0-9]*\)$/\1/p' "$log" | head -n 1)
    GRPC_PORT=$(sed -n 's/^inferd: gRPC listening on .*:\([0-9]*\)$/\1/p' "$log" | head -n 1)
    METRICS_PORT=$(sed -n 's/^inferd: metrics listening on .*:\([0-9]*\)$/\1/p' "$log" | head -n 1)
    [ -n "$HTTP_PORT" ] && [ -n "$GRPC_PORT" ] && break
    kill -0 "${PIDS[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  head -n 5 "$log"
  [ -n "$HTTP_PORT" ] || { say "inferd did not start"; cat "$log"; return 1; }
  curl -s -X POST "http://127.0.0.1:$HTTP_PORT/v2/repository/index"; echo
  curl -sf "http://127.0.0.1:$HTTP_PORT/v2/models/resnet50/ready" > /dev/null ||
    { say "resnet50 is not ready"; return 1; }
  curl -s "http://127.0.0.1:$HTTP_PORT/v2/models/resnet50/config" | head -c 600; echo
}
stop_inferd() { kill "${PIDS[-1]}" 2>/dev/null; wait "${PIDS[-1]}" 2>/dev/null; unset 'PIDS[-1]'; }

# perf TAG MODEL PROTOCOL CONCURRENCY [extra...]: infer-perf -> $WORK/perf_TAG.json
perf() {
  local tag=$1 model=$2 proto=$3 c=$4; shift 4
  local url="127.0.0.1:$HTTP_PORT"
  [ "$proto" = grpc ] && url="127.0.0.1:$GRPC_PORT"
  # gRPC runs read the model's metadata over HTTP (INFER_PERF_HTTP_URL).
  step "perf $tag" 60 env LD_LIBRARY_PATH="$LIBPATH" INFER_PERF_HTTP_URL="127.0.0.1:$HTTP_PORT" \
    "$BUNDLE/bin/infer-perf" -m "$model" -u "$url" -i "$proto" \
    --concurrency-range "$c" --measurement-interval "$INTERVAL" --max-trials "$TRIALS" --json "$@" \
    > "$WORK/perf_$tag.json"
}

# ---- fp32 ---------------------------------------------------------------------------------
make_models fp32 || exit 1
start_inferd fp32 || exit 1
grep -E "CUDA device|no CUDA device" "$WORK/inferd_fp32.log"
for p in http grpc; do
  for c in "${LEVELS[@]}"; do perf "fp32_${p}_c$c" resnet50 "$p" "$c"; done
done
if [ "$DRY" = 0 ]; then
  step cuda_shm 120 $PY "$ROOT/bench/gpu/cuda_shm_client.py" "127.0.0.1:$HTTP_PORT" resnet50 \
    --concurrency 1,4,16 --seconds 3 > "$WORK/cuda_shm_fp32.json"
fi
# Interleaving: resnet18 alone, then both at once (resnet50 alone is in the sweep above).
perf "fp32_alone_resnet18" resnet18 http "$INTERLEAVE_C"
perf "fp32_both_resnet50" resnet50 http "$INTERLEAVE_C" & both=$!
perf "fp32_both_resnet18" resnet18 http "$INTERLEAVE_C"
wait $both
# Latency-bounded load (the fifth benchmark of issue 8, which needs a batch that costs less than
# its size in single runs): Poisson arrivals at fractions of the sweep's best HTTP throughput;
# summarize.py takes the highest fraction whose p99 stays under 3x the single-request latency.
if [ "$DRY" = 1 ] || [ "$(left)" -gt 240 ]; then
  OFFLINE=$($PY -c '
import glob, json, sys
print(max(json.load(open(p))["results"][0]["throughput_infer_per_sec"]
          for p in glob.glob(sys.argv[1] + "/perf_fp32_http_c*.json")))' "$WORK")
  for f in "${FRACTIONS[@]}"; do
    rate=$($PY -c "print(round($f * $OFFLINE, 1))")
    step "perf fp32_rate_$f" 60 env LD_LIBRARY_PATH="$LIBPATH" "$BUNDLE/bin/infer-perf" \
      -m resnet50 -u "127.0.0.1:$HTTP_PORT" --request-rate-range "$rate" \
      --request-distribution poisson --max-threads 256 --measurement-interval "$INTERVAL" \
      --max-trials "$TRIALS" --json > "$WORK/perf_fp32_rate_$f.json"
  done
fi
[ -n "$METRICS_PORT" ] && curl -s "http://127.0.0.1:$METRICS_PORT/metrics" > "$OUT/metrics.txt"
grep -E '^nv_(gpu|energy)' "$OUT/metrics.txt" || say "no GPU metrics in /metrics"
stop_inferd
step "direct fp32" 120 $PY "$ROOT/bench/gpu/direct_torch.py" "$WORK/models/resnet50/1/model.pt" \
  "${DIRECT[@]}" --precision fp32 > "$WORK/direct_fp32.json"

# ---- fp16 + channels-last, if time is left -------------------------------------------------
if [ "$DRY" = 0 ] && [ "$(left)" -gt 150 ]; then
  make_models fp16 && start_inferd fp16 && {
    for c in 16 64; do perf "fp16_http_c$c" resnet50 http "$c"; done
    perf "fp16_grpc_c64" resnet50 grpc 64
    stop_inferd
    step "direct fp16" 90 $PY "$ROOT/bench/gpu/direct_torch.py" \
      "$WORK/models/resnet50/1/model.pt" "${DIRECT[@]}" --precision fp16 > "$WORK/direct_fp16.json"
  }
fi

step summary 30 $PY "$ROOT/bench/gpu/summarize.py" "$WORK" "$OUT" "$DRY"
cat "$OUT/summary.md" 2>/dev/null
say "done"
