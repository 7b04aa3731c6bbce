#!/usr/bin/python3
"""infer-perf --search against a real inferd: the concurrency sweep, the config candidates
loaded through the load API's config override (explicit mode) and the repository config
loaded again afterwards, the Pareto front and the winner within -l, and the flag checks.

The model is the `delay` backend at 20 ms an execution whatever the batch: without dynamic
batching one instance serves 50 requests/s at any concurrency (latency grows with it), with
dynamic batching concurrency 4 is served in batches at about the same latency (several times
the throughput). The margins are wide, so the assertions hold on a loaded machine."""

import json
import signal
import subprocess
import unittest

from harness import model_config, write_model
from perf_util import PERF, PerfTestCase

STEP20 = model_config(
    "step20", "delay", [("INPUT0", "TYPE_INT32", (1,))], [("OUTPUT0", "TYPE_INT32", (1,))], 8,
    'parameters { key: "execute_delay_ms" value { string_value: "20" } }\n'
    'instance_group [ { kind: KIND_CPU count: 1 } ]')

# Short levels: a warm-up, then at most three 400 ms windows.
SHORT = ("--measurement-interval", "400", "--warmup-ms", "300", "--max-trials", "3")


class SearchTestCase(PerfTestCase):
    @classmethod
    def build_repository(cls, root):
        repo = root + "/models"
        write_model(repo, "step20", STEP20)
        return [repo]

    def search(self, *args, check=True):
        return self.perf("-m", "step20", *(SHORT + args), short=False, check=check)

    def config(self):
        r = self.client.get("/v2/models/step20/config")
        self.assertEqual(r.status, 200, r)
        return r.json()


class ExplicitSearchTest(SearchTestCase):
    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=step20")

    def test_config_search_finds_dynamic_batching_and_restores_the_model(self):
        p = self.search("--search-dynamic-batching", "on,off", "--concurrency-range", "1:4:3",
                        "-l", "1000", "--json")
        r = p.report
        self.assertEqual(r["latency"], "p99")
        configs = r["configs"]
        # The model's own config first (measured as loaded), then the one candidate that differs.
        self.assertEqual([(c["original"], c["max_batch_size"], c["dynamic_batching"],
                           c["instance_count"]) for c in configs],
                         [(True, 8, False, 1), (False, 8, True, 1)], configs)
        for c in configs:
            self.assertNotIn("error", c)
            self.assertEqual([level["concurrency"] for level in c["results"]], [1, 4], c)
        off4, on4 = configs[0]["results"][1], configs[1]["results"][1]
        self.assertGreater(on4["server_avg_batch"], 1.5, "dynamic batching batched")
        self.assertLess(off4["server_avg_batch"], 1.01)
        self.assertGreater(on4["throughput_infer_per_sec"], 1.5 * off4["throughput_infer_per_sec"])
        # The front: the batched level at concurrency 4 is on it, the unbatched one is beaten.
        front = [(f["config"], f["concurrency"]) for f in r["front"]]
        self.assertIn((1, 4), front)
        self.assertNotIn((0, 4), front)
        speeds = [f["throughput_infer_per_sec"] for f in r["front"]]
        self.assertEqual(speeds, sorted(speeds), "the front is by throughput")
        w = r["winner"]
        self.assertEqual((w["config"], w["concurrency"]), (1, 4), r)
        self.assertLessEqual(w["latency_us"], 1000000)
        self.assertIn("dynamic_batching", w["config_pbtxt"])
        self.assertIn("max_batch_size: 8\n", w["config_pbtxt"])
        self.assertIn("# instance_group: as the model has it (1 instance)", w["config_pbtxt"])
        # The repository config serves again.
        self.assertTrue(r["restored"])
        c = self.config()
        self.assertNotIn("dynamic_batching", c)
        self.assertEqual(c["max_batch_size"], 8)

    def test_text_report_prints_the_front_and_the_winner_config(self):
        p = self.search("--search-instance-counts", "4", "--concurrency-range", "4", "-l", "500")
        out = p.stdout
        self.assertIn("config #0: max_batch_size 8, dynamic batching off, 1 instance (the model's)",
                      out)
        self.assertIn("config #1: max_batch_size 8, dynamic batching off, 4 instances", out)
        self.assertIn("Pareto front (throughput against p99 latency):", out)
        # Four instances serve concurrency 4 at four times the throughput: they win.
        self.assertIn("Winner within p99 <= 500.00 ms: config #1", out)
        self.assertIn("config.pbtxt fields:\nmax_batch_size: 8\ninstance_group [\n", out)
        self.assertIn("The model's repository config serves again.", out)
        self.assertEqual(self.config()["instance_group"][0]["count"], 1)

    def test_grpc_measures_over_grpc_and_loads_over_http(self):
        p = self.perf("-m", "step20", *SHORT, "--search-instance-counts", "2",
                      "--concurrency-range", "2", "--json", protocol="grpc", short=False)
        configs = p.report["configs"]
        self.assertEqual([c["instance_count"] for c in configs], [1, 2])
        self.assertTrue(all(c["results"][0]["requests"] > 0 for c in configs), configs)
        self.assertEqual(p.report["protocol"], "grpc")
        self.assertTrue(p.report["restored"])
        self.assertEqual(self.config()["instance_group"][0]["count"], 1)

    def test_ctrl_c_restores_the_model_and_reports_what_was_measured(self):
        cmd = [PERF, "-u", "127.0.0.1:%d" % self.server.port, "-m", "step20", *SHORT,
               "--search-instance-counts", "2,3,4", "--concurrency-range", "1:2", "--json"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            seen = []
            for line in p.stderr:  # each config's line comes before its levels
                seen.append(line)
                if line.startswith("config #1:"):
                    break
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 130, "".join(seen) + err)
        self.assertIn("interrupted: loading the model's repository config again", err)
        r = json.loads(out)
        self.assertTrue(r["restored"], r)
        self.assertLess(len(r["configs"]), 4, "the search stopped early")
        self.assertEqual(self.config()["instance_group"][0]["count"], 1)


class ConcurrencySweepTest(SearchTestCase):
    """No config lists: only the concurrency sweep (any control mode)."""

    def test_doubling_sweep_stops_past_the_bound_and_reports_no_winner(self):
        # 20 ms an execution: nothing is within 5 ms. The sweep stops after the first level.
        p = self.search("--search", "-l", "5", "--json")
        r = p.report
        [c] = r["configs"]
        self.assertEqual([level["concurrency"] for level in c["results"]], [1])
        self.assertIsNone(r["winner"])
        self.assertEqual(len(r["front"]), 1)
        self.assertNotIn("restored", r)

    def test_doubling_sweep_stops_on_the_plateau(self):
        # One instance without batching serves at most 50/s: the sweep stops after two doublings
        # in a row without a 5 % gain (at 4 on a quiet machine; later where per-request overhead
        # on a loaded one makes low concurrency slower), long before its last level.
        p = self.search("--search", "--percentile", "90", "--search-max-concurrency", "128",
                        "--json")
        r = p.report
        levels = r["configs"][0]["results"]
        concurrencies = [level["concurrency"] for level in levels]
        self.assertEqual(concurrencies[:3], [1, 2, 4])
        self.assertLess(concurrencies[-1], 128, concurrencies)
        speeds = [level["throughput_infer_per_sec"] for level in levels]
        for k in (-2, -1):
            self.assertLess(speeds[k], 1.05 * max(speeds[:k]), speeds)
        self.assertLess(max(speeds), 60, speeds)
        self.assertEqual(r["latency"], "p90")
        self.assertIsNotNone(r["winner"])

    def test_config_lists_need_explicit_mode(self):
        # This server (no --model-control-mode) refuses loads: the model's config is measured,
        # the candidate is reported with the server's refusal.
        p = self.search("--search-instance-counts", "2", "--concurrency-range", "1", "--json")
        configs = p.report["configs"]
        self.assertEqual(len(configs), 2)
        self.assertIn("error", configs[1])
        self.assertEqual(configs[1]["results"], [])
        self.assertTrue(p.report["restored"])

    def test_flags_that_do_not_combine_are_refused(self):
        for args, needle in (
                (("--search", "--request-rate-range", "10"), "--search sweeps concurrency"),
                (("--search", "--binary-search", "-l", "5", "--concurrency-range", "1:4"),
                 "--search and --binary-search exclude each other"),
                (("--search-max-batch-sizes", "0"), "whole numbers above 0"),
                (("--search-dynamic-batching", "yes"), "takes on, off or on,off"),
                (("--search-max-batch-sizes", "2", "-b", "4"), "below the client batch"),
                (("--search", "-f", "x.csv"), "not with -f or --plot")):
            with self.subTest(args=args):
                p = self.search(*args, check=False)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(needle, p.stderr)


if __name__ == "__main__":
    unittest.main()
