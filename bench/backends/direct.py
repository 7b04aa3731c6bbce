#!/usr/bin/python3
"""The peer of bench/backends/run.sh: the same TorchScript module (examples/models/<model>)
run directly in one process with Debian's libtorch, at every batch size and intra-op thread
count asked for, under torch.inference_mode(), as saved and frozen through
torch.jit.optimize_for_inference (what the pytorch backend's OPTIMIZE_FOR_INFERENCE does). Prints
one JSON object: images/s per configuration and the best one.

Usage: direct.py [--model resnet18] [--batches 1,2,4,8,16] [--threads 1,2] [--seconds 4]
                 [--optimize no,yes]"""
import argparse
import json
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def measure(module, batch, seconds):
    x = torch.rand(batch, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        for _ in range(3):  # warm-up: the profiling executor specialises on the first runs
            module(x)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            module(x)
            n += batch
        return n / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batches", default="1,2,4,8,16")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--optimize", default="no,yes", help="as saved (no), optimized (yes), or both")
    a = p.parse_args()
    path = os.path.join(ROOT, "examples", "models", a.model, "1", "model.pt")
    saved = torch.jit.load(path).eval()
    results = []
    for optimize in a.optimize.split(","):
        if optimize not in ("no", "yes"):
            p.error("--optimize takes no, yes or no,yes; got %r" % optimize)
        module = torch.jit.optimize_for_inference(torch.jit.freeze(saved)) \
            if optimize == "yes" else saved
        for threads in [int(t) for t in a.threads.split(",")]:
            torch.set_num_threads(threads)
            for batch in [int(b) for b in a.batches.split(",")]:
                ips = measure(module, batch, a.seconds)
                results.append({"threads": threads, "batch": batch, "images_per_sec": ips,
                                "optimized": optimize == "yes"})
                print("direct: optimized %s threads %d batch %2d: %.1f images/s" %
                      (optimize, threads, batch, ips), file=sys.stderr, flush=True)
    best = max(results, key=lambda r: r["images_per_sec"])
    print(json.dumps({"model": a.model, "results": results, "best": best}))


if __name__ == "__main__":
    main()
