#!/usr/bin/python3
"""infer-perf's measurement and report flags against a real inferd: --collect-metrics
(with --metrics-url, --metrics-interval, --verbose-csv), count windows, generated
strings, -l/--latency-threshold, --binary-search, and perf_analyzer's flags that
infer-perf refuses by name."""

import csv
import os
import struct
import tempfile
import unittest

from perf_util import PerfTestCase, Relay


class InferPerfMetricsTest(PerfTestCase):
    def metrics_url(self, scheme="http://"):
        return "%s127.0.0.1:%d/metrics" % (scheme, self.server.metrics_port)

    def test_json_report_has_the_server_metrics_of_the_windows(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                p = self.perf("-m", "simple", "--collect-metrics", "--metrics-url",
                              self.metrics_url(), "--metrics-interval", "100", "--json",
                              protocol=protocol)
                r = p.report["results"][0]
                m = r["server_metrics"]
                # Scrapes at each window's edges and every 100 ms in between.
                self.assertGreaterEqual(m["scrapes"], 4)
                self.assertEqual(m["gpus"], [])  # a CPU-only server has no GPU families
                self.assertIn("cpu_utilization_avg", m)
                self.assertGreater(m["cpu_memory_total_bytes"], 0)
                # The model's counters moved by about what the client measured.
                self.assertGreater(m["requests"], r["requests"] * 0.5)
                self.assertLess(m["requests"], r["requests"] * 2 + 50)
                # Batch-1 requests: one inference each. A scrape at a window's edge can
                # fall between the two counters' increments of the request in flight
                # (infer-perf keeps one outstanding), so they may differ by one.
                self.assertLessEqual(abs(m["inferences"] - m["requests"]), 1, m)
                self.assertGreater(m["request_us_per_request"], 0)

    def test_text_report_and_verbose_csv(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.csv")
            # Without http://, as perf_analyzer's default is written.
            p = self.perf("-m", "simple", "--collect-metrics", "--metrics-url",
                          self.metrics_url(""), "-f", path, "--verbose-csv")
            self.assertIn("Server metrics (", p.stdout)
            self.assertIn("no GPU metrics (the server reports none: CPU only)", p.stdout)
            with open(path) as f:
                row = list(csv.DictReader(f))[0]
            for column in ("Avg GPU Utilization", "Avg GPU Power Usage", "Max GPU Memory Usage",
                           "Total GPU Memory", "Avg CPU Utilization", "Server Requests"):
                self.assertIn(column, row)
            self.assertEqual(row["Avg GPU Utilization"], "")
            self.assertGreater(float(row["Server Requests"]), 0)
            # Without --verbose-csv the CSV keeps perf_analyzer's plain columns.
            self.perf("-m", "simple", "--collect-metrics", "--metrics-url", self.metrics_url(),
                      "-f", path)
            with open(path) as f:
                self.assertNotIn("Server Requests", f.readline())

    def test_metrics_errors_are_clear(self):
        p = self.perf("-m", "simple", "--collect-metrics", "--metrics-url",
                      "127.0.0.1:1/metrics", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--collect-metrics: cannot read http://127.0.0.1:1/metrics", p.stderr)
        p = self.perf("-m", "simple", "--verbose-csv", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--verbose-csv needs -f FILE", p.stderr)


# Sweeps over step100 measure each level in steady state: a warm-up longer than the
# initial burst of queued requests, then one window of at least 1 s.
STEADY = ("--warmup-ms", "900", "--measurement-mode", "count_windows",
          "--measurement-request-count", "5", "--max-trials", "1")


class InferPerfWindowsAndSweepTest(PerfTestCase):
    def test_count_windows_wait_for_the_request_count(self):
        # 100 ms a request: a 300 ms time window holds about 3, a count window
        # at least 12 (and lasts at least 1 s).
        p = self.perf("-m", "step100", "--measurement-mode", "count_windows",
                      "--measurement-request-count", "12", "--max-trials", "1", "--json")
        r = p.report["results"][0]
        self.assertGreaterEqual(r["requests"], 12)
        self.assertLessEqual(r["throughput_infer_per_sec"], 12)
        p = self.perf("-m", "step100", "--max-trials", "1", "--json")
        self.assertLess(p.report["results"][0]["requests"], 6)
        p = self.perf("-m", "simple", "--measurement-mode", "windows", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--measurement-mode must be time_windows or count_windows", p.stderr)

    def test_latency_threshold_stops_the_sweep(self):
        # Latency is about concurrency x 100 ms: 2 is past 150 ms, so 3 and 4 never run.
        p = self.perf("-m", "step100", "--concurrency-range", "1:4", "-l", "150", "--json",
                      *STEADY)
        self.assertEqual([r["concurrency"] for r in p.report["results"]], [1, 2])
        # An end of 0 runs until the threshold; it needs one.
        p = self.perf("-m", "step100", "--concurrency-range", "1:0", "--latency-threshold", "150",
                      "--json", *STEADY)
        self.assertEqual([r["concurrency"] for r in p.report["results"]], [1, 2])
        p = self.perf("-m", "simple", "--concurrency-range", "1:0", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("a range with end 0 needs -l/--latency-threshold", p.stderr)

    def test_binary_search_halves_the_range(self):
        # 1 is within 250 ms, 8 is not, then the middle: 4 (not within).
        p = self.perf("-m", "step100", "--concurrency-range", "1:8", "--binary-search", "-l",
                      "250", "--json", *STEADY)
        levels = [r["concurrency"] for r in p.report["results"]]
        self.assertEqual(levels[:3], [1, 8, 4])
        self.assertLessEqual(len(levels), 5)
        self.assertEqual(len(set(levels)), len(levels))
        p = self.perf("-m", "simple", "--concurrency-range", "1:8", "--binary-search", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--binary-search needs a range with an explicit start and end, and -l",
                      p.stderr)


class InferPerfStringsAndFlagsTest(PerfTestCase):
    def sent_through_relay(self, *args, protocol="http"):
        port = self.server.grpc_port if protocol == "grpc" else self.server.port
        relay = Relay(port)
        try:
            self.perf("-m", "identity_bytes", "--shape", "INPUT0:2", *args, protocol=protocol,
                      port=relay.port)
        finally:
            relay.close()
        return bytes(relay.data)

    def test_string_data_is_sent_in_every_element(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                data = self.sent_through_relay("--string-data", "hello-perf", protocol=protocol)
                element = struct.pack("<I", 10) + b"hello-perf"
                self.assertIn(element * 2, data)

    def test_string_length_sets_the_random_strings(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                data = self.sent_through_relay("--string-length", "37", protocol=protocol)
                self.assertIn(struct.pack("<I", 37), data)
                self.assertNotIn(struct.pack("<I", 128), data)  # the default length
                data = self.sent_through_relay(protocol=protocol)
                self.assertIn(struct.pack("<I", 128), data)

    def test_perf_analyzer_flags_not_implemented_are_refused_by_name(self):
        for flag, why in (("--request-count", "use --measurement-mode count_windows"),
                          ("--service-kind", "KServe v2 servers only"),
                          ("--periodic-concurrency-range", "no periodic concurrency mode"),
                          ("--input-tensor-format", "always sent as binary tensors"),
                          ("--trace-level", "inferd --trace-config"),
                          ("-z", "deprecated in perf_analyzer")):
            with self.subTest(flag=flag):
                p = self.perf("-m", "simple", flag, "1", check=False)
                self.assertEqual(p.returncode, 2)
                self.assertIn("infer-perf: %s is not supported (" % flag, p.stderr)
                self.assertIn(why, p.stderr)
        p = self.perf("-m", "simple", "--no-such-flag", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown flag '--no-such-flag'", p.stderr)
        p = self.perf("-m", "simple", "-a", "--sync", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("-a/--async and --sync exclude each other", p.stderr)


if __name__ == "__main__":
    unittest.main()
