#!/usr/bin/python3
"""Soak test: N inference requests on `simple` over HTTP and over gRPC, then C load/unload
cycles of `digits`, against one inferd process; reports its RSS and open file descriptors
before and after each phase. Goal (issue 11): RSS growth < 20 MB, no fd growth.

Run through bench/soak/run.sh (which builds nothing: it uses build/bin/inferd)."""

import argparse
import http.client
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import secure_util  # noqa: E402

try:
    import grpc
except ImportError:
    grpc = None


def proc_stats(pid):
    """(RSS MB, open fds) once the process has settled: closed client connections take a
    moment to be closed on the server side too, so this takes the lowest fd count of a few
    samples over ~1 s."""
    fds = []
    for _ in range(6):
        time.sleep(0.2)
        fds.append(len(os.listdir("/proc/%d/fd" % pid)))
    rss_kb = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
    return rss_kb / 1024.0, min(fds)


def simple_body():
    req = {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32",
                       "data": list(range(16))},
                      {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32",
                       "data": [1] * 16}]}
    return json.dumps(req).encode()


def http_phase(port, n, threads):
    body = simple_body()
    errors = []
    per = [n // threads + (1 if i < n % threads else 0) for i in range(threads)]

    def worker(count):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for _ in range(count):
            c.request("POST", "/v2/models/simple/infer", body=body,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                errors.append(r.status)
        c.close()

    ts = [threading.Thread(target=worker, args=(k,)) for k in per]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return len(errors)


def grpc_phase(port, pb, n, threads):
    req = pb.ModelInferRequest(model_name="simple")
    for name in ("INPUT0", "INPUT1"):
        req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
    req.raw_input_contents.append(struct.pack("<16i", *range(16)))
    req.raw_input_contents.append(struct.pack("<16i", *([1] * 16)))
    errors = []
    per = [n // threads + (1 if i < n % threads else 0) for i in range(threads)]

    def worker(count):
        ch = grpc.insecure_channel("127.0.0.1:%d" % port)
        call = ch.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                              request_serializer=lambda m: m.SerializeToString(),
                              response_deserializer=pb.ModelInferResponse.FromString)
        for _ in range(count):
            try:
                call(req, timeout=30)
            except grpc.RpcError as e:
                errors.append(e.code())
        ch.close()

    ts = [threading.Thread(target=worker, args=(k,)) for k in per]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return len(errors)


def cycle_phase(port, cycles):
    errors = 0
    for _ in range(cycles):
        for action in ("unload", "load"):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            c.request("POST", "/v2/repository/models/digits/" + action, body=b"")
            r = c.getresponse()
            r.read()
            c.close()
            errors += r.status != 200
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1000000, help="per protocol (default 10^6)")
    ap.add_argument("--cycles", type=int, default=200, help="load/unload cycles of digits")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--repository", default=os.path.join(ROOT, "examples", "models"))
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="inferd-soak-")
    pb = secure_util.grpc_messages(os.path.join(tmp, "gen")) if grpc else None
    server = secure_util.start_server(
        [args.repository], ["--model-control-mode=explicit", "--load-model=simple",
                            "--load-model=digits"], grpc_on=grpc is not None)
    pid = server.proc.pid
    rows = []
    try:
        # Warm-up: first allocations (arenas, thread caches) are not growth.
        http_phase(server.port, 2000, args.threads)
        if grpc:
            grpc_phase(server.grpc_port, pb, 2000, args.threads)
        cycle_phase(server.port, 2)
        base = proc_stats(pid)
        rows.append(("start (after warm-up)", 0, 0.0) + base)
        t0 = time.monotonic()
        err = http_phase(server.port, args.requests, args.threads)
        rows.append(("HTTP %d requests" % args.requests, err, time.monotonic() - t0) +
                    proc_stats(pid))
        if grpc:
            t0 = time.monotonic()
            err = grpc_phase(server.grpc_port, pb, args.requests, args.threads)
            rows.append(("gRPC %d requests" % args.requests, err, time.monotonic() - t0) +
                        proc_stats(pid))
        t0 = time.monotonic()
        err = cycle_phase(server.port, args.cycles)
        rows.append(("%d unload/load cycles of digits" % args.cycles, err,
                     time.monotonic() - t0) + proc_stats(pid))
    finally:
        server.stop()
    print("| phase | errors | seconds | RSS MB | open fds |")
    print("| --- | --- | --- | --- | --- |")
    for name, err, secs, rss, fds in rows:
        print("| %s | %d | %.1f | %.1f | %d |" % (name, err, secs, rss, fds))
    growth = rows[-1][3] - rows[0][3]
    fd_growth = rows[-1][4] - rows[0][4]
    ok = growth < 20 and fd_growth <= 0 and all(r[1] == 0 for r in rows)
    print("\nRSS growth %.1f MB (goal < 20), fd growth %d (goal 0): %s" %
          (growth, fd_growth, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
