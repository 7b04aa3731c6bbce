#!/bin/bash
# HTTP overhead: `simple` (add_sub, two INT32[16] inputs) through inferd,
# against nginx answering a fixed 200 with a body of the same size to the
# same POST. Two measurements, each with one load tool and connection count
# for both servers:
#   binary: binary tensors (Inference-Header-Content-Length), infer-perf
#           (one keep-alive connection per concurrent client);
#   JSON:   the inputs as JSON `data` arrays, bench_http_load (a one-thread
#           epoll closed-loop client, wrk-like: the same raw request bytes
#           on every keep-alive connection; wrk itself is not installed here).
# The servers are measured in turns (inferd, nginx, inferd, nginx, ...), best
# turn of each kept. nginx also answers the model-metadata GET infer-perf
# starts with.
# With BASE=/path/to/an/older/inferd, that build is measured too, in the same
# turns, on the same model repository (a before/after measured side by side).
# Environment: BUILD (build/), INTERVAL_MS (2000), CONC (16), TURNS (3),
# BASE (unset). Writes docs/performance.md (section http).
source "$(dirname "$0")/../lib/common.sh"
INTERVAL_MS="${INTERVAL_MS:-2000}"
CONC="${CONC:-16}"
TURNS="${TURNS:-3}"
BASE="${BASE:-}"
HW=$(nproc)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; [ -f "$TMP/nginx.pid" ] && kill "$(cat "$TMP/nginx.pid")" 2>/dev/null; rm -rf "$TMP"' EXIT

cmake --build "$BUILD" --target inferd infer-perf bench_http_load > "$TMP/build.log" 2>&1 ||
  { cat "$TMP/build.log"; exit 1; }
LOAD="$BUILD/bin/bench_http_load"

mkdir -p "$TMP/models"
cp -r "$ROOT/examples/models/simple" "$TMP/models/simple"
start_inferd "$TMP/inferd.log" --model-repository "$TMP/models"
INFERD_PORT=$HTTP_PORT
BASE_PORT=""
if [ -n "$BASE" ]; then
  INFERD="$BASE" start_inferd "$TMP/base.log" --model-repository "$TMP/models"
  BASE_PORT=$HTTP_PORT
fi

# What nginx answers: inferd's own metadata, and infer responses of the same
# size as inferd's (binary: its JSON header, then 128 bytes for the two
# outputs; JSON: inferd's JSON response). Also writes the raw JSON request.
/usr/bin/python3 - "$INFERD_PORT" "$TMP" <<'PY'
import http.client, json, struct, sys
port, tmp = int(sys.argv[1]), sys.argv[2]
import time
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(300):  # models load after the listener is up
    c.request("GET", "/v2/models/simple/ready"); r = c.getresponse(); r.read()
    if r.status == 200: break
    time.sleep(0.1)
c.request("GET", "/v2/models/simple"); meta = c.getresponse().read()
hdr = json.dumps({"inputs": [{"name": n, "shape": [1, 16], "datatype": "INT32",
                              "parameters": {"binary_data_size": 64}} for n in ("INPUT0", "INPUT1")],
                  "parameters": {"binary_data_output": True}}).encode()
c.request("POST", "/v2/models/simple/infer", hdr + struct.pack("<32i", *range(32)),
          {"Inference-Header-Content-Length": str(len(hdr))})
r = c.getresponse(); body = r.read()
jlen = int(r.getheader("Inference-Header-Content-Length"))
fixed = body[:jlen].decode() + "0" * (len(body) - jlen)
body = json.dumps({"inputs": [{"name": n, "shape": [1, 16], "datatype": "INT32",
                               "data": list(range(16 * i, 16 * i + 16))}
                              for i, n in enumerate(("INPUT0", "INPUT1"))]})
c.request("POST", "/v2/models/simple/infer", body, {"Content-Type": "application/json"})
r = c.getresponse(); jresp = r.read().decode()
assert r.status == 200, jresp
assert "'" not in fixed and "'" not in meta.decode() and "'" not in jresp
open(tmp + "/meta", "w").write(meta.decode()); open(tmp + "/infer", "w").write(fixed)
open(tmp + "/jlen", "w").write(str(jlen)); open(tmp + "/json_resp", "w").write(jresp)
open(tmp + "/json.req", "w").write(
    "POST /v2/models/simple/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
PY
free_port() { /usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"; }
NGINX_PORT=$(free_port)
NGINX_JSON_PORT=$(free_port)
mkdir -p "$TMP/nginx/tmp"
USER_LINE=""; [ "$(id -u)" = 0 ] && USER_LINE="user root root;"
cat > "$TMP/nginx.conf" <<CONF
$USER_LINE
worker_processes $HW;
pid $TMP/nginx.pid;
error_log $TMP/nginx/error.log;
daemon on;
events { worker_connections 4096; }
http {
  client_body_temp_path $TMP/nginx/tmp/body;
  proxy_temp_path $TMP/nginx/tmp/proxy;
  fastcgi_temp_path $TMP/nginx/tmp/fastcgi;
  uwsgi_temp_path $TMP/nginx/tmp/uwsgi;
  scgi_temp_path $TMP/nginx/tmp/scgi;
  access_log off;
  keepalive_requests 1000000;
  client_body_buffer_size 64k;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location = /v2/models/simple {
      default_type application/json;
      return 200 '$(cat "$TMP/meta")';
    }
    location = /v2/models/simple/infer {
      default_type application/octet-stream;
      add_header Inference-Header-Content-Length $(cat "$TMP/jlen");
      return 200 '$(cat "$TMP/infer")';
    }
  }
  server {
    listen 127.0.0.1:$NGINX_JSON_PORT;
    location = /v2/models/simple/infer {
      default_type application/json;
      return 200 '$(cat "$TMP/json_resp")';
    }
  }
}
CONF
nginx -p "$TMP/nginx" -c "$TMP/nginx.conf" -e "$TMP/nginx/error.log"
for _ in $(seq 1 50); do [ -f "$TMP/nginx.pid" ] && break; sleep 0.1; done

bin_run() {  # bin_run PORT -> "req/s p99_us"
  "$PERF" -m simple -u "127.0.0.1:$1" --concurrency-range "$CONC" --measurement-interval \
    "$INTERVAL_MS" --max-trials 4 --json > "$TMP/perf.json"
  json_field "$TMP/perf.json" \
    "'%s %s' % (d['results'][0]['throughput_infer_per_sec'], d['results'][0]['latency_p99_us'])"
}
json_run() {  # json_run PORT -> "req/s p99_us"
  local secs; secs=$(/usr/bin/python3 -c "print($INTERVAL_MS / 1000)")
  local out; out=$("$LOAD" --target "127.0.0.1:$1" --request "$TMP/json.req" --connections "$CONC" \
    --seconds "$secs" --warmup 0.3)
  /usr/bin/python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d['errors']==0, d; print(d['throughput'], d['p99_us'])" "$out"
}

# measure KIND: TURNS turns over the targets; sets <KIND>_<target> to the
# turns' "req/s p99" pairs, one per line.
declare -A RES
TARGETS=(inferd nginx); [ -n "$BASE" ] && TARGETS=(inferd base nginx)
port_of() {
  case "$1:$2" in
    bin:inferd|json:inferd) echo "$INFERD_PORT" ;; bin:base|json:base) echo "$BASE_PORT" ;;
    bin:nginx) echo "$NGINX_PORT" ;; json:nginx) echo "$NGINX_JSON_PORT" ;;
  esac
}
for t in $(seq 1 "$TURNS"); do
  for kind in bin json; do
    for target in "${TARGETS[@]}"; do
      RES[$kind:$target]+="$(${kind}_run "$(port_of "$kind" "$target")")"$'\n'
    done
  done
done
# summary KIND TARGET FIELD: best req/s (field 1) or the p99 of the best turn (field 2)
summary() {
  printf '%s' "${RES[$1:$2]}" | sort -g -k1 | tail -1 | cut -d' ' -f"$3"
}
turns() { printf '%s' "${RES[$1:$2]}" | awk '{printf "%s%.0f", (NR>1?" / ":""), $1}'; }
ratio() { /usr/bin/python3 -c "print(f'{$1/$2:.3f}')"; }
ROWS=""; RATIOS=""
for kind in bin json; do
  label=$([ "$kind" = bin ] && echo "binary tensors, infer-perf" || echo "JSON tensors, bench_http_load")
  N=$(summary "$kind" nginx 1)
  for target in "${TARGETS[@]}"; do
    name=$target; [ "$target" = base ] && name="inferd before ($(basename "$BASE"))"
    [ "$target" = nginx ] && name="nginx, fixed 200"
    R=$(ratio "$(summary "$kind" "$target" 1)" "$N")
    ROWS+="| $label | $name | $(turns "$kind" "$target") | $(printf %.0f "$(summary "$kind" "$target" 2)") | $R |"$'\n'
    echo "$label: $name: turns $(turns "$kind" "$target") req/s; / nginx (best/best) $R"
  done
  RATIOS+="$label: **$(ratio "$(summary "$kind" inferd 1)" "$N")**; "
done
BASE_NOTE=""
[ -n "$BASE" ] && BASE_NOTE="
\"inferd before\" is an older build ($(basename "$BASE")) measured in the same turns, on the same model."
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" http <<DOC
## HTTP overhead (simple through inferd vs nginx answering a fixed 200)

Command: \`${BASE:+BASE=<older inferd> }bench/http/run.sh\` (measured $(date -u +%Y-%m-%d) on the $HW-core development machine,
load generators on the same cores; load average before: $LOAD_BEFORE, after:
$(cut -d' ' -f1-3 /proc/loadavg); the machine is shared, so absolute numbers are noisy).

Both servers get the same POST /v2/models/simple/infer (two INT32[16] inputs) at concurrency
$CONC (one keep-alive connection each), windows of $INTERVAL_MS ms, $TURNS turns each,
alternating: binary tensors from \`infer-perf\`, and the inputs as JSON \`data\` arrays from
\`bench_http_load\` (bench/http/load_client.cc: one thread, epoll, the same raw request on
every connection, like wrk, which is not installed here). nginx (worker_processes $HW, access
log off) answers with a fixed body of inferd's response size (for JSON: inferd's response);
inferd runs its defaults.$BASE_NOTE

| request | server | turns (req/s) | p99 of the best turn (µs) | / nginx (best turns) |
| --- | --- | --- | --- | --- |
${ROWS}
inferd / nginx, best turn of each: ${RATIOS}goal ≥ 0.75.
DOC
