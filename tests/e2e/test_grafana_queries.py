#!/usr/bin/python3
"""The shipped Grafana dashboard, rendered against real data (Grafana itself is not in Debian).

A real inferd (loopback ports; a plain model, a dynamically batching model with two versions,
an ensemble, a model that fails requests, one whose queue overflows, one that fails to load; a
fake NVML so that the GPU families exist) serves bounded load over HTTP and gRPC, failing
requests included. A real Prometheus (Debian's `prometheus`: temporary store, loopback port,
1 s scrapes, the shipped deploy/prometheus/inferd.rules.yml evaluated every second) scrapes it.
Then every query Grafana would send for deploy/grafana/inferd-dashboard.json goes to
Prometheus's HTTP API: the template variables' `label_values` queries, and every panel target
with its variables substituted as Grafana does (tests/e2e/grafana_util.py: an unknown variable
fails), as a range query (time series, heatmap) or an instant one (tables), once with every
variable on "All" and once with every value selected. Each must succeed and return data;
the failure panels must show failures (they happened); every recording rule must have data;
the prometheus-adapter's query (deploy/kubernetes/prometheus-adapter) must give the HPA its
value. A query that returns nothing fails the test naming the panel.

Bounded: about 30 s; every process started here is stopped and the temporary directory removed
in tearDownClass, whatever happened. Skipped, saying why, only without the `prometheus` package
or python3-grpcio.
"""

import os
import re
import shutil
import tempfile
import threading
import time
import unittest

import yaml

import grafana_util as gu
import harness
import prometheus_util as pu
from harness import (REPO_ROOT, SIMPLE_CONFIG, Client, GrpcServer, MetricsListener, add_sub_config,
                     model_config, write_model)
from test_ensemble import ensemble_config
from test_grpc_compat import SERVICE, generate_messages, grpc, int32s

DEPLOY = os.path.join(REPO_ROOT, "deploy")
DASHBOARD = os.path.join(DEPLOY, "grafana", "inferd-dashboard.json")
RULES = os.path.join(DEPLOY, "prometheus", "inferd.rules.yml")
ADAPTER = os.path.join(DEPLOY, "kubernetes", "prometheus-adapter", "rules.yaml")
I32 = "TYPE_INT32"
SERVED = ("simple", "batched", "pipeline")  # the models the load drives successfully
DATA_TIMEOUT_S = 30  # from the start of the load until every series must be there
LOAD_MAX_S = 90  # the load stops by itself after this, whatever the test does
FAILURE_REASONS = {"BACKEND", "REJECTED"}  # the failures the load causes


def reasons_above_zero(data):
    """The `reason` labels of the series of a query answer with some value above 0."""
    out = set()
    for smp in data["result"]:
        values = smp["values"] if "values" in smp else [smp["value"]]
        if any(float(v[1]) > 0 for v in values):
            out.add(smp["metric"].get("reason"))
    return out


class MetricsGrpcServer(MetricsListener, GrpcServer):
    """inferd with gRPC and the metrics listener on."""


def fake_nvml():
    """tests/fakes/fake_nvml.c as built (the test-backends directory of the build)."""
    build = os.environ.get("INFERD_BUILD_DIR") or os.path.dirname(os.path.dirname(harness.INFERD_BIN))
    return os.path.join(build, "test-backends", "libfake_nvml.so")


def build_repository(repo):
    write_model(repo, "simple", SIMPLE_CONFIG)
    # BACKEND failures: add_sub fails on BYTES elements that are not integers.
    write_model(repo, "simple_string", add_sub_config("simple_string", "TYPE_STRING"))
    delay = 'parameters { key: "execute_delay_ms" value { string_value: "%d" } }\n'
    write_model(repo, "batched", model_config(
        "batched", "delay", [("INPUT0", I32, (1,))], [("OUTPUT0", I32, (1,))], 8,
        delay % 5 + "dynamic_batching { max_queue_delay_microseconds: 2000 }\n"
        "version_policy: { all { } }"), versions=(1, 2))
    # REJECTED failures: one instance busy 100 ms and a queue of one.
    write_model(repo, "tiny_queue", model_config(
        "tiny_queue", "delay", [("INPUT0", I32, (1,))], [("OUTPUT0", I32, (1,))], 1,
        delay % 100 + "dynamic_batching { default_queue_policy { max_queue_size: 1 } }"))
    # (a+b, a-b), then (2a, 2b).
    write_model(repo, "pipeline", ensemble_config(
        "pipeline", [("A", I32, (16,)), ("B", I32, (16,))], [("TWO_A", I32, (16,)), ("TWO_B", I32, (16,))],
        [("simple", {"INPUT0": "A", "INPUT1": "B"}, {"OUTPUT0": "sum", "OUTPUT1": "diff"}),
         ("simple", {"INPUT0": "sum", "INPUT1": "diff"}, {"OUTPUT0": "TWO_A", "OUTPUT1": "TWO_B"})]))
    # A load failure (inferd_model_load_failures_total).
    write_model(repo, "broken", model_config("broken", "no_such_backend", [("INPUT0", I32, (1,))],
                                             [("OUTPUT0", I32, (1,))]))


def http_request(model):
    if model == "batched":
        return {"inputs": [{"name": "INPUT0", "shape": [1, 1], "datatype": "INT32", "data": [7]}]}
    names = ("A", "B") if model == "pipeline" else ("INPUT0", "INPUT1")
    if model == "simple_string":  # not integers: the backend fails the request
        return {"inputs": [{"name": n, "shape": [1, 16], "datatype": "BYTES", "data": ["x"] * 16}
                           for n in names]}
    return {"inputs": [{"name": n, "shape": [1, 16], "datatype": "INT32", "data": list(range(16))}
                       for n in names]}


class Load:
    """Bounded traffic in background threads: successes over HTTP and gRPC, and failures
    (BACKEND over both, REJECTED by bursts at tiny_queue). ``errors`` keeps unexpected answers."""

    def __init__(self, server, pb, channel):
        self.server, self.pb = server, pb
        self.infer = channel.unary_unary(SERVICE + "ModelInfer",
                                         request_serializer=lambda m: m.SerializeToString(),
                                         response_deserializer=pb.ModelInferResponse.FromString)
        self.stop_event = threading.Event()
        self.deadline = time.monotonic() + LOAD_MAX_S
        self.lock = threading.Lock()
        self.counts = {}
        self.errors = []
        self.threads = [threading.Thread(target=f, daemon=True) for f in
                        (self.http_worker, self.http_worker, self.grpc_worker, self.failure_worker)]

    def running(self):
        return not self.stop_event.is_set() and time.monotonic() < self.deadline

    def count(self, what, error=None):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1
            if error is not None and len(self.errors) < 5:
                self.errors.append(error)

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join(20)

    def http_worker(self):
        c = Client(self.server.port, persistent=True)
        try:
            while self.running():
                for model, version in (("simple", None), ("batched", "1"), ("batched", "2"),
                                       ("pipeline", None)):
                    r = c.infer(model, http_request(model), version=version)
                    self.count("http ok" if r.status == 200 else "http unexpected",
                               None if r.status == 200 else ("HTTP", model, r))
                self.stop_event.wait(0.01)
        finally:
            c.close()

    def grpc_request(self, model, version="", bad=False):
        req = self.pb.ModelInferRequest(model_name=model, model_version=version)
        if model == "batched":
            req.inputs.add(name="INPUT0", datatype="INT32", shape=[1, 1])
            req.raw_input_contents.append(int32s([7]))
            return req
        for name in (("A", "B") if model == "pipeline" else ("INPUT0", "INPUT1")):
            if bad:
                t = req.inputs.add(name=name, datatype="BYTES", shape=[1, 16])
                t.contents.bytes_contents.extend([b"x"] * 16)
            else:
                req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
                req.raw_input_contents.append(int32s(list(range(16))))
        return req

    def grpc_worker(self):
        while self.running():
            for model, version in (("simple", ""), ("batched", "2"), ("pipeline", "")):
                try:
                    self.infer(self.grpc_request(model, version), timeout=10)
                    self.count("grpc ok")
                except grpc.RpcError as e:
                    self.count("grpc unexpected", ("gRPC", model, e.code(), e.details()))
            self.stop_event.wait(0.01)

    def failure_worker(self):
        c = Client(self.server.port, persistent=True)
        n = 0
        try:
            while self.running():
                r = c.infer("simple_string", http_request("simple_string"))
                self.count("http failed" if r.status != 200 else "http unexpected",
                           None if r.status != 200 else ("HTTP", "simple_string", r))
                try:
                    self.infer(self.grpc_request("simple_string", bad=True), timeout=10)
                    self.count("grpc unexpected", ("gRPC", "simple_string", "succeeded"))
                except grpc.RpcError:
                    self.count("grpc failed")
                if n % 4 == 0:
                    self.burst()
                n += 1
                self.stop_event.wait(0.25)
        finally:
            c.close()

    def burst(self):
        """Four requests at once at a model with one busy instance and a queue of one: some are
        REJECTED (503)."""
        def one():
            r = self.server.client().infer("tiny_queue", http_request("batched"))
            self.count("http rejected" if r.status == 503 else "http burst %d" % r.status)
        ts = [threading.Thread(target=one) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(10)


class HelpersTest(unittest.TestCase):
    """The pure helpers the dashboard check relies on: the substitution refuses what it does not
    know; the reference quantile follows PromQL's rules (deploy/prometheus/inferd.rules.test.yml
    checks the same figures against promtool)."""

    def test_bucket_quantile(self):
        inf = float("inf")
        # Per second: 40 <= 0.25, 100 <= 0.5, 196 <= 1, 200 in all.
        b = [(0.25, 40), (0.5, 100), (1.0, 196), (inf, 200)]
        self.assertEqual(pu.bucket_quantile(0.5, b), 0.5)  # the rank at a bucket's top
        self.assertEqual(pu.bucket_quantile(0.95, b), 0.96875)  # 0.5 + 0.5 * 90 / 96
        self.assertEqual(pu.bucket_quantile(0.99, b), 1.0)  # beyond every finite bound
        q = [(0.001, 80), (0.002, 98), (0.004, 100), (inf, 100)]
        self.assertEqual(pu.bucket_quantile(0.5, q), 0.000625)  # first bucket: from 0
        self.assertEqual(pu.bucket_quantile(0.99, q), 0.003)
        self.assertEqual(pu.bucket_quantile(0.5, [(inf, 200), (1.0, 100)]), 1.0)  # order-free
        self.assertEqual(pu.bucket_quantile(0.5, [(1.0, 10), (2.0, 9), (inf, 10)]), 0.5)  # monotonic
        for empty in ([(1.0, 0), (inf, 0)], [(inf, 5)], [(1.0, 5), (2.0, 5)]):
            self.assertNotEqual(pu.bucket_quantile(0.5, empty), pu.bucket_quantile(0.5, empty), empty)

    def test_variables_and_formats(self):
        values = dict(gu.builtin_values(60, 1, 1), model=".*", version=["1", "2"], job=["a.b"])
        self.assertEqual(gu.substitute('x{model=~"$model",version=~"${version}"}[$__rate_interval]', values),
                         'x{model=~".*",version=~"(1|2)"}[4s]')
        self.assertEqual(gu.substitute('x{job=~"[[job]]"}[$__range]', values), 'x{job=~"a\\\\.b"}[60s]')
        self.assertEqual(gu.substitute("${version:pipe}", values), "1|2")
        for bad in ('x{model=~"$modle"}', "x[$__rate_intreval]", "${model:json}", "[[nope]]"):
            with self.assertRaises(gu.UnknownVariable, msg=bad):
                gu.substitute(bad, values)

    def test_label_values_and_adapter_templates(self):
        self.assertEqual(gu.parse_label_values('label_values(up{job=~"$job"}, model)'),
                         ('up{job=~"$job"}', "model"))
        self.assertEqual(gu.parse_label_values("label_values(job)"), (None, "job"))
        with self.assertRaises(ValueError):
            gu.parse_label_values("query_result(up)")
        self.assertEqual(gu.adapter_query("max(<<.Series>>{<<.LabelMatchers>>})", "s"), "max(s)")
        with self.assertRaises(gu.UnknownVariable):
            gu.adapter_query("max(<<.Seires>>)", "s")


@unittest.skipIf(pu.PROMETHEUS is None, pu.NOT_INSTALLED)
@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class DashboardQueriesTest(unittest.TestCase):
    server = prometheus = load = channel = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-grafana-")
        try:
            cls.start_everything()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_everything(cls):
        nvml = fake_nvml()
        if not os.path.exists(nvml):
            raise AssertionError("the fake NVML library is not built (%s): the GPU panels need it; "
                                 "build the fake_nvml target or set INFERD_BUILD_DIR" % nvml)
        libdir = os.path.join(cls.tmp, "nvml")
        os.makedirs(libdir)
        os.symlink(nvml, os.path.join(libdir, "libnvidia-ml.so.1"))
        repo = os.path.join(cls.tmp, "models")
        build_repository(repo)
        cls.server = MetricsGrpcServer([repo], ["--metrics-interval-ms", "200"],
                                       env={"LD_LIBRARY_PATH": libdir}).start()
        cls.prometheus = pu.PrometheusProcess(
            cls.tmp, ["127.0.0.1:%d" % cls.server.metrics_port], [RULES]).start()
        cls.prometheus_started = time.time()
        cls.pb, _ = generate_messages(os.path.join(cls.tmp, "gen"))
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)
        cls.load = Load(cls.server, cls.pb, cls.channel).start()
        cls.data_deadline = time.monotonic() + DATA_TIMEOUT_S
        cls.dashboard = gu.load_dashboard(DASHBOARD)

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.load is not None:
                cls.load.stop()
            if cls.channel is not None:
                cls.channel.close()
        finally:
            try:
                if cls.prometheus is not None:
                    cls.prometheus.stop()
            finally:
                try:
                    if cls.server is not None:
                        cls.server.stop()
                finally:
                    shutil.rmtree(cls.tmp, ignore_errors=True)

    # -- helpers -----------------------------------------------------------------------------

    def diag(self):
        return "%s\n---- inferd log ----\n%s" % (self.prometheus.log_tail(1500), self.server.log_tail(20))

    def poll(self, run, accept):
        """Runs ``run()`` until ``accept(result)`` or the data deadline (at least one try);
        returns (accepted, last result or the last error text)."""
        while True:
            try:
                last = run()
                if accept(last):
                    return True, last
            except pu.PrometheusError as e:
                last = "error: %s" % e
            if time.monotonic() >= self.data_deadline:
                return False, last
            time.sleep(0.5)

    def variable_values(self, selected):
        """Template variables as Grafana resolves them in order: "All" (the allValue), or
        (``selected``) the list of every value its label_values query returned."""
        values = {}
        for var in gu.template_variables(self.dashboard):
            if var.get("type") == "datasource":
                continue
            self.assertEqual(var.get("type"), "query", var["name"])
            selector, label = gu.parse_label_values(gu.template_query(var))
            expr = gu.substitute(selector, values) if selector else None
            ok, got = self.poll(lambda: self.prometheus.label_values(label, expr), bool)
            self.assertTrue(ok, "template variable $%s: label_values(%s, %s) returned %r%s"
                            % (var["name"], expr, label, got, self.diag()))
            values[var["name"]] = sorted(got) if selected else var.get("allValue", ".*")
        return values

    def run_target(self, panel, target, variables):
        """(problem or None, answer data) for one panel target."""
        end = time.time()
        start = max(self.prometheus_started, end - 60)
        step = 1
        values = dict(variables, **gu.builtin_values(int(end - start), step, pu.SCRAPE_INTERVAL_S))
        where = 'panel %s "%s" target %s' % (panel.get("id"), panel.get("title"), target.get("refId"))
        try:
            expr = gu.substitute(target["expr"], values)
        except gu.UnknownVariable as e:
            return "%s: %s" % (where, e), None
        ranged = gu.is_range_target(panel, target)
        failure = "nv_inference_request_failure" in expr

        def run():
            if ranged:
                return self.prometheus.query_range(expr, time.time() - (end - start), time.time(), step)
            return self.prometheus.query(expr)

        by_reason = failure and re.search(r"by \([^)]*\breason\b", expr)

        def accept(data):
            vals = [v for v in pu.values_of(data) if v == v]  # NaN is not data
            if not failure:
                return bool(vals)
            if by_reason:  # every reason the load caused must show
                return FAILURE_REASONS <= reasons_above_zero(data)
            return bool(vals) and max(vals) > 0
        ok, data = self.poll(run, accept)
        if ok:
            return None, data
        what = "data"
        if failure:
            what = "failures of every reason in %s (there were some)" % sorted(FAILURE_REASONS) \
                if by_reason else "failures (there were some)"
        return ("%s (%s query) returned no %s:\n    %s\n    -> %s"
                % (where, "range" if ranged else "instant", what, expr, str(data)[:300])), data

    def check_every_target(self, selected):
        variables = self.variable_values(selected)
        problems, answers = [], {}
        for panel, target in gu.targets(self.dashboard):
            problem, data = self.run_target(panel, target, variables)
            if problem:
                problems.append(problem)
            answers[(panel["title"], target["refId"])] = data
        if problems:
            self.fail("%d of %d dashboard queries failed (variables %s):\n%s%s" % (
                len(problems), len(answers), variables, "\n".join(problems), self.diag()))
        return answers

    # -- tests ---------------------------------------------------------------------------------

    def test_dashboard_queries_return_data_all_selected(self):
        answers = self.check_every_target(selected=False)
        self.assertGreaterEqual(len(answers), 20)
        series = answers[("Throughput (inferences/s)", "A")]["result"]
        seen = {(s["metric"].get("model"), s["metric"].get("version")) for s in series}
        for mv in (("simple", "1"), ("batched", "1"), ("batched", "2"), ("pipeline", "1")):
            self.assertIn(mv, seen, "throughput panel lacks a model version")
        self.assertLessEqual(FAILURE_REASONS, reasons_above_zero(answers[("Failures by reason", "A")]))

    def test_dashboard_queries_return_data_every_value_selected(self):
        self.check_every_target(selected=True)

    def test_template_variables_list_every_model_and_version(self):
        v = self.variable_values(selected=True)
        self.assertEqual(v["job"], ["inferd"])
        self.assertLessEqual(set(SERVED) | {"simple_string", "tiny_queue"}, set(v["model"]))
        self.assertNotIn("broken", v["model"])
        self.assertEqual(v["version"], ["1", "2"])

    def test_every_recording_rule_has_data(self):
        with open(RULES) as f:
            rules = [r["record"] for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
        self.assertGreaterEqual(len(rules), 30)
        missing = []
        for name in rules:
            ok, got = self.poll(lambda: self.prometheus.query(name),
                                lambda d: any(v == v for v in pu.values_of(d)))
            if not ok:
                missing.append("%s -> %s" % (name, str(got)[:200]))
        if missing:
            self.fail("recording rules without data:\n%s%s" % ("\n".join(missing), self.diag()))

    def test_prometheus_adapter_queries(self):
        with open(ADAPTER) as f:
            rules = yaml.safe_load(f)["rules"]["external"]
        self.assertTrue(rules)
        for rule in rules:
            series = gu.adapter_series_name(rule)
            ok, got = self.poll(lambda: self.prometheus.series(rule["seriesQuery"]), bool)
            self.assertTrue(ok, "adapter seriesQuery %r found no series: %r%s"
                            % (rule["seriesQuery"], got, self.diag()))
            expr = gu.adapter_query(rule["metricsQuery"], series)
            ok, got = self.poll(lambda: self.prometheus.query(expr),
                                lambda d: len(pu.values_of(d)) == 1 and pu.values_of(d)[0] >= 0)
            self.assertTrue(ok, "adapter metricsQuery %s gave the HPA no value: %r%s"
                            % (expr, got, self.diag()))

    def test_quantiles_match_the_documented_algorithm(self):
        """histogram_quantile on inferd's real buckets equals pu.bucket_quantile (the definition
        the status page computes by) on the same bucket counts, for every model and version."""
        at = time.time() - 1
        compared = 0
        for h in ("inferd_request_duration_seconds", "inferd_queue_duration_seconds",
                  "inferd_compute_infer_duration_seconds"):
            counts = "sum by (model, version, le) (increase(%s_bucket[1m]))" % h
            ok, got = self.poll(lambda: self.prometheus.query(counts, at), lambda d: d["result"])
            self.assertTrue(ok, "%s: %r" % (counts, got))
            by_mv = {}
            for smp in got["result"]:
                mv = (smp["metric"]["model"], smp["metric"]["version"])
                by_mv.setdefault(mv, []).append((float(smp["metric"]["le"]), float(smp["value"][1])))
            for q in (0.5, 0.99):
                theirs = {(smp["metric"]["model"], smp["metric"]["version"]): float(smp["value"][1])
                          for smp in self.prometheus.query("histogram_quantile(%s, %s)" % (q, counts),
                                                           at)["result"]}
                self.assertEqual(set(theirs), set(by_mv), h)
                for mv, buckets in by_mv.items():
                    ours = pu.bucket_quantile(q, buckets)
                    if ours != ours:
                        self.assertNotEqual(theirs[mv], theirs[mv], (h, q, mv, buckets))
                        continue
                    self.assertAlmostEqual(ours, theirs[mv], delta=1e-12 * max(1, ours),
                                           msg=(h, q, mv, buckets))
                    compared += 1
        self.assertGreaterEqual(compared, 12)

    def test_zz_load_went_through(self):
        """The traffic the panels show happened as planned (runs last)."""
        c = self.load.counts
        self.assertFalse(self.load.errors, "unexpected answers: %r" % self.load.errors)
        for what in ("http ok", "grpc ok", "http failed", "grpc failed", "http rejected"):
            self.assertGreater(c.get(what, 0), 0, "%s: %r" % (what, c))


if __name__ == "__main__":
    unittest.main()
