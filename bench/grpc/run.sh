#!/bin/bash
# gRPC overhead benchmark: unary ModelInfer on `simple` (add_sub, two INT32
# [1,16] inputs) through inferd's gRPC front end, against a bare callback-API
# gRPC service that answers the same calls with a canned response
# (bench_grpc_echo: same Debian gRPC, same proto, same server settings).
# The same closed-loop client (bench_grpc_load) drives both at concurrency
# 1, 8 and 64, interleaved; the ratio inferd / echo is what inferd's codec,
# validation, scheduling and model thread cost on top of gRPC itself.
# Goal: >= 0.9 at concurrency 64 (issue 25; >= 0.7 before). Writes
# docs/performance.md (section grpc).
#
# Each point is ROUNDS short runs per target, inferd and echo alternating,
# and keeps each target's best round: on a small shared machine, background
# work (compiles, other tests) otherwise decides the ratio.
#
# Environment: BUILD (default build/), ROUNDS (3), SECONDS_PER_ROUND (2),
# WARMUP (0.5), CONCURRENCY ("1 8 64"), BASE (unset; an older inferd binary,
# measured in the same rounds: a before/after side by side).
source "$(dirname "$0")/../lib/common.sh"
ROUNDS="${ROUNDS:-3}"
SECONDS_PER_ROUND="${SECONDS_PER_ROUND:-2}"
WARMUP="${WARMUP:-0.5}"
CONCURRENCY="${CONCURRENCY:-1 8 64}"
BASE="${BASE:-}"
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; rm -rf "$TMP"' EXIT
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

cmake --build "$BUILD" --target inferd bench_grpc_echo bench_grpc_load > "$TMP/build.log" 2>&1 ||
  { cat "$TMP/build.log"; exit 1; }

# simple from the canonical test repository (-L: it links to examples/models).
mkdir -p "$TMP/models"
cp -rL "$ROOT/tests/data/models/simple" "$TMP/models/simple"

# wait_port LOG REGEX: prints the port once LOG has a line matching REGEX:(port)
wait_port() {
  for _ in $(seq 1 300); do
    local p; p=$(sed -n "s/^$2:\([0-9]*\)$/\1/p" "$1" | head -1)
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.1
  done
  echo "did not start:" >&2; cat "$1" >&2; exit 1
}

"$INFERD" --model-repository "$TMP/models" --http-address 127.0.0.1 --http-port 0 \
  --grpc-address 127.0.0.1 --grpc-port 0 --allow-metrics=false 2> "$TMP/inferd.log" &
PIDS+=($!)
"$BUILD/bin/bench_grpc_echo" --port 0 2> "$TMP/echo.log" &
PIDS+=($!)
INFERD_PORT=$(wait_port "$TMP/inferd.log" "inferd: gRPC listening on 127.0.0.1")
ECHO_PORT=$(wait_port "$TMP/echo.log" "echo listening on 127.0.0.1")
if [ -n "$BASE" ]; then
  "$BASE" --model-repository "$TMP/models" --http-address 127.0.0.1 --http-port 0 \
    --grpc-address 127.0.0.1 --grpc-port 0 --allow-metrics=false 2> "$TMP/base.log" &
  PIDS+=($!)
  BASE_PORT=$(wait_port "$TMP/base.log" "inferd: gRPC listening on 127.0.0.1")
fi

load() {  # load PORT CONCURRENCY -> JSON line
  "$BUILD/bin/bench_grpc_load" --target "127.0.0.1:$1" --concurrency "$2" \
    --seconds "$SECONDS_PER_ROUND" --warmup "$WARMUP"
}
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.argv[1])['$2'])" "$1"; }
best() {  # best JSON line (highest throughput) among the arguments
  /usr/bin/python3 -c "import json,sys; print(max(sys.argv[1:], key=lambda l: json.loads(l)['throughput']))" "$@"
}

ROWS=""
MIN_RATIO=""
for c in $CONCURRENCY; do
  IR=(); ER=(); BR=()
  for _ in $(seq 1 "$ROUNDS"); do
    IR+=("$(load "$INFERD_PORT" "$c")")
    [ -n "$BASE" ] && BR+=("$(load "$BASE_PORT" "$c")")
    ER+=("$(load "$ECHO_PORT" "$c")")
  done
  for r in "${IR[@]}" "${ER[@]}" "${BR[@]}"; do
    [ "$(field "$r" errors)" = 0 ] || { echo "errors during the run: $r"; exit 1; }
  done
  I=$(best "${IR[@]}"); E=$(best "${ER[@]}")
  IT=$(field "$I" throughput); ET=$(field "$E" throughput)
  RATIO=$(/usr/bin/python3 -c "print(f'{$IT/$ET:.2f}')")
  MIN_RATIO=$(/usr/bin/python3 -c "print(min(x for x in [$RATIO, ${MIN_RATIO:-$RATIO}]))")
  printf 'concurrency %3d: inferd %9.0f calls/s (p50 %5d us, p99 %6d us)  echo %9.0f calls/s (p50 %5d us, p99 %6d us)  ratio %s\n' \
    "$c" "$IT" "$(field "$I" p50_us)" "$(field "$I" p99_us)" "$ET" "$(field "$E" p50_us)" \
    "$(field "$E" p99_us)" "$RATIO"
  BASE_COLS=""
  if [ -n "$BASE" ]; then
    BT=$(field "$(best "${BR[@]}")" throughput)
    BASE_COLS=" $(printf %.0f "$BT") | $(/usr/bin/python3 -c "print(f'{$BT/$ET:.2f}')") |"
    echo "  before ($(basename "$BASE")): $(printf %.0f "$BT") calls/s, ratio $(/usr/bin/python3 -c "print(f'{$BT/$ET:.2f}')")"
  fi
  ROWS+="| $c | $(printf %.0f "$IT") | $(field "$I" p50_us) / $(field "$I" p99_us) | $(printf %.0f "$ET") | $(field "$E" p50_us) / $(field "$E" p99_us) | **$RATIO** |$BASE_COLS"$'\n'
done
BASE_HEAD=""; BASE_SEP=""; BASE_NOTE=""
if [ -n "$BASE" ]; then
  BASE_HEAD=" before (calls/s) | before / echo |"; BASE_SEP=" --- | --- |"
  BASE_NOTE="
\"before\" is an older inferd build ($(basename "$BASE")) measured in the same rounds
(\`BASE=<older inferd> bench/grpc/run.sh\`)."
fi
echo "lowest ratio: $MIN_RATIO (goal >= 0.9 at 64)"

/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" grpc <<DOC
## gRPC overhead

Command: \`${BASE:+BASE=<older inferd> }bench/grpc/run.sh\` (measured $(date -u +%Y-%m-%d) on the $(nproc)-core development machine,
load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg);
server, peer and load client share it). Unary \`ModelInfer\` on \`simple\` (add_sub, two INT32
[1,16] inputs in \`raw_input_contents\`), closed loop at a fixed concurrency on one channel;
per point, best of ${ROUNDS} rounds of ${SECONDS_PER_ROUND} s (after ${WARMUP} s of warm-up each),
inferd and the peer alternating.
The peer, \`bench_grpc_echo\`, is a bare gRPC callback-API service built from the same Debian
gRPC 1.51 and proto that answers each call with a canned response of the same shape: the
ratio is what inferd adds on top of gRPC (decode, validation, scheduling, the model thread,
encode).

| concurrency | inferd (calls/s) | inferd p50 / p99 (µs) | echo (calls/s) | echo p50 / p99 (µs) | inferd / echo |$BASE_HEAD
| --- | --- | --- | --- | --- | --- |$BASE_SEP
${ROWS}$BASE_NOTE
Goal: ≥ 0.9 of the bare service at concurrency 64 (issue 25); lowest ratio in this run: **$MIN_RATIO**.

Where the time goes: the peer answers on the gRPC thread that read the call. inferd decodes,
validates, runs \`simple\` and encodes; since a fast model with an idle instance runs inline
on that same thread (docs/decisions.md, "Inline execution"), and a call whose inference has
completed by the time the handler returns is answered through gRPC's default reactor, as the
peer does, there is no thread hand-off per call any more. Before these two changes the
hand-off to the instance thread (a futex wake and a context switch, ~12-20 µs on this 2-vCPU VM)
was ~19 µs of inferd's ~21 µs server-side time at concurrency 1, and gRPC ran our reactor's
\`OnDone\` on another thread; the ratios were 0.54 / 0.52 / 0.64 on a quiet machine. Numbers swing with background
load on this machine (the peer alone varies 2x between runs); rerun on a quiet host for
decisions.
DOC
