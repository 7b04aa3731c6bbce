#!/usr/bin/python3
"""Model residency under load: Zipf-distributed requests over 50 copies of the digits model,
served with a --model-memory-budget that holds about 10 of them, against the same traffic with
all 50 resident (no budget). Prints requests/s, p50/p99 latency of each and their ratios, the
residency counters, and the cold-start wait histogram.

  bench/residency/zipf.py [--models 50] [--fit 10] [--seconds 20] [--clients 8] [--zipf 1.1]

Starts its own inferd (build/bin/inferd) on a temporary repository, on loopback ports it picks,
and stops it. Needs examples/models/digits/1/model.pt (make models) and the pytorch backend.
Bounded: three timed phases of --seconds each plus start-ups (about 80 s by default); the
middle one (a budget every model fits) shows the residency's own cost on the request path.
"""

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import test_residency as tr  # noqa: E402
from harness import MetricsServer  # noqa: E402


def zipf_weights(n, s):
    return [1.0 / (k + 1) ** s for k in range(n)]


def drive(server, models, weights, seconds, clients, seed):
    """Closed loop: `clients` threads, each one request at a time, for `seconds`."""
    latencies, failures = [], []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(k):
        rng = random.Random(seed + k)
        client = server.client(timeout=120)
        mine = []
        while time.monotonic() < deadline:
            m = rng.choices(models, weights=weights)[0]
            t = time.monotonic()
            r = client.infer(m, tr.REQUEST)
            mine.append(time.monotonic() - t)
            if r.status != 200:
                with lock:
                    failures.append((m, r.status, r.body[:120]))
        with lock:
            latencies.extend(mine)

    start = time.monotonic()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    latencies.sort()

    def pct(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3

    return {"requests": len(latencies), "rps": len(latencies) / wall, "p50_ms": pct(0.50),
            "p99_ms": pct(0.99), "failures": failures}


def run_phase(repo, args, extra, label):
    server = MetricsServer([repo], extra + ["--exit-on-error=true"],
                           startup_timeout=120).start()
    try:
        models = [tr.name(i) for i in range(args.models)]
        # Each model's first request is not counted: warm-up of the all-resident server, and
        # the same start for the budgeted one.
        drive(server, models, zipf_weights(args.models, args.zipf), 2, args.clients, 7)
        result = drive(server, models, zipf_weights(args.models, args.zipf), args.seconds,
                       args.clients, 24)
        result["metrics"] = tr.metrics(server.metrics_client())
        print("%-22s %8d requests  %8.0f req/s  p50 %7.2f ms  p99 %7.2f ms  failures %d"
              % (label, result["requests"], result["rps"], result["p50_ms"], result["p99_ms"],
                 len(result["failures"])))
        return result
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=50)
    ap.add_argument("--fit", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--zipf", type=float, default=1.1)
    args = ap.parse_args()
    if tr.SKIP:
        sys.exit("cannot run: " + tr.SKIP)
    tmp = tempfile.mkdtemp(prefix="inferd-bench-residency-")
    try:
        first, per_model = tr.calibrate(tmp)
        budget = int(first + per_model * args.fit * 1.1)
        repo = os.path.join(tmp, "models")
        tr.write_copies(repo, args.models)
        print("%d digits copies, Zipf s=%.2f, %d closed-loop clients, %.0f s per phase"
              % (args.models, args.zipf, args.clients, args.seconds))
        print("footprint: first load %d bytes, one copy %d bytes; budget %d bytes (~%d copies)"
              % (first, per_model, budget, args.fit))
        full = run_phase(repo, args, [], "all %d resident" % args.models)
        # The residency's own cost on the request path (leases, a lookup): a budget nothing
        # exceeds, every model loaded on its first request.
        roomy = run_phase(repo, args, ["--model-memory-budget=64G"], "budget for all")
        budgeted = run_phase(repo, args, ["--model-memory-budget=%d" % budget],
                             "budget for %d" % args.fit)
        for label, r in (("budget for all", roomy), ("budget for %d" % args.fit, budgeted)):
            print("ratio %s / all resident: req/s %.2f, p50 %.2f, p99 %.2f"
                  % (label, r["rps"] / full["rps"], r["p50_ms"] / full["p50_ms"],
                     r["p99_ms"] / full["p99_ms"]))
        m = budgeted["metrics"]
        loads = sum(v for (f, _), v in m.items() if f == "inferd_model_residency_loads_total")
        evictions = sum(v for (f, _), v in m.items()
                        if f == "inferd_model_residency_evictions_total")
        print("budgeted run (warm-up included): %d loads, %d evictions, resident %d of %d bytes"
              % (loads, evictions, m.get(("inferd_model_memory_resident_bytes", ""), 0),
                 m.get(("inferd_model_memory_budget_bytes", ""), 0)))
        print("cold-start wait histogram (requests that found their model not loaded):")
        previous = 0
        buckets = sorted(((float(lbl.split('"')[1]) if "Inf" not in lbl else float("inf")), v)
                         for (f, lbl), v in m.items()
                         if f == "inferd_model_cold_start_wait_seconds_bucket")
        for le, cumulative in buckets:
            print("  <= %-6s s  %6d" % ("+Inf" if le == float("inf") else "%g" % le,
                                         cumulative - previous))
            previous = cumulative
        count = m.get(("inferd_model_cold_start_wait_seconds_count", ""), 0)
        total = m.get(("inferd_model_cold_start_wait_seconds_sum", ""), 0)
        if count:
            print("  mean %.1f ms over %d waits" % (1e3 * total / count, count))
        failures = full["failures"] + roomy["failures"] + budgeted["failures"]
        if failures:
            print("FAILURES:", failures[:5])
            sys.exit(1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
