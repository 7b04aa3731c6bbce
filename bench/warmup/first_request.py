#!/usr/bin/python3
"""First-request latency of a model right after its load, with and without model_warmup, against
its steady state (issue 24: with warmup the first request must be within 2x of steady state).

For each variant ("none": the config without model_warmup; "warmup": the config's own samples,
or the shipped example's) and each trial, a fresh inferd (explicit mode) loads the model through
the load API (timed: warmup makes the load longer), then one request is sent and timed (the
first), then STEADY more, whose median is the steady state. Batch 1, FP32 zeros, binary HTTP
body, one client. Every trial starts a new process, because what warmup hides (TorchScript's
profiling executor specialising on the first runs, allocator pools, lazy library loading) is
per process.

  bench/warmup/first_request.py [--model resnet18] [--trials 3] [--steady 20]

Uses examples/models/<model> (model.pt from `make models`); needs build/bin/inferd and the
model's backend plugin. Prints one line per trial and a JSON summary (medians over trials).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import harness  # noqa: E402

WARMUP_RE = re.compile(r"(?ms)^model_warmup\s*\[.*?^\]\s*$")


def config_variants(text):
    """(without warmup, with warmup): the example's config stripped of model_warmup, and the
    example's own."""
    bare = WARMUP_RE.sub("", text).rstrip() + "\n"
    if WARMUP_RE.search(text):
        return bare, text
    raise SystemExit("the model's config has no model_warmup block to compare against")


def request_body(dims):
    n = 1
    for d in dims:
        n *= d
    header = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1] + dims,
                                     "parameters": {"binary_data_size": 4 * n}}],
                         "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]})
    return header.encode(), struct.pack("<%df" % n, *([0.0] * n))


def trial(model, config, steady):
    tmp = tempfile.mkdtemp(prefix="inferd-warmup-bench-")
    server = None
    try:
        src = os.path.join(ROOT, "examples", "models", model)
        dst = os.path.join(tmp, "models", model)
        shutil.copytree(src, dst, symlinks=False)
        with open(os.path.join(dst, "config.pbtxt"), "w") as f:
            f.write(config)
        server = harness.Server([os.path.join(tmp, "models")],
                                ["--model-control-mode=explicit"]).start()
        client = server.client(timeout=300)
        t0 = time.perf_counter()
        r = client.post("/v2/repository/models/%s/load" % model)
        load_s = time.perf_counter() - t0
        if r.status != 200:
            raise SystemExit("load failed: %s\n%s" % (r, server.log_tail()))
        header, blob = request_body([3, 224, 224])
        times = []
        for _ in range(1 + steady):
            t0 = time.perf_counter()
            r = client.post_binary(harness.infer_path(model), json.loads(header), [blob])
            times.append(time.perf_counter() - t0)
            if r.status != 200:
                raise SystemExit("infer failed: %s" % r)
        return load_s, times[0], statistics.median(times[1:])
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet18")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--steady", type=int, default=20)
    a = p.parse_args()
    with open(os.path.join(ROOT, "examples", "models", a.model, "config.pbtxt")) as f:
        bare, warm = config_variants(f.read())
    summary = {"model": a.model, "trials": a.trials, "steady_requests": a.steady}
    for name, config in (("none", bare), ("warmup", warm)):
        loads, firsts, steadies, ratios = [], [], [], []
        for i in range(a.trials):
            load_s, first_s, steady_s = trial(a.model, config, a.steady)
            loads.append(load_s)
            firsts.append(first_s)
            steadies.append(steady_s)
            ratios.append(first_s / steady_s)
            print("%-6s trial %d: load %.3f s, first request %.1f ms, steady median %.1f ms "
                  "(ratio %.2f)" % (name, i + 1, load_s, first_s * 1e3, steady_s * 1e3,
                                    first_s / steady_s), file=sys.stderr, flush=True)
        first, steady = statistics.median(firsts), statistics.median(steadies)
        summary[name] = {"load_s": round(statistics.median(loads), 3),
                         "first_ms": round(first * 1e3, 1), "steady_ms": round(steady * 1e3, 1),
                         "first_over_steady": round(first / steady, 2),
                         "worst_trial_ratio": round(max(ratios), 2)}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
