#!/usr/bin/python3
"""The direct peer of bench/autotune/run.sh: one example TorchScript model
(examples/models/<model>/1/model.pt) run in a plain Python loop over Debian's libtorch, under
torch.inference_mode(), for every batch size, intra-op thread count and form (as saved, or
frozen through torch.jit.optimize_for_inference) asked for. The input shape comes from the
model's config.pbtxt (its first input's dims), so any single-input example model works.

Prints one JSON object: every configuration's images/s and mean batch latency, the best
throughput overall and the best batch-1 latency (what concurrency 1 through a server is
compared with).

Usage: direct_sweep.py --model resnet18 [--batches 1,2,4,8,16] [--threads 1,2]
                       [--forms saved,optimized] [--seconds 3]"""
import argparse
import json
import os
import re
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def input_dims(model):
    """The first input's dims from the model's config.pbtxt (without the batch dimension)."""
    text = open(os.path.join(ROOT, "examples", "models", model, "config.pbtxt")).read()
    m = re.search(r"input\s*\[\s*{[^}]*?dims:\s*\[([^\]]*)\]", text, re.S)
    if not m:
        sys.exit("no input dims in %s's config.pbtxt" % model)
    return [int(d) for d in m.group(1).split(",")]


def measure(module, shape, seconds):
    """Runs `module` on a fixed random batch for about `seconds`; returns (runs, elapsed)."""
    x = torch.rand(*shape, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        for _ in range(3):  # the profiling executor specialises on the first runs
            module(x)
        runs, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            module(x)
            runs += 1
        return runs, time.perf_counter() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--batches", default="1,2,4,8,16")
    p.add_argument("--threads", default="1,%d" % os.cpu_count())
    p.add_argument("--forms", default="saved,optimized")
    p.add_argument("--seconds", type=float, default=3.0)
    a = p.parse_args()
    dims = input_dims(a.model)
    saved = torch.jit.load(os.path.join(ROOT, "examples", "models", a.model, "1",
                                        "model.pt")).eval()
    results = []
    for form in a.forms.split(","):
        if form not in ("saved", "optimized"):
            p.error("--forms takes saved and/or optimized; got %r" % form)
        module = saved if form == "saved" else \
            torch.jit.optimize_for_inference(torch.jit.freeze(saved))
        for threads in [int(t) for t in a.threads.split(",")]:
            torch.set_num_threads(threads)
            for batch in [int(b) for b in a.batches.split(",")]:
                runs, elapsed = measure(module, [batch] + dims, a.seconds)
                r = {"form": form, "threads": threads, "batch": batch,
                     "images_per_sec": runs * batch / elapsed,
                     "batch_latency_ms": 1000.0 * elapsed / runs}
                results.append(r)
                print("direct %s: %s, %d thread(s), batch %d: %.1f images/s, %.2f ms per batch" %
                      (a.model, form, threads, batch, r["images_per_sec"],
                       r["batch_latency_ms"]), file=sys.stderr, flush=True)
    best = max(results, key=lambda r: r["images_per_sec"])
    best_b1 = min((r for r in results if r["batch"] == 1), key=lambda r: r["batch_latency_ms"])
    print(json.dumps({"model": a.model, "results": results, "best": best,
                      "best_batch1": best_b1}))


if __name__ == "__main__":
    main()
