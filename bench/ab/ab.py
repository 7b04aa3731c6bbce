#!/usr/bin/python3
"""Two inferd builds side by side on one machine, in one run: the `simple` model over HTTP and
gRPC at a few concurrencies, rounds alternating A and B (A B, B A, A B, ...) so that the
machine's noise falls on both. Reports, per setting, the median throughput of each and the
ratio B/A, and the median server CPU per inference (user + system time of the inferd process
over the round, divided by the inferences its statistics counted). With --callgrind, also the
user-space instructions per inference of each (valgrind's callgrind, counters zeroed after a
warm-up): the same for the same binaries whatever else the machine does, so it is the figure
to trust for small differences. With --callgrind, also "http-json": the same count for requests
whose tensors are JSON in and out (the 16-element `simple` request curl users send), which
the binary tensors infer-perf sends do not exercise.

  bench/ab/run.sh OLD_BUILD_DIR [NEW_BUILD_DIR]     (NEW defaults to build/)
"""

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


class Inferd:
    def __init__(self, binary, repo, log_path, wrapper=()):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            list(wrapper) + [binary, "--model-repository", repo, "--http-address", "127.0.0.1",
             "--http-port", "0", "--grpc-address", "127.0.0.1", "--grpc-port", "0",
             "--allow-metrics=false"], stdout=subprocess.DEVNULL, stderr=self.log)
        self.http = self.grpc = None
        deadline = time.time() + 120
        while time.time() < deadline and not (self.http and self.grpc):
            with open(log_path) as f:
                text = f.read()
            m = re.search(r"HTTP listening on [^:]+:(\d+)", text)
            self.http = self.http or (m and int(m.group(1)))
            m = re.search(r"gRPC listening on [^:]+:(\d+)", text)
            self.grpc = self.grpc or (m and int(m.group(1)))
            time.sleep(0.05)
        if not (self.http and self.grpc):
            self.stop()
            sys.exit("%s did not start; its log:\n%s" % (binary, open(log_path).read()))

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * TICK_S  # utime + stime

    def inferences(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/v2/models/simple/stats" % self.http) as r:
            return json.load(r)["model_stats"][0]["inference_count"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def measure(perf, server, protocol, concurrency, interval_ms):
    port = server.http if protocol == "http" else server.grpc
    cpu0, n0 = server.cpu_seconds(), server.inferences()
    out = subprocess.run(
        [perf, "-m", "simple", "-u", "127.0.0.1:%d" % port, "-i", protocol,
         "--concurrency-range", str(concurrency), "--measurement-interval", str(interval_ms),
         "--max-trials", "3", "--stability-percentage", "50", "--json"],
        capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        sys.exit("infer-perf failed:\n" + out.stdout + out.stderr)
    cpu1, n1 = server.cpu_seconds(), server.inferences()
    result = json.loads(out.stdout)["results"][0]
    return result["throughput_infer_per_sec"], (cpu1 - cpu0) / max(1, n1 - n0) * 1e6


JSON_REQUEST = json.dumps({"inputs": [
    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}).encode()


def json_requests(server, count):
    """`count` JSON inferences of `simple` on one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", server.http, timeout=60)
    try:
        for _ in range(count):
            conn.request("POST", "/v2/models/simple/infer", JSON_REQUEST,
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                sys.exit("JSON inference failed: %d %s" % (r.status, body[:200]))
    finally:
        conn.close()


def callgrind_instructions(binary, perf, repo, tmp, protocol):
    """User-space instructions per inference of `binary` under callgrind."""
    out = os.path.join(tmp, "callgrind.%s" % protocol)
    server = Inferd(binary, repo, out + ".log",
                    ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out + ".%p"])
    try:
        for _ in range(600):  # `simple` loads slowly under valgrind
            try:
                server.inferences()
                break
            except Exception:
                time.sleep(0.2)
        def load(seconds):
            if protocol == "http-json":
                json_requests(server, 100 * seconds)
            else:
                measure(perf, server, protocol, 1, 1000 * seconds)
        load(1)  # warm-up
        subprocess.run(["callgrind_control", "-z", str(server.proc.pid)], check=True,
                       capture_output=True)
        n0 = server.inferences()
        load(3)
        n1 = server.inferences()
        subprocess.run(["callgrind_control", "-d", str(server.proc.pid)], check=True,
                       capture_output=True)
    finally:
        server.stop()
    # callgrind_control -d wrote <out>.<pid>.1: the counts since the zeroing.
    with open("%s.%d.1" % (out, server.proc.pid)) as f:
        total = next(int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:")))
    return total / max(1, n1 - n0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="inferd binary A (the baseline)")
    ap.add_argument("--b", required=True, help="inferd binary B")
    ap.add_argument("--perf", required=True, help="infer-perf binary")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--interval-ms", type=int, default=2000)
    ap.add_argument("--concurrency", default="1,4")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count instructions per inference under callgrind")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="inferd-ab.")
    try:
        repo = os.path.join(tmp, "models")
        shutil.copytree(os.path.join(ROOT, "examples", "models", "simple"),
                        os.path.join(repo, "simple"), symlinks=False)
        servers = {"A": Inferd(args.a, repo, os.path.join(tmp, "a.log")),
                   "B": Inferd(args.b, repo, os.path.join(tmp, "b.log"))}
        try:
            for s in servers.values():  # wait for `simple`
                for _ in range(300):
                    try:
                        s.inferences()
                        break
                    except Exception:
                        time.sleep(0.1)
            rows = []
            for protocol in ("http", "grpc"):
                for c in [int(x) for x in args.concurrency.split(",")]:
                    got = {"A": [], "B": []}
                    for r in range(args.rounds):
                        for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
                            got[name].append(measure(args.perf, servers[name], protocol, c,
                                                     args.interval_ms))
                    rows.append((protocol, c, got))
        finally:
            for s in servers.values():
                s.stop()
        instructions = {}
        if args.callgrind:
            for protocol in ("http", "grpc", "http-json"):
                for name, binary in (("A", args.a), ("B", args.b)):
                    instructions[(protocol, name)] = callgrind_instructions(
                        binary, args.perf, repo, tmp, protocol)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("load average before the end: %s" % open("/proc/loadavg").read().split()[0:3])
    print("| protocol | concurrency | A infer/s | B infer/s | B/A | A CPU µs/inf | B CPU µs/inf "
          "| B/A |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for protocol, c, got in rows:
        ta = statistics.median(t for t, _ in got["A"])
        tb = statistics.median(t for t, _ in got["B"])
        ca = statistics.median(u for _, u in got["A"])
        cb = statistics.median(u for _, u in got["B"])
        print("| %s | %d | %.0f | %.0f | %.3f | %.1f | %.1f | %.3f |"
              % (protocol, c, ta, tb, tb / ta, ca, cb, cb / ca))
    if instructions:
        print()
        print("| protocol | A instructions/inference | B instructions/inference | B/A |")
        print("| --- | --- | --- | --- |")
        for protocol in ("http", "grpc", "http-json"):
            a, b = instructions[(protocol, "A")], instructions[(protocol, "B")]
            print("| %s | %.0f | %.0f | %.3f |" % (protocol, a, b, b / a))


if __name__ == "__main__":
    main()
