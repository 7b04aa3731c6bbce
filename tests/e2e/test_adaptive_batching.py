#!/usr/bin/python3
"""Adaptive dynamic batching end to end (docs/batching.md): the `delay` model
with a CPU-like cost (execute_delay_batch_exponent 1.5: a batch of b rows
takes b^1.5 times as long, batching loses) converges to batches of 1; with
a GPU-like cost (0.3) to large batches. Asserted through the
inferd_batch_target_size gauge and the statistics' average batch, with
generous margins: convergence, never speed."""

import os
import threading
import time
import unittest

from harness import model_config, wait_until, write_model
from test_metrics import MetricsServerTestCase, scrape

CLIENTS = 8
LOAD_S = 6.0


def delay_config(name, exponent, delay_us, extra=""):
    return model_config(
        name, "delay", [("INPUT0", "TYPE_INT32", (1,))], [("OUTPUT0", "TYPE_INT32", (1,))], 16,
        'parameters { key: "execute_delay_ms" value { string_value: "20" } }\n'
        'parameters { key: "execute_delay_batch_exponent" value { string_value: "%s" } }\n'
        'dynamic_batching { max_queue_delay_microseconds: %d }\n'
        # One instance: the automatic layout (docs/instance_layout.md) stays out of the way.
        'instance_group [ { kind: KIND_CPU count: 1 } ]\n%s' % (exponent, delay_us, extra))


def one_input(value):
    return {"inputs": [{"name": "INPUT0", "shape": [1, 1], "datatype": "INT32", "data": [value]}]}


class AdaptiveBatchingTest(MetricsServerTestCase):
    SERVER_ARGS = ("--metrics-interval-ms", "100")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        # CPU-like: throughput falls with the batch size. (At exponent 1.0 batching breaks
        # even in sleep time, and the per-execution overhead, milliseconds on a loaded
        # machine, rightly makes small batches pay: not a robust test.)
        write_model(repo, "cpu_like", delay_config("cpu_like", "1.5", 5000))
        # A bound longer than the Python clients' turnaround on a loaded machine: the
        # clients of one batch can join the next (within 5 ms they split into two groups).
        write_model(repo, "gpu_like", delay_config("gpu_like", "0.3", 20000))
        write_model(repo, "fixed", delay_config(
            "fixed", "0.3", 5000, 'parameters { key: "batching" value { string_value: "fixed" } }'))
        return repo

    def stats(self, model):
        r = self.server.client().get("/v2/models/%s/stats" % model)
        self.assertOk(r)
        s = r.json()["model_stats"][0]
        return s["inference_count"], s["execution_count"]

    def target(self, model):
        return scrape(self.server).get("inferd_batch_target_size", model=model, version="1")

    def load(self, model, seconds):
        """CLIENTS closed-loop clients for `seconds`; returns the average batch
        of the second half (after convergence)."""
        stop = time.monotonic() + seconds
        errors = []

        def client(i):
            c = self.server.client()
            k = 0
            while time.monotonic() < stop and not errors:
                r = c.infer(model, one_input(i * 100000 + k))
                if r.status != 200 or r.json()["outputs"][0]["data"] != [i * 100000 + k]:
                    errors.append(r)
                k += 1
        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        time.sleep(seconds / 2)
        inferences, executions = self.stats(model)
        for t in threads:
            t.join(seconds + 30)
        self.assertFalse(errors, errors[:2])
        inferences2, executions2 = self.stats(model)
        self.assertGreater(executions2, executions, self.diag())
        return (inferences2 - inferences) / (executions2 - executions)

    def test_config_shows_the_choice(self):
        r = self.client.get("/v2/models/gpu_like/config")
        self.assertOk(r)
        config = r.json()
        self.assertEqual(config["parameters"]["batching"]["string_value"], "adaptive")
        self.assertEqual(config["dynamic_batching"].get("preferred_batch_size", []), [])
        r = self.client.get("/v2/models/fixed/config")
        self.assertEqual(r.json()["dynamic_batching"]["preferred_batch_size"], [16])

    def test_cpu_like_cost_stops_batching(self):
        average = self.load("cpu_like", LOAD_S)
        self.assertEqual(self.target("cpu_like"), 1, self.diag())
        # Exploration re-measures batches of 2 now and then.
        self.assertLess(average, 1.5, "average batch %.2f" % average)

    def test_gpu_like_cost_batches(self):
        average = self.load("gpu_like", LOAD_S)
        target = self.target("gpu_like")
        self.assertIsNotNone(target)
        self.assertGreaterEqual(target, 4, self.diag())
        self.assertGreaterEqual(average, 3, "average batch %.2f" % average)
        # The batch-size histogram saw the large batches.
        s = scrape(self.server)
        small = s.value("inferd_batch_size_bucket", model="gpu_like", version="1", le="2")
        total = s.value("inferd_batch_size_count", model="gpu_like", version="1")
        self.assertLess(small, total)

    def test_fixed_has_no_target_gauge(self):
        self.assertTrue(wait_until(lambda: scrape(self.server).get(
            "nv_inference_count", model="fixed", version="1") is not None, 5))
        self.assertIsNone(self.target("fixed"))


if __name__ == "__main__":
    unittest.main()
