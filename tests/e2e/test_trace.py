#!/usr/bin/python3
"""Tracing in Triton mode and the trace extension, end to end.

The trace file (PROTOCOL-NEXT §6.5): what an HTTP, a gRPC and an ensemble
request leave in it (header objects, Triton's timestamp names in steady-clock
order, child traces with parent_id), the file's framing as traces complete and
at shutdown, and log_frequency's indexed files. The trace extension (PROTOCOL.md
§1.12, §2.4.7) over HTTP and gRPC: defaults, updates, per-model overrides and
clearing them, every error case with its text, count running out, the extension
advertised, and the restricted-API group `trace`.
"""

import glob
import json
import os
import shutil
import struct
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import GrpcServer, Server, ServerTestCase, add_sub_config, write_model  # noqa: E402
from test_ensemble import ensemble_config  # noqa: E402

try:
    import grpc
    from test_grpc_compat import generate_messages
except ImportError:  # pragma: no cover - reported as skips below
    grpc = None

I32 = "TYPE_INT32"
HTTP_NAMES = ["HTTP_RECV_START", "HTTP_RECV_END", "REQUEST_START", "QUEUE_START", "COMPUTE_START",
              "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END",
              "HTTP_SEND_START", "HTTP_SEND_END"]
GRPC_NAMES = ["GRPC_WAITREAD_START", "GRPC_WAITREAD_END"] + HTTP_NAMES[2:9] + [
    "GRPC_SEND_START", "GRPC_SEND_END"]
STEP_NAMES = HTTP_NAMES[2:9]


def trace_repository(root):
    repo = os.path.join(root, "models")
    write_model(repo, "simple", add_sub_config("simple", I32))
    write_model(repo, "other", add_sub_config("other", I32))
    # (a+b, a-b), then (sum+diff, sum-diff): two steps, the second after the first.
    write_model(repo, "pipeline", ensemble_config(
        "pipeline", [("A", I32, (16,)), ("B", I32, (16,))],
        [("TWO_A", I32, (16,)), ("TWO_B", I32, (16,))],
        [("simple", {"INPUT0": "A", "INPUT1": "B"}, {"OUTPUT0": "sum", "OUTPUT1": "diff"}),
         ("simple", {"INPUT0": "sum", "INPUT1": "diff"},
          {"OUTPUT0": "TWO_A", "OUTPUT1": "TWO_B"})]))
    return repo


def simple_request(request_id=None, model_inputs=("INPUT0", "INPUT1")):
    req = {"inputs": [{"name": n, "shape": [1, 16], "datatype": "INT32", "data": list(range(16))}
                      for n in model_inputs]}
    if request_id:
        req["id"] = request_id
    return req


def parse_traces(objects):
    """The file's objects grouped per trace id: {id: {"header": {...}, "names": [...],
    "ns": [...], "tensors": [...]}}, in file order."""
    traces = {}
    for o in objects:
        t = traces.setdefault(o["id"], {"header": None, "names": [], "ns": [], "tensors": []})
        if "model_name" in o:
            t["header"] = o
        elif "timestamps" in o:
            for ts in o["timestamps"]:
                t["names"].append(ts["name"])
                t["ns"].append(ts["ns"])
        elif "tensor" in o:
            t["tensors"].append(o)
    return traces


def read_open_file(path):
    """The objects of a trace file still being written (log_frequency 0: no closing ']'
    until shutdown); [] before the first trace."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    if not text:
        return []
    return json.loads(text if text.endswith("]") else text + "]")


class TraceFileTest(ServerTestCase):
    """Level TIMESTAMPS, every request traced, one file written as traces complete."""

    SERVER_CLASS = GrpcServer

    @classmethod
    def build_repository(cls, root):
        cls.trace_path = os.path.join(root, "trace.json")
        cls.SERVER_ARGS = ["--trace-config", "level=TIMESTAMPS", "--trace-config", "rate=1",
                           "--trace-config", "triton,file=" + cls.trace_path]
        return trace_repository(root)

    def wait_for_trace(self, predicate, what):
        found = harness.wait_until(
            lambda: next((t for t in parse_traces(read_open_file(self.trace_path)).values()
                          if t["header"] and predicate(t)), None), 10, 0.05)
        self.assertIsNotNone(found, "no trace for %s in %s" % (what, read_open_file(self.trace_path)))
        return found

    def assertOrdered(self, trace, names):
        self.assertEqual(trace["names"], names)
        self.assertEqual(trace["ns"], sorted(trace["ns"]), "timestamps out of order: %s" % trace)
        self.assertGreater(trace["ns"][0], 0)

    def test_http_request(self):
        self.assertOk(self.client.infer("simple", simple_request("http-1")))
        t = self.wait_for_trace(lambda t: t["header"].get("request_id") == "http-1", "http-1")
        self.assertEqual(t["header"]["model_name"], "simple")
        self.assertEqual(t["header"]["model_version"], 1)
        self.assertNotIn("parent_id", t["header"])
        self.assertOrdered(t, HTTP_NAMES)

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_request(self):
        pb, _ = generate_messages(os.path.join(self.tmp, "gen"))
        req = pb.ModelInferRequest(model_name="simple", id="grpc-1")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            req.raw_input_contents.append(struct.pack("<16i", *range(16)))
        with grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port) as channel:
            call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=pb.ModelInferResponse.FromString)
            self.assertEqual(call(req, timeout=20).model_name, "simple")
        t = self.wait_for_trace(lambda t: t["header"].get("request_id") == "grpc-1", "grpc-1")
        self.assertOrdered(t, GRPC_NAMES)

    def test_ensemble_steps_are_child_traces(self):
        req = {"id": "ens-1", "inputs": [
            {"name": "A", "shape": [1, 16], "datatype": "INT32", "data": list(range(16))},
            {"name": "B", "shape": [1, 16], "datatype": "INT32", "data": [1] * 16}]}
        self.assertOk(self.client.infer("pipeline", req))
        root = self.wait_for_trace(lambda t: t["header"]["model_name"] == "pipeline"
                                   and t["header"].get("request_id") == "ens-1", "the ensemble")
        self.assertNotIn("parent_id", root["header"])
        self.assertEqual(root["names"], ["HTTP_RECV_START", "HTTP_RECV_END", "REQUEST_START",
                                         "QUEUE_START", "REQUEST_END", "HTTP_SEND_START",
                                         "HTTP_SEND_END"])
        self.assertEqual(root["ns"], sorted(root["ns"]))
        root_id = root["header"]["id"]
        traces = parse_traces(read_open_file(self.trace_path))
        children = [t for t in traces.values()
                    if t["header"] and t["header"].get("parent_id") == root_id]
        self.assertEqual(len(children), 2, traces)
        start = root["ns"][root["names"].index("REQUEST_START")]
        end = root["ns"][root["names"].index("REQUEST_END")]
        for child in children:
            self.assertEqual(child["header"]["model_name"], "simple")
            self.assertEqual(child["header"]["request_id"], "ens-1")
            self.assertOrdered(child, STEP_NAMES)
            self.assertGreaterEqual(child["ns"][0], start)
            self.assertLessEqual(child["ns"][-1], end)
        # The second step starts after the first ends.
        first, second = sorted(children, key=lambda c: c["ns"][0])
        self.assertGreaterEqual(second["ns"][0], first["ns"][-1])
        # The group is contiguous: the root's objects, then its children's.
        ids = []
        for o in read_open_file(self.trace_path):
            if not ids or ids[-1] != o["id"]:
                ids.append(o["id"])
        i = ids.index(root_id)
        self.assertEqual(sorted(ids[i + 1:i + 3]), sorted(c["header"]["id"] for c in children))

    def test_unknown_model_leaves_no_trace(self):
        before = len(read_open_file(self.trace_path))
        r = self.client.infer("no_such_model", simple_request())
        self.assertEqual(r.status, 404)
        self.assertOk(self.client.infer("simple", simple_request("after-unknown")))
        self.wait_for_trace(lambda t: t["header"].get("request_id") == "after-unknown", "after")
        names = {o.get("model_name") for o in read_open_file(self.trace_path)[before:]}
        self.assertNotIn("no_such_model", names)


class TraceFileShutdownTest(unittest.TestCase):
    """The file is a complete JSON array after a clean shutdown; log_frequency N writes
    file.<i> every N traces, the rest at shutdown; at level TENSORS the tensors are there."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="inferd-trace-")
        self.repo = trace_repository(self.tmp)
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def run_server(self, args, requests):
        server = Server(self.repo, args).start()
        try:
            client = server.client()
            for i in range(requests):
                self.assertEqual(client.infer("simple", simple_request("r%d" % i)).status, 200)
        finally:
            self.assertEqual(server.stop(), 0, server.log_tail())

    def test_complete_array_at_shutdown(self):
        path = os.path.join(self.tmp, "t.json")
        self.run_server(["--trace-config", "level=TIMESTAMPS", "--trace-config", "rate=2",
                         "--trace-config", "triton,file=" + path], 4)
        with open(path) as f:
            traces = parse_traces(json.load(f))  # the closing bracket is there
        self.assertEqual(sorted(t["header"]["request_id"] for t in traces.values()), ["r1", "r3"])

    def test_log_frequency_files(self):
        path = os.path.join(self.tmp, "t.json")
        # The deprecated flags still work (--trace-config would win over them).
        self.run_server(["--trace-level=TIMESTAMPS", "--trace-rate=1", "--trace-file=" + path,
                         "--trace-log-frequency=2"], 5)
        self.assertFalse(os.path.exists(path))
        files = sorted(glob.glob(path + ".*"))
        self.assertEqual([os.path.basename(f) for f in files], ["t.json.0", "t.json.1", "t.json.2"])
        seen = []
        for f, n in zip(files, (2, 2, 1)):
            with open(f) as fh:
                traces = parse_traces(json.load(fh))
            self.assertEqual(len(traces), n, f)
            seen += [t["header"]["request_id"] for t in traces.values()]
        self.assertEqual(sorted(seen), ["r0", "r1", "r2", "r3", "r4"])

    def test_tensors_level(self):
        path = os.path.join(self.tmp, "t.json")
        self.run_server(["--trace-config", "level=TENSORS", "--trace-config", "level=TIMESTAMPS",
                         "--trace-config", "rate=1", "--trace-config", "triton,file=" + path], 1)
        with open(path) as f:
            (trace,) = parse_traces(json.load(f)).values()
        by_activity = {}
        for o in trace["tensors"]:
            by_activity.setdefault(o["activity"], []).append(o["tensor"])
        self.assertEqual(sorted(by_activity), ["TENSOR_BACKEND_INPUT", "TENSOR_BACKEND_OUTPUT",
                                               "TENSOR_QUEUE_INPUT"])
        inputs = {t["name"]: t for t in by_activity["TENSOR_QUEUE_INPUT"]}
        self.assertEqual(inputs["INPUT0"], {"name": "INPUT0", "data": ",".join(map(str, range(16))),
                                            "shape": "1,16", "dtype": "INT32"})
        outputs = {t["name"]: t for t in by_activity["TENSOR_BACKEND_OUTPUT"]}
        self.assertEqual(outputs["OUTPUT0"]["data"], ",".join(str(2 * i) for i in range(16)))
        self.assertIn("COMPUTE_START", trace["names"])

    def test_bad_flags_are_refused_with_tritons_texts(self):
        for flags, text in (
                (["--trace-config", "rate"],
                 "--trace-config option format is '<trace mode>,<setting>=<value>'. Got rate"),
                (["--trace-config", "zipkin,rate=1"], "invalid value for trace mode option: zipkin"),
                (["--trace-config", ",rate=1"], "No trace mode specified."),
                (["--trace-config", "count=-5"], 'Bad option: "--trace-config count".'),
                (["--trace-config", "triton,rate=5"], "unknown --trace-config setting 'triton,rate'")):
            with self.subTest(flags=flags):
                server = Server(self.repo, flags)
                with self.assertRaises(harness.ServerError):
                    server.start()
                server.stop()
                self.assertIn(text, "\n".join(server.log()))


def api_defaults(path):
    return {"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
            "log_frequency": "0", "trace_file": path, "trace_mode": "triton"}


class TraceApiHttpTest(ServerTestCase):
    """The trace extension over HTTP on a server started with tracing off."""

    SERVER_CLASS = GrpcServer

    @classmethod
    def build_repository(cls, root):
        cls.trace_path = os.path.join(root, "api.json")
        cls.SERVER_ARGS = ["--trace-config", "triton,file=" + cls.trace_path]
        return trace_repository(root)

    def setUp(self):
        # Every test starts from the start-up settings, no model override.
        self.assertOk(self.client.post_json("/v2/trace/setting", {
            "trace_level": None, "trace_rate": None, "trace_count": None, "log_frequency": None}))
        for model in ("simple", "other"):
            self.assertOk(self.client.post_json("/v2/models/%s/trace/setting" % model, {
                "trace_level": None, "trace_rate": None, "trace_count": None,
                "log_frequency": None}))

    def get(self, model=None):
        path = "/v2/models/%s/trace/setting" % model if model else "/v2/trace/setting"
        r = self.client.get(path)
        self.assertOk(r)
        return r.json()

    def post(self, body, model=None):
        path = "/v2/models/%s/trace/setting" % model if model else "/v2/trace/setting"
        return self.client.post_json(path, body)

    def traced_ids(self):
        return {t["header"]["request_id"] for t in parse_traces(read_open_file(self.trace_path))
                .values() if t["header"]}

    def test_defaults_and_extension(self):
        self.assertEqual(self.get(), api_defaults(self.trace_path))
        self.assertEqual(self.get("simple"), api_defaults(self.trace_path))
        md = self.client.get("/v2").json()
        self.assertIn("trace", md["extensions"])

    def test_global_update_returns_the_full_settings_and_traces(self):
        r = self.post({"trace_level": ["TIMESTAMPS"], "trace_rate": "1"})
        self.assertOk(r)
        want = dict(api_defaults(self.trace_path), trace_level=["TIMESTAMPS"], trace_rate="1")
        self.assertEqual(r.json(), want)
        self.assertEqual(self.get(), want)
        self.assertEqual(self.get("simple"), want)  # no override: the global setting
        self.assertOk(self.client.infer("simple", simple_request("global-on")))
        self.assertTrue(harness.wait_until(lambda: "global-on" in self.traced_ids(), 10, 0.05))
        self.assertEqual(self.post({"trace_level": ["TIMESTAMPS", "TENSORS"]}).json()["trace_level"],
                         ["TIMESTAMPS", "TENSORS"])

    def test_model_override_and_clearing(self):
        r = self.post({"trace_level": ["TIMESTAMPS"], "trace_rate": "1"}, "simple")
        self.assertOk(r)
        self.assertEqual(r.json()["trace_level"], ["TIMESTAMPS"])
        self.assertEqual(self.get()["trace_level"], ["OFF"])  # global untouched
        self.assertEqual(self.get("other")["trace_level"], ["OFF"])
        self.assertOk(self.client.infer("simple", simple_request("override-simple")))
        self.assertOk(self.client.infer("other", simple_request("override-other")))
        self.assertTrue(harness.wait_until(lambda: "override-simple" in self.traced_ids(), 10, 0.05))
        time.sleep(0.2)
        self.assertNotIn("override-other", self.traced_ids())
        # A global change reaches the fields the model does not override.
        self.assertOk(self.post({"log_frequency": "0", "trace_count": "50"}))
        self.assertEqual(self.get("simple")["trace_count"], "50")
        self.assertEqual(self.get("simple")["trace_rate"], "1")
        # null clears one field; all cleared: the model follows the global setting.
        r = self.post({"trace_rate": None}, "simple")
        self.assertEqual(r.json()["trace_rate"], "1000")
        self.assertEqual(r.json()["trace_level"], ["TIMESTAMPS"])
        r = self.post({"trace_level": None}, "simple")
        self.assertEqual(r.json()["trace_level"], ["OFF"])
        self.assertEqual(self.get("simple"), self.get())

    def test_count_runs_out(self):
        self.assertEqual(self.post({"trace_level": ["TIMESTAMPS"], "trace_rate": "1",
                                    "trace_count": "2"}).json()["trace_count"], "2")
        for i in range(4):
            self.assertOk(self.client.infer("simple", simple_request("count-%d" % i)))
        self.assertEqual(self.get()["trace_count"], "0")
        self.assertTrue(harness.wait_until(
            lambda: {"count-0", "count-1"} <= self.traced_ids(), 10, 0.05))
        time.sleep(0.2)
        self.assertFalse({"count-2", "count-3"} & self.traced_ids())

    def test_errors(self):
        cases = [
            ({"trace_file": "x.json"}, 501,
             "trace file location can not be updated through network protocol"),
            ({"trace_level": ["OFF", "TIMESTAMPS"]}, 400,
             "Expect only one trace level 'OFF' is specified"),
            ({"trace_level": ["LOUD"]}, 400, "Unable to parse 'trace_level', got: LOUD"),
            ({"trace_level": "TIMESTAMPS"}, 400, "'trace_level' must be an array of strings"),
            ({"trace_rate": "abc"}, 400, "Unable to parse 'trace_rate', got: abc"),
            ({"trace_rate": "4294967296"}, 400,
             "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: "
             "4294967296"),
            ({"trace_rate": 5}, 400, "'trace_rate' must be a string"),
            ({"trace_count": "-2"}, 400,
             "Unable to parse 'trace_count'. Expecting value >= -1, got: -2"),
            ({"log_frequency": "-1"}, 400, "Unable to parse 'log_frequency', value is out of range"),
            ({"trace_level": ["TIMESTAMPS"], "trace_rate": "0"}, 400,
             "Attempting to set invalid trace setting :sample rate must be non-zero"),
        ]
        for body, status, text in cases:
            with self.subTest(body=body):
                self.assertError(self.post(body), status, text)
                self.assertError(self.post(body, "simple"), status, text)
        self.assertEqual(self.get(), api_defaults(self.trace_path))  # nothing changed
        self.assertError(self.client.post("/v2/trace/setting", b"{not json"), 400)
        self.assertError(self.client.get("/v2/models/nope/trace/setting"), 400,
                         "Request for unknown model : nope")
        self.assertError(self.post({"trace_rate": "1"}, "nope"), 400,
                         "Request for unknown model : nope")
        # Keys the extension does not change are ignored (a client may post back a GET).
        r = self.post(dict(self.get(), trace_file=None))
        self.assertError(r, 501, "trace file location")
        back = self.get()
        del back["trace_file"]
        self.assertOk(self.post(back))


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class TraceApiGrpcTest(ServerTestCase):
    """TraceSetting over gRPC: the same semantics, an empty value list clears."""

    SERVER_CLASS = GrpcServer

    @classmethod
    def build_repository(cls, root):
        cls.trace_path = os.path.join(root, "grpc.json")
        cls.SERVER_ARGS = ["--trace-config", "triton,file=" + cls.trace_path]
        return trace_repository(root)

    @classmethod
    def open_clients(cls):
        super().open_clients()
        cls.pb, _ = generate_messages(os.path.join(cls.tmp, "gen"))
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)

    @classmethod
    def close_clients(cls):
        if getattr(cls, "channel", None) is not None:
            cls.channel.close()

    def call(self, settings=None, model=""):
        pb = self.pb
        req = pb.TraceSettingRequest(model_name=model)
        for key, values in (settings or {}).items():
            req.settings[key].value.extend(values)
        rpc = self.channel.unary_unary("/inference.GRPCInferenceService/TraceSetting",
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=pb.TraceSettingResponse.FromString)
        resp = rpc(req, timeout=20)
        return {k: list(v.value) for k, v in resp.settings.items()}

    def assertRpcError(self, code, text, settings, model=""):
        with self.assertRaises(grpc.RpcError) as cm:
            self.call(settings, model)
        self.assertEqual(cm.exception.code(), code)
        self.assertIn(text, cm.exception.details())

    def setUp(self):
        clear = {"trace_level": [], "trace_rate": [], "trace_count": [], "log_frequency": []}
        self.call(clear)
        self.call(clear, "simple")

    def test_get_update_and_clear(self):
        want = {k: v if isinstance(v, list) else [v] for k, v in api_defaults(self.trace_path).items()}
        self.assertEqual(self.call(), want)
        got = self.call({"trace_level": ["TIMESTAMPS"], "trace_rate": ["5"]}, "simple")
        self.assertEqual(got["trace_level"], ["TIMESTAMPS"])
        self.assertEqual(got["trace_rate"], ["5"])
        self.assertEqual(self.call()["trace_level"], ["OFF"])
        got = self.call({"trace_rate": []}, "simple")  # empty list: clear
        self.assertEqual(got["trace_rate"], ["1000"])
        self.assertEqual(got["trace_level"], ["TIMESTAMPS"])
        # Shared with HTTP: one setting.
        self.assertEqual(self.client.get("/v2/models/simple/trace/setting").json()["trace_level"],
                         ["TIMESTAMPS"])

    def test_errors(self):
        inv = grpc.StatusCode.INVALID_ARGUMENT
        self.assertRpcError(grpc.StatusCode.UNIMPLEMENTED,
                            "trace file location can not be updated through network protocol",
                            {"trace_file": ["x"]})
        for key in ("trace_rate", "trace_count", "log_frequency"):
            self.assertRpcError(inv, "expect only 1 value for '%s'" % key, {key: ["1", "2"]})
        self.assertRpcError(inv, "Expect only one trace level 'OFF' is specified",
                            {"trace_level": ["OFF", "TENSORS"]})
        self.assertRpcError(inv, "Unable to parse 'trace_count'. Expecting value >= -1, got: -3",
                            {"trace_count": ["-3"]})
        self.assertRpcError(inv, "Unable to parse 'trace_rate', got: x", {"trace_rate": ["x"]})
        self.assertRpcError(inv, "Request for unknown model : nope", {}, "nope")
        self.assertRpcError(inv, "Request for unknown model : nope", {"trace_rate": ["1"]}, "nope")

    def test_extension_advertised(self):
        pb = self.pb
        rpc = self.channel.unary_unary("/inference.GRPCInferenceService/ServerMetadata",
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=pb.ServerMetadataResponse.FromString)
        self.assertIn("trace", list(rpc(pb.ServerMetadataRequest(), timeout=20).extensions))


class TraceRestrictedTest(ServerTestCase):
    """--http-restricted-api / --grpc-restricted-protocol group `trace`."""

    SERVER_CLASS = GrpcServer
    SERVER_ARGS = ["--http-restricted-api=trace:trace-key=t0ken",
                   "--grpc-restricted-protocol=trace:trace-key=t0ken"]

    @classmethod
    def build_repository(cls, root):
        return trace_repository(root)

    def test_http(self):
        for path in ("/v2/trace/setting", "/v2/models/simple/trace/setting"):
            self.assertError(self.client.get(path), 403, "trace-key")
            self.assertOk(self.client.get(path, headers={"trace-key": "t0ken"}))
        self.assertOk(self.client.infer("simple", simple_request()))  # inference is not restricted

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc(self):
        pb, _ = generate_messages(os.path.join(self.tmp, "gen"))
        with grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port) as channel:
            rpc = channel.unary_unary("/inference.GRPCInferenceService/TraceSetting",
                                      request_serializer=lambda m: m.SerializeToString(),
                                      response_deserializer=pb.TraceSettingResponse.FromString)
            with self.assertRaises(grpc.RpcError) as cm:
                rpc(pb.TraceSettingRequest(), timeout=20)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
            resp = rpc(pb.TraceSettingRequest(), timeout=20,
                       metadata=(("triton-grpc-protocol-trace-key", "t0ken"),))
            self.assertEqual(list(resp.settings["trace_level"].value), ["OFF"])


class MetricsGrpcServer(harness.MetricsListener, GrpcServer):
    """inferd with gRPC and the metrics listener."""


CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class TraceOpenTelemetryTest(ServerTestCase):
    """inferd alone in OpenTelemetry mode, rate 0: only requests carrying a W3C context are
    traced; their spans (PROTOCOL-NEXT §6.6) reach a real OTLP/HTTP receiver process."""

    SERVER_CLASS = MetricsGrpcServer
    receiver = None

    @classmethod
    def build_repository(cls, root):
        return trace_repository(root)

    @classmethod
    def start_server(cls):
        import otlp_util
        cls.receiver = otlp_util.OtlpReceiver(os.path.join(cls.tmp, "otlp-gen")).start()
        args = []
        for setting in ("mode=opentelemetry", "level=TIMESTAMPS", "rate=0",
                        "opentelemetry,url=" + cls.receiver.url,
                        "opentelemetry,resource=deployment.environment=test"):
            args += ["--trace-config", setting]
        return cls.SERVER_CLASS(cls.repos, args, env={"OTEL_BSP_SCHEDULE_DELAY": "50"}).start()

    @classmethod
    def open_clients(cls):
        super().open_clients()
        cls.pb, _ = generate_messages(os.path.join(cls.tmp, "gen"))
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)

    @classmethod
    def close_clients(cls):
        if getattr(cls, "channel", None) is not None:
            cls.channel.close()
        if cls.receiver is not None:
            cls.receiver.stop()

    def spans_of(self, trace_id, count):
        spans = self.receiver.wait_for(
            lambda spans: len([s for s in spans if s["trace_id"] == trace_id]) >= count,
            what="%d spans of trace %s" % (count, trace_id))
        return [s for s in spans if s["trace_id"] == trace_id]

    def check_model_span(self, span, model, parent, request_id=None):
        self.assertEqual(span["name"], model)
        self.assertEqual(span["parent_span_id"], parent["span_id"])
        self.assertEqual(span["kind_name"], "SPAN_KIND_SERVER")
        attrs = span["attributes"]
        self.assertEqual(attrs["triton.model_name"], model)
        self.assertEqual(attrs["triton.model_version"], 1)
        self.assertIn("triton.trace_id", attrs)
        self.assertIn("triton.trace_parent_id", attrs)
        if request_id:
            self.assertEqual(attrs["triton.request_id"], request_id)
        names = [e["name"] for e in span["events"]]
        self.assertEqual(names, ["REQUEST_START", "QUEUE_START", "REQUEST_END"])
        self.assertLessEqual(parent["start_ns"], span["start_ns"])
        self.assertLessEqual(span["end_ns"], parent["end_ns"])

    def check_compute(self, tree, model_span):
        (compute,) = tree.kids(model_span, "compute")
        self.assertEqual([e["name"] for e in compute["events"]],
                         ["COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START",
                          "COMPUTE_END"])
        self.assertLessEqual(model_span["start_ns"], compute["start_ns"])
        self.assertLessEqual(compute["start_ns"], compute["end_ns"])
        self.assertLessEqual(compute["end_ns"], model_span["end_ns"])

    def test_http_with_context(self):
        import otlp_util
        headers = {"traceparent": "00-%s-%s-01" % (CLIENT_TRACE, CLIENT_SPAN),
                   "tracestate": "vendor=opaque"}
        self.assertOk(self.client.infer("simple", simple_request("otel-http"), headers=headers))
        spans = self.spans_of(CLIENT_TRACE, 3)
        self.assertEqual(len(spans), 3, otlp_util.describe(spans))
        tree = otlp_util.SpanTree(spans)
        (root,) = tree.roots()
        self.assertEqual(root["name"], "InferRequest")
        self.assertEqual(root["parent_span_id"], CLIENT_SPAN)
        self.assertEqual([e["name"] for e in root["events"]],
                         ["HTTP_RECV_START", "HTTP_RECV_END", "HTTP_SEND_START", "HTTP_SEND_END"])
        (model,) = tree.kids(root)
        self.check_model_span(model, "simple", root, "otel-http")
        self.check_compute(tree, model)
        for span in spans:
            self.assertEqual(span["trace_state"], "vendor=opaque")
            self.assertEqual(span["resource"]["service.name"], "inferd")
            self.assertEqual(span["resource"]["deployment.environment"], "test")

    def test_grpc_ensemble_with_context(self):
        import otlp_util
        trace_id = "0af7651916cd43dd8448eb211c80319c"
        pb = self.pb
        req = pb.ModelInferRequest(model_name="pipeline", id="otel-grpc")
        for name in ("A", "B"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            req.raw_input_contents.append(struct.pack("<16i", *range(16)))
        rpc = self.channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=pb.ModelInferResponse.FromString)
        rpc(req, timeout=20, metadata=(("traceparent", "00-%s-b7ad6b7169203331-01" % trace_id),))
        # InferRequest, pipeline, two steps and their compute spans.
        spans = self.spans_of(trace_id, 6)
        tree = otlp_util.SpanTree(spans)
        (root,) = tree.roots()
        self.assertEqual(root["parent_span_id"], "b7ad6b7169203331")
        self.assertEqual([e["name"] for e in root["events"]],
                         ["GRPC_WAITREAD_START", "GRPC_WAITREAD_END", "GRPC_SEND_START",
                          "GRPC_SEND_END"])
        (pipeline,) = tree.kids(root)
        self.check_model_span(pipeline, "pipeline", root, "otel-grpc")
        self.assertEqual(tree.kids(pipeline, "compute"), [])
        steps = tree.kids(pipeline, "simple")
        self.assertEqual(len(steps), 2, otlp_util.describe(spans))
        for step in steps:
            self.check_model_span(step, "simple", pipeline, "otel-grpc")
            self.assertEqual(step["attributes"]["triton.trace_parent_id"],
                             pipeline["attributes"]["triton.trace_id"])
            self.check_compute(tree, step)
        self.assertLessEqual(steps[0]["end_ns"], steps[1]["start_ns"])

    def test_rate_zero_traces_only_propagated_requests(self):
        before = len(self.receiver.spans())
        for i in range(5):
            self.assertOk(self.client.infer("simple", simple_request("untraced-%d" % i)))
        # An invalid traceparent (upper-case hex) starts no trace either: it is not a context.
        bad = {"traceparent": "00-%s-%s-01" % (CLIENT_TRACE.upper(), CLIENT_SPAN)}
        self.assertOk(self.client.infer("simple", simple_request("untraced-bad"), headers=bad))
        metrics = self.server.metrics_client()
        harness.wait_until(lambda: "inferd_trace_spans_exported_total" in
                           metrics.get("/metrics").body.decode(), 5, 0.1)
        time.sleep(0.5)  # several schedule delays
        ids = {s["attributes"].get("triton.request_id") for s in self.receiver.spans()[before:]}
        self.assertFalse({i for i in ids if i and i.startswith("untraced")}, ids)

    def test_settings_and_metrics(self):
        got = self.client.get("/v2/trace/setting").json()
        self.assertEqual(got["trace_mode"], "opentelemetry")
        self.assertEqual(got["trace_rate"], "0")
        self.assertEqual(got["url"], self.receiver.url)
        self.assertIn("deployment.environment=test", got["resource"])
        self.assertEqual(got["bsp_schedule_delay"], "50")
        self.assertNotIn("trace_file", got)
        self.assertNotIn("log_frequency", got)
        headers = {"traceparent": "00-%s-%s-01" % ("1" * 32, CLIENT_SPAN)}
        self.assertOk(self.client.infer("simple", simple_request(), headers=headers))
        self.spans_of("1" * 32, 3)
        metrics = self.server.metrics_client()

        def value(name):
            for line in metrics.get("/metrics").body.decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
            return None
        self.assertTrue(harness.wait_until(
            lambda: (value("inferd_trace_spans_exported_total") or 0) >= 3, 10, 0.1))
        self.assertGreaterEqual(value("inferd_trace_requests_sampled_total"), 1)
        self.assertEqual(value("inferd_trace_spans_dropped_total"), 0)


if __name__ == "__main__":
    unittest.main()
