#!/bin/bash
# Scale-out benchmark: throughput through the balancer (nginx with
# deploy/nginx/inferd.conf, least_conn, upstream keep-alive) with 1, 2 and 3
# inferd hosts, as a fraction of linear scaling (n x the one-host throughput
# through the same balancer; goal >= 0.9 at 3 hosts).
#
# Each host serves the `delay` model latency-bound: 50 ms per execution,
# max_batch_size 1, one instance, so one host does at most 20 inferences/s
# whatever the CPU, and n hosts at most 20 n/s. The load is infer-perf over
# HTTP in concurrency mode, 4 outstanding requests per host, so that every
# host always has a request waiting. Hosts are separate processes on
# loopback (their capacity is the model's, not the machine's).
# Writes docs/performance.md (section scaleout).
#   BUILD=build-dev bench/scaleout/run.sh
source "$(dirname "$0")/../lib/common.sh"
INTERVAL_MS="${INTERVAL_MS:-4000}"
PER_HOST_CONCURRENCY=4
TMP=$(mktemp -d); PIDS=()
NGINX_LOCAL="/usr/bin/python3 $ROOT/tests/cluster/nginx_local.py"
trap '$NGINX_LOCAL stop "$TMP/nginx" 2>/dev/null; cleanup; rm -rf "$TMP"' EXIT

mkdir -p "$TMP/models/delay/1"
cat > "$TMP/models/delay/config.pbtxt" <<CFG
backend: "delay"
max_batch_size: 1
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
parameters { key: "execute_delay_ms" value { string_value: "50" } }
instance_group [ { kind: KIND_CPU count: 1 } ]
CFG

HOSTS=()
for i in 1 2 3; do
  start_inferd "$TMP/inferd$i.log" --model-repository "$TMP/models"
  HOSTS+=("127.0.0.1:$HTTP_PORT")
done
free_port() { /usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }
LB_HTTP=$(free_port); LB_GRPC=$(free_port)
$NGINX_LOCAL start "$TMP/nginx" "$LB_HTTP" "$LB_GRPC" "${HOSTS[0]}"

measure() {  # measure URL CONCURRENCY OUT.json
  "$PERF" -m delay -u "$1" --concurrency-range "$2" --measurement-interval "$INTERVAL_MS" \
    --max-trials 5 --json > "$3"
  json_field "$3" "d['results'][0]['throughput_infer_per_sec']"
}

DIRECT=$(measure "${HOSTS[0]}" $PER_HOST_CONCURRENCY "$TMP/direct.json")
echo "1 host, no balancer: $DIRECT infer/s"
declare -A T P99
for n in 1 2 3; do
  $NGINX_LOCAL reload "$TMP/nginx" "${HOSTS[@]:0:$n}"
  T[$n]=$(measure "127.0.0.1:$LB_HTTP" $((PER_HOST_CONCURRENCY * n)) "$TMP/lb$n.json")
  P99[$n]=$(json_field "$TMP/lb$n.json" "d['results'][0]['latency_p99_us']/1000")
  echo "$n host(s) through nginx: ${T[$n]} infer/s"
done
frac() { /usr/bin/python3 -c "print(f'{$1/($2*$3):.3f}')"; }
F2=$(frac "${T[2]}" 2 "${T[1]}"); F3=$(frac "${T[3]}" 3 "${T[1]}")
I1=$(frac "${T[1]}" 1 20); I2=$(frac "${T[2]}" 2 20); I3=$(frac "${T[3]}" 3 20)
echo "fraction of linear: 2 hosts $F2, 3 hosts $F3 (of the 20/s-per-host ideal: $I1, $I2, $I3)"

row() { printf '| %s | %s | %.1f | %s | %s | %.0f |\n' "$1" "$2" "$3" "$4" "$5" "$6"; }
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" scaleout <<DOC
## Scale-out through the balancer (\`delay\` model, 50 ms, one request at a time per host)

Command: \`bench/scaleout/run.sh\` (inferd hosts as separate processes on loopback, each serving
\`delay\` with \`execute_delay_ms: 50\`, \`max_batch_size: 1\`, one instance, so a host's capacity is
20 inferences/s; nginx with \`deploy/nginx/inferd.conf\`, \`least_conn\`, upstream keep-alive; HTTP
load from \`infer-perf\` in concurrency mode, $PER_HOST_CONCURRENCY outstanding requests per host;
measured $(date -u +%Y-%m-%d) on the 2-core development machine, load generator and balancer on the
same machine).

| hosts | concurrency | throughput (infer/s) | fraction of linear | fraction of 20/s per host | p99 latency (ms) |
| --- | --- | --- | --- | --- | --- |
$(row "1 (no balancer)" $PER_HOST_CONCURRENCY "$DIRECT" "-" "$(frac "$DIRECT" 1 20)" "$(json_field "$TMP/direct.json" "d['results'][0]['latency_p99_us']/1000")")
$(row 1 $PER_HOST_CONCURRENCY "${T[1]}" "1.000" "$I1" "${P99[1]}")
$(row 2 $((PER_HOST_CONCURRENCY * 2)) "${T[2]}" "$F2" "$I2" "${P99[2]}")
$(row 3 $((PER_HOST_CONCURRENCY * 3)) "${T[3]}" "$F3" "$I3" "${P99[3]}")

With 3 hosts the balancer delivers **$F3** of linear scaling (3 x the one-host throughput through
the same balancer; goal >= 0.9). "Fraction of linear" divides by n x the measured one-host
throughput; the next column by the model's ideal of 20/s per host.
DOC
