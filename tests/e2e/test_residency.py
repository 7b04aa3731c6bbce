#!/usr/bin/python3
"""Model residency (--model-memory-budget) through a real inferd: 50 copies of the digits model
in a temporary repository, under a budget that holds about 10 of them.

- A cold model under 16 concurrent requests is loaded once (loads metric), every request served.
- Random and Zipf-skewed traffic over the 50: every request succeeds, and the resident bytes the
  metrics show (sampled throughout) never exceed the budget.
- Evictions follow recency: the resident set after sequential traffic is its most recent models;
  touching the oldest resident one makes the next load evict the second oldest instead.
- Pinning (--model-pin, and the config parameter residency=pinned): never evicted.
- A model larger than the whole budget is refused with both numbers, at once the second time.
- Explicit mode: a model loaded through the load API is not evicted; others load on demand.
- Poll mode: passes leave cold models cold (added ones too) and forget removed ones.

The budget is ten times one copy's footprint, measured first by a calibration server (footprints
depend on the machine). Skipped without examples/models/digits/1/model.pt or the pytorch backend.
"""

import math
import os
import random
import re
import shutil
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MetricsServer, ServerTestCase  # noqa: E402

EXAMPLES = os.path.join(harness.REPO_ROOT, "examples", "models")
DIGITS = os.path.join(EXAMPLES, "digits")
PYTORCH = os.path.join(os.path.dirname(harness.INFERD_BIN), "..", "lib", "inferd", "backends",
                       "libinferd_pytorch.so")
COPIES = 50
FIT = 10
PIN_FLAG = "d49"    # --model-pin
PIN_CONFIG = "d48"  # parameters residency=pinned
REQUEST = {"inputs": [{"name": "image", "datatype": "FP32", "shape": [1, 1, 8, 8],
                       "data": [float(i % 17) for i in range(64)]}]}


def why_skip():
    if not os.path.exists(os.path.join(DIGITS, "1", "model.pt")):
        return "examples/models/digits/1/model.pt missing (run make models)"
    if not os.path.exists(PYTORCH):
        return "the pytorch backend is not built (%s)" % PYTORCH
    return None


SKIP = why_skip()


def name(i):
    return "d%02d" % i


def write_copies(repo, count=COPIES, big=False):
    os.makedirs(repo)
    with open(os.path.join(DIGITS, "config.pbtxt")) as f:
        config = f.read()
    for i in range(count):
        d = os.path.join(repo, name(i))
        os.makedirs(os.path.join(d, "1"))
        shutil.copy(os.path.join(DIGITS, "1", "model.pt"), os.path.join(d, "1", "model.pt"))
        shutil.copy(os.path.join(DIGITS, "labels.txt"), os.path.join(d, "labels.txt"))
        text = config.replace('name: "digits"', 'name: "%s"' % name(i))
        if name(i) == PIN_CONFIG:
            text += '\nparameters { key: "residency" value { string_value: "pinned" } }\n'
        with open(os.path.join(d, "config.pbtxt"), "w") as f:
            f.write(text)
    if big:
        # A copy whose files alone (64 MiB of padding next to the model) exceed any budget here.
        d = os.path.join(repo, "big")
        shutil.copytree(os.path.join(repo, name(0)), d)
        with open(os.path.join(d, "config.pbtxt")) as f:
            text = f.read().replace('name: "%s"' % name(0), 'name: "big"')
        with open(os.path.join(d, "config.pbtxt"), "w") as f:
            f.write(text)
        with open(os.path.join(d, "1", "padding.bin"), "wb") as f:
            f.truncate(64 << 20)


def metrics(client):
    """{(name, labels-string): value} of the inferd_model_* residency series."""
    r = client.get("/metrics")
    if r.status != 200:
        raise AssertionError("GET /metrics: %s" % r)
    out = {}
    for line in r.body.decode().splitlines():
        m = re.match(r"^(inferd_model_[a-z_]+)(\{[^}]*\})? (\S+)$", line)
        if m:
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def model_metric(values, family, model):
    return values.get((family, '{model="%s"}' % model), 0)


def index(client):
    r = client.post("/v2/repository/index")
    if r.status != 200:
        raise AssertionError("index: %s" % r)
    return {e["name"]: e for e in r.json()}


def calibrate(tmp):
    """Footprints on this machine: a server with a large budget loads three copies; the first
    load (it carries the backend's one-time costs) and one copy (the larger of the others)."""
    repo = os.path.join(tmp, "calibration")
    write_copies(repo, 3)
    server = MetricsServer([repo], ["--model-memory-budget=1G"]).start()
    try:
        client = server.client(timeout=30)
        for i in range(3):
            r = client.infer(name(i), REQUEST)
            if r.status != 200:
                raise AssertionError("calibration infer %s: %s" % (name(i), r))
        values = metrics(server.metrics_client())
        return (model_metric(values, "inferd_model_memory_bytes", name(0)),
                max(model_metric(values, "inferd_model_memory_bytes", name(i)) for i in (1, 2)))
    finally:
        server.stop()


class Traffic:
    """Requests from `threads` threads, each its own client; records failures."""

    def __init__(self, server, models, threads=4):
        self.server, self.models, self.threads = server, models, threads
        self.failures = []
        self.count = 0
        self.lock = threading.Lock()

    def run(self):
        chunks = [self.models[i::self.threads] for i in range(self.threads)]
        workers = [threading.Thread(target=self.worker, args=(c,)) for c in chunks]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)

    def worker(self, models):
        client = self.server.client(timeout=60)
        for m in models:
            r = client.infer(m, REQUEST)
            with self.lock:
                self.count += 1
                if r.status != 200:
                    self.failures.append((m, r.status, r.body[:200]))


class BudgetWatch:
    """Scrapes the metrics every few milliseconds while traffic runs: the largest resident bytes
    seen, and the budget."""

    def __init__(self, server):
        self.client = server.metrics_client()
        self.stop = threading.Event()
        self.largest = 0
        self.budget = None
        self.samples = 0
        self.at_largest = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            v = metrics(self.client)
            self.budget = v.get(("inferd_model_memory_budget_bytes", ""))
            resident = v.get(("inferd_model_memory_resident_bytes", ""), 0)
            if resident > self.largest:
                self.largest = resident
                self.at_largest = sorted((k[1], n) for k, n in v.items()
                                         if k[0] == "inferd_model_memory_bytes")
            self.samples += 1
            time.sleep(0.005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)


@unittest.skipIf(SKIP, SKIP)
class ResidencyTest(ServerTestCase):
    SERVER_CLASS = MetricsServer

    @classmethod
    def build_repository(cls, root):
        # The pinned model loads first (and carries the first load's costs), then about FIT.
        first, cls.per_model = calibrate(root)
        cls.budget = int(first + cls.per_model * FIT * 1.1)
        repo = os.path.join(root, "models")
        write_copies(repo, big=True)
        return [repo]

    @classmethod
    def start_server(cls):
        args = ["--model-memory-budget=%d" % cls.budget, "--model-residency=lru",
                "--model-pin=" + PIN_FLAG]
        return MetricsServer(cls.repos, args).start()

    def setUp(self):
        self.metrics_client = self.server.metrics_client()

    def values(self):
        return metrics(self.metrics_client)

    def assertTraffic(self, models):
        with BudgetWatch(self.server) as watch:
            traffic = Traffic(self.server, models)
            traffic.run()
        self.assertEqual(traffic.failures, [], self.diag())
        self.assertEqual(traffic.count, len(models))
        self.assertGreater(watch.samples, 0)
        self.assertEqual(watch.budget, self.budget)
        self.assertLessEqual(watch.largest, self.budget,
                             "resident bytes above the budget at some scrape: %s"
                             % (watch.at_largest,))
        return watch

    def test_cold_start_single_flight(self):
        model = name(30)
        self.assertNotIn("state", index(self.client)[model], "d30 must be cold before the test")
        results = []
        lock = threading.Lock()

        def one():
            r = self.server.client(timeout=60).infer(model, REQUEST)
            with lock:
                results.append(r.status)

        before = self.values().get(("inferd_model_cold_start_wait_seconds_count", ""), 0)
        threads = [threading.Thread(target=one) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(results, [200] * 16, self.diag())
        v = self.values()
        self.assertEqual(model_metric(v, "inferd_model_residency_loads_total", model), 1)
        waited = v.get(("inferd_model_cold_start_wait_seconds_count", ""), 0) - before
        self.assertGreaterEqual(waited, 1)
        self.assertLessEqual(waited, 16)

    def test_random_and_zipf_traffic(self):
        rng = random.Random(24)
        uniform = [name(rng.randrange(COPIES)) for _ in range(160)]
        self.assertTraffic(uniform)
        weights = [1.0 / math.pow(k + 1, 1.1) for k in range(COPIES)]
        zipf = [name(i) for i in rng.choices(range(COPIES), weights=weights, k=240)]
        self.assertTraffic(zipf)
        v = self.values()
        evictions = sum(n for (f, _), n in v.items() if f == "inferd_model_residency_evictions_total")
        self.assertGreater(evictions, 0, "50 models under a budget for 10 must evict")
        resident = [e for e in index(self.client).values() if e.get("state") == "READY"]
        self.assertLessEqual(len(resident), FIT + 2)

    def test_evictions_follow_recency(self):
        sequence = [name(i) for i in range(10, 26)]  # 16 models, more than fit
        client = self.client
        for m in sequence:
            self.assertEqual(client.infer(m, REQUEST).status, 200)
        entries = index(client)
        resident = [m for m in sequence if entries[m].get("state") == "READY"]
        self.assertGreaterEqual(len(resident), 3, entries)
        # The resident ones are the most recent of the sequence, in one run to its end.
        self.assertEqual(resident, sequence[-len(resident):])
        for m in sequence[:-len(resident)]:
            self.assertEqual(entries[m].get("state"), "UNAVAILABLE")
            self.assertTrue(entries[m].get("reason", "").startswith("evicted:"), entries[m])
        # An evicted model's metadata and config answer from its last load.
        evicted = sequence[0]
        r = client.get("/v2/models/%s" % evicted)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["inputs"][0]["name"], "image")
        r = client.get("/v2/models/%s/config" % evicted)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["name"], evicted)
        self.assertEqual(index(client)[evicted].get("state"), "UNAVAILABLE", "metadata loads nothing")
        # Touch the oldest resident model: the loads that follow evict the second oldest first,
        # then the next ones in order, never the one touched.
        oldest = resident[0]
        self.assertEqual(client.infer(oldest, REQUEST).status, 200)
        for m in (name(i) for i in range(40, 46)):
            self.assertEqual(client.infer(m, REQUEST).status, 200)
            entries = index(client)
            gone = [r for r in resident if entries[r].get("state") != "READY"]
            if gone:
                break
        self.assertTrue(gone, "six more loads evicted none of %s" % resident)
        self.assertEqual(entries[oldest].get("state"), "READY", entries[oldest])
        self.assertEqual(gone, resident[1:1 + len(gone)])

    def test_pinned_models_stay(self):
        self.assertEqual(self.client.infer(PIN_CONFIG, REQUEST).status, 200)
        for i in range(0, 20):
            self.assertEqual(self.client.infer(name(i), REQUEST).status, 200)
        entries = index(self.client)
        v = self.values()
        for m in (PIN_FLAG, PIN_CONFIG):
            self.assertEqual(entries[m].get("state"), "READY", entries[m])
            self.assertEqual(model_metric(v, "inferd_model_residency_evictions_total", m), 0)
        self.assertEqual(model_metric(v, "inferd_model_residency_loads_total", PIN_FLAG), 1)
        self.assertGreater(entries[PIN_FLAG].get("memory_bytes", 0), 0)

    def test_too_large_model_refused(self):
        for attempt in range(2):
            started = time.monotonic()
            r = self.client.infer("big", REQUEST)
            msg = self.assertError(r, (400, 503), "'big' needs",
                                   "more than the whole --model-memory-budget of %d bytes"
                                   % self.budget)
            self.assertRegex(msg, r"needs (\d+) bytes")
            if attempt == 1:
                self.assertLess(time.monotonic() - started, 1.0, "the refusal is remembered")
        entry = index(self.client)["big"]
        self.assertEqual(entry.get("state"), "UNAVAILABLE")
        self.assertTrue(entry.get("reason", "").startswith("refused:"), entry)
        self.assertEqual(model_metric(self.values(), "inferd_model_residency_loads_total", "big"),
                         0)

    def test_unknown_model_still_not_found(self):
        self.assertError(self.client.infer("nope", REQUEST), 404, "unknown model")


@unittest.skipIf(SKIP, SKIP)
class ExplicitResidencyTest(ServerTestCase):
    SERVER_CLASS = MetricsServer

    @classmethod
    def build_repository(cls, root):
        first, cls.per_model = calibrate(root)
        cls.budget = int(first + cls.per_model * 4 * 1.1)
        repo = os.path.join(root, "models")
        write_copies(repo, 12)
        return [repo]

    @classmethod
    def start_server(cls):
        args = ["--model-control-mode=explicit", "--model-memory-budget=%d" % cls.budget]
        return MetricsServer(cls.repos, args).start()

    def test_explicit_load_not_evicted(self):
        r = self.client.post("/v2/repository/models/%s/load" % name(1))
        self.assertEqual(r.status, 200, r)
        for i in range(2, 12):  # on-demand loads still work in explicit mode
            self.assertEqual(self.client.infer(name(i), REQUEST).status, 200, self.diag())
        entries = index(self.client)
        self.assertEqual(entries[name(1)].get("state"), "READY", entries[name(1)])
        self.assertEqual(entries[name(2)].get("state"), "UNAVAILABLE", entries[name(2)])
        r = self.client.post("/v2/repository/models/%s/unload" % name(1))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(index(self.client)[name(1)].get("reason"), "unloaded")
        v = metrics(self.server.metrics_client())
        self.assertLessEqual(v[("inferd_model_memory_resident_bytes", "")], self.budget)



@unittest.skipIf(SKIP, SKIP)
class PollResidencyTest(ServerTestCase):
    """Poll mode: passes leave cold and evicted models cold, a model added to the repository
    stays cold until a request loads it, a removed one is unloaded."""

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_copies(repo, 4)
        return [repo]

    @classmethod
    def start_server(cls):
        args = ["--model-control-mode=poll", "--repository-poll-secs=1",
                "--model-memory-budget=1G"]
        return MetricsServer(cls.repos, args).start()

    def passes(self):
        time.sleep(2.5)  # two poll passes at least

    def test_poll_leaves_cold_models_cold(self):
        self.assertEqual(self.client.infer(name(0), REQUEST).status, 200)
        repo = self.repos[0]
        added = os.path.join(repo, "added")
        shutil.copytree(os.path.join(repo, name(1)), added)
        with open(os.path.join(added, "config.pbtxt")) as f:
            text = f.read().replace('name: "%s"' % name(1), 'name: "added"')
        with open(os.path.join(added, "config.pbtxt"), "w") as f:
            f.write(text)
        self.passes()
        entries = index(self.client)
        self.assertEqual(entries[name(0)].get("state"), "READY")
        for m in (name(1), name(2), "added"):
            self.assertNotIn("state", entries[m], "a poll pass loaded %s: %s" % (m, entries[m]))
        self.assertEqual(self.client.infer("added", REQUEST).status, 200, self.diag())
        shutil.rmtree(os.path.join(repo, name(0)))
        self.passes()
        entries = index(self.client)
        self.assertNotIn(name(0), entries)
        self.assertEqual(entries["added"].get("state"), "READY")
        self.assertError(self.client.infer(name(0), REQUEST), 404, "unknown model")


if __name__ == "__main__":
    unittest.main(verbosity=2)
