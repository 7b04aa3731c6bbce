#!/bin/bash
# Python backend overhead: an identity model written in Python (backend
# "python", one stub process, output = the input's view, sent by reference)
# against the built-in identity backend (C, one memcpy), through inferd over
# HTTP with infer-perf, at concurrency 1 and 16, for a small tensor (16 FP32)
# and a 4 MiB one (1,048,576 FP32). Prints the microseconds the stub adds per
# request and the 4 MiB tensors' throughput in GB/s (input bytes per second);
# the 4 MiB case once over HTTP and once with the tensors in client shared
# memory (--shared-memory system), which leaves the backends' own copies.
# Needs `make build` (inferd, infer-perf, libinferd_python.so).
source "$(dirname "$0")/../lib/common.sh"
INTERVAL_MS="${INTERVAL_MS:-3000}"
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT

model() {  # model NAME BACKEND
  mkdir -p "$TMP/models/$1/1"
  cat > "$TMP/models/$1/config.pbtxt" <<CFG
name: "$1"
backend: "$2"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
CFG
}
model identity_c identity
model identity_py python
model identity_py_inline python  # allowed to run on the HTTP thread, as the C one does
echo 'parameters { key: "inline_execution_max_us" value { string_value: "2000" } }' \
  >> "$TMP/models/identity_py_inline/config.pbtxt"
cat > "$TMP/models/identity_py/1/model.py" <<'PY'
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
PY

cp "$TMP/models/identity_py/1/model.py" "$TMP/models/identity_py_inline/1/model.py"
start_inferd "$TMP/inferd.log" --model-repository "$TMP/models" --allow-client-shm=true
declare -A LAT THR
run() {  # run MODEL ELEMENTS CONCURRENCY SHM
  "$PERF" -m "$1" -u 127.0.0.1:$HTTP_PORT --shape "INPUT0:$2" --concurrency-range "$3" \
    --shared-memory "$4" --measurement-interval "$INTERVAL_MS" --max-trials 4 --json > "$TMP/r.json"
  LAT[$1_$2_$3_$4]=$(json_field "$TMP/r.json" "d['results'][0]['latency_avg_us']")
  THR[$1_$2_$3_$4]=$(json_field "$TMP/r.json" "d['results'][0]['throughput_infer_per_sec']")
}
echo "| tensor | concurrency | built-in identity: infer/s, avg µs | Python identity: infer/s, avg µs | added µs/request | Python GB/s |"
echo "| --- | --- | --- | --- | --- | --- |"
for case in "16 none" "1048576 none" "1048576 system"; do
  read -r n shm <<< "$case"
  for c in 1 16; do
    run identity_c $n $c $shm
    run identity_py $n $c $shm
    lc=${LAT[identity_c_${n}_${c}_$shm]} lp=${LAT[identity_py_${n}_${c}_$shm]}
    tc=${THR[identity_c_${n}_${c}_$shm]} tp=${THR[identity_py_${n}_${c}_$shm]}
    /usr/bin/python3 - "$n" "$c" "$lc" "$lp" "$tc" "$tp" "$shm" <<'PY'
import sys
n, c = int(sys.argv[1]), int(sys.argv[2])
lc, lp, tc, tp = map(float, sys.argv[3:7])
shm = sys.argv[7]
# Added time per request: at concurrency 1 the latency difference; at 16 the
# difference of the per-request service time (1/throughput).
added = lp - lc if c == 1 else 1e6 / tp - 1e6 / tc
gbs = tp * n * 4 / 1e9
label = "%d FP32 (%s)%s" % (n, "4 MiB" if n == 1048576 else "%d B" % (n * 4),
                            ", client shm" if shm == "system" else "")
print("| %s | %d | %.0f, %.0f | %.0f, %.0f | %.1f | %.2f |" % (label, c, tc, lc, tp, lp, added, gbs))
PY
  done
done
# The backend's own time per execution (compute_infer).
backend_us() {
  /usr/bin/python3 -c "import json, urllib.request as u
s = json.load(u.urlopen('http://127.0.0.1:$HTTP_PORT/v2/models/$1/stats'))['model_stats'][0]
i = s['inference_stats']['compute_infer']; print('%.1f' % (i['ns'] / max(1, i['count']) / 1000))"
}
run identity_py_inline 16 1 none
echo
echo "Python identity allowed inline (inline_execution_max_us 2000), 64 B, concurrency 1:" \
  "${THR[identity_py_inline_16_1_none]} infer/s, ${LAT[identity_py_inline_16_1_none]} µs" \
  "(built-in: ${LAT[identity_c_16_1_none]} µs)"
echo "the Python backend's own time per 64 B execution (compute_infer: plugin, IPC, stub):" \
  "$(backend_us identity_py_inline) µs"
echo "(host: $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg))"
