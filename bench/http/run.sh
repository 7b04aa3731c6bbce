#!/bin/bash
# HTTP overhead: `simple` (add_sub, two INT32[16] inputs, binary tensors)
# through inferd, against nginx answering a fixed 200 with a body of the same
# size to the same POST. Same load tool (infer-perf, one keep-alive
# connection per concurrent client) and connection count for both; the two
# servers are measured in turns (inferd, nginx, inferd, nginx), best of each
# kept. nginx also answers the model-metadata GET infer-perf starts with.
# Writes docs/performance.md (section http).
source "$(dirname "$0")/../lib/common.sh"
INTERVAL_MS="${INTERVAL_MS:-2000}"
CONC="${CONC:-16}"
HW=$(nproc)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
TMP=$(mktemp -d); PIDS=(); trap 'cleanup; [ -f "$TMP/nginx.pid" ] && kill "$(cat "$TMP/nginx.pid")" 2>/dev/null; rm -rf "$TMP"' EXIT

mkdir -p "$TMP/models"
cp -r "$ROOT/examples/models/simple" "$TMP/models/simple"
start_inferd "$TMP/inferd.log" --model-repository "$TMP/models"
INFERD_PORT=$HTTP_PORT

# What nginx answers: inferd's own metadata, and an infer response of the
# same size as inferd's (its JSON header, then 128 bytes for the two outputs).
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
assert "'" not in fixed and "'" not in meta.decode()
open(tmp + "/meta", "w").write(meta.decode()); open(tmp + "/infer", "w").write(fixed)
open(tmp + "/jlen", "w").write(str(jlen))
PY
NGINX_PORT=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
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
}
CONF
nginx -p "$TMP/nginx" -c "$TMP/nginx.conf" -e "$TMP/nginx/error.log"
for _ in $(seq 1 50); do [ -f "$TMP/nginx.pid" ] && break; sleep 0.1; done

run() {  # run PORT OUT
  "$PERF" -m simple -u "127.0.0.1:$1" --concurrency-range "$CONC" --measurement-interval \
    "$INTERVAL_MS" --max-trials 4 --json > "$2"
  json_field "$2" "d['results'][0]['throughput_infer_per_sec']"
}
best() { /usr/bin/python3 -c "import sys; print(max(float(x) for x in sys.argv[1:]))" "$@"; }
I1=$(run "$INFERD_PORT" "$TMP/i1.json"); N1=$(run "$NGINX_PORT" "$TMP/n1.json")
I2=$(run "$INFERD_PORT" "$TMP/i2.json"); N2=$(run "$NGINX_PORT" "$TMP/n2.json")
I=$(best "$I1" "$I2"); N=$(best "$N1" "$N2")
IP99=$(json_field "$TMP/i2.json" "d['results'][0]['latency_p99_us']")
NP99=$(json_field "$TMP/n2.json" "d['results'][0]['latency_p99_us']")
RATIO=$(/usr/bin/python3 -c "print(f'{$I/$N:.3f}')")
echo "inferd: $I1 / $I2 req/s; nginx fixed 200: $N1 / $N2 req/s; ratio (best/best) $RATIO"
/usr/bin/python3 "$ROOT/bench/lib/update_perf_doc.py" http <<DOC
## HTTP overhead (simple through inferd vs nginx answering a fixed 200)

Command: \`bench/http/run.sh\` (measured $(date -u +%Y-%m-%d) on the $HW-core development machine,
load generator on the same cores; load average before: $LOAD_BEFORE, after:
$(cut -d' ' -f1-3 /proc/loadavg); the machine is shared, so absolute numbers are noisy).

Both servers get the same POST /v2/models/simple/infer (binary tensors, two INT32[16]) from
\`infer-perf\` at concurrency $CONC (one keep-alive connection each), windows of $INTERVAL_MS ms,
two turns each, alternating. nginx (worker_processes $HW, access log off) answers with a fixed
body of inferd's response size; inferd runs its defaults (4 HTTP threads).

| server | turn 1 (req/s) | turn 2 (req/s) | p99, turn 2 (µs) |
| --- | --- | --- | --- |
| inferd | $(printf %.0f "$I1") | $(printf %.0f "$I2") | $(printf %.0f "$IP99") |
| nginx, fixed 200 | $(printf %.0f "$N1") | $(printf %.0f "$N2") | $(printf %.0f "$NP99") |

inferd / nginx (best turn of each): **$RATIO** (goal ≥ 0.5).
DOC
