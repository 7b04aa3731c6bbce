#!/usr/bin/python3
"""Prometheus metrics end to end: a real inferd serving GET /metrics on its own port, scraped
over real HTTP; counts checked against the requests sent; the scrape checked by `promtool
check metrics`; the deploy/ configuration checked by promtool; and a real Prometheus server
(Debian package `prometheus`) scraping inferd under load, queried through its HTTP API.

Everything is bounded in time (the whole file takes well under a minute) and every process
started here is stopped in tearDown, whatever happens."""

import ctypes.util
import json
import math
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import unittest
import urllib.parse
import urllib.request

import yaml

from harness import (REPO_ROOT, SIMPLE_CONFIG, Client, MetricsServer, ServerTestCase, add_sub_config, http_request_bytes,
                     model_config, raw_connect, wait_until, write_model)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
DEPLOY = os.path.join(REPO_ROOT, "deploy")
NO_PROMETHEUS = ("the Debian package 'prometheus' is not installed (no %s on PATH); "
                 "scripts/install-deps.sh installs it")

GPU_FAMILIES = {"nv_gpu_utilization", "nv_gpu_memory_total_bytes", "nv_gpu_memory_used_bytes",
                "nv_gpu_power_usage", "nv_gpu_power_limit", "nv_energy_consumption"}
# Triton's family names predate Prometheus's naming conventions; promtool's linter says so
# (and exits 3), and inferd keeps them for compatibility. Anything else it reports fails.
TRITON_LINT = {
    'counter metrics should have "_total" suffix',
    'non-histogram and non-summary metrics should not have "_count" suffix',
    "metric names should not contain abbreviated units",
}


# --------------------------------------------------------------------------------------------
# inferd with metrics, and the exposition format
# --------------------------------------------------------------------------------------------


def _unescape(v):
    return v.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\") if "\\" in v else v


SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


class Scrape:
    """A parsed text-format scrape: samples[(name, ((k, v), ...))] = value, with HELP and TYPE."""

    def __init__(self, text):
        self.text = text
        self.samples = {}
        self.help = {}
        self.type = {}
        self.label_orders = []  # label keys of every sample line, in written order
        for line in text.splitlines():
            if line.startswith("# HELP "):
                name, _, h = line[7:].partition(" ")
                self.help[name] = h
            elif line.startswith("# TYPE "):
                name, _, t = line[7:].partition(" ")
                self.type[name] = t
            elif line and not line.startswith("#"):
                m = SAMPLE_RE.match(line)
                if not m:
                    raise AssertionError("bad sample line: %r" % line)
                labels = []
                if m.group(2):
                    pos = 0
                    for lm in LABEL_RE.finditer(m.group(2)):
                        if lm.start() != pos:
                            raise AssertionError("bad labels in %r" % line)
                        labels.append((lm.group(1), _unescape(lm.group(2))))
                        pos = lm.end()
                    if pos != len(m.group(2)):
                        raise AssertionError("bad labels in %r" % line)
                self.label_orders.append([k for k, _ in labels])
                key = (m.group(1), tuple(sorted(labels)))
                if key in self.samples:
                    raise AssertionError("duplicate series %r" % (key,))
                self.samples[key] = float(m.group(3))

    def get(self, name, **labels):
        return self.samples.get((name, tuple(sorted(labels.items()))))

    def value(self, name, **labels):
        v = self.get(name, **labels)
        if v is None:
            raise AssertionError("no series %s%s in the scrape" % (name, labels))
        return v

    def series(self, name):
        return {dict(k[1]).get("model", ""): v for k, v in self.samples.items() if k[0] == name}

    def families(self):
        return set(self.type)


def scrape(server):
    r = server.metrics_client().get("/metrics")
    if r.status != 200:
        raise AssertionError("GET /metrics: %s" % r)
    return Scrape(r.body.decode("utf-8"))


def delay_config(name, delay_ms, max_batch_size=8, extra=""):
    return model_config(
        name, "delay", [("INPUT0", "TYPE_INT32", (1,))], [("OUTPUT0", "TYPE_INT32", (1,))],
        max_batch_size,
        'parameters { key: "execute_delay_ms" value { string_value: "%d" } }\n%s' % (delay_ms, extra))


def one_input(value):
    return {"inputs": [{"name": "INPUT0", "shape": [1, 1], "datatype": "INT32", "data": [value]}]}


def simple_input(batch):
    return {"inputs": [{"name": n, "shape": [batch, 16], "datatype": "INT32",
                        "data": list(range(16)) * batch} for n in ("INPUT0", "INPUT1")]}


def parallel(n, fn):
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
        t.join(30)
    if errors:
        raise AssertionError("client errors: %r" % errors[:3])
    return results


def metric_names_in(text):
    """Metric names an expression or a file refers to (not recording-rule names)."""
    names = set()
    for m in re.finditer(r"(?<![:\w])((?:nv|inferd)_\w+)(?![:\w])", text):
        n = m.group(1)
        for suffix in ("_bucket", "_sum", "_count"):
            if n.endswith(suffix) and n.startswith("inferd_") and n != "inferd_batch_size":
                n = n[: -len(suffix)]
        names.add(n)
    return names


class MetricsServerTestCase(ServerTestCase):
    """harness.ServerTestCase with the metrics listener on (build_repository: one folder)."""
    SERVER_CLASS = MetricsServer

    @classmethod
    def build_repository(cls, root):
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# The endpoint, the families and the counts
# --------------------------------------------------------------------------------------------


class MetricsTest(MetricsServerTestCase):
    SERVER_ARGS = ("--metrics-interval-ms", "200")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", SIMPLE_CONFIG)
        write_model(repo, "simple_string", add_sub_config("simple_string", "TYPE_STRING"))
        write_model(repo, "batched", delay_config(
            "batched", 20, extra="dynamic_batching { max_queue_delay_microseconds: 20000 }"))
        write_model(repo, "tiny_queue", delay_config(
            "tiny_queue", 300, max_batch_size=1,
            extra="dynamic_batching { default_queue_policy { max_queue_size: 1 } }"))
        write_model(repo, "slow", delay_config("slow", 500, max_batch_size=1))
        write_model(repo, "broken", model_config(
            "broken", "no_such_backend", [("INPUT0", "TYPE_INT32", (1,))],
            [("OUTPUT0", "TYPE_INT32", (1,))]))
        return repo

    LOADED = ("simple", "simple_string", "batched", "tiny_queue", "slow")

    def delta(self, before, after, name, **labels):
        return after.value(name, **labels) - before.value(name, **labels)

    def test_endpoint(self):
        mc = self.server.metrics_client()
        for path in ("/metrics", "/metrics/"):
            r = mc.get(path)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.header("Content-Type"), CONTENT_TYPE)
            Scrape(r.body.decode("utf-8"))
        r = mc.post("/metrics", b"")
        self.assertEqual(r.status, 405, r)
        self.assertEqual(r.json(), {"error": "Method Not Allowed"})
        self.assertEqual(mc.request("PUT", "/metrics", b"x").status, 405)
        self.assertEqual(mc.get("/v2/health/live").status, 404)
        # The inference port does not serve metrics.
        self.assertNotEqual(self.client.get("/metrics").status, 200)

    def test_every_family_has_help_and_type_and_sorted_labels(self):
        s = scrape(self.server)
        for name in s.families():
            self.assertIn(name, s.help)
            self.assertTrue(s.help[name], name)
        for (name, labels), _ in s.samples.items():
            family = re.sub(r"_(bucket|sum|count)$", "", name) if name.startswith("inferd_") else name
            self.assertIn(family, s.type, name)
        for keys in s.label_orders:
            self.assertEqual(keys, sorted(keys))
        expected = {
            "nv_inference_request_success": "counter", "nv_inference_request_failure": "counter",
            "nv_inference_count": "counter", "nv_inference_exec_count": "counter",
            "nv_inference_pending_request_count": "gauge",
            "nv_inference_request_duration_us": "counter",
            "nv_inference_queue_duration_us": "counter",
            "nv_inference_compute_input_duration_us": "counter",
            "nv_inference_compute_infer_duration_us": "counter",
            "nv_inference_compute_output_duration_us": "counter",
            "nv_model_load_duration_secs": "gauge",
            "nv_cpu_utilization": "gauge", "nv_cpu_memory_total_bytes": "gauge",
            "nv_cpu_memory_used_bytes": "gauge",
            "inferd_request_duration_seconds": "histogram",
            "inferd_queue_duration_seconds": "histogram",
            "inferd_compute_infer_duration_seconds": "histogram",
            "inferd_batch_size": "histogram",
            "inferd_model_load_failures_total": "counter",
        }
        for name, t in expected.items():
            self.assertEqual(s.type.get(name), t, name)
        for model in self.LOADED:
            for name in ("nv_inference_request_success", "nv_inference_count",
                         "nv_inference_exec_count", "nv_inference_pending_request_count",
                         "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
                         "nv_inference_compute_input_duration_us",
                         "nv_inference_compute_infer_duration_us",
                         "nv_inference_compute_output_duration_us", "nv_model_load_duration_secs"):
                s.value(name, model=model, version="1")
            # All four failure series exist from model load.
            for reason in ("REJECTED", "CANCELED", "BACKEND", "OTHER"):
                s.value("nv_inference_request_failure", model=model, reason=reason, version="1")
            self.assertGreaterEqual(s.value("nv_model_load_duration_secs", model=model,
                                            version="1"), 0)
            self.assertEqual(s.get("inferd_request_duration_seconds_bucket", le="+Inf",
                                   model=model, version="1"),
                             s.get("inferd_request_duration_seconds_count", model=model,
                                   version="1"))
        self.assertNotIn("broken", s.series("nv_inference_request_success"))

    def test_counts_after_n_requests_equal_n(self):
        before = scrape(self.server)
        for i in range(10):
            r = self.client.infer("simple", simple_input(1))
            self.assertEqual(r.status, 200, r)
        for i in range(3):
            r = self.client.infer("simple", simple_input(4))
            self.assertEqual(r.status, 200, r)
        after = scrape(self.server)
        lv = dict(model="simple", version="1")
        self.assertEqual(self.delta(before, after, "nv_inference_request_success", **lv), 13)
        self.assertEqual(self.delta(before, after, "nv_inference_count", **lv), 10 + 3 * 4)
        self.assertEqual(self.delta(before, after, "nv_inference_exec_count", **lv), 13)
        for reason in ("REJECTED", "CANCELED", "BACKEND", "OTHER"):
            self.assertEqual(self.delta(before, after, "nv_inference_request_failure",
                                        reason=reason, **lv), 0)
        self.assertEqual(after.value("nv_inference_pending_request_count", **lv), 0)
        self.assertGreater(self.delta(before, after, "nv_inference_request_duration_us", **lv), 0)
        self.assertGreaterEqual(self.delta(before, after, "nv_inference_queue_duration_us", **lv), 0)
        self.assertGreater(
            self.delta(before, after, "nv_inference_compute_infer_duration_us", **lv), 0)
        # Histograms: one observation per request (latency) and per execution (batch size).
        self.assertEqual(self.delta(before, after, "inferd_request_duration_seconds_count", **lv), 13)
        self.assertEqual(self.delta(before, after, "inferd_request_duration_seconds_bucket",
                                    le="+Inf", **lv), 13)
        self.assertGreater(self.delta(before, after, "inferd_request_duration_seconds_sum", **lv), 0)
        self.assertEqual(self.delta(before, after, "inferd_queue_duration_seconds_count", **lv), 13)
        self.assertEqual(
            self.delta(before, after, "inferd_compute_infer_duration_seconds_count", **lv), 13)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_count", **lv), 13)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_sum", **lv), 22)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_bucket", le="1", **lv), 10)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_bucket", le="2", **lv), 10)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_bucket", le="4", **lv), 13)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_bucket", le="8", **lv), 13)
        # The same numbers as the statistics extension.
        st = self.client.get("/v2/models/simple/versions/1/stats").json()["model_stats"][0]
        after = scrape(self.server)
        self.assertEqual(after.value("nv_inference_request_success", **lv),
                         st["inference_stats"]["success"]["count"])
        self.assertEqual(after.value("nv_inference_count", **lv), st["inference_count"])
        self.assertEqual(after.value("nv_inference_exec_count", **lv), st["execution_count"])
        self.assertEqual(after.value("nv_inference_request_duration_us", **lv),
                         st["inference_stats"]["success"]["ns"] // 1000)

    def test_dynamic_batching_counts(self):
        before = scrape(self.server)
        results = parallel(16, lambda i: self.server.client().infer("batched", one_input(i)))
        self.assertEqual([r.status for r in results], [200] * 16)
        after = scrape(self.server)
        lv = dict(model="batched", version="1")
        self.assertEqual(self.delta(before, after, "nv_inference_request_success", **lv), 16)
        self.assertEqual(self.delta(before, after, "nv_inference_count", **lv), 16)
        execs = self.delta(before, after, "nv_inference_exec_count", **lv)
        self.assertGreaterEqual(execs, 2)  # max_batch_size 8
        self.assertLessEqual(execs, 16)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_count", **lv), execs)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_sum", **lv), 16)
        self.assertEqual(self.delta(before, after, "inferd_batch_size_bucket", le="8", **lv), execs)
        self.assertEqual(after.get("inferd_batch_size_bucket", le="16", **lv), None,
                         "batch buckets stop at the first power of two >= max_batch_size")
        self.assertEqual(self.delta(before, after, "inferd_request_duration_seconds_count", **lv), 16)
        self.assertEqual(
            self.delta(before, after, "inferd_compute_infer_duration_seconds_count", **lv), execs)
        # 20 ms per execution: every request took at least that.
        self.assertEqual(self.delta(before, after, "inferd_request_duration_seconds_bucket",
                                    le="0.01", **lv), 0)

    def test_failure_reasons(self):
        before = scrape(self.server)
        # BACKEND: add_sub fails on BYTES elements that are not integers.
        bad = {"inputs": [{"name": n, "shape": [1, 16], "datatype": "BYTES", "data": ["x"] * 16}
                          for n in ("INPUT0", "INPUT1")]}
        for _ in range(2):
            r = self.client.infer("simple_string", bad)
            self.assertNotEqual(r.status, 200, r)
        # REJECTED: one instance busy for 300 ms and a queue of one.
        statuses = [r.status for r in parallel(5, lambda i: self.server.client().infer(
            "tiny_queue", one_input(i)))]
        rejected = statuses.count(503)
        self.assertGreaterEqual(rejected, 1, statuses)
        # CANCELED: a queued request whose client hangs up.
        # Waits on the server's own queue and in-flight figures (/inferd/status)
        # rather than on sleeps, so that a loaded machine cannot reorder the
        # two requests: the first executes (500 ms), the second is queued
        # behind it when its client hangs up.
        busy = threading.Thread(target=lambda: self.server.client().infer("slow", one_input(1)))
        busy.start()
        self.assertTrue(wait_until(lambda: self.slow_figures() == (0, 1), 10, 0.01),
                        "the first request to 'slow' did not start executing" + self.diag())
        s = raw_connect(self.server.port)
        s.sendall(http_request_bytes("POST", "/v2/models/slow/infer",
                                     json.dumps(one_input(2)).encode()))
        self.assertTrue(wait_until(lambda: self.slow_figures()[0] == 1, 10, 0.01),
                        "the second request to 'slow' was not queued" + self.diag())
        s.close()
        busy.join(10)
        failed = lambda m, reason: (scrape(self.server).value(  # noqa: E731
            "nv_inference_request_failure", model=m, reason=reason, version="1")
            - before.value("nv_inference_request_failure", model=m, reason=reason, version="1"))
        self.assertTrue(wait_until(lambda: failed("slow", "CANCELED") == 1, 5),
                        "CANCELED did not count the hung-up request" + self.diag())
        after = scrape(self.server)
        d = lambda m, reason: self.delta(before, after, "nv_inference_request_failure",  # noqa
                                         model=m, reason=reason, version="1")
        self.assertEqual(d("simple_string", "BACKEND"), 2)
        self.assertEqual(d("tiny_queue", "REJECTED"), rejected)
        self.assertEqual(d("slow", "CANCELED"), 1)
        for m in ("simple_string", "tiny_queue", "slow"):
            self.assertEqual(d(m, "OTHER"), 0)
        self.assertEqual(self.delta(before, after, "nv_inference_request_success",
                                    model="tiny_queue", version="1"), statuses.count(200))
        self.assertEqual(self.delta(before, after, "nv_inference_request_success",
                                    model="simple_string", version="1"), 0)

    def slow_figures(self):
        """(queue, in-flight) of slow version 1, from the status endpoint."""
        for m in self.client.get("/inferd/status").json()["models"]:
            if m["name"] == "slow" and m["version"] == "1":
                return m["queue"], m["inflight"]
        return None

    def test_load_failures(self):
        s = scrape(self.server)
        self.assertGreaterEqual(s.value("inferd_model_load_failures_total", model="broken"), 1)
        for model in self.LOADED:
            self.assertEqual(s.value("inferd_model_load_failures_total", model=model), 0)

    def test_host_metrics(self):
        s = scrape(self.server)
        self.assertGreaterEqual(s.value("nv_cpu_utilization"), 0)
        self.assertLessEqual(s.value("nv_cpu_utilization"), 1)
        total = s.value("nv_cpu_memory_total_bytes")
        self.assertGreater(total, 0)
        self.assertGreater(s.value("nv_cpu_memory_used_bytes"), 0)
        self.assertLessEqual(s.value("nv_cpu_memory_used_bytes"), total)

    @unittest.skipIf(ctypes.util.find_library("nvidia-ml"), "NVML is present on this machine")
    def test_no_gpu_families_without_nvml(self):
        s = scrape(self.server)
        self.assertFalse(GPU_FAMILIES & s.families())
        self.assertNotIn("gpu_uuid", s.text)

    @unittest.skipIf(PROMTOOL is None, NO_PROMETHEUS % "promtool")
    def test_promtool_check_metrics_accepts_the_scrape(self):
        # Some traffic first, so that every kind of series has non-zero values.
        self.assertEqual(self.client.infer("simple", simple_input(2)).status, 200)
        text = scrape(self.server).text
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                           capture_output=True, timeout=30)
        out = (p.stdout + p.stderr).decode()
        # 0: clean; 3: lint problems only (1 would be a parse error).
        self.assertIn(p.returncode, (0, 3), out)
        for line in out.splitlines():
            if not line.strip():
                continue
            name, _, problem = line.partition(" ")
            self.assertTrue(name.startswith("nv_"), "inferd's own families must lint clean: " + line)
            self.assertIn(problem, TRITON_LINT, line)

    @unittest.skipIf(PROMTOOL is None, NO_PROMETHEUS % "promtool")
    def test_deploy_prometheus_config_and_rules(self):
        d = os.path.join(DEPLOY, "prometheus")
        for args in (["check", "config", os.path.join(d, "prometheus.yml")],
                     ["check", "rules", os.path.join(d, "inferd.rules.yml")],
                     ["test", "rules", os.path.join(d, "inferd.rules.test.yml")]):
            p = subprocess.run([PROMTOOL] + args, capture_output=True, timeout=30, cwd=d)
            self.assertEqual(p.returncode, 0, "promtool %s:\n%s" % (
                " ".join(args), (p.stdout + p.stderr).decode()))

    def test_deploy_files_name_only_metrics_inferd_exports(self):
        exported = scrape(self.server).families() | GPU_FAMILIES
        with open(os.path.join(DEPLOY, "grafana", "inferd-dashboard.json")) as f:
            dashboard = json.load(f)
        exprs = []
        for panel in dashboard["panels"]:
            for t in panel.get("targets", []):
                exprs.append(t["expr"])
        self.assertGreaterEqual(len(exprs), 15)
        # Panels drawing a recording rule use the metrics of its definition (and of the rules
        # that one reads); every rule a panel names must be defined.
        with open(os.path.join(DEPLOY, "prometheus", "inferd.rules.yml")) as f:
            recorded = {r["record"]: r["expr"] for g in yaml.safe_load(f)["groups"]
                        for r in g["rules"]}
        rule_name = re.compile(r"\b[a-z_]+:[a-zA-Z0-9_:]+")
        while any(rule_name.search(e) for e in exprs):
            expanded = []
            for e in exprs:
                for name in rule_name.findall(e):
                    self.assertIn(name, recorded, "the dashboard names an unrecorded rule")
                    expanded.append(recorded[name])
                expanded.append(rule_name.sub(" ", e))
            exprs = expanded
        used = set()
        for e in exprs:
            used |= metric_names_in(e)
        for wanted in ("nv_inference_count", "inferd_request_duration_seconds",
                       "nv_inference_queue_duration_us", "inferd_batch_size",
                       "nv_inference_request_failure", "nv_cpu_utilization", "nv_gpu_utilization"):
            self.assertIn(wanted, used)
        self.assertFalse(used - exported, "dashboard names unknown metrics")
        with open(os.path.join(DEPLOY, "prometheus", "inferd.rules.yml")) as f:
            rules = f.read()
        self.assertFalse(metric_names_in(rules) - exported, "rules name unknown metrics")


# --------------------------------------------------------------------------------------------
# A real Prometheus server scraping inferd under load
# --------------------------------------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BUCKETS = "0.001,0.002,0.004,0.008,0.016,0.032,0.064,0.128,1"


@unittest.skipIf(PROMETHEUS is None, NO_PROMETHEUS % "prometheus")
class PrometheusIntegrationTest(MetricsServerTestCase):
    SERVER_ARGS = ("--metrics-interval-ms", "500", "--metrics-latency-buckets", BUCKETS)
    prometheus = None

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "batched", delay_config(
            "batched", 5, extra="dynamic_batching { max_queue_delay_microseconds: 2000 }"))
        return repo

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.start_prometheus()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_prometheus(cls):
        cls.prom_port = free_port()
        config = os.path.join(cls.tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: inferd\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n"
                    % (os.path.join(DEPLOY, "prometheus", "inferd.rules.yml"),
                       cls.server.metrics_port))
        cls.prom_log = open(os.path.join(cls.tmp, "prometheus.log"), "w+b")
        cls.prometheus = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(cls.tmp, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % cls.prom_port],
            stdin=subprocess.DEVNULL, stdout=cls.prom_log, stderr=subprocess.STDOUT)

        def ready():
            if cls.prometheus.poll() is not None:
                raise AssertionError("prometheus exited: %s" % cls.prom_tail())
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % cls.prom_port,
                                            timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False
        if not wait_until(ready, 20, 0.1):
            raise AssertionError("prometheus not ready within 20 s: %s" % cls.prom_tail())

    @classmethod
    def prom_tail(cls):
        cls.prom_log.seek(0)
        return "\n---- prometheus log ----\n" + cls.prom_log.read().decode("utf-8", "replace")[-3000:]

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.prometheus is not None and cls.prometheus.poll() is None:
                cls.prometheus.terminate()
                try:
                    cls.prometheus.wait(10)
                except subprocess.TimeoutExpired:
                    cls.prometheus.kill()
                    cls.prometheus.wait(5)
        finally:
            if getattr(cls, "prom_log", None):
                cls.prom_log.close()
            super().tearDownClass()

    def query(self, q):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.prom_port,
                                                       urllib.parse.urlencode({"query": q}))
        with urllib.request.urlopen(url, timeout=5) as r:
            body = json.loads(r.read().decode("utf-8"))
        self.assertEqual(body["status"], "success", body)
        return [float(s["value"][1]) for s in body["data"]["result"]]

    def query_number(self, q, timeout):
        """Polls until the query returns one finite value; returns it (or fails)."""
        last = []

        def finite():
            last[:] = self.query(q)
            return len(last) == 1 and math.isfinite(last[0])
        if not wait_until(finite, timeout, 0.5):
            self.fail("%s returned %r%s" % (q, last, self.prom_tail()))
        return last[0]

    def test_prometheus_scrapes_inferd_under_load(self):
        # The buckets given on the command line are the ones exposed.
        s = scrape(self.server)
        les = sorted(float(dict(k[1])["le"]) for k in s.samples
                     if k[0] == "inferd_request_duration_seconds_bucket")
        self.assertEqual(les, sorted([float(b) for b in BUCKETS.split(",")] + [math.inf]))

        stop = time.monotonic() + 6
        sent = [0] * 4

        def load(i):
            c = Client(self.server.port, persistent=True)
            try:
                while time.monotonic() < stop:
                    r = c.infer("batched", one_input(i))
                    self.assertEqual(r.status, 200, r)
                    sent[i] += 1
            finally:
                c.close()
        threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        try:
            self.assertEqual(self.query_number('up{job="inferd"}', 10), 1)
            rate = self.query_number('sum(rate(nv_inference_count{model="batched"}[30s]))', 15)
            self.assertGreater(rate, 0)
            p99 = self.query_number(
                'histogram_quantile(0.99, sum by (le) '
                '(rate(inferd_request_duration_seconds_bucket{model="batched"}[30s])))', 15)
            self.assertGreater(p99, 0.001)  # every request sleeps 5 ms
            self.assertLessEqual(p99, 1)
            # The recording rules of deploy/prometheus evaluate on real data.
            queue = self.query_number(
                'model:nv_inference_queue_duration_us:per_request_rate1m{model="batched"}', 15)
            self.assertGreaterEqual(queue, 0)
            self.query_number('model:inferd_request_duration_seconds:p99_rate5m{model="batched"}',
                              15)
            batch = self.query_number('model:inferd_batch_size:mean_rate5m{model="batched"}', 15)
            self.assertGreaterEqual(batch, 1)
        finally:
            stop = 0
            for t in threads:
                t.join(15)
        self.assertGreater(sum(sent), 0)
        # Counts after the load equal the requests sent.
        s = scrape(self.server)
        self.assertEqual(s.value("nv_inference_request_success", model="batched", version="1"),
                         sum(sent))


if __name__ == "__main__":
    unittest.main()
