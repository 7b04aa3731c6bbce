#!/bin/bash
# The batching service against a remote fleet (issue 28): many batch-1
# clients reach inferd the way a remote fleet is reached, over TLS through
# nginx as the balancer, either directly (path A) or through infer-batcher
# running beside them (path B), which merges their requests into fewer,
# larger ones before the expensive hops. Throughput and p50/p99 on `simple`
# and `digits`, the two paths alternating in rounds; a client-count sweep
# (64, 8, 1) shows where the batcher stops paying.
#
# Topology: three network namespaces joined by two veth pairs, so that every
# hop is a real TCP connection across an interface:
#   clients ns  (infer-perf; infer-batcher on 127.0.0.1 for path B)
#     --veth--> balancer ns (nginx: deploy/nginx/inferd.conf with TLS on
#                            both listeners, certificates made here with
#                            openssl, HTTP/2 gRPC proxy to inferd)
#     --veth--> server ns   (inferd with examples/models: simple, digits;
#                            its own dynamic batching as configured there)
# This kernel has no netem, so distance is the hops (TLS, a proxy, two
# veths), not added delay: with closed-loop clients a delay would add to the
# round trip of both paths alike, and a relay in user space that adds it
# would burn the CPU the paths compete for (docs/performance.md).
#
# Needs root (ip netns), nginx, openssl, `make build` and infer-batcher
# (BATCHER, default $BUILD/bin/infer-batcher); DIRECT_ONLY=1 measures path A
# alone. Writes docs/performance.md (section batcher) unless NO_DOC=1.
#
# Environment: BUILD (build/), BATCHER, MODEL_REPO (examples/models), ROUNDS (3), INTERVAL_MS (2000: three
# windows a run), RAW_DIR (keep infer-perf's JSON and the logs there), CLIENTS ("64 8 1"), MODELS ("simple digits"), HTTP (1:
# also HTTP for simple at the largest client count), BATCHER_ARGS (extra
# flags, default "--max-delay-us 500"), RESULTS (copy the raw TSV there),
# FAR_CPU (e.g. 0.5: nginx and inferd together get that many CPUs, a cgroup
# CPU quota, and the clients' side the rest — a server-bound fleet, whose
# clients run on their own machines; written to the section
# batcher-server-bound instead of batcher).
set -eu -o pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
INFERD="$BUILD/bin/inferd"
PERF="$BUILD/bin/infer-perf"
BATCHER="${BATCHER:-$BUILD/bin/infer-batcher}"
MODEL_REPO="${MODEL_REPO:-$ROOT/examples/models}"
ROUNDS="${ROUNDS:-3}"
INTERVAL_MS="${INTERVAL_MS:-2000}"
CLIENTS="${CLIENTS:-64 16 8 1}"
FAR_CPU="${FAR_CPU:-}"
MODELS="${MODELS:-simple digits}"
HTTP="${HTTP:-1}"
DIRECT_ONLY="${DIRECT_ONLY:-0}"
BATCHER_ARGS="${BATCHER_ARGS:---max-delay-us 500}"
say() { echo "bench/batcher: $*" >&2; }
die() { say "$*"; exit 1; }

if [ "$(id -u)" != 0 ]; then
  say "skipped: needs root for network namespaces (ip netns)"; exit 0
fi
for tool in ip nginx openssl; do
  command -v "$tool" > /dev/null || PATH="$PATH:/usr/sbin:/sbin"
  command -v "$tool" > /dev/null || die "$tool not found (scripts/install-deps.sh)"
done
if [ ! -x "$INFERD" ] || [ ! -x "$PERF" ]; then die "no $INFERD or $PERF: run make build (or set BUILD)"; fi
[ -f "$MODEL_REPO/digits/1/model.pt" ] || die "missing $MODEL_REPO/digits/1/model.pt: run make models (or set MODEL_REPO)"
if [ "$DIRECT_ONLY" != 1 ] && [ ! -x "$BATCHER" ]; then
  die "infer-batcher not found at $BATCHER: build it (branch batcher) or set BATCHER=PATH; DIRECT_ONLY=1 measures the direct path alone"
fi

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d /tmp/inferd-batchbench.XXXXXX)
ID=$$
N=$(( ID % 200 + 20 ))
CNS="ib-cli-$ID"; LNS="ib-lb-$ID"; SNS="ib-srv-$ID"
CLI_IP="10.79.$N.1"; LB_IP="10.79.$N.2"          # clients <-> balancer
LB_IN_IP="10.79.$N.5"; SRV_IP="10.79.$N.6"       # balancer <-> server
NAMESPACES=()
PIDS=()

# Everything started lives in one of the namespaces: killing what remains in
# them and deleting them (which deletes the veth pairs) leaves nothing behind,
# whatever step failed. nginx daemonizes, so it is found by namespace too.
teardown() {
  local rc=$?
  for p in "${PIDS[@]:-}"; do if [ -n "$p" ]; then kill "$p" 2>/dev/null || true; fi; done
  for ns in "${NAMESPACES[@]:-}"; do
    [ -n "$ns" ] || continue
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
  done
  sleep 0.5
  for ns in "${NAMESPACES[@]:-}"; do
    [ -n "$ns" ] || continue
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ -n "${FAR_CG:-}" ]; then  # empty once its processes have exited
    for _ in $(seq 1 50); do rmdir "$FAR_CG" 2>/dev/null && break; sleep 0.1; done
  fi
  if [ "$rc" != 0 ] && [ -d "$TMP" ]; then
    for f in "$TMP"/*.log "$TMP"/nginx*/error.log; do
      [ -s "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 15 "$f" >&2; }
    done
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

in_ns() { local ns="$1"; shift; ip netns exec "$ns" "$@"; }

# --- network ---------------------------------------------------------------
for ns in "$CNS" "$LNS" "$SNS"; do
  ip netns add "$ns" || die "ip netns add $ns failed (root in a container without CAP_SYS_ADMIN?)"
  NAMESPACES+=("$ns")
  ip -n "$ns" link set lo up
done
ip link add "ibc${ID}a" netns "$CNS" type veth peer name "ibc${ID}b" netns "$LNS"
ip link add "ibs${ID}a" netns "$LNS" type veth peer name "ibs${ID}b" netns "$SNS"
ip -n "$CNS" addr add "$CLI_IP/30" dev "ibc${ID}a"; ip -n "$CNS" link set "ibc${ID}a" up
ip -n "$LNS" addr add "$LB_IP/30" dev "ibc${ID}b"; ip -n "$LNS" link set "ibc${ID}b" up
ip -n "$LNS" addr add "$LB_IN_IP/30" dev "ibs${ID}a"; ip -n "$LNS" link set "ibs${ID}a" up
ip -n "$SNS" addr add "$SRV_IP/30" dev "ibs${ID}b"; ip -n "$SNS" link set "ibs${ID}b" up
MTU=$(ip -n "$CNS" -o link show "ibc${ID}a" | sed -n 's/.* mtu \([0-9]*\).*/\1/p')

# --- certificates (a CA and the balancer's certificate, made here) ---------
PKI="$TMP/pki"; mkdir -p "$PKI"
ossl() { openssl "$@" > /dev/null 2>&1 || die "openssl $1 failed"; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=inferd bench CA" \
  -keyout "$PKI/ca.key" -out "$PKI/ca.crt"
printf 'subjectAltName=IP:%s,DNS:inferd-lb\nextendedKeyUsage=serverAuth\n' "$LB_IP" > "$PKI/lb.ext"
ossl req -newkey rsa:2048 -nodes -subj "/CN=inferd-lb" -keyout "$PKI/lb.key" -out "$PKI/lb.csr"
ossl x509 -req -in "$PKI/lb.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 2 \
  -extfile "$PKI/lb.ext" -out "$PKI/lb.crt"

# --- inferd (server ns) ----------------------------------------------------
LOAD_ARGS=()
for m in $MODELS; do LOAD_ARGS+=(--load-model "$m"); done
in_ns "$SNS" "$INFERD" --model-repository "$MODEL_REPO" --model-control-mode explicit \
  "${LOAD_ARGS[@]}" --allow-metrics=false \
  --http-address "$SRV_IP" --http-port 8000 --grpc-address "$SRV_IP" --grpc-port 8001 \
  2> "$TMP/inferd.log" &
PIDS+=($!)
for _ in $(seq 1 600); do
  grep -q '^inferd: gRPC listening' "$TMP/inferd.log" && grep -q '^inferd: HTTP listening' "$TMP/inferd.log" && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || die "inferd exited"
  sleep 0.1
done
grep -q '^inferd: gRPC listening' "$TMP/inferd.log" || die "inferd did not start in 60 s"

# --- nginx (balancer ns) ---------------------------------------------------
# deploy/nginx/inferd.conf unchanged except its two listen lines, which get
# the balancer's address, TLS and the certificate (HTTPS on 8443, gRPC over
# TLS on 8444); upstreams from render-upstreams.sh as in a deployment.
# start_nginx DIR CONF_BODY: a private prefix (pid, logs, temp dirs).
start_nginx() {
  local dir="$1" body="$2" ns="$3"
  mkdir -p "$dir/tmp"
  cat > "$dir/nginx.conf" <<CONF
user root root;
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
daemon on;
events { worker_connections 4096; }
http {
    client_body_temp_path $dir/tmp;
    proxy_temp_path $dir/tmp;
    fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp;
    scgi_temp_path $dir/tmp;
    access_log off;
$body
}
CONF
  in_ns "$ns" nginx -e "$dir/error.log" -p "$dir" -c "$dir/nginx.conf" -t -q 2> "$dir/test.log" ||
    { cat "$dir/test.log" >&2; die "nginx -t failed for $dir/nginx.conf"; }
  in_ns "$ns" nginx -e "$dir/error.log" -p "$dir" -c "$dir/nginx.conf"
}
LBD="$TMP/nginx-lb"; mkdir -p "$LBD/inferd"
CERT_LINES="ssl_certificate $PKI/lb.crt; ssl_certificate_key $PKI/lb.key;"
sed -e "s|^\(\s*\)listen 8000;|\1listen $LB_IP:8443 ssl; $CERT_LINES|" \
    -e "s|^\(\s*\)listen 8001 http2;|\1listen $LB_IP:8444 ssl http2; $CERT_LINES|" \
    "$ROOT/deploy/nginx/inferd.conf" > "$LBD/inferd/inferd.conf"
[ "$(grep -c "ssl_certificate_key" "$LBD/inferd/inferd.conf")" = 2 ] ||
  die "deploy/nginx/inferd.conf: expected 'listen 8000;' and 'listen 8001 http2;' (rewritten here)"
"$ROOT/deploy/nginx/render-upstreams.sh" "$SRV_IP:8000:8001" > "$LBD/inferd/upstreams.conf"
start_nginx "$LBD" "    include $LBD/inferd/inferd.conf;" "$LNS"

# --- FAR_CPU: the far side (nginx + inferd) under one CPU quota -------------
# cgroup v2 (cpu.max) or v1 (the cpu controller's cfs quota); the group is
# removed by teardown once its processes are gone.
FAR_CG=""
if [ -n "$FAR_CPU" ]; then
  quota=$(/usr/bin/python3 -c "import sys; q = float(sys.argv[1]); assert 0 < q <= 64; print(int(q * 100000))" "$FAR_CPU") ||
    die "FAR_CPU wants a number of CPUs such as 0.5, got '$FAR_CPU'"
  if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    FAR_CG="/sys/fs/cgroup/inferd-batchbench-$ID"
    if ! { mkdir "$FAR_CG" && echo "$quota 100000" > "$FAR_CG/cpu.max"; }; then
      die "cannot make $FAR_CG with cpu.max"
    fi
  elif [ -d /sys/fs/cgroup/cpu ]; then
    FAR_CG="/sys/fs/cgroup/cpu/inferd-batchbench-$ID"
    if ! { mkdir "$FAR_CG" && echo 100000 > "$FAR_CG/cpu.cfs_period_us" &&
           echo "$quota" > "$FAR_CG/cpu.cfs_quota_us"; }; then
      die "cannot make $FAR_CG with a CFS quota"
    fi
  else
    die "FAR_CPU needs the cgroup cpu controller (v2 cpu.max or v1 /sys/fs/cgroup/cpu)"
  fi
  for p in $(ip netns pids "$LNS") $(ip netns pids "$SNS"); do
    echo "$p" > "$FAR_CG/cgroup.procs" || die "cannot move pid $p into $FAR_CG"
  done
fi

GRPC_LB="$LB_IP:8444"; HTTPS_LB="https://$LB_IP:8443"
TLS_GRPC=(--ssl-grpc-use-ssl --ssl-grpc-root-certifications-file "$PKI/ca.crt")
TLS_HTTP=(--ssl-https-ca-certificates-file "$PKI/ca.crt")

# --- infer-batcher (clients ns) --------------------------------------------
# TLS to the upstream with its own flags when it has them (infer-gateway's
# names: --inferd-ca / --upstream-ca); otherwise a TLS origination hop, nginx
# with grpc_pass grpcs:// on the clients' loopback (documented in the table).
B_GRPC=127.0.0.1:9001; B_HTTP=127.0.0.1:9000
B_NOTE=""; EXTRA=""
if [ "$DIRECT_ONLY" != 1 ]; then
  HELP=$("$BATCHER" --help 2>&1 || true)
  UPSTREAM="$GRPC_LB"; TLS_ARGS=()
  if grep -q -- '--upstream-ca' <<< "$HELP"; then
    TLS_ARGS=(--upstream-ca "$PKI/ca.crt")
  elif grep -q -- '--inferd-ca' <<< "$HELP"; then
    TLS_ARGS=(--inferd-ca "$PKI/ca.crt")
  else
    ORIG="$TMP/nginx-tls"
    start_nginx "$ORIG" "    upstream lb { server $GRPC_LB; keepalive 64; }
    server {
        listen 127.0.0.1:9101 http2;
        location / {
            grpc_pass grpcs://lb;
            grpc_ssl_trusted_certificate $PKI/ca.crt;
            grpc_ssl_verify on;
            grpc_ssl_name inferd-lb;
            grpc_ssl_session_reuse on;
            grpc_read_timeout 300s;
        }
    }" "$CNS"
    UPSTREAM=127.0.0.1:9101
    B_NOTE=" (infer-batcher has no TLS flag: plaintext to an nginx on the clients' loopback that originates the TLS, grpc_pass grpcs://)"
  fi
  # shellcheck disable=SC2086  # BATCHER_ARGS is a list of flags
  in_ns "$CNS" "$BATCHER" --http-address=127.0.0.1 --http-port=9000 --grpc-address=127.0.0.1 \
    --grpc-port=9001 --upstream="$UPSTREAM" "${TLS_ARGS[@]}" \
    $BATCHER_ARGS > "$TMP/batcher.log" 2>&1 &
  PIDS+=($!)
  for i in $(seq 1 300); do
    in_ns "$CNS" /usr/bin/python3 -c "import urllib.request as u; u.urlopen('http://$B_HTTP/v2/health/ready', timeout=1)" \
      2> /dev/null && break
    kill -0 "${PIDS[-1]}" 2>/dev/null || die "infer-batcher exited"
    [ "$i" = 300 ] && die "infer-batcher not ready in 30 s"
    sleep 0.1
  done
  # infer-perf reads the model's metadata over the protocol it loads: HTTP
  # is measured only where the batcher serves GET /v2/models/{m}.
  if [ "$HTTP" = 1 ] && ! in_ns "$CNS" /usr/bin/python3 -c \
      "import urllib.request as u; u.urlopen('http://$B_HTTP/v2/models/simple', timeout=5)" 2> /dev/null; then
    HTTP=0
    EXTRA="HTTP not measured: this infer-batcher does not serve GET /v2/models/{m} (model metadata), which infer-perf reads before loading over HTTP."
  fi
fi

# --- measurements ----------------------------------------------------------
# measure ROUND PATH MODEL PROTO CLIENTS: one infer-perf run in the clients'
# namespace (concurrency mode: each client a thread with its own connection,
# one batch-1 request outstanding), a line in results.tsv.
RES="$TMP/results.tsv"
printf 'round\tpath\tmodel\tproto\tclients\tthroughput\tp50_us\tp99_us\tserver_batch\tcpu_lb_us\tcpu_srv_us\tcpu_cli_us\tcpu_perf_us\n' > "$RES"
# counts MODEL: inferd's inference and execution counts, read in the server's
# namespace (not through the paths under test): their growth over a run is
# the batch size inferd executed, whoever merged the requests.
counts() {
  in_ns "$SNS" /usr/bin/python3 -c "import json, urllib.request as u
s = json.load(u.urlopen('http://$SRV_IP:8000/v2/models/$1/stats', timeout=10))['model_stats'][0]
print(s['inference_count'], s['execution_count'])"
}
# ns_ticks NS: CPU time (clock ticks, user + system) of the processes now in
# namespace NS, to charge each tier its CPU per inference: the balancer's
# nginx, the server's inferd, and in the clients' namespace between runs
# (infer-perf gone) the batcher. infer-perf's own CPU from /usr/bin/time
# (the load generator shares the cores: what it burns the paths cannot use).
TICK_US=$(( 1000000 / $(getconf CLK_TCK) ))
HAVE_TIME=0; [ -x /usr/bin/time ] && HAVE_TIME=1
ns_ticks() {
  local p t=0 f
  for p in $(ip netns pids "$1"); do
    # Fields after "(comm) ": state ppid ... utime is the 12th, stime the 13th.
    f=$(sed 's/.*) //' "/proc/$p/stat" 2> /dev/null | awk '{print $12 + $13}') || continue
    t=$(( t + ${f:-0} ))
  done
  echo "$t"
}
measure() {
  local round="$1" path="$2" model="$3" proto="$4" c="$5" args=()
  case "$path/$proto" in
    direct/grpc) args=(-i grpc -u "$GRPC_LB" "${TLS_GRPC[@]}") ;;
    direct/http) args=(-i http -u "$HTTPS_LB" "${TLS_HTTP[@]}") ;;
    batcher/grpc) args=(-i grpc -u "$B_GRPC") ;;
    batcher/http) args=(-i http -u "$B_HTTP") ;;
  esac
  local out="$TMP/$round.$path.$model.$proto.$c.json" before after
  before="$(counts "$model") $(ns_ticks "$LNS") $(ns_ticks "$SNS") $(ns_ticks "$CNS")"
  local timed=()
  echo "0 0" > "$out.time"
  [ "$HAVE_TIME" = 1 ] && timed=(/usr/bin/time -f "%U %S" -o "$out.time")
  in_ns "$CNS" "${timed[@]}" "$PERF" -m "$model" "${args[@]}" --concurrency-range "$c" \
    --measurement-interval "$INTERVAL_MS" --max-trials 3 --warmup-ms 1000 --json \
    > "$out" 2> "$out.err" || { cat "$out.err" >&2; die "infer-perf failed: $path $model $proto -c $c"; }
  after="$(counts "$model") $(ns_ticks "$LNS") $(ns_ticks "$SNS") $(ns_ticks "$CNS")"
  after="$after $(tail -n 1 "$out.time")"
  /usr/bin/python3 - "$out" "$before" "$after" "$TICK_US" "$round" "$path" "$model" "$proto" "$c" \
    >> "$RES" <<'PY'
import json
import sys
r = json.load(open(sys.argv[1]))["results"][0]
# Before and after: inferd's inference and execution counts, then the CPU
# ticks of the balancer's, the server's and the clients' namespaces; after
# also infer-perf's user and system seconds.
b = [int(x) for x in sys.argv[2].split()]
after = sys.argv[3].split()
a = [int(x) for x in after[:5]]
perf_s = float(after[5]) + float(after[6])
tick_us = int(sys.argv[4])
inferences, executions = a[0] - b[0], a[1] - b[1]
batch = inferences / executions if executions > 0 else 0.0
# CPU per inference of each tier over the whole run (warm-up included, like
# the counts): nginx, inferd, the clients' namespace less infer-perf (gone
# by then: the batcher), infer-perf.
per = [(a[i] - b[i]) * tick_us for i in (2, 3, 4)] + [perf_s * 1e6]
cpu = ["%.0f" % (x / inferences if inferences else 0) for x in per]
print("\t".join(sys.argv[5:10] + ["%.1f" % r["throughput_infer_per_sec"], "%.0f" % r["latency_p50_us"],
                                  "%.0f" % r["latency_p99_us"], "%.2f" % batch] + cpu))
PY
  tail -n 1 "$RES" | tr '\t' ' ' >&2
}

PATHS="direct batcher"; [ "$DIRECT_ONLY" = 1 ] && PATHS="direct"
MAXC=$(echo "$CLIENTS" | tr ' ' '\n' | sort -n | tail -1)
order="$PATHS"
START=$(date +%s)
for round in $(seq 1 "$ROUNDS"); do
  for c in $CLIENTS; do
    for model in $MODELS; do
      for path in $order; do measure "$round" "$path" "$model" grpc "$c"; done
    done
  done
  if [ "$HTTP" = 1 ]; then
    for path in $order; do measure "$round" "$path" simple http "$MAXC"; done
  fi
  order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
say "measured in $(( $(date +%s) - START )) s; load average $LOAD_BEFORE before, $LOAD_AFTER after"
[ -n "${RESULTS:-}" ] && cp "$RES" "$RESULTS"
[ -n "${RAW_DIR:-}" ] && mkdir -p "$RAW_DIR" && cp "$TMP"/*.json "$TMP"/*.log "$RAW_DIR"/

CMD="bench/batcher/run.sh"
[ "$CLIENTS" != "64 16 8 1" ] && CMD="CLIENTS=\"$CLIENTS\" $CMD"
[ -n "$FAR_CPU" ] && CMD="FAR_CPU=$FAR_CPU $CMD"
[ "$ROUNDS" != 3 ] && CMD="ROUNDS=$ROUNDS $CMD"
[ "$DIRECT_ONLY" = 1 ] && CMD="DIRECT_ONLY=1 $CMD"
REPORT=(/usr/bin/python3 "$ROOT/bench/batcher/report.py" "$RES" --command "$CMD"
  --date "$(date -u +%Y-%m-%d)" --cores "$(nproc)" --load-before "$LOAD_BEFORE"
  --load-after "$LOAD_AFTER" --mtu "$MTU" --interval-ms "$INTERVAL_MS"
  --batcher-args "$BATCHER_ARGS$B_NOTE" --note "${NOTE:-}" --extra "$EXTRA" --far-cpu "$FAR_CPU")
SECTION=batcher; [ -n "$FAR_CPU" ] && SECTION=batcher-server-bound
if [ "${NO_DOC:-0}" = 1 ]; then
  "${REPORT[@]}"
else
  "${REPORT[@]}" | /usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" "$SECTION"
fi
