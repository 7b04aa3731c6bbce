#!/usr/bin/python3
"""Restricted APIs (--http-restricted-api, --grpc-restricted-protocol): a request to a
restricted group without the configured header / metadata key and value is refused with 403 /
PERMISSION_DENIED naming the missing header; unrestricted groups and requests with the right
value are served; bad flag values stop the server at start with an error naming the flag."""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import secure_util  # noqa: E402
from secure_util import grpc  # noqa: E402

ADMIN = {"admin-key": "s3cret"}
INFER = {"infer-key": "letmein"}


def build_repo(root):
    repo = os.path.join(root, "models")
    harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
    return repo


class RestrictedApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-restricted-")
        repo = build_repo(cls.tmp)
        cls.pb = secure_util.grpc_messages(os.path.join(cls.tmp, "gen")) if grpc else None
        cls.server = secure_util.start_server(
            [repo],
            ["--model-control-mode=explicit", "--load-model=simple",
             "--http-restricted-api=model-repository,statistics,shared-memory:admin-key=s3cret",
             "--http-restricted-api=inference:infer-key=letmein",
             "--grpc-restricted-protocol=model-repository,statistics:Admin-Key=s3cret",
             "--grpc-restricted-protocol=inference:infer-key=letmein"],
            grpc_on=grpc is not None)
        cls.client = cls.server.client()
        if grpc:
            cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)

    @classmethod
    def tearDownClass(cls):
        if grpc:
            cls.channel.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assertDenied(self, r, header):
        self.assertEqual(r.status, 403, r)
        msg = r.json()["error"]
        self.assertIn("'%s'" % header, msg)
        self.assertNotIn("s3cret", msg)
        self.assertNotIn("letmein", msg)

    # ---- HTTP ----

    def test_http_unrestricted_groups_served(self):
        self.assertEqual(self.client.get("/v2/health/ready").status, 200)
        self.assertEqual(self.client.get("/v2").status, 200)
        self.assertEqual(self.client.get("/v2/models/simple").status, 200)
        self.assertEqual(self.client.get("/v2/models/simple/config").status, 200)

    def test_http_repository_needs_header(self):
        self.assertDenied(self.client.post("/v2/repository/index"), "admin-key")
        self.assertDenied(self.client.post("/v2/repository/index", headers={"admin-key": "wrong"}),
                          "admin-key")
        self.assertDenied(self.client.post("/v2/repository/models/simple/unload"), "admin-key")
        r = self.client.post("/v2/repository/index", headers={"Admin-Key": "s3cret"})
        self.assertEqual(r.status, 200, r)
        self.assertIn("simple", [m["name"] for m in r.json()])

    def test_http_statistics_and_shm_need_header(self):
        self.assertDenied(self.client.get("/v2/models/stats"), "admin-key")
        self.assertDenied(self.client.get("/v2/models/simple/versions/1/stats"), "admin-key")
        self.assertDenied(self.client.get("/v2/systemsharedmemory/status"), "admin-key")
        self.assertEqual(self.client.get("/v2/models/stats", headers=ADMIN).status, 200)
        self.assertEqual(self.client.get("/v2/systemsharedmemory/status", headers=ADMIN).status, 200)

    def test_http_inference_has_its_own_key(self):
        req, _ = harness.simple_request(list(range(16)), [1] * 16)
        self.assertDenied(self.client.post_json("/v2/models/simple/infer", req), "infer-key")
        self.assertDenied(self.client.post_json("/v2/models/simple/infer", req, headers=ADMIN),
                          "infer-key")
        r = self.client.post_json("/v2/models/simple/infer", req, headers=INFER)
        self.assertEqual(r.status, 200, r)

    # ---- gRPC ----

    def grpc_call(self, method, request, response, metadata=None):
        return secure_util.unary(self.channel, method, request, response, metadata=metadata)

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_repository_needs_metadata(self):
        pb = self.pb
        with self.assertRaises(grpc.RpcError) as e:
            self.grpc_call("RepositoryIndex", pb.RepositoryIndexRequest(),
                           pb.RepositoryIndexResponse)
        self.assertEqual(e.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        self.assertIn("triton-grpc-protocol-admin-key", e.exception.details())
        self.assertNotIn("s3cret", e.exception.details())
        r = self.grpc_call("RepositoryIndex", pb.RepositoryIndexRequest(),
                           pb.RepositoryIndexResponse,
                           metadata=[("triton-grpc-protocol-admin-key", "s3cret")])
        self.assertIn("simple", [m.name for m in r.models])

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_inference_and_stream(self):
        pb = self.pb
        req = pb.ModelInferRequest(model_name="simple")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        req.raw_input_contents.append(struct.pack("<16i", *range(16)))
        req.raw_input_contents.append(struct.pack("<16i", *([1] * 16)))
        with self.assertRaises(grpc.RpcError) as e:
            self.grpc_call("ModelInfer", req, pb.ModelInferResponse)
        self.assertEqual(e.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        ok = self.grpc_call("ModelInfer", req, pb.ModelInferResponse,
                            metadata=[("triton-grpc-protocol-infer-key", "letmein")])
        self.assertEqual(len(ok.raw_output_contents), 2)
        stream = self.channel.stream_stream(
            "/inference.GRPCInferenceService/ModelStreamInfer",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.ModelStreamInferResponse.FromString)
        with self.assertRaises(grpc.RpcError) as e:
            list(stream(iter([req]), timeout=10))
        self.assertEqual(e.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        # Unrestricted: health and metadata.
        self.assertTrue(self.grpc_call("ServerLive", pb.ServerLiveRequest(),
                                       pb.ServerLiveResponse).live)
        self.assertEqual(self.grpc_call("ModelMetadata", pb.ModelMetadataRequest(name="simple"),
                                        pb.ModelMetadataResponse).name, "simple")


class RestrictedFlagErrorsTest(unittest.TestCase):
    def run_inferd(self, *flags):
        done = subprocess.run([harness.INFERD_BIN, "--model-repository", "/nonexistent"] +
                              list(flags), capture_output=True, text=True, timeout=30)
        return done.returncode, done.stderr

    def test_bad_values(self):
        for flag, needle in (("--http-restricted-api=bogus:k=v", "unknown API 'bogus'"),
                             ("--http-restricted-api=health", "no ':'"),
                             ("--grpc-restricted-protocol=health:=v", "<key>="),
                             ("--http-restricted-api=health,health:k=v", "more than once")):
            with self.subTest(flag=flag):
                code, err = self.run_inferd(flag)
                self.assertEqual(code, 2, err)
                self.assertIn(flag.split("=")[0], err)
                self.assertIn(needle, err)


if __name__ == "__main__":
    unittest.main()
