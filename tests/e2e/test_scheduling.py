#!/usr/bin/python3
"""Scheduling end to end: dynamic batching, instance groups, queue policies,
priorities, sequences, statistics and cancellation, over real HTTP to a real
inferd process. Timing-dependent assertions use generous margins and check
what must hold (batching happened, errors are the right ones), never speed."""

import json
import os
import threading
import time
import unittest

from harness import (ServerTestCase, model_config, write_model, add_sub_config, wait_until,
                     http_request_bytes, raw_connect)


def i32(values):
    return list(values)


def delay_config(name, delay_ms, max_batch_size=32, extra=""):
    return model_config(
        name, "delay", [("INPUT0", "TYPE_INT32", (1,))], [("OUTPUT0", "TYPE_INT32", (1,))],
        max_batch_size,
        'parameters { key: "execute_delay_ms" value { string_value: "%d" } }\n%s' % (delay_ms, extra))


ACCUMULATOR_EXTRA = """
sequence_batching {
  max_sequence_idle_microseconds: %d
  direct { }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: %s } ] }
  ]
}
instance_group [ { kind: KIND_CPU count: 2 } ]
"""


def one_input(value, name="INPUT0", params=None):
    req = {"inputs": [{"name": name, "shape": [1, 1], "datatype": "INT32", "data": [value]}]}
    if params:
        req["parameters"] = params
    return req


class SchedulingTest(ServerTestCase):
    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "batched", delay_config(
            "batched", 20, extra="dynamic_batching { max_queue_delay_microseconds: 5000 }\n"
            # Classic batching (test_adaptive_batching.py covers the adaptive kind).
            'parameters { key: "batching" value { string_value: "fixed" } }'))
        write_model(repo, "unbatched", delay_config("unbatched", 0, max_batch_size=8))
        write_model(repo, "simple_batched", add_sub_config(
            "simple_batched", "TYPE_INT32",
            extra="dynamic_batching { max_queue_delay_microseconds: 2000 }\n"
                  "instance_group [ { kind: KIND_CPU count: 2 } ]"))
        write_model(repo, "tiny_queue", delay_config(
            "tiny_queue", 300, max_batch_size=1,
            extra="dynamic_batching { default_queue_policy { max_queue_size: 1 } }"))
        write_model(repo, "timeouts", delay_config(
            "timeouts", 400, max_batch_size=1,
            extra="dynamic_batching { default_queue_policy { default_timeout_microseconds: 100000 } }"))
        write_model(repo, "prio", delay_config(
            "prio", 5, max_batch_size=4,
            extra="dynamic_batching { priority_levels: 2 default_priority_level: 2 }"))
        write_model(repo, "slow", delay_config("slow", 700, max_batch_size=1))
        write_model(repo, "accumulator", model_config(
            "accumulator", "accumulator", [("INPUT", "TYPE_INT32", (1,))],
            [("OUTPUT", "TYPE_INT32", (1,))], 8, ACCUMULATOR_EXTRA % (5000000, "TYPE_UINT64")))
        write_model(repo, "accumulator_idle", model_config(
            "accumulator_idle", "accumulator", [("INPUT", "TYPE_INT32", (1,))],
            [("OUTPUT", "TYPE_INT32", (1,))], 8, ACCUMULATOR_EXTRA % (300000, "TYPE_UINT64")))
        write_model(repo, "accumulator_str", model_config(
            "accumulator_str", "accumulator", [("INPUT", "TYPE_INT32", (1,))],
            [("OUTPUT", "TYPE_INT32", (1,))], 8, ACCUMULATOR_EXTRA % (5000000, "TYPE_STRING")))
        return [repo]

    def stats(self, model):
        r = self.server.client().get("/v2/models/%s/stats" % model)
        self.assertOk(r)
        s = r.json()["model_stats"]
        self.assertEqual(len(s), 1)
        return s[0]

    def parallel(self, n, fn):
        results = [None] * n
        errors = []

        def run(i):
            try:
                results[i] = fn(i)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertFalse(errors, errors[:3])
        return results

    def test_batching_is_visible_in_statistics(self):
        # 48 concurrent clients, 3 rounds each, on a 20 ms model with a 5 ms queue delay.
        def client(i):
            c = self.server.client()
            for k in range(3):
                r = c.infer("batched", one_input(i * 10 + k))
                self.assertOk(r)
                self.assertEqual(r.json()["outputs"][0]["data"], [i * 10 + k])
        self.parallel(48, client)
        s = self.stats("batched")
        self.assertEqual(s["inference_count"], 144)
        self.assertEqual(s["inference_stats"]["success"]["count"], 144)
        ratio = s["inference_count"] / s["execution_count"]
        self.assertGreaterEqual(ratio, 8, "expected >= 8 inferences per execution: %s" % s)
        sizes = [b["batch_size"] for b in s["batch_stats"]]
        self.assertTrue(max(sizes) > 1, s["batch_stats"])
        self.assertTrue(all(1 <= b <= 32 for b in sizes))

    def test_routing_under_load(self):
        # Hundreds of concurrent requests with distinct data on a batched,
        # two-instance model: every response is its own request's answer.
        def client(i):
            c = self.server.client()
            for k in range(6):
                a = [i * 1000 + k * 16 + j for j in range(16)]
                b = [j - i for j in range(16)]
                req = {"id": "r%d-%d" % (i, k), "inputs": [
                    {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": a},
                    {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": b}]}
                r = c.infer("simple_batched", req)
                self.assertOk(r)
                body = r.json()
                self.assertEqual(body["id"], "r%d-%d" % (i, k))
                out = {o["name"]: o["data"] for o in body["outputs"]}
                self.assertEqual(out["OUTPUT0"], [x + y for x, y in zip(a, b)])
                self.assertEqual(out["OUTPUT1"], [x - y for x, y in zip(a, b)])
        self.parallel(64, client)
        s = self.stats("simple_batched")
        self.assertEqual(s["inference_stats"]["success"]["count"], 384)

    def test_unbatched_model_runs_each_request_alone(self):
        before = self.stats("unbatched")["execution_count"]

        def client(i):
            return self.server.client().infer("unbatched", one_input(i)).status
        self.assertEqual(set(self.parallel(16, client)), {200})
        s = self.stats("unbatched")
        self.assertEqual(s["execution_count"] - before, 16)
        self.assertEqual([b["batch_size"] for b in s["batch_stats"]], [1])

    def test_full_queue_is_rejected_with_503(self):
        # One instance busy for 300 ms, queue of one: of 5 simultaneous
        # requests at least one is refused at once with 503.
        statuses = self.parallel(5, lambda i: self.server.client().infer(
            "tiny_queue", one_input(i)))
        codes = sorted(r.status for r in statuses)
        self.assertIn(200, codes)
        self.assertIn(503, codes)
        refused = [r for r in statuses if r.status == 503][0]
        self.assertIn("queue size", refused.json()["error"])
        self.assertServerAlive()

    def test_queue_timeout_is_rejected_with_503(self):
        # 400 ms per execution, 100 ms queue timeout: the later requests time out.
        statuses = self.parallel(4, lambda i: self.server.client().infer("timeouts", one_input(i)))
        codes = [r.status for r in statuses]
        self.assertIn(200, codes)
        self.assertIn(503, codes)
        timed_out = [r for r in statuses if r.status == 503][0]
        self.assertIn("timeout", timed_out.json()["error"].lower())

    def test_priority_parameter_is_accepted(self):
        for p in (0, 1, 2, 99):
            r = self.client.infer("prio", one_input(5, params={"priority": p}))
            self.assertOk(r, "priority %d" % p)
        r = self.client.infer("prio", one_input(5, params={"priority": -1}))
        self.assertError(r, 400, "priority")

    def test_interleaved_sequences(self):
        def seq_request(corr, value, start=False, end=False):
            return {"inputs": [{"name": "INPUT", "shape": [1, 1], "datatype": "INT32",
                                "data": [value]}],
                    "parameters": {"sequence_id": corr, "sequence_start": start,
                                   "sequence_end": end}}
        # Eight sequences, interleaved, each summing its own values, in parallel.
        def run(i):
            c = self.server.client()
            corr = 1000 + i
            total = 0
            for k in range(5):
                total += i + k
                r = c.infer("accumulator", seq_request(corr, i + k, start=(k == 0), end=(k == 4)))
                self.assertOk(r)
                self.assertEqual(r.json()["outputs"][0]["data"], [total])
        self.parallel(8, run)
        # After END the sequence is gone.
        r = self.client.infer("accumulator", seq_request(1000, 1))
        self.assertError(r, 400, "START")
        # No START for a new id, no id at all, wrong id type.
        self.assertError(self.client.infer("accumulator", seq_request(4242, 1)), 400, "START")
        r = self.client.infer("accumulator", {"inputs": [
            {"name": "INPUT", "shape": [1, 1], "datatype": "INT32", "data": [1]}]})
        self.assertError(r, 400, "correlation ID")
        self.assertError(self.client.infer("accumulator", seq_request("abc", 1, start=True)),
                         400, "unsigned integer")

    def test_string_correlation_ids(self):
        def req(corr, v, start=False, end=False):
            return {"inputs": [{"name": "INPUT", "shape": [1, 1], "datatype": "INT32",
                                "data": [v]}],
                    "parameters": {"sequence_id": corr, "sequence_start": start,
                                   "sequence_end": end}}
        self.assertEqual(self.client.infer("accumulator_str", req("alpha", 2, start=True))
                         .json()["outputs"][0]["data"], [2])
        self.assertEqual(self.client.infer("accumulator_str", req("beta", 10, start=True))
                         .json()["outputs"][0]["data"], [10])
        self.assertEqual(self.client.infer("accumulator_str", req("alpha", 3, end=True))
                         .json()["outputs"][0]["data"], [5])
        self.assertError(self.client.infer("accumulator_str", req(7, 1, start=True)), 400, "string")

    def test_idle_sequence_is_released(self):
        def req(v, start=False):
            return {"inputs": [{"name": "INPUT", "shape": [1, 1], "datatype": "INT32",
                                "data": [v]}],
                    "parameters": {"sequence_id": 77, "sequence_start": start}}
        self.assertOk(self.client.infer("accumulator_idle", req(1, start=True)))
        self.assertOk(self.client.infer("accumulator_idle", req(1)))
        time.sleep(0.6)  # idle timeout is 300 ms
        self.assertError(self.client.infer("accumulator_idle", req(1)), 400, "START")

    def test_statistics_format(self):
        self.assertOk(self.client.infer("unbatched", one_input(3)))
        r = self.client.get("/v2/models/stats")
        self.assertOk(r)
        names = {m["name"] for m in r.json()["model_stats"]}
        self.assertIn("unbatched", names)
        s = self.stats("unbatched")
        for key in ("name", "version", "last_inference", "inference_count", "execution_count",
                    "inference_stats", "batch_stats", "memory_usage", "response_stats"):
            self.assertIn(key, s)
        for key in ("success", "fail", "queue", "compute_input", "compute_infer",
                    "compute_output", "cache_hit", "cache_miss"):
            self.assertEqual(set(s["inference_stats"][key]), {"count", "ns"})
        self.assertEqual(s["version"], "1")
        self.assertGreater(s["last_inference"], 1.6e12)
        r = self.client.get("/v2/models/unbatched/versions/1/stats")
        self.assertOk(r)
        self.assertError(self.client.get("/v2/models/unbatched/versions/9/stats"), 400)
        self.assertError(self.client.get("/v2/models/nope/stats"), 400, "nope")

    def test_disconnected_client_request_is_dropped_while_queued(self):
        before = self.stats("slow")
        # Occupy the only instance for 700 ms.
        busy = threading.Thread(target=lambda: self.server.client().infer("slow", one_input(1)))
        busy.start()
        time.sleep(0.2)
        # Queue a request, then hang up before it runs.
        body = json.dumps(one_input(2)).encode()
        s = raw_connect(self.server.port)
        s.sendall(http_request_bytes("POST", "/v2/models/slow/infer", body))
        time.sleep(0.1)
        s.close()
        busy.join(10)
        self.assertTrue(wait_until(
            lambda: self.stats("slow")["inference_stats"]["fail"]["count"]
            > before["inference_stats"]["fail"]["count"], 5))
        after = self.stats("slow")
        self.assertEqual(after["execution_count"] - before["execution_count"], 1,
                         "the disconnected request must not run: %s" % after)
        self.assertServerAlive()


if __name__ == "__main__":
    unittest.main()
