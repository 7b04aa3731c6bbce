#!/usr/bin/python3
"""The rate limiter (--rate-limit=execution_count) through a real inferd with Python models.

Each timed model sleeps ~15 ms per execution and answers the execution's start and end
(time.monotonic_ns, one clock for every stub process of the machine). Two models whose instances
share one copy of a resource never execute at the same time under concurrent load; with
priorities 1 and 2, while both always have work, the executions split 2:1. The same models with
--rate-limit=off do overlap (so the overlap check can fail). A resource both global and
per-device fails a load, as does a --rate-limit-resource capacity below an instance's count;
bad flag values stop the server with a clear error.
"""

import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Server, ServerError, ServerTestCase, model_config, write_model  # noqa: E402
from python_models import python_model  # noqa: E402

TIMED = '''
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        start = time.monotonic_ns()
        time.sleep(0.015)
        end = time.monotonic_ns()
        return [pb_utils.InferenceResponse([
            pb_utils.Tensor("START", np.array([start], dtype=np.int64)),
            pb_utils.Tensor("END", np.array([end], dtype=np.int64))]) for _ in requests]
'''

REQUEST = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1], "data": [0]}]}


def limiter(resource, priority=0, global_=False, count=1):
    return ('instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "%s" '
            'global: %s count: %d } ] priority: %d } } ]'
            % (resource, "true" if global_ else "false", count, priority))


def timed_model(repo, name, extra):
    python_model(repo, name, TIMED, [("INPUT0", "TYPE_INT32", [1])],
                 [("START", "TYPE_INT64", [1]), ("END", "TYPE_INT64", [1])], extra=extra)


def build(root):
    repo = os.path.join(root, "models")
    # Overlap: x and y share one copy of X. Split: p1 and p2 share P, priorities 1 and 2
    # (their own pair: execution counts start at 0 for the split test).
    timed_model(repo, "x", limiter("X", 1))
    timed_model(repo, "y", limiter("X", 1))
    timed_model(repo, "p1", limiter("P", 1))
    timed_model(repo, "p2", limiter("P", 2))
    # Conflict: C global in one, per-device in the other; Z: count 2 above the flag's 1.
    base = model_config("%s", "identity", [("INPUT0", "TYPE_FP32", (4,))],
                        [("OUTPUT0", "TYPE_FP32", (4,))], max_batch_size=8)
    write_model(repo, "c_global", (base % "c_global") + limiter("C", global_=True) + "\n")
    write_model(repo, "c_device", (base % "c_device") + limiter("C") + "\n")
    write_model(repo, "z", (base % "z") + limiter("Z", count=2) + "\n")
    return [repo]


def load(server, models, seconds, clients_each=4):
    """Runs `clients_each` clients per model for `seconds`, all starting together; returns
    {model: [(start_ns, end_ns), ...]} and the errors seen."""
    runs = {m: [] for m in models}
    errors = []
    barrier = threading.Barrier(len(models) * clients_each)
    lock = threading.Lock()

    def client(model):
        c = server.client(timeout=30)
        barrier.wait()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            r = c.infer(model, REQUEST)
            if r.status != 200:
                with lock:
                    errors.append((model, r))
                return
            out = {o["name"]: o["data"][0] for o in r.json()["outputs"]}
            with lock:
                runs[model].append((out["START"], out["END"]))

    threads = [threading.Thread(target=client, args=(m,)) for m in models
               for _ in range(clients_each)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    return runs, errors


def overlaps(runs):
    """Pairs of executions of different models that ran at the same time."""
    spans = sorted((s, e, m) for m, rs in runs.items() for s, e in rs)
    found = []
    for (s0, e0, m0), (s1, e1, m1) in zip(spans, spans[1:]):
        if s1 < e0 and m0 != m1:
            found.append(((m0, s0, e0), (m1, s1, e1)))
    return found


def index_entry(client, name):
    r = client.post("/v2/repository/index")
    assert r.status == 200, r
    found = [e for e in r.json() if e.get("name") == name]
    return found[0] if found else {}


class RateLimiterTest(ServerTestCase):
    SERVER_ARGS = ("--rate-limit=EXECUTION_COUNT", "--rate-limit-resource=Z:1",
                   "--exit-on-error=false")

    @classmethod
    def build_repository(cls, root):
        return build(root)

    def test_shared_resource_executions_never_overlap(self):
        runs, errors = load(self.server, ["x", "y"], 1.0, clients_each=3)
        self.assertEqual(errors, [], self.diag())
        for m in ("x", "y"):
            self.assertGreaterEqual(len(runs[m]), 5, (m, len(runs[m])))
        self.assertEqual(overlaps(runs), [])

    def test_priorities_split_executions_two_to_one(self):
        runs, errors = load(self.server, ["p1", "p2"], 2.0, clients_each=6)
        self.assertEqual(errors, [], self.diag())
        self.assertEqual(overlaps(runs), [])
        # Count only while both models had work: from the later first start to the earlier
        # last end (the clients start together, but stub and thread start-up differ).
        t0 = max(min(s for s, _ in runs[m]) for m in runs)
        t1 = min(max(e for _, e in runs[m]) for m in runs)
        n1 = sum(1 for s, e in runs["p1"] if t0 <= s and e <= t1)
        n2 = sum(1 for s, e in runs["p2"] if t0 <= s and e <= t1)
        self.assertGreaterEqual(n1 + n2, 45, (n1, n2))
        # The policy is exact (smallest execution_count x priority next), so 2:1 holds to
        # within a couple of executions; the bounds are far wider than that.
        self.assertGreater(n2, 0)
        self.assertTrue(1.5 <= n1 / n2 <= 2.7, (n1, n2))

    def test_global_and_per_device_conflict_fails_one_load(self):
        reasons = [index_entry(self.client, m).get("reason", "") for m in ("c_global", "c_device")]
        states = [index_entry(self.client, m).get("state") for m in ("c_global", "c_device")]
        self.assertEqual(sorted(states), ["READY", "UNAVAILABLE"], (states, reasons))
        failed = reasons[states.index("UNAVAILABLE")]
        self.assertIn("resource 'C' is global for model 'c_global'", failed)
        self.assertIn("per-device for model 'c_device'", failed)

    def test_capacity_below_an_instance_count_fails_the_load(self):
        e = index_entry(self.client, "z")
        self.assertEqual(e.get("state"), "UNAVAILABLE", e)
        self.assertIn("resource 'Z' 1 copies on device 0, fewer than the 2", e.get("reason", ""))


class RateLimitOffTest(ServerTestCase):
    """The default: rate_limiter settings are ignored (logged), executions overlap."""

    @classmethod
    def build_repository(cls, root):
        return build(root)

    def test_without_the_limiter_the_same_models_overlap(self):
        runs, errors = load(self.server, ["x", "y"], 1.0, clients_each=3)
        self.assertEqual(errors, [], self.diag())
        self.assertNotEqual(overlaps(runs), [])
        for m in ("c_global", "c_device", "z"):
            self.assertEqual(index_entry(self.client, m).get("state"), "READY", m)
        self.assertIn("rate_limiter settings are ignored (--rate-limit=off)",
                      "\n".join(self.server.log()))


class RateLimitFlagsTest(unittest.TestCase):
    def test_bad_values_stop_the_server_with_a_clear_error(self):
        cases = [("--rate-limit=sometimes", "--rate-limit must be off or execution_count"),
                 ("--rate-limit-resource=R1", "--rate-limit-resource expects"),
                 ("--rate-limit-resource=R1:many", "the count is not a non-negative integer"),
                 ("--rate-limit-resource=R1:2:gpu0", "the device is not a non-negative integer")]
        for flag, needle in cases:
            with self.subTest(flag=flag):
                server = Server([os.devnull], (flag,), startup_timeout=10)
                with self.assertRaises(ServerError):
                    server.start()
                server.stop()
                self.assertIn(needle, "\n".join(server.log()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
