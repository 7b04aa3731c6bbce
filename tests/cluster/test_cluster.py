#!/usr/bin/python3
"""Multi-host test: three inferd hosts behind nginx, under constant load.

Hosts are network namespaces (ip netns) on a private bridge, 10.77.N.0/24,
each running one inferd on its own address; nginx runs in the root namespace
with deploy/nginx/inferd.conf and upstreams from render-upstreams.sh, exactly
as deployed (only the listen ports differ). Where namespaces cannot be made
(not root, no `ip`, no veth/bridge support) the hosts fall back to distinct
loopback addresses (127.0.0.2, .3, ...), and the test says so. Traffic only
ever goes to the namespaces made here or to 127.0.0.0/8.

Timeline (seconds after the load starts, at RATE requests/s through nginx,
delay and simple models alternating, a new connection per request):
  T_DRAIN  h1 is drained. With --drain-delay-secs (when the binary has it):
           SIGTERM; the "endpoints controller" here sees readiness turn false
           and reloads nginx without h1 while h1 keeps serving. Without it:
           the preStop pattern, i.e. nginx is reloaded without h1 first, then
           SIGTERM after PRESTOP_SLEEP.
  T_KILL   h2 is killed with SIGKILL and left in nginx's list: only nginx's
           passive health check (max_fails / fail_timeout) protects clients.
  T_JOIN   h4 starts in a new namespace; once ready, nginx is reloaded with
           h3 and h4 (h2's endpoint dropped, as Kubernetes would).

Checks:
  - every failed request was in flight on h2 when it was killed (nginx's log
    names h2 as the upstream that failed, and nginx had the request before h2
    died); nothing else fails, in particular nothing on the drained h1;
  - h1 exits 0 within drain delay + exit timeout;
  - after the kill nginx sends h2 only periodic probes (each retried on
    another host before the request was sent): h2 is out of rotation within
    a second;
  - h4 takes its share of traffic after it joins;
  - through nginx's gRPC port, calls succeed (when the binary serves gRPC).

Environment: INFERD_BIN, INFER_PERF_BIN (default build/bin/...);
INFERD_CLUSTER_NETWORK=loopback forces the fallback; INFERD_CLUSTER_KEEP=1
keeps the temporary directory (logs, nginx access log);
INFERD_CLUSTER_VERBOSE=1 prints the logs even on success.
"""

import atexit
import http.client
import json
import math
import os
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nginx_local  # noqa: E402

REPO_ROOT = nginx_local.REPO_ROOT
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "e2e"))
import harness  # noqa: E402  (the inferd launcher and the canonical test repository)
import pb_wire  # noqa: E402

INFERD_BIN = harness.INFERD_BIN
INFER_PERF_BIN = os.environ.get("INFER_PERF_BIN", os.path.join(REPO_ROOT, "build", "bin", "infer-perf"))
VERBOSE = os.environ.get("INFERD_CLUSTER_VERBOSE", "") not in ("", "0")
KEEP = os.environ.get("INFERD_CLUSTER_KEEP", "") not in ("", "0")

RATE = 100.0            # requests per second through nginx
DURATION = 24.0         # seconds of load
T_DRAIN, T_KILL, T_JOIN = 4.0, 10.0, 16.0
WORKERS = 48            # client threads; each request on a new connection
DRAIN_DELAY = 3         # --drain-delay-secs, when supported
PRESTOP_SLEEP = 2.0     # otherwise: endpoint removed this long before SIGTERM
EXIT_TIMEOUT = 10       # --exit-timeout-secs
NGINX_WORKERS = 2
DELAY_MS = 10
SLOW_MS = 1000          # every SLOW_EVERY-th request is slow, so that requests are in flight
SLOW_EVERY = 8          # on every host at any moment (the kill must catch some)
# A request counts as in flight on the killed host if nginx received it before
# the host was reaped (plus this much for timestamps taken on different clocks
# of the same machine).
KILL_SLACK_S = 0.05

T0 = time.time()


def log(msg):
    print("[%6.2f] %s" % (time.time() - T0, msg), flush=True)


def run(cmd, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode,
                                                   r.stderr.decode(errors="replace").strip()))
    return r


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


# --------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------


class NetnsNetwork:
    """Hosts in network namespaces, one veth each, joined by a bridge whose
    root-namespace end is .1 of a private /24 nobody else uses here."""

    mode = "netns"
    NS_RE = re.compile(r"^inferd-ifd(\d+)-h\d+$")
    LINK_RE = re.compile(r"^ifd(\d+)(br|v\d+)$")

    def __init__(self):
        self.tag = "ifd%d" % os.getpid()
        self.bridge = self.tag + "br"
        self.namespaces = {}
        self.prefix = None

    @classmethod
    def cleanup_stale(cls):
        """Removes namespaces and links left by runs that were killed (their pid is gone)."""
        out = run(["ip", "netns", "list"], check=False).stdout.decode()
        for line in out.splitlines():
            name = line.split()[0] if line.split() else ""
            m = cls.NS_RE.match(name)
            if m and not pid_alive(int(m.group(1))):
                cls._delete_namespace(name)
        out = run(["ip", "-o", "link", "show"], check=False).stdout.decode()
        for line in out.splitlines():
            parts = line.split(":")
            if len(parts) > 1:
                name = parts[1].strip().split("@")[0]
                m = cls.LINK_RE.match(name)
                if m and not pid_alive(int(m.group(1))):
                    run(["ip", "link", "del", name], check=False)

    @staticmethod
    def _delete_namespace(name):
        pids = run(["ip", "netns", "pids", name], check=False).stdout.split()
        for p in pids:
            try:
                os.kill(int(p), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        run(["ip", "netns", "del", name], check=False)

    def _pick_prefix(self):
        used = run(["ip", "-4", "route", "show", "table", "all"], check=False).stdout.decode()
        used += run(["ip", "-4", "addr", "show"], check=False).stdout.decode()
        start = os.getpid() % 250
        for k in range(250):
            n = (start + k) % 250
            if ("10.77.%d." % n) not in used:
                return "10.77.%d" % n
        raise RuntimeError("no free 10.77.N.0/24 subnet")

    def setup(self):
        self.cleanup_stale()
        self.prefix = self._pick_prefix()
        run(["ip", "link", "add", self.bridge, "type", "bridge"])
        run(["ip", "addr", "add", self.prefix + ".1/24", "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])

    def add_host(self, i):
        ns = "inferd-%s-h%d" % (self.tag, i)
        outer, inner = "%sv%d" % (self.tag, i), "%sp%d" % (self.tag, i)
        addr = "%s.%d" % (self.prefix, 10 + i)
        run(["ip", "netns", "add", ns])
        self.namespaces[i] = ns
        run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner])
        run(["ip", "link", "set", inner, "netns", ns])
        run(["ip", "-n", ns, "link", "set", inner, "name", "eth0"])
        run(["ip", "-n", ns, "addr", "add", addr + "/24", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "link", "set", outer, "master", self.bridge])
        run(["ip", "link", "set", outer, "up"])
        return addr

    def wrap(self, i, argv):
        return ["ip", "netns", "exec", self.namespaces[i]] + argv

    def probe(self):
        """Host 0: a namespace with its veth, and a TCP connection from here to a
        listener in it (a firewall could drop bridge traffic); removed after."""
        addr = self.add_host(0)
        listener = subprocess.Popen(
            self.wrap(0, [sys.executable, "-c",
                          "import socket,sys; s=socket.socket(); s.bind((sys.argv[1], 7)); s.listen(1); "
                          "print('up', flush=True); c, _ = s.accept(); c.sendall(b'ok')", addr]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            if listener.stdout.readline().strip() != b"up":
                raise RuntimeError("probe listener: " + listener.stderr.read().decode(errors="replace"))
            with socket.create_connection((addr, 7), timeout=2) as c:
                c.settimeout(2)
                if c.recv(2) != b"ok":
                    raise RuntimeError("no answer from the probe namespace")
        finally:
            listener.kill()
            listener.wait()
            self._delete_namespace(self.namespaces.pop(0))

    def cleanup(self):
        for ns in self.namespaces.values():
            self._delete_namespace(ns)   # also removes the veth pair
        self.namespaces = {}
        run(["ip", "link", "del", self.bridge], check=False)

    def describe(self):
        return "network namespaces on bridge %s, %s.0/24" % (self.bridge, self.prefix)


class LoopbackNetwork:
    mode = "loopback"

    def setup(self):
        pass

    def add_host(self, i):
        return "127.0.0.%d" % (1 + i)

    def wrap(self, i, argv):
        return argv

    def cleanup(self):
        pass

    def describe(self):
        return "distinct loopback addresses (127.0.0.2, ...)"


def make_network():
    if os.environ.get("INFERD_CLUSTER_NETWORK") == "loopback":
        log("INFERD_CLUSTER_NETWORK=loopback: using loopback addresses instead of namespaces")
        return LoopbackNetwork()
    reason = None
    if shutil.which("ip") is None:
        reason = "the ip command (iproute2) is missing"
    elif os.geteuid() != 0:
        reason = "not running as root"
    else:
        probe = "inferd-ifd%d-h0" % os.getpid()
        r = run(["ip", "netns", "add", probe], check=False)
        if r.returncode != 0:
            reason = "ip netns add failed: " + r.stderr.decode(errors="replace").strip()
        else:
            run(["ip", "netns", "del", probe], check=False)
    if reason:
        log("NOTE: cannot make network namespaces (%s); FALLING BACK to distinct loopback "
            "addresses 127.0.0.2-5" % reason)
        return LoopbackNetwork()
    net = NetnsNetwork()
    try:
        net.setup()
        net.probe()
        return net
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        net.cleanup()
        log("NOTE: namespace set-up failed (%s); FALLING BACK to distinct loopback addresses "
            "127.0.0.2-5" % e)
        return LoopbackNetwork()


# --------------------------------------------------------------------------------------------
# inferd hosts
# --------------------------------------------------------------------------------------------


TMP_PREFIX = "inferd-cluster-"


def cleanup_stale_runs():
    """A run that was killed (SIGKILL, a ctest timeout) leaves its nginx daemon
    and temporary directory (named after its pid); stop and remove those of
    runs whose process is gone. Namespaces: NetnsNetwork.cleanup_stale."""
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        m = re.match(re.escape(TMP_PREFIX) + r"(\d+)-", name)
        if not m or pid_alive(int(m.group(1))):
            continue
        path = os.path.join(base, name)
        try:
            with open(os.path.join(path, "nginx", "nginx.pid")) as f:
                master = int(f.read().strip())
            with open("/proc/%d/cmdline" % master, "rb") as f:
                if path.encode() in f.read():      # still that nginx, not a reused pid
                    workers = nginx_local.Nginx(os.path.join(path, "nginx"), 0, 0).worker_pids()
                    for p in [master] + sorted(workers):
                        os.kill(p, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        shutil.rmtree(path, ignore_errors=True)


def help_text():
    try:
        return subprocess.run([INFERD_BIN, "--help"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=10).stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""


def http_request(addr, port, method, path, body=None, headers=None, timeout=5.0):
    conn = http.client.HTTPConnection(addr, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class Host:
    """One inferd host: a harness.Server in the host's namespace (the command prefix
    `ip netns exec`), bound to the host's address, its output also in <tmp>/<name>.log."""

    def __init__(self, net, index, repo, tmp, extra_args):
        self.net, self.index, self.name = net, index, "h%d" % index
        self.addr = net.add_host(index)
        fixed = net.mode == "netns"
        self.server = harness.Server(
            [repo], ["--http-thread-count", "2", "--exit-timeout-secs", str(EXIT_TIMEOUT)]
            + list(extra_args), prefix=net.wrap(index, []), address=self.addr,
            http_port=8000 if fixed else 0, grpc_port=8001 if fixed else 0,
            log_path=os.path.join(tmp, "%s.log" % self.name))
        self.proc = None
        self.http_port = self.grpc_port = None
        self.exit_code = self.exit_time = None
        self.exit_error = None

    def start(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        try:
            self.server.start()
        except harness.ServerError as e:
            raise RuntimeError("%s did not start: %s" % (self.name, e))
        self.proc = self.server.proc
        self.http_port, self.grpc_port = self.server.port, self.server.grpc_port
        while time.monotonic() < deadline:
            if self.ready_status() == 200:
                return self
            time.sleep(0.05)
        raise RuntimeError("%s not ready within %.0f s:\n%s" % (self.name, timeout, self.log_text()))

    def endpoint(self):
        """HOST:HTTP_PORT:GRPC_PORT for render-upstreams.sh."""
        return "%s:%d:%d" % (self.addr, self.http_port, self.grpc_port or 8001)

    def http_addr(self):
        return "%s:%d" % (self.addr, self.http_port)

    def ready_status(self):
        try:
            return http_request(self.addr, self.http_port, "GET", "/v2/health/ready", timeout=1)[0]
        except OSError:
            return None

    def drain(self):
        """SIGTERM (the drain), and a thread that records when and how it exits."""
        self.server.send_signal(signal.SIGTERM)

        def waiter():
            self.server.proc.wait()
            self.exit_time = time.time()
            self._wait(None)  # the harness's check of the exit (after exit_time: it joins readers)
        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        return t

    def _wait(self, timeout):
        try:
            code = self.server.wait(timeout)
        except harness.SanitizerReport as e:
            code = self.server.returncode
            self.exit_error = str(e)
        if self.server.proc.poll() is not None:
            self.exit_code = code
        return code

    def clean_exit(self, timeout):
        """Waits for the host's exit (after a SIGTERM, or a kill) and returns None when the
        harness's check of it passed (no sanitizer report in its output; exit code 0 after
        a SIGTERM), else what was wrong."""
        if self.exit_code is None and self._wait(timeout) is None and self.server.alive():
            self.kill()
            return "did not exit within %.0f s of SIGTERM" % timeout
        return self.exit_error

    def log_text(self):
        return "\n".join(self.server.log())

    def kill(self):
        self.server.kill()


# --------------------------------------------------------------------------------------------
# gRPC with grpcio and hand-encoded messages (no generated code)
# --------------------------------------------------------------------------------------------


# Hand-encoded protobuf (tests/e2e/pb_wire.py).
_varint, _field, _fields = pb_wire.varint, pb_wire.field, pb_wire.fields


def grpc_infer_request(model, value):
    """ModelInferRequest: one INT32 input INPUT0 of shape [1, 1] in raw_input_contents."""
    tensor = _field(1, "INPUT0") + _field(2, "INT32") + _field(3, _varint(1) + _varint(1))
    return _field(1, model) + _field(5, tensor) + _field(7, struct.pack("<i", value))


def grpc_output_ok(resp, value):
    return [v for n, v in _fields(resp) if n == 6] == [struct.pack("<i", value)]


def grpc_module():
    try:
        import grpc
        return grpc
    except ImportError:
        return None


# --------------------------------------------------------------------------------------------
# Load
# --------------------------------------------------------------------------------------------


def make_body(j):
    if j % 2 == 0:
        model = "slow" if j % SLOW_EVERY == 0 else "delay"
        body = {"inputs": [{"name": "INPUT0", "shape": [1, 1], "datatype": "INT32", "data": [j]}]}
        return model, json.dumps(body).encode(), {"OUTPUT0": [j]}
    a = [j + k for k in range(16)]
    body = {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": a},
                       {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1] * 16}]}
    return "simple", json.dumps(body).encode(), {"OUTPUT0": [x + 1 for x in a],
                                                  "OUTPUT1": [x - 1 for x in a]}


def check_outputs(raw, expected):
    try:
        doc = json.loads(raw)
        got = {o["name"]: list(o["data"]) for o in doc["outputs"]}
    except (ValueError, KeyError, TypeError):
        return False
    return all(got.get(k) == v for k, v in expected.items())


class Load:
    """Open loop at a constant rate: a dispatcher hands request j to the pool
    of workers at start + j / RATE; a request is late only when every worker
    is busy (lateness is recorded)."""

    def __init__(self, port, rate, duration, workers, grpc_port=None):
        self.port, self.rate, self.workers = port, rate, workers
        # When inferd serves gRPC, a quarter of the requests (j % 4 == 1) and half
        # of the slow ones (j % 16 == 8) are gRPC ModelInfer calls through nginx's
        # gRPC port, all on one client channel.
        self.grpc_infer = self.channel = None
        grpc = grpc_module() if grpc_port else None
        if grpc is not None:
            self.grpc = grpc
            self.channel = grpc.insecure_channel("127.0.0.1:%d" % grpc_port)
            self.grpc_infer = self.channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        self.count = int(rate * duration)
        self.records = [None] * self.count
        self.queue = queue.Queue()
        self.threads = []

    def start(self, t_start):
        self.t_start = t_start
        for _ in range(self.workers):
            self.threads.append(threading.Thread(target=self._worker, daemon=True))
        self.threads.append(threading.Thread(target=self._dispatch, daemon=True))
        for t in self.threads:
            t.start()

    def join(self, timeout):
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return all(not t.is_alive() for t in self.threads)

    def _dispatch(self):
        for j in range(self.count):
            due = self.t_start + j / self.rate
            wait = due - time.time()
            if wait > 0:
                time.sleep(wait)
            self.queue.put((j, due))
        for _ in range(self.workers):
            self.queue.put(None)

    def _worker(self):
        while True:
            item = self.queue.get()
            if item is None:
                return
            j, due = item
            self.records[j] = self._one(j, due)

    def _one(self, j, due):
        if self.grpc_infer is not None and (j % 4 == 1 or j % 16 == 8):
            return self._one_grpc(j, due, "slow" if j % 16 == 8 else "delay")
        model, body, expected = make_body(j)
        rid = "r%06d" % j
        rec = {"id": rid, "j": j, "model": model, "due": due, "start": time.time(),
               "status": None, "error": None, "ok": False}
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        try:
            conn.request("POST", "/v2/models/%s/infer" % model, body=body,
                         headers={"Content-Type": "application/json", "X-Request-Id": rid,
                                  "Connection": "close"})
            resp = conn.getresponse()
            data = resp.read()
            rec["status"] = resp.status
            rec["ok"] = resp.status == 200 and check_outputs(data, expected)
            if not rec["ok"]:
                rec["error"] = data[:200].decode(errors="replace")
        except Exception as e:  # noqa: BLE001 - any client-side failure is recorded
            rec["error"] = "%s: %s" % (type(e).__name__, e)
        finally:
            conn.close()
        rec["end"] = time.time()
        return rec

    def _one_grpc(self, j, due, model):
        rid = "r%06d" % j
        rec = {"id": rid, "j": j, "model": model + " (gRPC)", "due": due, "start": time.time(),
               "status": None, "error": None, "ok": False}
        try:
            resp = self.grpc_infer(grpc_infer_request(model, j), timeout=15,
                                   metadata=(("x-request-id", rid),))
            rec["status"] = 200
            rec["ok"] = grpc_output_ok(resp, j)
            if not rec["ok"]:
                rec["error"] = "unexpected response %r" % resp[:80]
        except self.grpc.RpcError as e:
            rec["status"] = str(e.code())
            rec["error"] = "%s: %s" % (e.code(), e.details())
        rec["end"] = time.time()
        return rec

    def close(self):
        if self.channel is not None:
            self.channel.close()


# --------------------------------------------------------------------------------------------
# nginx access log
# --------------------------------------------------------------------------------------------

LOG_RE = re.compile(r'^(\S+) (\d+\.\d+) (\d+\.\d+) (\d+) "([^"]*)" "([^"]*)"$')


def parse_access_log(path):
    entries = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LOG_RE.match(line.strip())
            if not m or m.group(1) == "-":
                continue
            end, dur = float(m.group(2)), float(m.group(3))
            ups = [u.strip() for u in m.group(5).split(",") if u.strip() and u.strip() != "-"]
            sts = [s.strip() for s in m.group(6).split(",") if s.strip()]
            entries[m.group(1)] = {"end": end, "start": end - dur, "status": int(m.group(4)),
                                   "upstreams": ups, "ustatus": sts}
    return entries


# --------------------------------------------------------------------------------------------
# The test
# --------------------------------------------------------------------------------------------


def write_repository(root):
    """simple from the canonical test repository, and this test's own delay models (their
    timing is part of the test: DELAY_MS, SLOW_MS, a dynamic batcher)."""
    tensor_in, tensor_out = [("INPUT0", "TYPE_INT32", [1])], [("OUTPUT0", "TYPE_INT32", [1])]
    for name, ms, count in (("delay", DELAY_MS, 1), ("slow", SLOW_MS, 2)):
        harness.write_model(root, name, harness.model_config(
            name, "delay", tensor_in, tensor_out, max_batch_size=8, extra="""
            parameters { key: "execute_delay_ms" value { string_value: "%d" } }
            instance_group [ { kind: KIND_CPU count: %d } ]
            dynamic_batching { max_queue_delay_microseconds: 1000 }
            """ % (ms, count)))
    harness.copy_test_models(root, ["simple"])


def grpc_infer_through_nginx(nginx, calls=40):
    """ModelInfer on the delay model through nginx's gRPC port, `calls` times
    on one channel (HTTP/2 connection); returns (ok, errors, ids) or None
    without grpcio."""
    grpc = grpc_module()
    if grpc is None:
        log("gRPC through nginx: grpcio missing (python3-grpcio); ModelInfer calls skipped")
        return None
    ok, errors, ids = 0, [], []
    with grpc.insecure_channel("127.0.0.1:%d" % nginx.grpc_port) as ch:
        infer = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        for k in range(calls):
            value = 1000 + k
            rid = "g%03d" % k
            ids.append(rid)
            try:
                resp = infer(grpc_infer_request("delay", value), timeout=10,
                             metadata=(("x-request-id", rid),))
                if grpc_output_ok(resp, value):
                    ok += 1
                else:
                    errors.append("%s: unexpected response %r" % (rid, resp[:80]))
            except grpc.RpcError as e:
                errors.append("%s: %s %s" % (rid, e.code(), e.details()))
    return ok, errors, ids


def grpc_through_nginx(nginx):
    """A short closed-loop gRPC run through nginx's gRPC port: (rc, infer/s, errors), or None
    when infer-perf cannot speak gRPC."""
    if not os.access(INFER_PERF_BIN, os.X_OK):
        log("gRPC through nginx: skipped (no infer-perf at %s)" % INFER_PERF_BIN)
        return None
    # Metadata and statistics come over HTTP: nginx's HTTP port.
    env = dict(os.environ, INFER_PERF_HTTP_URL="127.0.0.1:%d" % nginx.http_port)
    r = subprocess.run([INFER_PERF_BIN, "-m", "simple", "-i", "grpc",
                        "-u", "127.0.0.1:%d" % nginx.grpc_port, "--concurrency-range", "4",
                        "--measurement-interval", "1000", "--max-trials", "3",
                        "--warmup-ms", "300", "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=env)
    if r.returncode != 0 and b"not available in this build" in r.stderr:
        log("gRPC through nginx: skipped (this infer-perf has no gRPC)")
        return None
    try:
        res = json.loads(r.stdout)["results"][0]
        return r.returncode, res.get("throughput_infer_per_sec", 0), res.get("errors", -1)
    except (ValueError, KeyError, IndexError, TypeError):
        log("infer-perf (gRPC) output:\n%s\n%s" % (r.stdout.decode(errors="replace"),
                                                   r.stderr.decode(errors="replace")))
        return r.returncode, 0, -1


class Checks:
    def __init__(self):
        self.failed = []

    def check(self, cond, what):
        log(("ok    " if cond else "FAIL  ") + what)
        if not cond:
            self.failed.append(what)


def main():
    if not os.access(INFERD_BIN, os.X_OK):
        print("inferd binary not found: %s (build it or set INFERD_BIN)" % INFERD_BIN)
        return 1
    if nginx_local.find_nginx() is None:
        print("nginx not found: install it (scripts/install-deps.sh)")
        return 1

    drain_flag = "--drain-delay-secs" in help_text()
    cleanup_stale_runs()
    tmp = tempfile.mkdtemp(prefix="%s%d-" % (TMP_PREFIX, os.getpid()))
    repo = os.path.join(tmp, "models")
    write_repository(repo)
    hosts, nginx, net = [], None, None
    state = {"done": False}

    def cleanup():
        if state["done"]:
            return
        state["done"] = True
        for h in hosts:
            h.kill()
        if nginx is not None:
            nginx.stop()
        if net is not None:
            net.cleanup()
        if KEEP:
            log("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    atexit.register(cleanup)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, lambda *_: sys.exit(1))

    checks = Checks()
    try:
        net = make_network()
        log("hosts: %s" % net.describe())
        extra = ["--drain-delay-secs", str(DRAIN_DELAY)] if drain_flag else []
        for i in (1, 2, 3):
            hosts.append(Host(net, i, repo, tmp, extra).start())
        h1, h2, h3 = hosts
        for h in hosts:
            log("%s: HTTP %s, gRPC %s" % (h.name, h.http_addr(),
                                          "%s:%d" % (h.addr, h.grpc_port) if h.grpc_port else "not served"))
        nginx = nginx_local.Nginx(os.path.join(tmp, "nginx"), nginx_local.free_port(),
                                  nginx_local.free_port(), workers=NGINX_WORKERS)
        os.makedirs(nginx.prefix)
        nginx.start([h.endpoint() for h in hosts])
        with open(os.path.join(nginx.prefix, "inferd", "upstreams.conf")) as f:
            fail_timeout = float(re.search(r"fail_timeout=(\d+)s", f.read()).group(1))
        log("nginx on 127.0.0.1:%d (HTTP) and :%d (gRPC), %d workers, fail_timeout %.0fs"
            % (nginx.http_port, nginx.grpc_port, NGINX_WORKERS, fail_timeout))

        grpc_load = all(h.grpc_port for h in hosts) and grpc_module() is not None
        load = Load(nginx.http_port, RATE, DURATION, WORKERS,
                    grpc_port=nginx.grpc_port if grpc_load else None)
        t_start = time.time() + 0.3
        load.start(t_start)
        log("load: %d requests at %.0f/s for %.0f s: simple, delay (%d ms) alternating; every "
            "%dth is slow (%d ms); %s" % (load.count, RATE, DURATION, DELAY_MS, SLOW_EVERY, SLOW_MS,
                                          "a quarter over gRPC" if grpc_load else "all over HTTP"))

        def sleep_until(t):
            d = t_start + t - time.time()
            if d > 0:
                time.sleep(d)

        # -- drain h1 ------------------------------------------------------------------------
        sleep_until(T_DRAIN)
        ev = {}
        if drain_flag:
            ev["sig"] = time.time()
            h1.drain()
            ready = 200
            while ready == 200 and time.time() - ev["sig"] < DRAIN_DELAY:
                ready = h1.ready_status()
                time.sleep(0.02)
            ev["unready"] = time.time()
            nginx.reload([h2.endpoint(), h3.endpoint()])
            ev["removed"] = time.time()
            log("drain h1: SIGTERM; readiness %s after %.0f ms; nginx reloaded without h1 "
                "%.0f ms after SIGTERM (drain delay %d s)" % (ready, (ev["unready"] - ev["sig"]) * 1e3,
                                                            (ev["removed"] - ev["sig"]) * 1e3, DRAIN_DELAY))
            checks.check(ready == 503, "readiness turns false (503) at SIGTERM (got %s)" % ready)
            # Within the drain delay h1 still accepts and serves (new connections).
            direct = []
            for k in range(3):
                _, body, expected = make_body(2 * k + 2)
                try:
                    st, data = http_request(h1.addr, h1.http_port, "POST", "/v2/models/delay/infer",
                                            body=body, headers={"Content-Type": "application/json"})
                    direct.append(st == 200 and check_outputs(data, expected))
                except OSError:
                    direct.append(False)
            checks.check(all(direct) and time.time() - ev["sig"] < DRAIN_DELAY,
                         "h1 serves new connections during its drain delay (%s)" % direct)
        else:
            log("NOTE: this inferd has no --drain-delay-secs; draining h1 the preStop way "
                "(endpoint removed, %.0f s later SIGTERM)" % PRESTOP_SLEEP)
            nginx.reload([h2.endpoint(), h3.endpoint()])
            ev["removed"] = time.time()
            time.sleep(PRESTOP_SLEEP)
            ev["sig"] = time.time()
            h1.drain()
            log("drain h1: nginx reloaded without h1, SIGTERM %.1f s later" % (ev["sig"] - ev["removed"]))

        # -- kill h2 -------------------------------------------------------------------------
        sleep_until(T_KILL)
        ev["kill"] = time.time()
        h2.proc.kill()
        h2.proc.wait()
        ev["killed"] = time.time()
        log("kill h2: SIGKILL, reaped after %.1f ms" % ((ev["killed"] - ev["kill"]) * 1e3))

        # -- h4 joins ------------------------------------------------------------------------
        sleep_until(T_JOIN)
        t = time.time()
        h4 = Host(net, 4, repo, tmp, extra).start()
        hosts.append(h4)
        nginx.reload([h3.endpoint(), h4.endpoint()])
        ev["join"] = time.time()
        log("join h4 (%s): ready after %.2f s; nginx now balances h3, h4"
            % (h4.http_addr(), ev["join"] - t))

        if not load.join(DURATION + 30):
            checks.check(False, "load finished in time")
        load.close()
        log("load done")

        # -- gRPC through nginx --------------------------------------------------------------
        grpc_result = grpc_calls = None
        if all(h.grpc_port for h in (h3, h4)):
            grpc_calls = grpc_infer_through_nginx(nginx)
            grpc_result = grpc_through_nginx(nginx)
        else:
            log("gRPC through nginx: skipped (this inferd does not serve gRPC)")
        h1_wait_deadline = time.time() + DRAIN_DELAY + EXIT_TIMEOUT + 5
        while h1.exit_code is None and time.time() < h1_wait_deadline:
            time.sleep(0.1)
        nginx.stop()
        entries = parse_access_log(nginx.access_log)

        # -- analysis ------------------------------------------------------------------------
        recs = [r for r in load.records if r is not None]
        # Attempts are attributed by host address (HTTP and gRPC ports alike).
        a1, a2, a4 = h1.addr, h2.addr, h4.addr

        def host(upstream):
            return upstream.rsplit(":", 1)[0]

        for e in entries.values():
            e["hosts"] = [host(u) for u in e["upstreams"]]
        checks.check(len(recs) == load.count, "all %d requests were sent (%d)" % (load.count, len(recs)))
        late = sorted(r["start"] - r["due"] for r in recs)
        if late:
            log("client lateness: p50 %.1f ms, p99 %.1f ms, max %.1f ms"
                % (late[len(late) // 2] * 1e3, late[int(len(late) * 0.99)] * 1e3, late[-1] * 1e3))

        failed = [r for r in recs if not r["ok"]]
        killed_in_flight, unexplained = [], []
        for r in failed:
            e = entries.get(r["id"])
            if (e is not None and e["hosts"] and e["hosts"][-1] == a2
                    and e["status"] in (502, 504)
                    and e["start"] <= ev["killed"] + KILL_SLACK_S and e["end"] >= ev["kill"] - KILL_SLACK_S):
                killed_in_flight.append(r)
            else:
                unexplained.append((r, e))
        log("requests: %d, ok %d, failed %d (in flight on killed h2: %d, other: %d)"
            % (len(recs), len(recs) - len(failed), len(failed), len(killed_in_flight), len(unexplained)))
        for r, e in unexplained[:20]:
            log("  unexplained failure %s %s start=+%.3f end=+%.3f status=%s error=%s nginx=%s"
                % (r["id"], r["model"], r["start"] - t_start, r["end"] - t_start, r["status"],
                   r["error"], e))
        checks.check(not unexplained, "no request failed except those in flight on the killed host")
        in_flight_h2 = [e for e in entries.values() if e["hosts"] and e["hosts"][-1] == a2
                        and e["start"] <= ev["killed"] + KILL_SLACK_S and e["end"] >= ev["kill"]]
        by_id = {r["id"]: r for r in recs}
        log("kill: nginx had %d requests in flight on h2: %s" % (
            len(in_flight_h2), ", ".join("%s %s %s" % (rid, by_id[rid]["model"] if rid in by_id else "?", e["status"])
                                         for rid, e in sorted(entries.items()) if e in in_flight_h2)))
        checks.check(len(killed_in_flight) >= 1,
                     "the kill caught requests in flight (%d failed with it)" % len(killed_in_flight))
        missing = [r["id"] for r in recs if r["ok"] and r["id"] not in entries]
        checks.check(not missing, "nginx logged every request (%d missing)" % len(missing))

        # Drain.
        on_h1_after = [e for e in entries.values() if e["hosts"] and e["hosts"][-1] == a1
                       and e["start"] >= ev["sig"]]
        failed_h1 = [e for e in entries.values() if a1 in e["hosts"] and e["status"] != 200]
        log("drain: %d requests served by h1 after its SIGTERM; %d failed on h1"
            % (len(on_h1_after), len(failed_h1)))
        checks.check(not failed_h1, "no request failed because of the drain")
        checks.check(h1.exit_code == 0, "drained h1 exited 0 (exit code %s)" % h1.exit_code)
        if h1.exit_time is not None:
            took = h1.exit_time - ev["sig"]
            limit = (DRAIN_DELAY if drain_flag else 0) + EXIT_TIMEOUT
            checks.check(took <= limit, "h1 exited %.2f s after SIGTERM (limit: drain delay + exit "
                         "timeout = %d s)" % (took, limit))
        if drain_flag:
            checks.check(ev["removed"] - ev["sig"] < DRAIN_DELAY,
                         "balancer dropped h1 within the drain delay (%.2f s < %d s)"
                         % (ev["removed"] - ev["sig"], DRAIN_DELAY))

        # Kill: after h2 died, how often did nginx still try it?
        tries = sorted(e["start"] for e in entries.values()
                       if a2 in e["hosts"] and e["start"] > ev["killed"] + KILL_SLACK_S
                       and e["start"] < ev["join"])
        window = ev["join"] - ev["killed"]
        per_sec = [0] * int(math.ceil(window))
        for t in tries:
            per_sec[min(len(per_sec) - 1, int(t - ev["killed"]))] += 1
        total_between = sum(1 for e in entries.values() if ev["killed"] < e["start"] < ev["join"])
        log("kill: nginx tried dead h2 %d times in the %.1f s after the kill (per second: %s) "
            "out of %d requests; every try was retried on another host"
            % (len(tries), window, per_sec, total_between))
        # nginx probes a failed server once per fail_timeout, per upstream group (HTTP,
        # gRPC); allow one per worker. Without passive health h2 would get about half.
        groups = 2 if load.grpc_infer is not None else 1
        probes_allowed = groups * NGINX_WORKERS * (int(window / fail_timeout) + 1)
        checks.check(len(tries) <= probes_allowed,
                     "nginx stopped sending to the killed host: %d tries <= %d (a probe per upstream "
                     "group and worker per fail_timeout)" % (len(tries), probes_allowed))
        checks.check(all(c <= groups * NGINX_WORKERS for c in per_sec[1:]),
                     "from 1 s after the kill, only probes reach the killed host")

        # Join.
        after = [e for e in entries.values() if e["start"] >= ev["join"] + 0.5 and e["hosts"]]
        on_h4 = sum(1 for e in after if e["hosts"][-1] == a4)
        share = on_h4 / len(after) if after else 0.0
        first = min((e["start"] for e in entries.values() if e["hosts"] and e["hosts"][-1] == a4
                     and e["start"] >= ev["join"]), default=None)
        log("join: h4 served %d of %d requests after joining (%.0f%%; an even split is 50%%), the "
            "first %.0f ms after the reload" % (on_h4, len(after), share * 100,
                                                ((first or ev["join"]) - ev["join"]) * 1e3))
        # least_conn gives a host fewer requests while it is slower (a busy
        # machine, a cold process): ask for a clear share, not an even one.
        checks.check(share >= 0.2 and first is not None and first - ev["join"] < 1.0,
                     "the new host takes traffic at once (share %.2f >= 0.20)" % share)

        if grpc_calls is not None:
            ok, errors, ids = grpc_calls
            for e in errors[:10]:
                log("  gRPC error " + e)
            per_host = {}
            for rid in ids:
                e = entries.get(rid)
                if e and e["upstreams"]:
                    per_host[e["upstreams"][-1]] = per_host.get(e["upstreams"][-1], 0) + 1
            log("gRPC ModelInfer through nginx: %d of %d ok; per upstream: %s" % (ok, len(ids), per_host))
            checks.check(ok == len(ids), "gRPC calls through nginx all succeed (%d/%d)" % (ok, len(ids)))
            checks.check(len(per_host) == 2 and min(per_host.values()) >= len(ids) // 4,
                         "nginx balances gRPC calls of one connection over both hosts")
        if grpc_result is not None:
            rc, thr, errs = grpc_result
            checks.check(rc == 0 and thr > 0 and errs == 0,
                         "gRPC through nginx: rc %d, %.0f infer/s, %d errors" % (rc, thr, errs))

        # Every host's exit, through the harness: the live ones are stopped (SIGTERM) and
        # must exit 0; no host's output may hold a sanitizer report.
        for h in hosts:
            if h.server.alive():
                h.server.send_signal(signal.SIGTERM)
        for h in hosts:
            problem = h.clean_exit(DRAIN_DELAY + EXIT_TIMEOUT + 5)
            checks.check(problem is None, "%s exited cleanly%s" % (h.name, "" if problem is None
                                                                    else ": " + problem))
    except Exception as e:  # noqa: BLE001
        import traceback
        traceback.print_exc()
        checks.check(False, "test ran to the end (%s)" % e)

    if checks.failed or VERBOSE:
        for h in hosts:
            print("---- %s log ----\n%s" % (h.name, h.log_text()[-3000:]))
        if nginx is not None:
            print("---- nginx error log (tail) ----\n" + nginx.error_tail(30))
    if net is not None:
        log("network: %s" % net.describe())
    if checks.failed:
        log("FAILED: %d check(s): %s" % (len(checks.failed), "; ".join(checks.failed)))
        return 1
    log("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
