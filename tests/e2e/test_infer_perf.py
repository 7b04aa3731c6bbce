#!/usr/bin/python3
"""infer-perf against a real inferd for a few seconds: its numbers are not
asserted (speed is measured in benchmarks), its output formats are."""

import csv
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import GrpcServer, ServerTestCase

PERF = os.environ.get("INFER_PERF_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin", "infer-perf")


class InferPerfTest(ServerTestCase):
    def run_perf(self, *args, check=True):
        cmd = [PERF, "-u", "127.0.0.1:%d" % self.server.port, "--measurement-interval", "300",
               "--warmup-ms", "100", "--max-trials", "3"] + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if check:
            self.assertEqual(p.returncode, 0, "%s\n%s%s" % (cmd, p.stdout, p.stderr))
        return p

    def test_json_output_for_a_concurrency_range(self):
        p = self.run_perf("-m", "simple", "--concurrency-range", "1:3:2", "--json")
        d = json.loads(p.stdout)
        self.assertEqual(d["model"], "simple")
        self.assertEqual([r["concurrency"] for r in d["results"]], [1, 3])
        for r in d["results"]:
            for k in ("throughput_infer_per_sec", "latency_avg_us", "latency_p50_us",
                      "latency_p90_us", "latency_p95_us", "latency_p99_us", "server_queue_us",
                      "server_compute_infer_us", "requests", "errors", "stable"):
                self.assertIn(k, r)
            self.assertGreater(r["requests"], 0)
            self.assertEqual(r["errors"], 0)
            self.assertLessEqual(r["latency_p50_us"], r["latency_p99_us"])

    def test_text_and_csv_output_in_rate_mode(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.csv")
            p = self.run_perf("-m", "identity", "--shape", "INPUT0:4", "--request-rate-range",
                              "50:100:50", "--request-distribution", "poisson", "-f", path)
            self.assertIn("Request rate: 50.0/s", p.stdout)
            self.assertIn("Client: throughput", p.stdout)
            self.assertIn("Server: queue", p.stdout)
            rows = list(csv.DictReader(open(path)))
            self.assertEqual(len(rows), 2)
            self.assertIn("p99 latency", rows[0])
            self.assertGreater(float(rows[0]["Inferences/Second"]), 0)

    def test_bad_usage_is_a_clear_error(self):
        p = self.run_perf("--concurrency-range", "1", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("-m MODEL is required", p.stderr)
        p = self.run_perf("-m", "no_such_model", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no_such_model", p.stderr)

    @unittest.skipIf(shutil.which("gnuplot") is None, "gnuplot (gnuplot-nox) is not installed")
    def test_plot_draws_an_svg(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "plot.svg")
            self.run_perf("-m", "simple", "--concurrency-range", "1:2", "--plot", path)
            with open(path) as f:
                svg = f.read()
            self.assertIn("<svg", svg)
            self.assertIn("throughput (infer/s)", svg)

    def test_shared_memory_needs_the_server_to_allow_it(self):
        p = self.run_perf("-m", "simple", "--shared-memory", "system", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--shared-memory system: registering shared memory", p.stderr)
        p = self.run_perf("-m", "simple", "--shared-memory", "posix", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--shared-memory must be none or system", p.stderr)


class InferPerfSharedMemoryTest(ServerTestCase):
    """--shared-memory system against a server that allows client regions."""

    SERVER_ARGS = ("--allow-client-shm=true",)
    SERVER_CLASS = GrpcServer
    run_perf = InferPerfTest.run_perf

    def regions(self):
        return self.client.get("/v2/systemsharedmemory/status").json()

    def test_simple_through_shared_memory(self):
        before = self.client.get("/v2/models/simple/stats").json()
        p = self.run_perf("-m", "simple", "--shared-memory", "system", "--concurrency-range", "2",
                          "--json")
        r = json.loads(p.stdout)["results"][0]
        self.assertGreater(r["requests"], 0)
        self.assertEqual(r["errors"], 0)
        after = self.client.get("/v2/models/simple/stats").json()
        done = lambda d: d["model_stats"][0]["inference_stats"]["success"]["count"]
        self.assertGreaterEqual(done(after) - done(before), r["requests"])
        # The region is gone from the server and from /dev/shm afterwards.
        self.assertEqual(self.regions(), [])
        self.assertFalse([f for f in os.listdir("/dev/shm") if f.startswith("infer-perf-")])

    def test_simple_through_shared_memory_over_grpc(self):
        env = dict(os.environ, INFER_PERF_HTTP_URL="127.0.0.1:%d" % self.server.port)
        for extra in ([], ["--streaming"]):
            cmd = [PERF, "-i", "grpc", "-u", "127.0.0.1:%d" % self.server.grpc_port, "-m", "simple",
                   "--shared-memory", "system", "--measurement-interval", "300", "--warmup-ms",
                   "100", "--max-trials", "2", "--json"] + extra
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual(p.returncode, 0, "%s\n%s%s" % (cmd, p.stdout, p.stderr))
            r = json.loads(p.stdout)["results"][0]
            self.assertGreater(r["requests"], 0)
            self.assertEqual(r["errors"], 0)
            self.assertEqual(self.regions(), [])

    def test_variable_shapes_and_a_given_output_size(self):
        self.run_perf("-m", "identity", "--shape", "INPUT0:4", "--shared-memory", "system",
                      "--concurrency-range", "1")
        self.run_perf("-m", "identity", "--shape", "INPUT0:4", "--shared-memory", "system",
                      "--output-shared-memory-size", "64", "--concurrency-range", "1")
        p = self.run_perf("-m", "identity", "--shape", "INPUT0:4", "--shared-memory", "system",
                          "--output-shared-memory-size", "4", check=False)
        self.assertNotEqual(p.returncode, 0)  # 16 bytes of output do not fit in 4
        self.assertEqual(self.regions(), [])


if __name__ == "__main__":
    unittest.main()
