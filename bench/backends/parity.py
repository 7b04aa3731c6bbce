#!/usr/bin/python3
"""Per-execution parity: one batch-1 resnet18 execution inside inferd against the same
`model.pt` run directly in this process with the same libtorch (what bench/backends/direct.py
does: torch.inference_mode(), 2 threads, as saved unless --optimize yes). The two sides run in
alternating rounds of --seconds each, so that the load of a shared machine falls on both alike,
and every round reports the direct milliseconds per call, inferd's compute time per execution
(statistics: compute_infer ns / count, the backend's execute alone) and the ratio.

With --perf DIR each phase is also recorded with `perf record -g` and `perf stat` (attached to
this process for the direct phase, to inferd for its phase); the files are left in DIR.

Usage: parity.py [--rounds 3] [--seconds 5] [--threads 2] [--optimize no|yes]
                 [--server-env K=V ...] [--config-param K=V ...] [--perf DIR]
                 [--layout fixed|auto]

inferd inherits this process's environment plus --server-env; the direct side runs with this
process's environment (set OMP_WAIT_POLICY etc. on the command line to compare policies)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import torch  # noqa: E402
from harness import Client, Server  # noqa: E402

CONFIG = """name: "resnet18"
platform: "pytorch_libtorch"
max_batch_size: 32
input [ { name: "input" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] } ]
dynamic_batching { max_queue_delay_microseconds: 2000 }
%s
model_warmup [ { name: "w" batch_size: 1 count: 3 inputs { key: "input"
  value { data_type: TYPE_FP32 dims: [ 3, 224, 224 ] zero_data: true } } } ]
"""


def param(k, v):
    return 'parameters { key: "%s" value { string_value: "%s" } }' % (k, v)


class Perf:
    """perf record -g and perf stat attached to `pid` for one phase."""

    def __init__(self, directory, name, pid):
        self.procs = []
        if not directory:
            return
        base = os.path.join(directory, name)
        self.procs.append(subprocess.Popen(
            ["perf", "record", "-q", "-g", "-F", "499", "-p", str(pid), "-o", base + ".data"],
            stderr=subprocess.DEVNULL))
        self.procs.append(subprocess.Popen(
            ["perf", "stat", "-p", str(pid), "-o", base + ".stat", "-e",
             "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions"],
            stderr=subprocess.DEVNULL))
        time.sleep(0.3)

    def stop(self):
        for p in self.procs:
            p.send_signal(2)
        for p in self.procs:
            p.wait()


def direct_phase(module, x, seconds):
    n, start = 0, time.perf_counter()
    with torch.inference_mode():
        while time.perf_counter() - start < seconds:
            module(x)
            n += 1
    return (time.perf_counter() - start) * 1000.0 / n, n


def stats(client):
    r = client.get("/v2/models/resnet18/stats")
    if r.status != 200:
        raise SystemExit("inferd statistics: %s" % r)
    s = r.json()["model_stats"][0]["inference_stats"]["compute_infer"]
    return s["count"], s["ns"]


def inferd_phase(client, blob, seconds):
    req = {"inputs": [{"name": "input", "shape": [1, 3, 224, 224], "datatype": "FP32",
                       "parameters": {"binary_data_size": len(blob)}}],
           "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]}
    c0, ns0 = stats(client)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        r = client.infer("resnet18", req, blobs=[blob])
        if r.status != 200:
            raise SystemExit("inferd answered %s" % r)
        n += 1
    wall = (time.perf_counter() - start) * 1000.0 / n
    c1, ns1 = stats(client)
    return (ns1 - ns0) / 1e6 / max(1, c1 - c0), wall, n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--optimize", default="no", choices=("no", "yes"),
                   help="direct side: as saved (no) or frozen + optimize_for_inference")
    p.add_argument("--server-env", action="append", default=[], help="K=V for inferd")
    p.add_argument("--config-param", action="append", default=[],
                   help="K=V config parameter of inferd's resnet18")
    p.add_argument("--perf", help="directory for perf record/stat files per phase")
    p.add_argument("--server-log", help="write inferd's log to this file")
    p.add_argument("--layout", default="fixed", choices=("fixed", "auto"),
                   help="inferd: one instance of --threads threads (fixed), or no instance_group"
                   " and no thread count: the server's automatic layout (docs/instance_layout.md)")
    a = p.parse_args()
    path = os.path.join(ROOT, "examples", "models", "resnet18", "1", "model.pt")
    saved = torch.jit.load(path).eval()
    module = torch.jit.optimize_for_inference(torch.jit.freeze(saved)) \
        if a.optimize == "yes" else saved
    torch.set_num_threads(a.threads)
    x = torch.rand(1, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    blob = x.numpy().tobytes()
    with torch.inference_mode():
        for _ in range(3):  # the profiling executor specialises on the first runs
            module(x)

    repo = tempfile.mkdtemp(prefix="parity-")
    os.makedirs(os.path.join(repo, "resnet18", "1"))
    os.symlink(path, os.path.join(repo, "resnet18", "1", "model.pt"))
    params = [tuple(kv.split("=", 1)) for kv in a.config_param]
    group = ""
    if a.layout == "fixed":
        params.append(("INTRA_OP_THREAD_COUNT", str(a.threads)))
        group = "instance_group [ { kind: KIND_CPU count: 1 } ]\n"
    with open(os.path.join(repo, "resnet18", "config.pbtxt"), "w") as f:
        f.write(CONFIG % (group + "\n".join(param(k, v) for k, v in params)))
    if a.perf:
        os.makedirs(a.perf, exist_ok=True)
    env = dict(kv.split("=", 1) for kv in a.server_env)
    server = Server(repo, env=env, extra_args=["--repository-follow-external-symlinks=true"],
                    log_path=a.server_log)
    server.start()
    rows = []
    try:
        client = Client(server.port, persistent=True)
        deadline = time.monotonic() + 120
        while client.get("/v2/models/resnet18/ready").status != 200:
            if time.monotonic() > deadline:
                raise SystemExit("resnet18 did not become ready:\n" + server.log_tail())
            time.sleep(0.2)
        inferd_phase(client, blob, 1.0)  # connection and first requests
        for r in range(a.rounds):
            perf = Perf(a.perf, "direct_%d" % r, os.getpid())
            d_ms, d_n = direct_phase(module, x, a.seconds)
            perf.stop()
            perf = Perf(a.perf, "inferd_%d" % r, server.proc.pid)
            s_ms, w_ms, s_n = inferd_phase(client, blob, a.seconds)
            perf.stop()
            rows.append({"direct_ms": d_ms, "inferd_compute_ms": s_ms, "inferd_wall_ms": w_ms,
                         "ratio": d_ms / s_ms, "direct_calls": d_n, "inferd_calls": s_n,
                         "load": open("/proc/loadavg").read().split()[0]})
            print("round %d: direct %.2f ms/call (%d), inferd compute %.2f ms/execution "
                  "(client %.2f ms, %d), direct/inferd %.3f, load %s" %
                  (r, d_ms, d_n, s_ms, w_ms, s_n, d_ms / s_ms, rows[-1]["load"]),
                  file=sys.stderr, flush=True)
        client.close()
    finally:
        server.stop()
        shutil.rmtree(repo, ignore_errors=True)
    med = statistics.median(r["ratio"] for r in rows)
    print(json.dumps({"rounds": rows, "median_ratio": med,
                      "direct_env": {k: os.environ.get(k) for k in
                                     ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")},
                      "server_env": env, "config_params": dict(params)}))


if __name__ == "__main__":
    main()
