"""Automatic instance and thread layout (docs/instance_layout.md, issue 25 §3).

A `delay` model with `execute_delay_parallel_fraction` and no instance_group gets
N instances (N = the hardware threads, at most 16); the server tries the layouts
k instances x N/k threads under load and keeps the one that completes the most
requests per second. With parallel fraction p = 0.5 the modelled throughput of a
layout at concurrency C is min(k, C) / ((1 - p) + p / t): at concurrency 1 the
one-instance layout (1xN) is a third faster than any other; at concurrency 8 the
best layout beats the others by a quarter or more. The test asserts the decision
logged by the server, the repository index field and the gauges, with windows
generous enough for a loaded machine; the whole file runs in well under 60 s.

Also: an explicit instance count is honoured (no layout), and a backend that does
not honour CPU thread hints (identity) with count 0 gets one instance.
"""

import os
import re
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Client, MetricsServer, ServerTestCase, identity_config, model_config, wait_until, write_model  # noqa: E402,E501
from test_metrics import scrape  # noqa: E402

DELAY_MS = 40
FRACTION = 0.5
DECISION_RE = re.compile(r"model 'amdahl' version 1: instance layout (\d+) instance\(s\) x (\d+) "
                         r"thread\(s\): chose it")


def amdahl_config(name, extra=""):
    return model_config(
        name, "delay", [("INPUT0", "TYPE_INT32", (1,))], [("OUTPUT0", "TYPE_INT32", (1,))], 0,
        'parameters { key: "execute_delay_ms" value { string_value: "%d" } }\n'
        'parameters { key: "execute_delay_parallel_fraction" value { string_value: "%s" } }\n%s'
        % (DELAY_MS, FRACTION, extra))


def request(value):
    return {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32", "data": [value]}]}


def modelled(k, t, clients):
    return min(k, clients) / ((1 - FRACTION) + FRACTION / t)


def best_layout(n, clients):
    layouts = [(k, n // k) for k in range(1, n + 1) if n % k == 0]
    return max(layouts, key=lambda kt: modelled(kt[0], kt[1], clients))


class Load:
    """`clients` closed-loop clients on one model until stopped."""

    def __init__(self, port, model, clients):
        self.stop_event = threading.Event()
        self.errors = []
        self.threads = [threading.Thread(target=self._run, args=(port, model, i), daemon=True)
                        for i in range(clients)]

    def _run(self, port, model, i):
        client = Client(port, persistent=True)
        try:
            while not self.stop_event.is_set():
                r = client.infer(model, request(i))
                if r.status != 200:
                    self.errors.append(r)
                    return
        except Exception as e:  # reported by stop()
            self.errors.append(e)
        finally:
            client.close()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        for t in self.threads:
            t.join(10)


class InstanceLayoutTest(ServerTestCase):
    SERVER_CLASS = MetricsServer

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "amdahl", amdahl_config("amdahl"))
        write_model(repo, "amdahl_fixed", amdahl_config("amdahl_fixed",
                                                        "instance_group { count: 2 }"))
        write_model(repo, "identity_auto", identity_config(
            "identity_auto", "TYPE_INT32", extra="instance_group { count: 0 }"))
        return [repo]

    def config(self, model):
        r = self.client.get("/v2/models/%s/config" % model)
        self.assertOk(r)
        return r.json()

    def index(self):
        r = self.client.post("/v2/repository/index")
        self.assertOk(r)
        return {e["name"]: e for e in r.json()}

    def decisions(self):
        return [(int(m.group(1)), int(m.group(2)))
                for m in map(DECISION_RE.search, self.server.log()) if m]

    def converge(self, clients, after, timeout):
        """Runs `clients` closed-loop clients until the server logs a decision past the
        first `after`; returns the decisions."""
        with Load(self.server.port, "amdahl", clients) as load:
            found = wait_until(lambda: len(self.decisions()) > after or load.errors, timeout, 0.2)
        self.assertFalse(load.errors, "load failed: %s%s" % (load.errors[:1], self.diag()))
        self.assertTrue(found, "no layout decision within %d s%s" % (timeout, self.diag()))
        return self.decisions()

    def test_automatic_layout_converges_under_load_and_again_when_it_changes(self):
        config = self.config("amdahl")
        self.assertEqual(config["parameters"]["instance_layout"]["string_value"], "auto")
        n = int(config["instance_group"][0]["count"])
        self.assertTrue(1 <= n <= 16, config["instance_group"])
        entry = self.index()["amdahl"]
        self.assertIn("instance_layout", entry, entry)
        self.assertEqual(entry["instance_layout"]["instances"], n)
        if n == 1:
            self.skipTest("one hardware thread: there is no layout to choose")
        # Before any load: one instance with every thread.
        self.assertEqual(entry["instance_layout"]["active_instances"], 1)
        self.assertEqual(entry["instance_layout"]["threads_per_instance"], n)

        # Heavy load: the throughput-best layout.
        want = best_layout(n, 8)
        decided = self.converge(8, 0, 25)
        self.assertEqual(decided[-1], want, "decisions %s, want %s%s" % (decided, want, self.diag()))
        layout = self.index()["amdahl"]["instance_layout"]
        self.assertEqual((layout["active_instances"], layout["threads_per_instance"]), want)
        s = scrape(self.server)
        self.assertEqual(s.value("inferd_instance_layout_active_instances", model="amdahl",
                                 version="1"), want[0])
        self.assertEqual(s.value("inferd_instance_layout_threads_per_instance", model="amdahl",
                                 version="1"), want[1])

        # Concurrency 1: the load fell eightfold, the server searches again and
        # keeps the latency-best layout, one instance with every thread.
        decided = self.converge(1, len(decided), 25)
        self.assertEqual(decided[-1], (1, n), "decisions %s%s" % (decided, self.diag()))
        layout = self.index()["amdahl"]["instance_layout"]
        self.assertEqual((layout["active_instances"], layout["threads_per_instance"]), (1, n))

    def test_explicit_count_is_honoured(self):
        config = self.config("amdahl_fixed")
        self.assertEqual(int(config["instance_group"][0]["count"]), 2)
        self.assertNotIn("instance_layout", config.get("parameters", {}))
        self.assertNotIn("instance_layout", self.index()["amdahl_fixed"])
        s = scrape(self.server)
        self.assertNotIn("amdahl_fixed", s.series("inferd_instance_layout_active_instances"))

    def test_backend_without_thread_hints_gets_one_instance(self):
        config = self.config("identity_auto")
        self.assertEqual(int(config["instance_group"][0]["count"]), 1)
        self.assertNotIn("instance_layout", config.get("parameters", {}))
        self.assertNotIn("instance_layout", self.index()["identity_auto"])
        r = self.client.infer("identity_auto", {"inputs": [
            {"name": "INPUT0", "shape": [2], "datatype": "INT32", "data": [1, 2]}]})
        self.assertOk(r)


if __name__ == "__main__":
    unittest.main()
