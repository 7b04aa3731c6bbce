#!/usr/bin/env python3
"""Turns run.sh's raw results (WORK/perf_*.json, direct_*.json, cuda_shm_*.json) into
OUT/results.json and OUT/summary.md: images/s per protocol and concurrency, the ratio of the best
through inferd to direct torch at its best batch size (goal >= 0.95), the interleaving sum
(goal >= 1.0), and the latency-bounded fraction (goal >= 0.9). summary.md is the section for docs/performance.md (bench/lib/update_perf_doc.py
gpu < summary.md).

Usage: summarize.py WORK OUT DRY(0|1)"""

import glob
import json
import os
import re
import sys

work, out, dry = sys.argv[1], sys.argv[2], sys.argv[3] == "1"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


perf = {}
for p in sorted(glob.glob(os.path.join(work, "perf_*.json"))):
    d = load(p)
    tag = os.path.basename(p)[len("perf_"):-len(".json")]
    if d and d.get("results"):
        r = d["results"][0]
        perf[tag] = {"images_per_sec": r["throughput_infer_per_sec"] * d.get("batch_size", 1),
                     "p50_ms": r["latency_p50_us"] / 1000,
                     "p99_ms": r["latency_p99_us"] / 1000, "server_avg_batch": r["server_avg_batch"],
                     "errors": r["errors"], "stable": r["stable"]}
direct = {k: load(os.path.join(work, "direct_%s.json" % k)) for k in ("fp32", "fp16")}
shm = load(os.path.join(work, "cuda_shm_fp32.json"))

results = {"dry_run": dry, "perf": perf, "direct": direct, "cuda_shm": shm, "precisions": {}}
for prec in ("fp32", "fp16"):
    sweep = {t: v for t, v in perf.items()
             if re.match(r"%s_(http|grpc)_c\d+$" % prec, t) and v["errors"] == 0}
    if not sweep:
        continue
    best_tag = max(sweep, key=lambda t: sweep[t]["images_per_sec"])
    entry = {"best_inferd": sweep[best_tag]["images_per_sec"], "best_inferd_run": best_tag}
    if prec == "fp32" and shm and shm.get("results"):
        s = max(shm["results"], key=lambda r: r["images_per_sec"])
        entry["best_cuda_shm"] = s["images_per_sec"]
    if direct.get(prec):
        entry["direct_best"] = direct[prec]["best"]["images_per_sec"]
        entry["direct_best_batch"] = direct[prec]["best"]["batch"]
        entry["ratio_inferd_to_direct"] = entry["best_inferd"] / entry["direct_best"]
    results["precisions"][prec] = entry

# Interleaving: each model's throughput with the other running, over alone, summed.
both50, both18 = perf.get("fp32_both_resnet50"), perf.get("fp32_both_resnet18")
alone18 = perf.get("fp32_alone_resnet18")
c = None
m = [t for t in perf if t.startswith("fp32_http_c")]
levels = sorted(int(t.rsplit("c", 1)[1]) for t in m)
if both50 and both18 and alone18 and levels:
    # resnet50 alone at the interleaving concurrency (the highest level <= 16 in the sweep)
    c = max([lv for lv in levels if lv <= 16] or levels[:1])
    alone50 = perf["fp32_http_c%d" % c]
    f50 = both50["images_per_sec"] / alone50["images_per_sec"]
    f18 = both18["images_per_sec"] / alone18["images_per_sec"]
    results["interleave"] = {"concurrency_each": c, "resnet50_fraction": f50,
                             "resnet18_fraction": f18, "sum": f50 + f18}

# Latency-bounded load: the highest fraction of the best HTTP throughput whose Poisson arrivals
# keep the p99 under 3x the single-request latency (p50 at concurrency 1).
single = perf.get("fp32_http_c1")
http = [v["images_per_sec"] for t, v in perf.items() if re.match(r"fp32_http_c\d+$", t)]
rates = {float(t.rsplit("_", 1)[1]): v for t, v in perf.items() if t.startswith("fp32_rate_")}
if single and http and rates:
    bound = 3 * single["p50_ms"]
    under = {f: v["p99_ms"] < bound and v["errors"] == 0 for f, v in rates.items()}
    results["latency_bound"] = {
        "single_ms": single["p50_ms"], "bound_ms": bound, "offline": max(http),
        "p99_ms": {str(f): v["p99_ms"] for f, v in sorted(rates.items())},
        "achieved": {str(f): v["images_per_sec"] for f, v in sorted(rates.items())},
        "best_fraction": max([f for f, ok in under.items() if ok] or [0.0])}

# GPU metric families scraped from inferd's /metrics (run.sh writes OUT/metrics.txt).
try:
    with open(os.path.join(out, "metrics.txt")) as f:
        results["gpu_metrics"] = sorted({line.split("{")[0] for line in f
                                         if line.startswith(("nv_gpu_", "nv_energy_"))})
except OSError:
    results["gpu_metrics"] = None

with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(results, f, indent=1)

device = (direct.get("fp32") or {}).get("device", "?")
lines = ["## GPU: resnet50 through inferd against direct torch%s" % (" (DRY RUN, CPU)" if dry else ""),
         "", "Device: %s; torch %s. Reproduce: `bench/gpu/bundle.sh` here, then on the GPU machine "
         "`bench/gpu/run.sh` (device tool, carry `.gpu-bundle`)." %
         (device, (direct.get("fp32") or {}).get("torch", "?")), "",
         "| run | images/s | p99 ms | server avg batch |", "| --- | ---: | ---: | ---: |"]
for t, v in perf.items():
    lines.append("| %s | %.1f | %.1f | %.1f |" % (t, v["images_per_sec"], v["p99_ms"],
                                                 v["server_avg_batch"]))
if shm:
    for r in shm.get("results", []):
        lines.append("| fp32_cuda_shm_c%d (Python client) | %.1f | | |" %
                     (r["concurrency"], r["images_per_sec"]))
lines.append("")
for prec, e in results["precisions"].items():
    if "ratio_inferd_to_direct" in e:
        lines.append("- %s: best through inferd %.1f images/s (%s); direct torch %.1f images/s at "
                     "batch %d; **ratio %.3f** (goal >= 0.95)" %
                     (prec, e["best_inferd"], e["best_inferd_run"], e["direct_best"],
                      e["direct_best_batch"], e["ratio_inferd_to_direct"]))
if "interleave" in results:
    i = results["interleave"]
    lines.append("- interleaved (concurrency %d each): resnet50 %.2f of alone + resnet18 %.2f of "
                 "alone = **%.2f** (goal >= 1.0)" % (i["concurrency_each"], i["resnet50_fraction"],
                                                    i["resnet18_fraction"], i["sum"]))
if "latency_bound" in results:
    lb = results["latency_bound"]
    lines.append("- latency-bounded (Poisson arrivals at fractions of %.1f/s, the best HTTP "
                 "throughput; bound 3 x %.1f ms single latency = %.1f ms): p99 %s; highest "
                 "fraction under the bound **%.2f** (goal >= 0.9)" %
                 (lb["offline"], lb["single_ms"], lb["bound_ms"],
                  ", ".join("%.1f ms at %s%s" % (p, f, " (under)" if p < lb["bound_ms"] else "")
                            for f, p in lb["p99_ms"].items()), lb["best_fraction"]))
if results["gpu_metrics"] is not None:
    lines.append("- GPU metric families in /metrics: %s" %
                 (", ".join(results["gpu_metrics"]) or "none"))
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
