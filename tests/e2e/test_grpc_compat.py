"""gRPC compatibility: inferd as a third-party Python client sees it.

Runs with Debian's /usr/bin/python3 and its python3-grpcio + python3-protobuf
(no numpy, no tritonclient). Python message classes are generated at test
time from proto/*.proto with `protoc --python_out` (or grpc_tools' bundled
protoc when no protoc is on PATH); methods are called by their full names
(`/inference.GRPCInferenceService/ModelInfer`), which needs no generated
service stubs.

Environment: INFERD_BIN (default <repo>/build/bin/inferd).
"""

import importlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import harness

try:
    import grpc
except ImportError:  # pragma: no cover - reported as a skip below
    grpc = None

PROTO_DIR = os.path.join(harness.REPO_ROOT, "proto")
SERVICE = "/inference.GRPCInferenceService/"


def generate_messages(out_dir):
    """Generates grpc_service_pb2, model_config_pb2 and health_pb2 into out_dir."""
    protos = [os.path.join(PROTO_DIR, p) for p in ("model_config.proto", "grpc_service.proto",
                                                  "health.proto")]
    os.makedirs(out_dir, exist_ok=True)
    protoc = shutil.which("protoc")
    if protoc:
        cmd = [protoc]
    else:
        cmd = [sys.executable, "-m", "grpc_tools.protoc"]
    done = subprocess.run(cmd + ["--proto_path=" + PROTO_DIR, "--python_out=" + out_dir] + protos,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("protoc failed: " + done.stderr)
    sys.path.insert(0, out_dir)
    pb = importlib.import_module("grpc_service_pb2")
    health = importlib.import_module("health_pb2")
    return pb, health


class GrpcServerTestCase(harness.ServerTestCase):
    """A ServerTestCase whose server also serves gRPC: ``cls.pb`` holds the generated messages
    and ``cls.channel`` is an insecure channel to the server, closed at tear-down."""

    SERVER_CLASS = harness.GrpcServer
    channel = None

    @classmethod
    def open_clients(cls):
        super().open_clients()
        cls.pb, _ = generate_messages(os.path.join(cls.tmp, "gen"))
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)

    @classmethod
    def close_clients(cls):
        if cls.channel is not None:
            cls.channel.close()
            cls.channel = None


def int32s(values):
    return struct.pack("<%di" % len(values), *values)


def from_int32s(data):
    return list(struct.unpack("<%di" % (len(data) // 4), data))


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class GrpcCompatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-grpc-compat-")
        repo = harness.copy_test_models(os.path.join(cls.tmp, "models"), ["simple", "strings"])
        cls.pb, cls.health = generate_messages(os.path.join(cls.tmp, "gen"))
        cls.server = harness.GrpcServer(repo)
        try:
            cls.server.start()
        except BaseException:
            cls.server.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        try:
            # Raises harness.SanitizerReport on a report or an unclean exit.
            code = cls.server.stop(timeout=20)
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)
        if code != 0:
            raise AssertionError("inferd exited with %r\n%s" % (code, cls.server.log_tail(40)))

    # -- helpers ---------------------------------------------------------------------------

    def unary(self, method, request, response_class, service=SERVICE, **kwargs):
        call = self.channel.unary_unary(service + method,
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=response_class.FromString)
        return call(request, timeout=20, **kwargs)

    def simple_request(self, request_id, base=0):
        pb = self.pb
        req = pb.ModelInferRequest(model_name="simple", id=request_id)
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        req.raw_input_contents.append(int32s([base + i for i in range(16)]))
        req.raw_input_contents.append(int32s([1] * 16))
        return req

    def check_simple(self, resp, base=0):
        self.assertEqual(resp.model_name, "simple")
        self.assertEqual(resp.model_version, "1")
        self.assertEqual([o.name for o in resp.outputs], ["OUTPUT0", "OUTPUT1"])
        self.assertEqual(len(resp.raw_output_contents), 2)
        self.assertEqual(list(resp.outputs[0].shape), [1, 16])
        self.assertEqual(from_int32s(resp.raw_output_contents[0]), [base + i + 1 for i in range(16)])
        self.assertEqual(from_int32s(resp.raw_output_contents[1]), [base + i - 1 for i in range(16)])

    # -- tests -----------------------------------------------------------------------------

    def test_server_live_and_ready(self):
        pb = self.pb
        self.assertTrue(self.unary("ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse).live)
        self.assertTrue(
            self.unary("ServerReady", pb.ServerReadyRequest(), pb.ServerReadyResponse).ready)
        h = self.unary("Check", self.health.HealthCheckRequest(), self.health.HealthCheckResponse,
                       service="/grpc.health.v1.Health/")
        self.assertEqual(h.status, self.health.HealthCheckResponse.SERVING)

    def test_metadata(self):
        pb = self.pb
        md = self.unary("ServerMetadata", pb.ServerMetadataRequest(), pb.ServerMetadataResponse)
        self.assertEqual(md.name, "inferd")
        self.assertIn("model_repository", list(md.extensions))
        m = self.unary("ModelMetadata", pb.ModelMetadataRequest(name="simple"),
                       pb.ModelMetadataResponse)
        self.assertEqual(m.name, "simple")
        self.assertEqual(list(m.versions), ["1"])
        self.assertEqual([(t.name, t.datatype, list(t.shape)) for t in m.inputs],
                         [("INPUT0", "INT32", [-1, 16]), ("INPUT1", "INT32", [-1, 16])])
        self.assertEqual([t.name for t in m.outputs], ["OUTPUT0", "OUTPUT1"])
        c = self.unary("ModelConfig", pb.ModelConfigRequest(name="simple"), pb.ModelConfigResponse)
        self.assertEqual(c.config.name, "simple")
        self.assertEqual(c.config.max_batch_size, 8)

    def test_model_infer_raw(self):
        pb = self.pb
        resp = self.unary("ModelInfer", self.simple_request("py-1", base=100), pb.ModelInferResponse)
        self.assertEqual(resp.id, "py-1")
        self.check_simple(resp, base=100)
        for out in resp.outputs:
            self.assertFalse(out.HasField("contents"))

    def test_model_infer_compressed(self):
        pb = self.pb
        for algorithm in (grpc.Compression.Gzip, grpc.Compression.Deflate):
            resp = self.unary("ModelInfer", self.simple_request("z"), pb.ModelInferResponse,
                              compression=algorithm)
            self.check_simple(resp)

    def test_model_infer_bytes(self):
        pb = self.pb
        req = pb.ModelInferRequest(model_name="strings")
        req.inputs.add(name="INPUT0", datatype="BYTES", shape=[1, 2])
        blob = b"".join(struct.pack("<I", len(s)) + s for s in (b"hello", b"\xffworld"))
        req.raw_input_contents.append(blob)
        resp = self.unary("ModelInfer", req, pb.ModelInferResponse)
        self.assertEqual(resp.outputs[0].datatype, "BYTES")
        self.assertEqual(resp.raw_output_contents[0], blob)

    def test_errors_are_grpc_statuses(self):
        pb = self.pb
        req = self.simple_request("bad")
        req.model_name = "no_such_model"
        with self.assertRaises(grpc.RpcError) as ctx:
            self.unary("ModelInfer", req, pb.ModelInferResponse)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn("Request for unknown model", ctx.exception.details())

        req = self.simple_request("bad-shape")
        req.inputs[0].shape[:] = [1, 15]
        with self.assertRaises(grpc.RpcError) as ctx:
            self.unary("ModelInfer", req, pb.ModelInferResponse)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

        with self.assertRaises(grpc.RpcError) as ctx:
            self.unary("ModelReady", pb.ModelReadyRequest(name="simple", version="x"),
                       pb.ModelReadyResponse)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        # still serving
        self.check_simple(self.unary("ModelInfer", self.simple_request("ok"), pb.ModelInferResponse))

    def test_stream_300_requests_with_one_bad(self):
        pb = self.pb
        n, bad = 300, 137

        def requests():
            for i in range(n):
                req = self.simple_request("req-%d" % i, base=i)
                if i == bad:
                    req.inputs[1].datatype = "FP32"  # the model wants INT32
                yield req

        call = self.channel.stream_stream(SERVICE + "ModelStreamInfer",
                                          request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=pb.ModelStreamInferResponse.FromString)
        responses = call(requests(), timeout=60)
        received = list(responses)
        self.assertEqual(responses.code(), grpc.StatusCode.OK)
        self.assertEqual(len(received), n)
        errors = [r for r in received if r.error_message]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0].infer_response.id, "req-%d" % bad)
        self.assertIn("INPUT1", errors[0].error_message)
        for i, r in enumerate(received):
            self.assertEqual(r.infer_response.id, "req-%d" % i)  # request order
            if i == bad:  # rejected before inference: the id alone, no final flag (Triton's)
                self.assertNotIn("triton_final_response", r.infer_response.parameters)
                self.assertEqual(r.infer_response.model_name, "")
                continue
            self.assertTrue(r.infer_response.parameters["triton_final_response"].bool_param)
            self.assertEqual(r.error_message, "")
            self.check_simple(r.infer_response, base=i)

    def test_stream_with_triton_grpc_error(self):
        pb = self.pb

        def requests():
            yield self.simple_request("a")
            bad = self.simple_request("b")
            bad.model_name = "no_such_model"
            yield bad
            yield self.simple_request("c")

        call = self.channel.stream_stream(SERVICE + "ModelStreamInfer",
                                          request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=pb.ModelStreamInferResponse.FromString)
        responses = call(requests(), timeout=60, metadata=(("triton_grpc_error", "true"),))
        received = []
        with self.assertRaises(grpc.RpcError) as ctx:
            for r in responses:
                received.append(r)
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertEqual([r.infer_response.id for r in received], ["a"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
