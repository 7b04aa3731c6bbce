#!/usr/bin/python3
"""infer-perf against a real inferd for a few seconds: its numbers are not
asserted (speed is measured in benchmarks), its output formats are."""

import csv
import json
import os
import subprocess
import tempfile
import unittest

from harness import ServerTestCase

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


if __name__ == "__main__":
    unittest.main()
