#!/usr/bin/python3
"""bench/gpu/ without a GPU: bundle.sh packs inferd for a machine without our Debian libraries
(under the device tool's 64 MiB) and the bundled inferd serves `simple` over HTTP from the
bundle's own libraries; run.sh --dry-run goes through the whole benchmark on the CPU (tiny
models, short windows) and writes its results. The GPU run itself is docs/gpu.md's device
command."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import INFERD_BIN, REPO_ROOT, Client, Server

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(INFERD_BIN)))
BUNDLE_SH = os.path.join(REPO_ROOT, "bench", "gpu", "bundle.sh")
RUN_SH = os.path.join(REPO_ROOT, "bench", "gpu", "run.sh")
LIMIT = 64 * 1024 * 1024


def tree_size(root):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files
               if not os.path.islink(os.path.join(d, f)))


# The bundle is for release builds: sanitizer builds are several times larger than the
# device tool's 64 MiB, and bundle.sh refuses them.
SANITIZED = os.environ.get("INFERD_SANITIZED") == "1"


@unittest.skipIf(SANITIZED, "sanitizer build: bundles are for release builds")
class GpuBundleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="inferd-bundle-test.")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_bundle_fits_and_serves_from_its_own_libraries(self):
        dest = os.path.join(self.tmp, "bundle")
        env = dict(os.environ, BUILD=BUILD_DIR)
        r = subprocess.run([BUNDLE_SH, "--no-build", dest], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertLess(tree_size(dest), LIMIT)
        libs = os.listdir(os.path.join(dest, "lib"))
        for needed in ("libgrpc++.so", "libprotobuf.so"):
            self.assertTrue(any(lib.startswith(needed) for lib in libs), libs)
        for system in ("libc.so.6", "libstdc++.so.6", "libm.so.6"):
            self.assertNotIn(system, libs)
        self.assertFalse(os.path.exists(os.path.join(dest, "backends", "libinferd_pytorch.so")))
        for src in ("src/backends/pytorch/pytorch_backend.cc", "src/include/inferd/backend.h",
                    "src/bench/gpu/backend/CMakeLists.txt", "MANIFEST"):
            self.assertTrue(os.path.isfile(os.path.join(dest, src)), src)

        # Every library the server needs beyond the C/C++ runtimes resolves inside the bundle.
        libdir = os.path.join(dest, "lib")
        ldd = subprocess.run(["ldd", os.path.join(dest, "bin", "inferd")], capture_output=True,
                             text=True, env=dict(os.environ, LD_LIBRARY_PATH=libdir)).stdout
        for line in ldd.splitlines():
            if "grpc" in line or "protobuf" in line or "absl" in line:
                self.assertIn(libdir, line, ldd)

        os.environ["LD_LIBRARY_PATH"] = libdir
        try:
            server = Server(os.path.join(REPO_ROOT, "examples", "models"),
                            ["--model-control-mode=explicit", "--load-model=simple",
                             "--backend-directory", os.path.join(dest, "backends")],
                            binary=os.path.join(dest, "bin", "inferd")).start()
        finally:
            del os.environ["LD_LIBRARY_PATH"]
        try:
            a, b = list(range(16)), [1] * 16
            req = {"inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "INT32",
                               "data": a},
                              {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32",
                               "data": b}]}
            resp = Client(server.port).infer("simple", req)
            self.assertEqual(resp.status, 200, resp.body)
            outputs = {o["name"]: o["data"] for o in resp.json()["outputs"]}
            self.assertEqual(outputs["OUTPUT0"], [x + 1 for x in a])
            self.assertEqual(outputs["OUTPUT1"], [x - 1 for x in a])
        finally:
            server.stop()


class GpuRunDryTest(unittest.TestCase):
    @unittest.skipUnless(shutil.which("shellcheck"), "shellcheck is not installed")
    def test_scripts_pass_shellcheck(self):
        r = subprocess.run(["shellcheck", "-S", "warning", BUNDLE_SH, RUN_SH], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    @unittest.skipIf(SANITIZED, "sanitizer build: bundles are for release builds")
    def test_run_sh_dry_run_measures_and_summarises(self):
        out = tempfile.mkdtemp(prefix="inferd-gpu-dry.")
        try:
            env = dict(os.environ, OUT=out, BUILD=BUILD_DIR, BUDGET_S="200")
            r = subprocess.run([RUN_SH, "--dry-run"], env=env, capture_output=True, text=True,
                               timeout=280)
            log = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, log[-4000:])
            with open(os.path.join(out, "results.json")) as f:
                res = json.load(f)
            self.assertTrue(res["dry_run"])
            for tag in ("fp32_http_c1", "fp32_grpc_c1", "fp32_alone_resnet18",
                        "fp32_both_resnet50", "fp32_both_resnet18"):
                self.assertIn(tag, res["perf"], log[-4000:])
                self.assertEqual(res["perf"][tag]["errors"], 0, tag)
                self.assertGreater(res["perf"][tag]["images_per_sec"], 0, tag)
            fp32 = res["precisions"]["fp32"]
            self.assertGreater(fp32["direct_best"], 0)
            self.assertAlmostEqual(fp32["ratio_inferd_to_direct"],
                                   fp32["best_inferd"] / fp32["direct_best"])
            self.assertIn("sum", res["interleave"])
            lb = res["latency_bound"]
            self.assertEqual(set(lb["p99_ms"]), {"0.5", "0.9"}, lb)
            self.assertAlmostEqual(lb["bound_ms"], 3 * lb["single_ms"])
            self.assertIn(lb["best_fraction"], (0.0, 0.5, 0.9))
            self.assertTrue(all(v > 0 for v in lb["achieved"].values()), lb)
            self.assertEqual(res["gpu_metrics"], [])  # /metrics scraped; no GPU families here
            with open(os.path.join(out, "summary.md")) as f:
                summary = f.read()
            self.assertIn("ratio", summary)
            self.assertIn("latency-bounded", summary)
            self.assertIn("bench/gpu/run.sh", summary)
            # The device tool brings back at most 8 files from $OUT.
            self.assertLessEqual(len(os.listdir(out)), 8, os.listdir(out))
        finally:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
