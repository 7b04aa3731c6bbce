#!/usr/bin/python3
"""The latency-bounded load a zero-overhead server could carry: the peer of bench/latency_bound.

A discrete-event simulation of one ideal batching server under the same Poisson arrivals: when
free it takes up to MAX_BATCH waiting requests at once and serves a batch of b in
max(T1, b / TMAX) seconds, where T1 is the measured single-request latency and TMAX the measured
best offline throughput (so a batch costs what the real model showed: flat up to its max batch
for `delay`, linear in b for resnet18 on this CPU). No transport, no scheduling cost, no noise.

Usage: ideal.py T1_US TMAX MAX_BATCH BOUND_US FRACTION... -> JSON {"p99_us": {fraction: p99},
"best_fraction": highest fraction whose p99 is under BOUND_US}"""
import json
import random
import sys


def p99_at(rate, t1, tmax, max_batch, n=200000, seed=1):
    rng = random.Random(seed)
    t, arrivals = 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate)
        arrivals.append(t)
    latencies = []
    free_at, i = 0.0, 0
    while i < n:
        start = max(free_at, arrivals[i])
        j = i
        while j < n and j - i < max_batch and arrivals[j] <= start:
            j += 1
        done = start + max(t1, (j - i) / tmax)
        latencies.extend(done - a for a in arrivals[i:j])
        free_at, i = done, j
    latencies.sort()
    return latencies[int(0.99 * len(latencies))]


def main():
    t1 = float(sys.argv[1]) / 1e6
    tmax, max_batch, bound = float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) / 1e6
    out, best = {}, 0.0
    for f in map(float, sys.argv[5:]):
        p99 = p99_at(f * tmax, t1, tmax, max_batch)
        out[str(f)] = round(p99 * 1e6)
        if p99 < bound:
            best = max(best, f)
    print(json.dumps({"p99_us": out, "best_fraction": best}))


if __name__ == "__main__":
    main()
