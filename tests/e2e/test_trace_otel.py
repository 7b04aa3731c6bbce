#!/usr/bin/python3
"""OpenTelemetry tracing across processes: a client → infer-gateway (HTTP and
gRPC) → inferd → an ensemble's steps → model execution is one trace in a real
OTLP/HTTP receiver process (otlp_receiver.py, decoding with the OTLP proto).

Checked: the client's trace id kept (and a new trace started without one); the
span tree gateway SERVER → gateway CLIENT → inferd InferRequest → model span
(ensemble: the pipeline's span → its steps' spans) → compute, every parent
right; each process's resource service.name; timestamps ordered; tracestate
carried. Then the exporter's robustness: a collector answering 503, hanging or
down leaves requests at their normal latency, the lost spans are counted in
both processes' metrics, and shutdown waits no longer than the export timeout.
"""

import importlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Client, GrpcServer, MetricsListener  # noqa: E402
import otlp_util  # noqa: E402
import pipeline_util as pu  # noqa: E402

SKIP = pu.examples_missing()
PROTO_DIR = os.path.join(pu.REPO_ROOT, "proto")
GATEWAY = "infer-gateway"
INFERD = "inferd"
# Spans of two processes on one host: their wall clocks agree, but each
# converts its own timestamps (inferd from a steady clock, with an offset).
CLOCK_SLACK_NS = 5_000_000
CLIENT_TRACESTATE = "vendor=opaque-1,other=2"


def client_context():
    """A caller's (trace id, span id, traceparent), new for each request: every
    test's trace is its own."""
    trace_id, span_id = os.urandom(16).hex(), os.urandom(8).hex()
    return trace_id, span_id, "00-%s-%s-01" % (trace_id, span_id)
# Exports fast (tests wait for spans) and give up fast (robustness checks).
EXPORT_ENV = {"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_EXPORTER_OTLP_TIMEOUT": "1000"}


def trace_flags(url, rate, extra=()):
    """The --trace-config flags both programs take."""
    flags = []
    for setting in ["mode=opentelemetry", "level=TIMESTAMPS", "rate=%d" % rate,
                    "opentelemetry,url=" + url] + list(extra):
        flags += ["--trace-config", setting]
    return flags


def gateway_messages(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    done = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--python_out=" + out_dir,
                           os.path.join(PROTO_DIR, "gateway.proto")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("protoc failed: " + done.stderr)
    sys.path.insert(0, out_dir)
    return importlib.import_module("gateway_pb2")


def metric_sum(text, pattern):
    """The sum of every series whose family name matches `pattern`."""
    total, seen = 0.0, False
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
        if m and re.search(pattern, m.group(1)):
            total += float(m.group(3))
            seen = True
    return total if seen else None


class TracedInferd(MetricsListener, GrpcServer):
    """inferd with gRPC and the metrics listener on kernel-chosen ports."""


class Processes:
    """A receiver, inferd and infer-gateway, both exporting to the receiver."""

    def __init__(self, tmp, receiver_mode="ok", collector_url=None, extra_trace=()):
        self.tmp = tmp
        self.receiver = self.inferd = self.gateway = self.http = None
        try:
            self._start(receiver_mode, collector_url, extra_trace)
        except BaseException:
            self.stop()
            raise

    def _start(self, receiver_mode, collector_url, extra_trace):
        tmp = self.tmp
        repo = os.path.join(tmp, "models")
        if not os.path.isdir(repo):
            os.makedirs(repo)
            pu.copy_digits_pipeline(repo)
        if collector_url is None:
            self.receiver = otlp_util.OtlpReceiver(os.path.join(tmp, "otlp-gen"),
                                                   mode=receiver_mode).start()
            collector_url = self.receiver.url
        self.url = collector_url
        # inferd traces only what arrives with a W3C context (rate 0): every
        # inferd span here is there because the gateway propagated it.
        self.inferd = TracedInferd([repo], trace_flags(collector_url, 0, extra_trace),
                                   env=EXPORT_ENV).start()
        os.environ.update(EXPORT_ENV)  # the gateway inherits the test's environment
        self.gateway = pu.Gateway("127.0.0.1:%d" % self.inferd.grpc_port,
                                  ["--labels", "digits_pipeline=" + os.path.join(
                                      pu.EXAMPLES, "digits_pipeline", "labels.txt")]
                                  + trace_flags(collector_url, 1, extra_trace)).start()
        self.http = Client(self.gateway.ports["HTTP"], persistent=True)

    def stop(self):
        try:
            if self.http:
                self.http.close()
            if self.gateway:
                self.gateway.stop()
        finally:
            try:
                if self.inferd:
                    self.inferd.stop()
            finally:
                if self.receiver:
                    self.receiver.stop()


@unittest.skipIf(SKIP, SKIP)
class OneTraceAcrossProcessesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-otel-")
        cls.p = None
        cls.channel = None
        try:
            cls.pb = gateway_messages(os.path.join(cls.tmp, "gen"))
            cls.p = Processes(cls.tmp)
            cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.p.gateway.ports["gRPC"])
            cls.classify_rpc = cls.channel.unary_unary(
                "/inferd_gateway.v1.Gateway/Classify",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=cls.pb.ClassifyResponse.FromString)
            cls.image = pu.digit_images(".png")[0][0]
            # The gateway's first call for a pipeline also asks inferd for its
            # metadata (a CLIENT span of its own): done here, out of the way.
            for pipeline in ("digits_pipeline", "digits_preprocess"):
                r = cls.p.http.post("/v1/classify/" + pipeline, cls.image,
                                    {"Content-Type": "application/octet-stream"})
                if r.status != 200:
                    raise AssertionError("warm-up: %r" % r)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.channel:
                cls.channel.close()
            if cls.p:
                cls.p.stop()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # -- requests ----------------------------------------------------------------------------

    def classify_http(self, pipeline, headers=None):
        h = {"Content-Type": "application/octet-stream"}
        h.update(headers or {})
        r = self.p.http.post("/v1/classify/" + pipeline, self.image, h)
        self.assertEqual(r.status, 200, r)

    def classify_grpc(self, pipeline, metadata=()):
        self.classify_rpc(self.pb.ClassifyRequest(pipeline=pipeline, image=self.image, top_k=3),
                          metadata=list(metadata), timeout=15)

    # -- the tree ----------------------------------------------------------------------------

    def wait_for_trace(self, gateway_span_name, since_ns, trace_id=None, model_spans=1):
        """The spans of the one trace whose gateway SERVER span started after
        since_ns (or of trace_id), once the whole chain has arrived."""
        def find(spans):
            servers = [s for s in spans if s["name"] == gateway_span_name
                       and s["start_ns"] >= since_ns
                       and s["resource"].get("service.name") == GATEWAY
                       and (trace_id is None or s["trace_id"] == trace_id)]
            if len(servers) != 1:
                return None
            trace = otlp_util.of_trace(spans, servers[0]["trace_id"])
            computes = [s for s in trace if s["name"] == "compute"]
            roots = [s for s in trace if s["name"] == "InferRequest"]
            return trace if roots and len(computes) >= model_spans else None

        found = {}
        self.p.receiver.wait_for(lambda spans: found.update(t=find(spans)) or found["t"],
                                 what="the trace of " + gateway_span_name)
        time.sleep(0.3)  # any straggler of the same trace (none expected)
        return otlp_util.of_trace(self.p.receiver.spans(), found["t"][0]["trace_id"])

    def only(self, spans, what):
        self.assertEqual(len(spans), 1, "%s: %r" % (what, [s["name"] for s in spans]))
        return spans[0]

    def assert_chain(self, trace, gateway_span_name, pipeline, steps, parent_of_root,
                     tracestate):
        """gateway SERVER → gateway CLIENT → InferRequest → `pipeline` → steps →
        compute; returns the tree."""
        text = otlp_util.describe(trace)
        tree = otlp_util.SpanTree(trace)
        self.assertEqual(len({s["trace_id"] for s in trace}), 1, text)
        self.assertEqual(len({s["span_id"] for s in trace}), len(trace), "span ids unique\n" + text)

        server = self.only(tree.named(gateway_span_name), "gateway server span\n" + text)
        self.assertEqual(server["kind_name"], "SPAN_KIND_SERVER", text)
        self.assertEqual(server["parent_span_id"], parent_of_root, text)
        self.assertEqual(server["attributes"].get("gateway.pipeline"), pipeline, text)
        self.assertEqual(tree.roots(), [server], text)

        self.assertEqual([k["name"] for k in tree.kids(server)],
                         ["inference.GRPCInferenceService/ModelInfer"],
                         "the gateway's calls to inferd\n" + text)
        client = tree.kids(server)[0]
        self.assertEqual(client["kind_name"], "SPAN_KIND_CLIENT", text)
        self.assertEqual(client["attributes"].get("rpc.grpc.status_code"), 0, text)

        request = self.only(tree.kids(client), "inferd's root span\n" + text)
        self.assertEqual(request["name"], "InferRequest", text)
        self.assertEqual(request["kind_name"], "SPAN_KIND_SERVER", text)

        model = self.only(tree.kids(request, pipeline), "the model span\n" + text)
        if steps:
            step_spans = tree.kids(model)
            self.assertEqual(sorted(s["name"] for s in step_spans if s["name"] != "compute"),
                             sorted(steps), text)
            executed = [s for s in step_spans if s["name"] in steps]
        else:
            executed = [model]
        for span in executed:
            self.assertEqual(len(tree.kids(span, "compute")), 1,
                             "compute under %s\n%s" % (span["name"], text))
            self.assertEqual(span["attributes"].get("triton.model_name"), span["name"], text)

        for span in trace:
            service = span["resource"].get("service.name")
            self.assertEqual(service, GATEWAY if span in (server, client) else INFERD,
                             "service.name of %s\n%s" % (span["name"], text))
            self.assertLessEqual(span["start_ns"], span["end_ns"], span["name"])
            parent = tree.parent(span)
            if parent is not None:
                self.assertGreaterEqual(span["start_ns"], parent["start_ns"] - CLOCK_SLACK_NS,
                                        "%s starts before its parent\n%s" % (span["name"], text))
                if span is request:
                    # Across processes only the start is ordered: inferd's span
                    # may end (its send completing) after the gateway has its
                    # answer.
                    self.assertLessEqual(span["start_ns"], parent["end_ns"] + CLOCK_SLACK_NS,
                                         "InferRequest starts after the call ended\n" + text)
                else:
                    self.assertLessEqual(span["end_ns"], parent["end_ns"] + CLOCK_SLACK_NS,
                                         "%s ends after its parent\n%s" % (span["name"], text))
            # The W3C tracestate travels with the trace into inferd unchanged.
            self.assertEqual(span["trace_state"], tracestate,
                             "tracestate of %s\n%s" % (span["name"], text))
            self.assertEqual(span["flags"] & 0x01, 0x01, "sampled: " + span["name"])
        return tree

    # -- tests -------------------------------------------------------------------------------

    def test_http_with_the_clients_traceparent_ensemble(self):
        trace_id, span_id, traceparent = client_context()
        t0 = time.time_ns()
        self.classify_http("digits_pipeline", {"traceparent": traceparent,
                                               "tracestate": CLIENT_TRACESTATE})
        trace = self.wait_for_trace("POST /v1/classify", t0, trace_id, model_spans=2)
        tree = self.assert_chain(trace, "POST /v1/classify", "digits_pipeline",
                                 ["digits_preprocess", "digits"], span_id, CLIENT_TRACESTATE)
        server = tree.named("POST /v1/classify")[0]
        self.assertEqual(server["attributes"].get("http.response.status_code"), 200)
        self.assertEqual(server["flags"] & 0x300, 0x300, "the gateway's parent was remote")
        # The ensemble's steps ran in order: preprocess ended before digits began.
        pre, digits = tree.named("digits_preprocess")[0], tree.named("digits")[0]
        self.assertLessEqual(pre["start_ns"], digits["start_ns"])

    def test_grpc_without_a_traceparent_starts_a_trace_ensemble(self):
        t0 = time.time_ns()
        self.classify_grpc("digits_pipeline")
        trace = self.wait_for_trace("inferd_gateway.v1.Gateway/Classify", t0, model_spans=2)
        tree = self.assert_chain(trace, "inferd_gateway.v1.Gateway/Classify", "digits_pipeline",
                                 ["digits_preprocess", "digits"], "", "")
        server = tree.named("inferd_gateway.v1.Gateway/Classify")[0]
        self.assertEqual(server["attributes"].get("rpc.grpc.status_code"), 0)

    def test_grpc_with_the_clients_traceparent_plain_model(self):
        trace_id, span_id, traceparent = client_context()
        t0 = time.time_ns()
        self.classify_grpc("digits_preprocess", [("traceparent", traceparent),
                                                 ("tracestate", CLIENT_TRACESTATE)])
        trace = self.wait_for_trace("inferd_gateway.v1.Gateway/Classify", t0, trace_id)
        self.assert_chain(trace, "inferd_gateway.v1.Gateway/Classify", "digits_preprocess", [],
                          span_id, CLIENT_TRACESTATE)

    def test_http_without_a_traceparent_plain_model(self):
        t0 = time.time_ns()
        self.classify_http("digits_preprocess")
        trace = self.wait_for_trace("POST /v1/classify", t0)
        self.assert_chain(trace, "POST /v1/classify", "digits_preprocess", [], "", "")

    def test_an_invalid_traceparent_starts_a_new_trace(self):
        trace_id, _, traceparent = client_context()
        t0 = time.time_ns()
        self.classify_http("digits_preprocess", {
            "traceparent": traceparent.upper(), "tracestate": CLIENT_TRACESTATE})
        trace = self.wait_for_trace("POST /v1/classify", t0)
        self.assertNotEqual(trace[0]["trace_id"], trace_id)
        self.assert_chain(trace, "POST /v1/classify", "digits_preprocess", [], "", "")

    def test_an_unsampled_caller_is_recorded_by_neither_process(self):
        # The gateway would start a trace for every request (rate 1): a
        # caller's context whose sampled flag is clear overrides that, and
        # inferd receives it unchanged, so it records nothing either.
        quiet_id, quiet_span, _ = client_context()
        self.classify_http("digits_pipeline", {
            "traceparent": "00-%s-%s-00" % (quiet_id, quiet_span),
            "tracestate": CLIENT_TRACESTATE})
        self.classify_grpc("digits_preprocess",
                           [("traceparent", "00-%s-%s-02" % (quiet_id, quiet_span))])
        # A sampled request after them: once its trace is in, theirs would be.
        trace_id, span_id, traceparent = client_context()
        t0 = time.time_ns()
        self.classify_http("digits_preprocess", {"traceparent": traceparent})
        self.wait_for_trace("POST /v1/classify", t0, trace_id)
        self.assertEqual(otlp_util.of_trace(self.p.receiver.spans(), quiet_id), [])

    def test_exporter_counters_in_the_gateway_metrics(self):
        self.classify_http("digits_preprocess")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = self.p.http.get("/metrics").body.decode()
            if (metric_sum(text, r"^gateway_trace_spans_exported_total$") or 0) > 0:
                break
            time.sleep(0.1)
        self.assertGreater(metric_sum(text, r"^gateway_trace_spans_exported_total$"), 0, text)
        self.assertEqual(metric_sum(text, r"^gateway_trace_spans_dropped_total$"), 0, text)
        self.assertEqual(metric_sum(text, r"^gateway_trace_export_failures_total$"), 0, text)


def latencies(p, n, image):
    """Seconds per request of n classify requests through the gateway (each with a
    client traceparent, so that inferd traces them too)."""
    out = []
    for i in range(n):
        tp = "00-%032x-%016x-01" % (i + 1, i + 1)
        start = time.monotonic()
        r = p.http.post("/v1/classify/digits_pipeline", image,
                        {"Content-Type": "application/octet-stream", "traceparent": tp})
        out.append(time.monotonic() - start)
        if r.status != 200:
            raise AssertionError("request failed: %r" % r)
    return out


def p90(values):
    return statistics.quantiles(values, n=10)[-1]


def dropped(p):
    """(gateway, inferd) spans dropped so far, from their /metrics."""
    g = metric_sum(p.http.get("/metrics").body.decode(), r"^gateway_trace_spans_dropped_total$")
    i = metric_sum(p.inferd.metrics_client().get("/metrics").body.decode(),
                   r"^inferd_trace_spans_dropped_total$")
    return g, i


@unittest.skipIf(SKIP, SKIP)
class CollectorTroubleTest(unittest.TestCase):
    """A small export queue (16) and a 1 s export timeout make trouble show fast."""

    SMALL_QUEUE = ["opentelemetry,bsp_max_queue_size=16", "opentelemetry,bsp_max_export_batch_size=4"]

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="inferd-otel-trouble-")
        self.p = None
        self.image = pu.digit_images(".png")[0][0]

    def tearDown(self):
        try:
            if self.p:
                self.p.stop()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def assert_normal_latency(self, baseline, now, what):
        b, n = statistics.median(baseline), statistics.median(now)
        self.assertLess(n, 3 * b + 0.05, "%s: median %.1f ms against %.1f ms with a working "
                        "collector" % (what, n * 1e3, b * 1e3))
        # Requests never wait on the collector (its export timeout is 1 s).
        self.assertLess(p90(now), 0.9, "%s: p90 %.0f ms" % (what, p90(now) * 1e3))

    def assert_drops_counted(self, before, what):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            g, i = dropped(self.p)
            if g is not None and i is not None and g > before[0] and i > before[1]:
                return g, i
            time.sleep(0.2)
        self.fail("%s: spans dropped (gateway, inferd) %r, before %r" % (what, dropped(self.p),
                                                                         before))

    def stop_within(self, limit_s):
        start = time.monotonic()
        self.assertEqual(self.p.gateway.stop(), 0, self.p.gateway.log())
        gateway_s = time.monotonic() - start
        start = time.monotonic()
        self.p.inferd.stop()
        inferd_s = time.monotonic() - start
        self.p.gateway = self.p.inferd = None
        self.assertLess(gateway_s, limit_s, "infer-gateway took %.1f s to stop" % gateway_s)
        self.assertLess(inferd_s, limit_s, "inferd took %.1f s to stop" % inferd_s)

    def test_unavailable_then_hanging_collector(self):
        self.p = Processes(self.tmp, extra_trace=self.SMALL_QUEUE)
        latencies(self.p, 5, self.image)  # warm up
        baseline = latencies(self.p, 30, self.image)
        # (A queue of 16 may overflow even now on a loaded machine: only
        # increases are checked below.)
        before = dropped(self.p)

        self.p.receiver.set_mode("unavailable")
        self.assert_normal_latency(baseline, latencies(self.p, 60, self.image), "503")
        before = self.assert_drops_counted(before, "503")

        self.p.receiver.set_mode("hang")
        self.assert_normal_latency(baseline, latencies(self.p, 60, self.image), "hanging")
        self.assert_drops_counted(before, "hanging")
        self.assertGreater(self.p.receiver.stats()["by_status"].get("503", 0), 0)
        # Shutdown while the collector still hangs: bounded by the 1 s timeout.
        latencies(self.p, 10, self.image)
        self.stop_within(5)

    def test_collector_down(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        self.p = Processes(self.tmp, collector_url="http://127.0.0.1:%d/v1/traces" % port,
                           extra_trace=self.SMALL_QUEUE)
        latencies(self.p, 5, self.image)
        now = latencies(self.p, 60, self.image)
        self.assertLess(statistics.median(now), 0.25,
                        "median %.0f ms" % (statistics.median(now) * 1e3))
        self.assertLess(p90(now), 0.9, "p90 %.0f ms" % (p90(now) * 1e3))
        self.assert_drops_counted((0, 0), "collector down")
        self.stop_within(5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
