#!/usr/bin/python3
"""The load API as Triton answers it, over HTTP and gRPC (issue 20, items 1 and 2).

Failures: a model that cannot be read -- not in the repository, a config (override) that does
not parse -- is INTERNAL / 500 "failed to load '<m>', failed to poll from model repository"
followed by inferd's detail; a model that was read and whose backend failed to load it is
INVALID_ARGUMENT / 400 "load failed for model '<m>': ...".

Model files: "file:<version>/<path>" load parameters (base64 over HTTP, bytes_param over gRPC)
with a "config" load the model from a private temporary directory instead of the repository
(even a model the repository does not hold); the directory goes on unload, when a later load
replaces the model, and at shutdown. Bad paths, a missing config, a request over the size limit
and a restricted deployment without the key are refused and write nothing.

The model files are ONNX graphs Y = X * W made at test time with Debian's python3-onnx, served
by the onnx backend, so an inference tells whose weights were loaded.
"""

import base64
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import write_model, wait_until  # noqa: E402
from test_grpc_compat import SERVICE, GrpcServerTestCase, grpc  # noqa: E402

try:
    import onnx
    from onnx import helper, TensorProto
except ImportError:  # pragma: no cover - the class skips
    onnx = None

FILES_PREFIX = "inferd-model-files-"
POLL = "failed to poll from model repository"
SCALE_CONFIG = {"platform": "onnxruntime_onnx", "max_batch_size": 0,
                "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": [1, 4]}],
                "output": [{"name": "Y", "data_type": "TYPE_FP32", "dims": [1, 4]}]}
SCALE_PBTXT = """name: "scale"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 1, 4 ] } ]
"""


def scale_onnx(weights):
    """An ONNX model multiplying its FP32 [1, 4] input by `weights`."""
    w = helper.make_tensor("W", TensorProto.FLOAT, [4], [float(x) for x in weights])
    graph = helper.make_graph(
        [helper.make_node("Mul", ["X", "W"], ["Y"])], "scale",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model.SerializeToString()


def start(repos, args, tmpdir):
    """A GrpcServer whose $TMPDIR (where model files go) is `tmpdir`."""
    os.makedirs(tmpdir, exist_ok=True)
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = tmpdir
    try:
        return harness.GrpcServer(repos, args).start()
    finally:
        if old is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = old


def file_dirs(tmpdir):
    return sorted(d for d in os.listdir(tmpdir) if d.startswith(FILES_PREFIX))


class LoadCalls:
    """Load and unload over both protocols; expects cls.server, cls.client, cls.pb, cls.channel."""

    def http_load(self, model, config=None, files=None, headers=None, raw_parameters=None):
        params = dict(raw_parameters or {})
        if config is not None:
            params["config"] = config if isinstance(config, str) else json.dumps(config)
        for path, content in (files or {}).items():
            params["file:" + path] = base64.b64encode(content).decode()
        body = {"parameters": params} if params else {}
        return self.client.post_json("/v2/repository/models/%s/load" % model, body,
                                     headers=headers)

    def grpc_load(self, model, config=None, files=None, metadata=None, raw=None):
        """(code name, details): "OK" on success."""
        req = self.pb.RepositoryModelLoadRequest(model_name=model)
        if config is not None:
            req.parameters["config"].string_param = (
                config if isinstance(config, str) else json.dumps(config))
        for path, content in (files or {}).items():
            req.parameters["file:" + path].bytes_param = content
        for key, setter in (raw or {}).items():
            setter(req.parameters[key])
        call = self.channel.unary_unary(
            SERVICE + "RepositoryModelLoad", request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.pb.RepositoryModelLoadResponse.FromString)
        try:
            call(req, timeout=60, metadata=metadata)
            return "OK", ""
        except grpc.RpcError as e:
            return e.code().name, e.details()

    def unload(self, model, headers=None):
        r = self.client.post("/v2/repository/models/%s/unload" % model, headers=headers)
        self.assertEqual(r.status, 200, r)

    def infer_scale(self, model="scale", x=(1.0, 1.0, 1.0, 2.0)):
        r = self.client.infer(model, {"inputs": [{"name": "X", "shape": [1, 4], "datatype": "FP32",
                                                   "data": list(x)}]})
        self.assertEqual(r.status, 200, r)
        return r.json()["outputs"][0]["data"]

    def assertBoth(self, model, status, code, prefix, needle=None, **load):
        """The same refusal over HTTP and gRPC: HTTP `status`, gRPC `code`, a message starting
        with `prefix` (and holding `needle`)."""
        r = self.http_load(model, **load)
        msg = self.assertError(r, status, prefix)
        self.assertTrue(msg.startswith(prefix), msg)
        got, details = self.grpc_load(model, **load)
        self.assertEqual(got, code, details)
        self.assertTrue(details.startswith(prefix), details)
        if needle is not None:
            self.assertIn(needle, msg)
            self.assertIn(needle, details)
        return msg


class ModelFilesTestCase(LoadCalls, GrpcServerTestCase):
    """A server on both protocols whose $TMPDIR (where model files go) is ``cls.tmpdir``."""

    @classmethod
    def start_server(cls):
        cls.tmpdir = os.path.join(cls.tmp, "tmpdir")
        return start(cls.repos, cls.SERVER_ARGS, cls.tmpdir)


@unittest.skipIf(grpc is None or onnx is None, "python3-grpcio or python3-onnx is not installed")
class LoadApiTest(ModelFilesTestCase):

    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=simple")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        write_model(repo, "scale", SCALE_PBTXT)
        with open(os.path.join(repo, "scale", "1", "model.onnx"), "wb") as f:
            f.write(scale_onnx([1, 2, 3, 4]))
        write_model(repo, "no_backend", harness.identity_config("no_backend", "TYPE_FP32")
                    .replace('backend: "identity"', 'backend: "no_such_backend"'))
        write_model(repo, "garbage_onnx", SCALE_PBTXT.replace('"scale"', '"garbage_onnx"'),
                    files={"1/model.onnx": "this is not an ONNX model"})
        write_model(repo, "bad_text", 'name: "bad_text"\nbackend: "identity"\ninput [ {\n')
        return [repo]

    def tearDown(self):
        self.assertServerAlive()
        self.assertEqual(self.client.get("/v2/models/simple/ready").status, 200)

    def index_entries(self, name):
        r = self.client.post("/v2/repository/index")
        self.assertEqual(r.status, 200, r)
        return [e for e in r.json() if e["name"] == name]

    # ---- item 1: Triton's failure words ------------------------------------------------------

    def test_unknown_model_is_a_poll_failure(self):
        self.assertBoth("no_such_model", 500, "INTERNAL",
                        "failed to load 'no_such_model', %s: no model of that name in the model "
                        "repository" % POLL)
        self.assertEqual(self.index_entries("no_such_model"), [])

    def test_unparsable_config_is_a_poll_failure(self):
        self.assertBoth("simple", 500, "INTERNAL", "failed to load 'simple', %s: " % POLL,
                        config="{not json")
        self.assertEqual(self.client.get("/v2/models/simple/ready").status, 200,
                         "the served model is untouched")
        # The repository's own config that does not parse: the same answer, and the index keeps
        # showing why (as before).
        self.assertBoth("bad_text", 500, "INTERNAL", "failed to load 'bad_text', %s: " % POLL,
                        needle="bad_text/config.pbtxt")
        [entry] = self.index_entries("bad_text")
        self.assertEqual(entry["state"], "UNAVAILABLE")
        self.assertIn("bad_text/config.pbtxt", entry["reason"])

    def test_backend_failure_is_a_load_failure(self):
        for model, needle in (("no_backend", "no_such_backend"),
                              ("garbage_onnx", "cannot load ONNX model")):
            with self.subTest(model=model):
                msg = self.assertBoth(model, 400, "INVALID_ARGUMENT",
                                      "load failed for model '%s': " % model, needle=needle)
                self.assertNotIn(self.tmp, msg, "server paths are not shown")
                entries = self.index_entries(model)
                self.assertEqual([e["state"] for e in entries], ["UNAVAILABLE"], entries)
                self.assertTrue(entries[0].get("reason"), entries)

    # ---- item 2: model files -----------------------------------------------------------------

    def test_files_replace_the_repository_model_until_a_plain_load(self):
        self.assertEqual(self.http_load("scale").status, 200)
        self.assertEqual(self.infer_scale(), [1, 2, 3, 8], "the repository's weights")
        r = self.http_load("scale", SCALE_CONFIG, {"1/model.onnx": scale_onnx([10, 20, 30, 40])})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.infer_scale(), [10, 20, 30, 80], "the HTTP files' weights")
        [first] = file_dirs(self.tmpdir)
        self.assertEqual(os.stat(os.path.join(self.tmpdir, first)).st_mode & 0o777, 0o700)
        self.assertEqual(self.grpc_load("scale", SCALE_CONFIG,
                                        {"1/model.onnx": scale_onnx([5, 5, 5, 5])}), ("OK", ""))
        self.assertEqual(self.infer_scale(), [5, 5, 5, 10], "the gRPC files' weights")
        self.assertTrue(wait_until(lambda: first not in file_dirs(self.tmpdir), 10),
                        "the replaced files' directory is removed")
        self.assertEqual(len(file_dirs(self.tmpdir)), 1)
        # A load without files reads the repository again; the files go.
        self.assertEqual(self.http_load("scale").status, 200)
        self.assertEqual(self.infer_scale(), [1, 2, 3, 8])
        self.assertTrue(wait_until(lambda: file_dirs(self.tmpdir) == [], 10), file_dirs(self.tmpdir))

    def test_config_override_serves_until_a_plain_load(self):
        def instances():
            r = self.client.get("/v2/models/scale/config")
            self.assertEqual(r.status, 200, r)
            return sum(g["count"] for g in r.json()["instance_group"])

        self.assertEqual(self.http_load("scale").status, 200)
        self.assertEqual(instances(), 1)
        override = dict(SCALE_CONFIG, instance_group=[{"kind": "KIND_CPU", "count": 2}])
        self.assertEqual(self.http_load("scale", override).status, 200)
        self.assertEqual(instances(), 2, "the override serves")
        # The repository did not change, but the model serving is not the repository's: a
        # load without override reads it again (infer-perf --search restores models this way).
        self.assertEqual(self.http_load("scale").status, 200)
        self.assertEqual(instances(), 1, "the repository's config serves again")
        self.assertEqual(self.infer_scale(), [1, 2, 3, 8])

    def test_files_make_a_model_the_repository_lacks_until_unloaded(self):
        files = {"1/model.onnx": scale_onnx([1, 1, 1, 1]), "2/model.onnx": scale_onnx([3, 3, 3, 3])}
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                if protocol == "http":
                    self.assertEqual(self.http_load("fresh", SCALE_CONFIG, files).status, 200)
                else:
                    self.assertEqual(self.grpc_load("fresh", SCALE_CONFIG, files), ("OK", ""))
                self.assertEqual(self.infer_scale("fresh"), [3, 3, 3, 6], "the latest version")
                self.assertEqual([(e.get("version"), e.get("state"))
                                  for e in self.index_entries("fresh")], [("2", "READY")])
                self.assertEqual(len(file_dirs(self.tmpdir)), 1)
                self.unload("fresh")
                self.assertTrue(wait_until(lambda: file_dirs(self.tmpdir) == [], 10),
                                "unload removes the files' directory")
                self.assertEqual(self.client.get("/v2/models/fresh/ready").status, 400)

    def test_files_need_a_config(self):
        self.assertBoth("fresh", 400, "INVALID_ARGUMENT",
                        "Load parameter 'config' must be specified for model file override",
                        files={"1/model.onnx": scale_onnx([1, 1, 1, 1])})
        self.assertEqual(file_dirs(self.tmpdir), [])

    def test_bad_paths_write_nothing(self):
        outside = os.path.join(self.tmp, "escaped")
        cases = [
            ("../escaped", "'.' and '..' components are not allowed"),
            ("1/../../escaped", "'.' and '..' components are not allowed"),
            (outside, "absolute paths are not allowed"),
            ("model.onnx", "the first path component must be a version number"),
            ("01/model.onnx", "the first path component must be a version number"),
            ("-1/model.onnx", "the first path component must be a version number"),
            ("1//model.onnx", "empty path component"),
            ("1/", "empty path component"),
            ("1", "the path must name a file inside a version directory"),
        ]
        for path, problem in cases:
            with self.subTest(path=path):
                self.assertBoth("fresh", 400, "INVALID_ARGUMENT",
                                "invalid load parameter 'file:%s': " % path, needle=problem,
                                config=SCALE_CONFIG,
                                files={"1/model.onnx": scale_onnx([1, 1, 1, 1]), path: b"x"})
        with self.subTest(path="a file and a directory"):
            self.assertBoth("fresh", 400, "INVALID_ARGUMENT",
                            "invalid load parameter 'file:1/a': the path is both a file and the "
                            "directory of 'file:1/a/b'", config=SCALE_CONFIG,
                            files={"1/a": b"x", "1/a/b": b"y"})
        self.assertFalse(os.path.exists(outside))
        self.assertEqual(file_dirs(self.tmpdir), [])
        self.assertNotEqual(self.client.get("/v2/models/fresh/ready").status, 200)

    def test_wire_encodings_are_checked(self):
        config = json.dumps(SCALE_CONFIG)
        # JSON keeps one of two equal keys silently: refused instead.
        body = ('{"parameters": {"config": %s, "file:1/model.onnx": "eA==", '
                '"file:1/model.onnx": "eQ=="}}' % json.dumps(config)).encode()
        self.assertError(self.client.post("/v2/repository/models/fresh/load", body), 400,
                         "duplicate load parameter 'file:1/model.onnx'")
        r = self.http_load("fresh", config, raw_parameters={"file:1/model.onnx": "not base64!"})
        self.assertError(r, 400, "load parameter 'file:1/model.onnx' is not valid base64")
        r = self.http_load("fresh", config, raw_parameters={"file:1/model.onnx": 7})
        self.assertError(r, 400, "load parameter 'file:1/model.onnx' must be a string holding "
                                 "the file's content in base64")
        code, details = self.grpc_load(
            "fresh", config,
            raw={"file:1/model.onnx": lambda p: p.__setattr__("string_param", "x")})
        self.assertEqual((code, details), (
            "INVALID_ARGUMENT",
            "invalid value type for load parameter 'file:1/model.onnx', expected bytes_param."))
        self.assertEqual(file_dirs(self.tmpdir), [])


@unittest.skipIf(grpc is None or onnx is None, "python3-grpcio or python3-onnx is not installed")
class LoadFilesLimitsTest(ModelFilesTestCase):
    """Files are bounded by the request that carries them; a restricted deployment refuses
    them without the key; shutdown removes them."""

    LIMIT = 4096

    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=simple",
                   "--http-max-input-size=%d" % LIMIT, "--grpc-max-message-size=%d" % LIMIT,
                   "--http-restricted-api=model-repository:admin-key=s3cret",
                   "--grpc-restricted-protocol=model-repository:admin-key=s3cret")

    @classmethod
    def build_repository(cls, root):
        cls.repo = os.path.join(root, "models")
        write_model(cls.repo, "simple", harness.SIMPLE_CONFIG)
        return [cls.repo]

    KEY = {"admin-key": "s3cret"}
    GRPC_KEY = [("triton-grpc-protocol-admin-key", "s3cret")]

    def assertServing(self):
        self.assertTrue(self.server.alive())
        self.assertEqual(self.client.get("/v2/models/simple/ready").status, 200)

    def test_restricted_deployment_needs_the_key(self):
        files = {"1/model.onnx": scale_onnx([2, 2, 2, 2])}
        r = self.http_load("fresh", SCALE_CONFIG, files)
        self.assertEqual(r.status, 403, r)
        self.assertIn("'admin-key'", r.json()["error"])
        code, details = self.grpc_load("fresh", SCALE_CONFIG, files)
        self.assertEqual(code, "PERMISSION_DENIED", details)
        self.assertEqual(file_dirs(self.tmpdir), [], "a refused call writes nothing")
        self.assertEqual(self.client.get("/v2/models/fresh/ready").status, 404)
        r = self.http_load("fresh", SCALE_CONFIG, files, headers=self.KEY)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.infer_scale("fresh"), [2, 2, 2, 4])
        self.assertEqual(self.grpc_load("fresh", SCALE_CONFIG, files, metadata=self.GRPC_KEY),
                         ("OK", ""))
        self.unload("fresh", headers=self.KEY)
        self.assertTrue(wait_until(lambda: file_dirs(self.tmpdir) == [], 10))

    def test_files_over_the_request_limit_are_refused(self):
        big = {"1/model.onnx": b"\0" * (2 * self.LIMIT)}
        r = self.http_load("fresh", SCALE_CONFIG, big, headers=self.KEY)
        self.assertEqual(r.status, 400, r)
        self.assertIn("request body exceeds the maximum of %d bytes" % self.LIMIT,
                      r.json()["error"])
        code, _ = self.grpc_load("fresh", SCALE_CONFIG, big, metadata=self.GRPC_KEY)
        self.assertEqual(code, "RESOURCE_EXHAUSTED")
        self.assertEqual(file_dirs(self.tmpdir), [])
        self.assertServing()

    def test_shutdown_removes_the_files(self):
        tmpdir = os.path.join(self.tmp, "shutdown-tmpdir")
        server = start([self.repo], ("--model-control-mode=explicit",), tmpdir)
        try:
            client = server.client()
            r = client.post_json("/v2/repository/models/fresh/load", {"parameters": {
                "config": json.dumps(SCALE_CONFIG),
                "file:1/model.onnx": base64.b64encode(scale_onnx([1, 2, 1, 2])).decode()}})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(len(file_dirs(tmpdir)), 1)
        finally:
            self.assertEqual(server.stop(), 0)
        self.assertEqual(file_dirs(tmpdir), [], "shutdown removes the files")


if __name__ == "__main__":
    unittest.main()
