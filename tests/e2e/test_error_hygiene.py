#!/usr/bin/python3
"""Errors never echo unbounded client data (cut to 128 bytes, control characters escaped) and
never reveal the server's paths; over HTTP and gRPC, against a real inferd."""

import os
import shutil
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import secure_util  # noqa: E402
from secure_util import grpc  # noqa: E402

LONG = "N" * 100000


class ErrorHygieneTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-hygiene-")
        cls.repo = os.path.join(cls.tmp, "models")
        harness.write_model(cls.repo, "simple", harness.SIMPLE_CONFIG)
        harness.write_model(cls.repo, "broken", 'name: "broken"\nbackend: "no_such_backend"\n'
                            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                            'output [ { name: "O" data_type: TYPE_FP32 dims: [ 1 ] } ]\n')
        # A model file libtorch refuses: its load error names the file's path.
        harness.write_model(cls.repo, "broken_file", 'name: "broken_file"\nbackend: "pytorch"\n'
                            'input [ { name: "I" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
                            'output [ { name: "O" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
                            files={"1/model.pt": "this is not a model\n"})
        cls.pb = secure_util.grpc_messages(os.path.join(cls.tmp, "gen")) if grpc else None
        cls.server = secure_util.start_server(
            [cls.repo], ["--model-control-mode=explicit", "--load-model=simple",
                         "--http-max-input-size", str(1 << 20)], grpc_on=grpc is not None)
        cls.client = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def tearDown(self):
        self.assertTrue(self.server.alive(), self.server.log_tail())

    def check_bounded(self, msg):
        self.assertLess(len(msg), 1000, msg[:300])
        self.assertIn("...(100000 bytes)", msg)

    def test_http_long_input_name_truncated(self):
        req = {"inputs": [{"name": LONG, "shape": [1, 16], "datatype": "INT32",
                           "data": list(range(16))}]}
        r = self.client.post_json("/v2/models/simple/infer", req)
        self.assertEqual(r.status, 400, r)
        self.check_bounded(r.json()["error"])

    def test_http_long_datatype_and_header_truncated(self):
        req = {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": LONG, "data": [1]}]}
        r = self.client.post_json("/v2/models/simple/infer", req)
        self.assertEqual(r.status, 400, r)
        self.check_bounded(r.json()["error"])
        r = self.client.post("/v2/models/simple/infer", b"{}",
                             {"Content-Encoding": "x" * 30000})
        self.assertEqual(r.status, 501, r)
        self.assertLess(len(r.body), 1000)

    def test_http_control_characters_escaped(self):
        req = {"inputs": [{"name": "IN\nPUT\x01", "shape": [1, 16], "datatype": "INT32",
                           "data": list(range(16))}]}
        r = self.client.post_json("/v2/models/simple/infer", req)
        self.assertEqual(r.status, 400, r)
        msg = r.json()["error"]
        self.assertIn("IN\\nPUT\\x01", msg)
        self.assertNotIn("\n", msg)

    def test_load_error_hides_server_paths(self):
        r = self.client.post("/v2/repository/models/broken/load")
        self.assertEqual(r.status // 100, 4, r)
        msg = r.json()["error"]
        self.assertIn("no_such_backend", msg)
        for path in (self.repo, os.path.realpath(self.repo), harness.REPO_ROOT,
                     os.path.dirname(harness.INFERD_BIN)):
            self.assertNotIn(path, msg)
        r = self.client.post("/v2/repository/index")
        self.assertEqual(r.status, 200, r)
        for entry in r.json():
            self.assertNotIn(self.repo, entry.get("reason", ""))
            self.assertNotIn(os.path.dirname(harness.INFERD_BIN), entry.get("reason", ""))

    def server_paths(self):
        return (self.repo, os.path.realpath(self.repo), harness.REPO_ROOT,
                os.path.dirname(harness.INFERD_BIN))

    def test_failed_model_errors_hide_server_paths(self):
        # Every place the load failure is repeated: the load answer, the index, and what
        # inference and metadata requests for the model get afterwards, over HTTP and gRPC.
        r = self.client.post("/v2/repository/models/broken_file/load")
        self.assertEqual(r.status // 100, 4, r)
        messages = [r.json()["error"]]
        self.assertIn("cannot load TorchScript model", messages[0])
        self.assertIn("<server path>", messages[0])
        index = self.client.post("/v2/repository/index").json()
        messages += [e.get("reason", "") for e in index if e["name"] == "broken_file"]
        r = self.client.post_json("/v2/models/broken_file/infer",
                                  {"inputs": [{"name": "I", "shape": [1, 1], "datatype": "FP32",
                                               "data": [1.0]}]})
        self.assertGreaterEqual(r.status, 400, r)
        messages.append(r.json()["error"])
        for path in ("/v2/models/broken_file", "/v2/models/broken_file/ready",
                     "/v2/models/broken_file/config"):
            r = self.client.get(path)
            messages.append(r.body.decode(errors="replace"))
        if grpc is not None:
            pb = self.pb
            channel = grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port)
            call = channel.unary_unary(
                "/inference.GRPCInferenceService/ModelInfer",
                request_serializer=pb.ModelInferRequest.SerializeToString,
                response_deserializer=pb.ModelInferResponse.FromString)
            req = pb.ModelInferRequest(model_name="broken_file")
            t = req.inputs.add(name="I", datatype="FP32", shape=[1, 1])
            t.contents.fp32_contents.append(1.0)
            with self.assertRaises(grpc.RpcError) as e:
                call(req, timeout=10)
            messages.append(e.exception.details())
            channel.close()
        for msg in messages:
            for path in self.server_paths():
                self.assertNotIn(path, msg)

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_long_names_truncated(self):
        pb = self.pb
        channel = grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port)
        try:
            req = pb.ModelInferRequest(model_name="simple")
            req.inputs.add(name=LONG, datatype="INT32", shape=[1, 16])
            req.inputs.add(name="INPUT1", datatype="INT32", shape=[1, 16])
            req.raw_input_contents.append(struct.pack("<16i", *range(16)))
            req.raw_input_contents.append(struct.pack("<16i", *range(16)))
            with self.assertRaises(grpc.RpcError) as e:
                secure_util.unary(channel, "ModelInfer", req, pb.ModelInferResponse)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.check_bounded(e.exception.details())
            req = pb.ModelInferRequest(model_name="simple")
            req.parameters[LONG].bool_param = True
            with self.assertRaises(grpc.RpcError) as e:
                secure_util.unary(channel, "ModelInfer", req, pb.ModelInferResponse)
            self.assertLess(len(e.exception.details()), 5000)
        finally:
            channel.close()

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_invalid_utf8_does_not_flood_log(self):
        # ModelInferRequest with model_name (field 1) = b"\xff\xfe": protobuf refuses to parse
        # it and would log a line per request; inferd drops those lines.
        channel = grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port)
        try:
            call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
            before = len(self.server.log())
            for _ in range(20):
                with self.assertRaises(grpc.RpcError):
                    call(b"\x0a\x02\xff\xfe", timeout=10)
            new = self.server.log()[before:]
            self.assertFalse([l for l in new if "UTF-8" in l], new[:5])
        finally:
            channel.close()


if __name__ == "__main__":
    unittest.main()
