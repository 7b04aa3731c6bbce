#!/usr/bin/python3
"""HTTP and gRPC give the same answer to the same bad input.

One inferd serves both protocols (explicit model control, client shared memory disabled). Each
case sends one bad input over HTTP and over gRPC and asserts the same class of answer -- the HTTP
status is what the one code table (HttpStatusFromCode, src/core/status.cc) gives for the gRPC
code -- and the same message, word for word: malformed model names on every model-addressed
call, unknown models, bad version strings, mistyped reserved request parameters, shared-memory
calls with client shared memory disabled, and repository calls with a bad name, a repository
name or a mistyped parameter (docs/decisions.md, "One control plane for both front ends").

Runs with Debian's /usr/bin/python3 and python3-grpcio; gRPC messages are generated from proto/
as in test_grpc_compat.py.
"""

import base64
import json
import os
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_grpc_compat import SERVICE, GrpcServerTestCase, grpc, int32s  # noqa: E402

# src/core/status.cc HttpStatusFromCode, by gRPC code value.
HTTP_STATUS = {0: 200, 1: 400, 2: 500, 3: 400, 4: 504, 5: 404, 6: 400, 7: 403, 8: 429, 9: 400,
               10: 400, 11: 400, 12: 501, 13: 500, 14: 503}
INVALID_ARGUMENT, NOT_FOUND, UNIMPLEMENTED, INTERNAL = 3, 5, 12, 13

MALFORMED_NAMES = ["../x", "..", ".", "a/b", "x..y", "a\\b", "a\x01b", "m" * 256]


def q(name):
    return urllib.parse.quote(name, safe="")


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class ProtocolAgreementTest(GrpcServerTestCase):

    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=simple")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
        return [repo]

    # -- the two protocols ------------------------------------------------------------------

    def grpc_error(self, method, request):
        """(code value, message) of a unary call that must fail."""
        pb = self.pb
        response = getattr(pb, method + "Response", None) or {
            "ModelInfer": pb.ModelInferResponse}[method]
        call = self.channel.unary_unary(SERVICE + method,
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=response.FromString)
        try:
            call(request, timeout=30)
        except grpc.RpcError as e:
            return e.code().value[0], e.details()
        self.fail("gRPC %s succeeded: %s" % (method, request))

    def http_error(self, method, path, body=None):
        """(status, message) of an HTTP call that must fail."""
        data = json.dumps(body).encode() if body is not None else None
        r = self.client.request(method, path, data)
        self.assertGreaterEqual(r.status, 400, "%s %s -> %s" % (method, path, r))
        return r.status, r.json()["error"]

    def assertAgree(self, what, http, grpc_call, code=None, needle=None):
        """Same class of answer (HTTP status = table[gRPC code]) and the same message."""
        status, http_message = self.http_error(*http)
        grpc_code, grpc_message = self.grpc_error(*grpc_call)
        detail = "%s: HTTP %d %r / gRPC %d %r" % (what, status, http_message, grpc_code,
                                                  grpc_message)
        if code is not None:
            self.assertEqual(grpc_code, code, detail)
        self.assertEqual(status, HTTP_STATUS[grpc_code], detail)
        self.assertEqual(http_message, grpc_message, detail)
        if needle is not None:
            self.assertIn(needle, http_message, detail)
        return http_message

    # -- requests ---------------------------------------------------------------------------

    def http_infer_body(self, parameters=None):
        body = harness.simple_request(list(range(16)), [1] * 16)[0]
        if parameters is not None:
            body["parameters"] = parameters
        return body

    def grpc_infer(self, model, parameters=None, version=""):
        req = self.pb.ModelInferRequest(model_name=model, model_version=version)
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            req.raw_input_contents.append(int32s([1] * 16))
        for key, setter in (parameters or {}).items():
            setter(req.parameters[key])
        return req

    def model_calls(self, name, version=""):
        """(what, HTTP call, gRPC call) for every model-addressed call on `name`."""
        pb = self.pb
        base = "/v2/models/" + q(name) + ("/versions/" + q(version) if version else "")
        return [
            ("metadata", ("GET", base), ("ModelMetadata",
                                         pb.ModelMetadataRequest(name=name, version=version))),
            ("ready", ("GET", base + "/ready"),
             ("ModelReady", pb.ModelReadyRequest(name=name, version=version))),
            ("config", ("GET", base + "/config"),
             ("ModelConfig", pb.ModelConfigRequest(name=name, version=version))),
            ("infer", ("POST", base + "/infer", self.http_infer_body()),
             ("ModelInfer", self.grpc_infer(name, version=version))),
            ("stats", ("GET", base + "/stats"),
             ("ModelStatistics", pb.ModelStatisticsRequest(name=name, version=version))),
        ]

    def repository_calls(self, name, repository="", http_body=None, grpc_parameters=None):
        pb = self.pb
        prefix = "/v2/repository" + ("/" + q(repository) if repository else "")
        calls = []
        for action, method, request in (("load", "RepositoryModelLoad",
                                         pb.RepositoryModelLoadRequest),
                                        ("unload", "RepositoryModelUnload",
                                         pb.RepositoryModelUnloadRequest)):
            req = request(repository_name=repository, model_name=name)
            for key, setter in (grpc_parameters or {}).get(action, {}).items():
                setter(req.parameters[key])
            body = (http_body or {}).get(action)
            calls.append((action, ("POST", "%s/models/%s/%s" % (prefix, q(name), action), body),
                          (method, req)))
        return calls

    # -- tests ------------------------------------------------------------------------------

    def test_malformed_model_names_on_every_model_addressed_call(self):
        for name in MALFORMED_NAMES:
            for what, http, grpc_call in self.model_calls(name) + self.repository_calls(name):
                with self.subTest(name=name, call=what):
                    self.assertAgree(what, http, grpc_call, INVALID_ARGUMENT,
                                     "invalid model name '")

    def test_malformed_name_on_a_stream_says_the_same(self):
        _, http_message = self.http_error("POST", "/v2/models/%s/infer" % q("../x"),
                                          self.http_infer_body())
        call = self.channel.stream_stream(
            SERVICE + "ModelStreamInfer", request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.pb.ModelStreamInferResponse.FromString)
        responses = list(call(iter([self.grpc_infer("../x")]), timeout=30))
        self.assertEqual(len(responses), 1)
        self.assertEqual(responses[0].error_message, http_message)

    def test_unknown_model(self):
        for what, http, grpc_call in self.model_calls("no_such_model"):
            with self.subTest(call=what):
                code = INVALID_ARGUMENT if what == "stats" else NOT_FOUND  # Triton's statistics
                self.assertAgree(what, http, grpc_call, code, "no_such_model")
        load, unload = self.repository_calls("no_such_model")
        # Triton's words for a model it cannot find (test_load_api.py covers the rest).
        self.assertAgree("load", load[1], load[2], INTERNAL,
                         "failed to load 'no_such_model', failed to poll from model repository")
        # Unloading a model that is not loaded succeeds on both (as Triton).
        self.assertEqual(self.client.request(*unload[1][:2]).status, 200)
        self.channel.unary_unary(SERVICE + unload[2][0],
                                 request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=self.pb.RepositoryModelUnloadResponse.FromString
                                 )(unload[2][1], timeout=30)

    def test_unknown_and_malformed_versions(self):
        for version, code in (("9", NOT_FOUND), ("abc", INVALID_ARGUMENT),
                              ("18446744073709551616", INVALID_ARGUMENT)):
            for what, http, grpc_call in self.model_calls("simple", version):
                if code == NOT_FOUND and what in ("ready", "stats"):
                    continue  # not an error (ready) or Triton's INVALID_ARGUMENT (stats)
                with self.subTest(version=version, call=what):
                    self.assertAgree(what, http, grpc_call, code)

    def test_mistyped_reserved_parameters(self):
        cases = [
            ("priority", "high", lambda p: p.__setattr__("string_param", "high")),
            ("priority", -1, lambda p: p.__setattr__("int64_param", -1)),
            ("timeout", 1.5, lambda p: p.__setattr__("double_param", 1.5)),
            ("timeout", True, lambda p: p.__setattr__("bool_param", True)),
            ("sequence_id", True, lambda p: p.__setattr__("bool_param", True)),
            ("sequence_start", 1, lambda p: p.__setattr__("int64_param", 1)),
            ("sequence_end", "yes", lambda p: p.__setattr__("string_param", "yes")),
            ("binary_data_output", "yes", lambda p: p.__setattr__("string_param", "yes")),
            ("triton_enable_empty_final_response", 1,
             lambda p: p.__setattr__("int64_param", 1)),
        ]
        for key, json_value, setter in cases:
            with self.subTest(key=key, value=json_value):
                message = self.assertAgree(
                    key, ("POST", "/v2/models/simple/infer", self.http_infer_body({key: json_value})),
                    ("ModelInfer", self.grpc_infer("simple", {key: setter})), INVALID_ARGUMENT,
                    "parameter '%s' must be " % key)
                self.assertIn(", got ", message)  # the given type is named
        with self.subTest(key="triton_other"):
            self.assertAgree(
                "triton_other",
                ("POST", "/v2/models/simple/infer", self.http_infer_body({"triton_other": True})),
                ("ModelInfer", self.grpc_infer(
                    "simple", {"triton_other": lambda p: p.__setattr__("bool_param", True)})),
                INVALID_ARGUMENT, "reserved for Triton usage")

    def test_shared_memory_with_client_shm_disabled(self):
        pb = self.pb
        handle = bytes(64)
        cases = [
            ("system register", ("POST", "/v2/systemsharedmemory/region/r/register",
                                 {"key": "/x", "byte_size": 4}),
             ("SystemSharedMemoryRegister",
              pb.SystemSharedMemoryRegisterRequest(name="r", key="/x", byte_size=4))),
            ("system unregister", ("POST", "/v2/systemsharedmemory/region/r/unregister"),
             ("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest(name="r"))),
            ("system unregister all", ("POST", "/v2/systemsharedmemory/unregister"),
             ("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest())),
            ("cuda register", ("POST", "/v2/cudasharedmemory/region/g/register",
                               {"raw_handle": {"b64": base64.b64encode(handle).decode()},
                                "device_id": 0, "byte_size": 4}),
             ("CudaSharedMemoryRegister",
              pb.CudaSharedMemoryRegisterRequest(name="g", raw_handle=handle, device_id=0,
                                                 byte_size=4))),
            ("cuda unregister", ("POST", "/v2/cudasharedmemory/region/g/unregister"),
             ("CudaSharedMemoryUnregister", pb.CudaSharedMemoryUnregisterRequest(name="g"))),
        ]
        for what, http, grpc_call in cases:
            with self.subTest(call=what):
                self.assertAgree(what, http, grpc_call, UNIMPLEMENTED,
                                 "Client shared memory is disabled")
        # Status is not gated: an unknown region is NOT_FOUND, alike.
        self.assertAgree("system status", ("GET", "/v2/systemsharedmemory/region/nope/status"),
                         ("SystemSharedMemoryStatus",
                          pb.SystemSharedMemoryStatusRequest(name="nope")), NOT_FOUND, "nope")
        self.assertAgree("cuda status", ("GET", "/v2/cudasharedmemory/region/nope/status"),
                         ("CudaSharedMemoryStatus", pb.CudaSharedMemoryStatusRequest(name="nope")),
                         NOT_FOUND, "nope")

    def test_repository_calls(self):
        pb = self.pb
        for what, http, grpc_call in self.repository_calls("simple", repository="other"):
            with self.subTest(call="named repository " + what):
                self.assertAgree(what, http, grpc_call, UNIMPLEMENTED,
                                 "'repository_name' specification is not supported")
        self.assertAgree("index", ("POST", "/v2/repository/other/index"),
                         ("RepositoryIndex", pb.RepositoryIndexRequest(repository_name="other")),
                         UNIMPLEMENTED, "'repository_name'")
        mistyped = self.repository_calls(
            "simple",
            http_body={"load": {"parameters": {"config": True}},
                       "unload": {"parameters": {"unload_dependents": "yes"}}},
            grpc_parameters={
                "load": {"config": lambda p: p.__setattr__("bool_param", True)},
                "unload": {"unload_dependents": lambda p: p.__setattr__("string_param", "yes")}})
        for what, http, grpc_call in mistyped:
            with self.subTest(call="mistyped " + what):
                self.assertAgree(what, http, grpc_call, INVALID_ARGUMENT, "parameter '")
        unknown = self.repository_calls(
            "simple", http_body={"load": {"parameters": {"bogus": "x"}},
                                 "unload": {"parameters": {"bogus": True}}},
            grpc_parameters={
                "load": {"bogus": lambda p: p.__setattr__("string_param", "x")},
                "unload": {"bogus": lambda p: p.__setattr__("bool_param", True)}})
        for what, http, grpc_call in unknown:
            with self.subTest(call="unrecognized " + what):
                self.assertAgree(what, http, grpc_call, INVALID_ARGUMENT, "unrecognized")
        # The model is still served: nothing above reached the model manager.
        self.assertEqual(self.client.get("/v2/models/simple/ready").status, 200)


if __name__ == "__main__":
    unittest.main()
