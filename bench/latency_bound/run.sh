#!/bin/bash
# Latency-bounded load: Poisson arrivals at rising rates on resnet18 and on
# the `delay` model; the highest rate whose p99 stays under 3x the
# single-request latency, as a fraction of the model's best offline (closed
# loop, any concurrency) throughput measured in the same run. infer-perf
# times each request from its scheduled arrival, so queueing behind a slow
# server counts. Needs `make build models`. Writes docs/performance.md
# (section latency_bound).
source "$(dirname "$0")/../lib/common.sh"
HW=$(nproc)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT
MODELS="$ROOT/examples/models"
[ -f "$MODELS/resnet18/1/model.pt" ] || { echo "missing resnet18: run make models"; exit 1; }
BOUND="${BOUND:-3}"
FRACTIONS="${FRACTIONS:-0.3 0.5 0.7 0.8 0.9 1.0}"

mkdir -p "$TMP/models/resnet18/1" "$TMP/models/delay/1"
cp "$MODELS/resnet18/config.pbtxt" "$TMP/models/resnet18/"
ln -s "$MODELS/resnet18/1/model.pt" "$TMP/models/resnet18/1/model.pt"
cat > "$TMP/models/delay/config.pbtxt" <<'CFG'
name: "delay"
backend: "delay"
max_batch_size: 32
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
parameters { key: "execute_delay_ms" value { string_value: "10" } }
dynamic_batching { }
CFG
start_inferd "$TMP/inferd.log" --model-repository "$TMP/models"
for _ in $(seq 1 600); do curl -sf "127.0.0.1:$HTTP_PORT/v2/health/ready" >/dev/null && break; sleep 0.1; done

perf() {  # perf OUT ARGS...
  local out=$1; shift
  # 256 rate-mode workers: at ~2,700 arrivals/s and ~20 ms each, the default 64 would
  # run out and turn the open loop into a closed one.
  "$PERF" -u "127.0.0.1:$HTTP_PORT" --warmup-ms 1000 --max-trials 3 --max-threads 256 --json \
    "$@" > "$out"
}
ROWS=""; DETAIL=""
measure() {  # measure MODEL INTERVAL_MS OFFLINE_CONCURRENCIES MAX_BATCH
  local model=$1 interval=$2 offline=$3 max_batch=$4 c f rate p99 best_rate=0
  perf "$TMP/$model-c1.json" -m "$model" --concurrency-range 1 --measurement-interval "$interval"
  local single
  single=$(json_field "$TMP/$model-c1.json" "d['results'][0]['latency_p50_us']")
  eval "SINGLE_$model=$single"
  local tmax=0 t
  for c in $offline; do
    perf "$TMP/$model-o$c.json" -m "$model" --concurrency-range "$c" --measurement-interval "$interval"
    t=$(json_field "$TMP/$model-o$c.json" "d['results'][0]['throughput_infer_per_sec']")
    tmax=$(/usr/bin/python3 -c "print(max($tmax, $t))")
  done
  local bound_us
  bound_us=$(/usr/bin/python3 -c "print($BOUND * $single)")
  DETAIL+="| $model | $(printf %.1f "$(/usr/bin/python3 -c "print($single/1000)")") | $(printf %.1f "$tmax") |"
  for f in $FRACTIONS; do
    rate=$(/usr/bin/python3 -c "print(round($f * $tmax, 1))")
    perf "$TMP/$model-r$f.json" -m "$model" --request-rate-range "$rate" \
      --request-distribution poisson --measurement-interval "$interval"
    p99=$(json_field "$TMP/$model-r$f.json" "d['results'][0]['latency_p99_us']")
    t=$(json_field "$TMP/$model-r$f.json" "d['results'][0]['throughput_infer_per_sec']")
    local ok=no
    if /usr/bin/python3 -c "import sys; sys.exit(0 if $p99 < $bound_us else 1)"; then
      ok=yes; best_rate=$rate
    fi
    echo "$model: rate $rate/s ($f of $tmax): achieved $t/s, p99 $(/usr/bin/python3 -c "print(round($p99/1000,1))") ms (bound $(/usr/bin/python3 -c "print(round($bound_us/1000,1))") ms): $ok"
    DETAIL+=" $(printf %.0f "$(/usr/bin/python3 -c "print($p99/1000)")")$([ $ok = yes ] && echo ✓ || true) |"
  done
  DETAIL+=$'\n'
  local frac ideal rel
  frac=$(/usr/bin/python3 -c "print(f'{$best_rate/$tmax:.2f}')")
  # The peer: a zero-overhead batching server under the same arrivals (ideal.py).
  /usr/bin/python3 "$ROOT/bench/latency_bound/ideal.py" "$single" "$tmax" "$max_batch" "$bound_us" \
    $FRACTIONS > "$TMP/$model-ideal.json"
  ideal=$(json_field "$TMP/$model-ideal.json" "d['best_fraction']")
  rel=$(/usr/bin/python3 -c "print('n/a' if $ideal == 0 else f'{$frac/$ideal:.2f}')")
  IDEAL_DETAIL+="| $model | $(printf %.1f "$(/usr/bin/python3 -c "print($single/1000)")") | $(printf %.1f "$tmax") | $(json_field "$TMP/$model-ideal.json" "' | '.join(str(round(v/1000)) for v in d['p99_us'].values())") |"$'\n'
  echo "$model: single-request latency $single us, best offline $tmax/s, highest rate under bound $best_rate/s = $frac (ideal server: $ideal)"
  ROWS+="| $model | $(printf %.1f "$(/usr/bin/python3 -c "print($single/1000)")") | $(printf %.1f "$tmax") | $best_rate | **$frac** | $ideal | **$rel** |"$'\n'
}
IDEAL_DETAIL=""
measure delay 2000 "32 64 128" 32
measure resnet18 4000 "1 8 32" "$(sed -n 's/^max_batch_size: *\([0-9]*\).*/\1/p' "$MODELS/resnet18/config.pbtxt")"

# The ideal server's ceiling against the max batch, for a cost flat in the batch
# size as `delay`'s is (one execution of the measured single latency serves up to B).
CEILINGS=""
for b in 8 16 32 64; do
  CEILINGS+="$([ -n "$CEILINGS" ] && echo ", ")$(/usr/bin/python3 "$ROOT/bench/latency_bound/ideal.py" \
    "$SINGLE_delay" "$(/usr/bin/python3 -c "print($b / ($SINGLE_delay / 1e6))")" "$b" \
    "$(/usr/bin/python3 -c "print($BOUND * $SINGLE_delay)")" $FRACTIONS 0.95 |
    /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['best_fraction'])") at $b"
done
HEAD="| model | single latency (ms) | best offline (infer/s) |"; SEP="| --- | --- | --- |"
for f in $FRACTIONS; do HEAD+=" p99 at $f (ms) |"; SEP+=" --- |"; done
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" latency_bound <<DOC
## Latency-bounded load (Poisson arrivals, p99 under ${BOUND}x the single-request latency)

Command: \`bench/latency_bound/run.sh\` (measured $(date -u +%Y-%m-%d) on the $HW-core development
machine, load generator on the same cores; load average before: $LOAD_BEFORE, after:
$(cut -d' ' -f1-3 /proc/loadavg); the machine is shared by other sessions, so these numbers are
noisy, resnet18's most).

Per model, in one run: the single-request latency (p50 at concurrency 1), the best offline
throughput (closed loop, best of the listed concurrencies), then Poisson arrivals at fractions of
that throughput (\`infer-perf --request-rate-range R --request-distribution poisson\`, latency
counted from each request's scheduled arrival). \`delay\`: the built-in delay backend, 10 ms per
execution whatever the batch, max batch 32 (as in the batching benchmark), dynamic batching
without a queue delay; resnet18: the
example config (one libtorch instance, dynamic batching, 2 ms queue delay).

| model | single latency (ms) | best offline (infer/s) | highest rate under the bound (/s) | fraction of offline | ideal server's fraction | inferd / ideal |
| --- | --- | --- | --- | --- | --- | --- |
$ROWS
p99 at each fraction of the offline throughput (✓: under the bound):

$HEAD
$SEP
$DETAIL
The same for the ideal server (\`bench/latency_bound/ideal.py\`: a discrete-event simulation of
one zero-overhead batching server under Poisson arrivals at the same rates, serving a batch of b
in max(single latency, b / best offline throughput), up to the model's max batch; 200,000
arrivals):

$HEAD
$SEP
$IDEAL_DETAIL
Goal: a fraction ≥ 0.9. Whether any server can reach it depends on how a batch's cost grows
with its size, which the ideal server's table shows. Where a batch costs about what one request
costs (\`delay\`, or a network on a GPU), bursts are absorbed by larger batches, and the larger
the max batch the closer the ceiling gets to 1 (ideal.py at \`delay\`'s single latency, by max
batch: $CEILINGS). Where a batch of b costs b times one request (resnet18 on
this 2-core CPU) the server is a single queue with a fixed service time, and at 90% of capacity
Poisson bursts alone make the p99 wait several service times, so no server reaches the bound even
at 0.3 of capacity. The ideal server's column is the reachable ceiling; "inferd / ideal" is how
much of it inferd keeps (above 1 when inferd's measured single latency, which includes the HTTP
round trip, makes its bound looser than the service time alone).
The same benchmark on a GPU, where a batch costs much less than its size in single runs, is
part of \`bench/gpu/run.sh\` (resnet50; docs/gpu.md).
DOC
