#!/usr/bin/python3
"""Response cache: what a hit costs the server, against a `simple` inference.

Starts inferd with `--cache-config local,size=64 MiB` on a repository holding each model twice,
as is and with `response_cache { enable: true }`: Triton's `simple` (add_sub, two INT32 [16]),
an FP32 identity model (1 MiB tensors) and a model that takes 2 ms per execution (`delay`
backend). Sends the same request N times to each over one keep-alive HTTP connection and reads:

* the server's CPU time per request (every thread of the process, /proc/<pid>/task/*/schedstat):
  all the server does for a request (HTTP, JSON, validation, scheduling, the model, encoding);
* the statistics extension: an uncached request's success.ns/count (from the version's Enqueue
  to the answer: queue, execution, outputs) and a hit's cache_hit.ns/count (key built, looked
  up, compared, response copied; from the same point);
* the client's median round trip.

The issue's goal: a cache hit costs < 20 % of a `simple` inference's server time, i.e.
cache_hit time / server CPU time of an uncached `simple` request. Also printed: hit time /
uncached Enqueue-to-answer time (for `simple` the model is a 16-element add run inline, so
that path is about as cheap as building the cached response). Bounded: ~10-30 s.

Usage: bench/cache/cache_bench.py [--requests N] (INFERD_BIN: the server, default build/bin/inferd)
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import harness  # noqa: E402

BIG_VALUES = 256 * 1024  # FP32: 1 MiB
CACHE = "response_cache { enable: true }"


def write_models(repo):
    simple = harness.read_test_config("simple")
    harness.write_model(repo, "simple", simple)
    harness.write_model(repo, "simple_cached",
                        simple.replace('name: "simple"', 'name: "simple_cached"') + CACHE + "\n")
    for name, extra in (("big", ""), ("big_cached", CACHE)):
        harness.write_model(repo, name, harness.identity_config(name, "TYPE_FP32", extra=extra))
    delay = 'parameters { key: "execute_delay_ms" value { string_value: "2" } }\n'
    for name, extra in (("slow", delay), ("slow_cached", delay + CACHE)):
        harness.write_model(repo, name, harness.model_config(
            name, "delay", [("INPUT0", "TYPE_FP32", (-1,))], [("OUTPUT0", "TYPE_FP32", (-1,))],
            extra=extra))


def cpu_ns(pid):
    """CPU time of every thread of `pid`, ns."""
    total = 0
    for path in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except OSError:  # a thread that ended
            pass
    return total


def stats(client, model):
    r = client.get("/v2/models/%s/versions/1/stats" % model)
    assert r.status == 200, r
    s = r.json()["model_stats"][0]
    return s["inference_stats"], s["execution_count"]


def run(server, client, model, body, headers, n):
    """n identical requests: (client median round trip us, server CPU us per request)."""
    times = []
    cpu0 = cpu_ns(server.proc.pid)
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.post("/v2/models/%s/infer" % model, body, headers)
        times.append(time.perf_counter() - t0)
        assert r.status == 200, r
    cpu = (cpu_ns(server.proc.pid) - cpu0) / n / 1e3
    return statistics.median(times) * 1e6, cpu


def case(server, client, label, plain, cached, body, headers, n):
    run(server, client, plain, body, headers, min(n, 100))  # warm-up
    before, _ = stats(client, plain)
    rtt_plain, cpu_plain = run(server, client, plain, body, headers, n)
    after, _ = stats(client, plain)
    path_plain = (after["success"]["ns"] - before["success"]["ns"]) / \
        (after["success"]["count"] - before["success"]["count"]) / 1e3

    run(server, client, cached, body, headers, 1)  # the miss that fills the entry
    before, exec_before = stats(client, cached)
    rtt_hit, cpu_hit = run(server, client, cached, body, headers, n)
    after, exec_after = stats(client, cached)
    hits = after["cache_hit"]["count"] - before["cache_hit"]["count"]
    assert hits == n and exec_after == exec_before, (hits, exec_before, exec_after)
    hit = (after["cache_hit"]["ns"] - before["cache_hit"]["ns"]) / hits / 1e3
    print("%s (%d requests each)" % (label, n))
    print("  server CPU per request     uncached %9.1f us   hits %9.1f us" % (cpu_plain, cpu_hit))
    print("  Enqueue to answer          uncached %9.2f us   hit  %9.2f us (cache_hit)"
          % (path_plain, hit))
    print("  client median round trip   uncached %9.1f us   hits %9.1f us" % (rtt_plain, rtt_hit))
    print("  hit / uncached server CPU %5.1f %%   hit / uncached Enqueue-to-answer %6.1f %%"
          % (100 * hit / cpu_plain, 100 * hit / path_plain))
    return hit, cpu_plain, path_plain


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=3000)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="inferd-cache-bench-")
    try:
        repo = os.path.join(tmp, "models")
        write_models(repo)
        server = harness.Server([repo], ["--cache-config", "local,size=%d" % (64 << 20)])
        server.start()
        try:
            client = harness.Client(server.port, persistent=True, timeout=60)
            req, _ = harness.simple_request(list(range(16)), [1] * 16)
            small = (json.dumps(req).encode(), {"Content-Type": "application/json"})
            blob = struct.pack("<%df" % BIG_VALUES, *([0.25] * BIG_VALUES))
            header = ('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[%d],'
                      '"parameters":{"binary_data_size":%d}}],'
                      '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}'
                      % (BIG_VALUES, len(blob))).encode()
            big = (header + blob, {"Content-Type": "application/octet-stream",
                                   "Inference-Header-Content-Length": str(len(header))})
            one = ('{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[4],'
                   '"data":[1,2,3,4]}]}').encode(), {"Content-Type": "application/json"}
            hit, cpu, _ = case(server, client, "simple: add_sub, 2 x 16 INT32, JSON", "simple",
                               "simple_cached", *small, args.requests)
            case(server, client, "identity: 1 MiB FP32, binary", "big", "big_cached", *big,
                 max(50, args.requests // 20))
            case(server, client, "delay backend: 2 ms per execution", "slow", "slow_cached", *one,
                 max(50, args.requests // 20))
            ratio = hit / cpu
            print("goal: a hit < 20 %% of a simple inference's server time: %s (%.1f %%)"
                  % ("met" if ratio < 0.2 else "NOT met", ratio * 100))
            client.close()
        finally:
            server.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
