"""The logging extension end to end (docs/logging.md, PROTOCOL.md §1.13 and §2.4.7).

GET/POST /v2/logging and gRPC LogSettings read and change what inferd logs while it runs:
verbose levels turn the request-path lines on and off, log_info hides info lines, log_format
changes the line format. Every refusal over both protocols, the restricted API group
`logging`, and what is never logged (tensor values, Authorization and restricted-API header
values, parameter values) at the highest verbose level.
"""
import json
import os
import re
import struct
import unittest

import harness
import secure_util
from secure_util import grpc

DEFAULTS = {"log_file": "", "log_info": True, "log_warning": True, "log_error": True,
            "log_verbose_level": 0, "log_format": "default"}
ISO_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z inferd: ")
# The request path's lines at level 1 (src/core/request_log.h, src/scheduler/schedule_log.h).
PATH_STEPS = ("%s request: model 'simple' version latest, id '%s', inputs INPUT0 INT32 [1,16], "
              "INPUT1 INT32 [1,16]",
              "enqueued: model 'simple' version 1, id '%s'",
              "scheduled: model 'simple' version 1, id '%s': batch of 1 request(s), 1 rows, "
              "instance 0, ",
              "executed: model 'simple' version 1, id '%s': instance 0, batch rows 1, compute ",
              "%s response: model 'simple' version latest, id '%s': OK, 2 output(s), ")


def path_lines(protocol, request_id):
    out = []
    for step in PATH_STEPS:
        out.append(step % ((protocol, request_id) if step.startswith("%s") else (request_id,)))
    return out


class LoggingCase(harness.ServerTestCase):
    SERVER_CLASS = harness.GrpcServer

    @classmethod
    def build_repository(cls, root):
        return harness.copy_test_models(os.path.join(root, "models"), ["simple"])

    @classmethod
    def open_clients(cls):
        super().open_clients()
        cls.pb = None
        cls.channel = None
        if grpc is not None:
            cls.pb = secure_util.grpc_messages(os.path.join(cls.tmp, "gen"))
            cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)

    @classmethod
    def close_clients(cls):
        if getattr(cls, "channel", None) is not None:
            cls.channel.close()
            cls.channel = None

    def post_logging(self, settings, headers=None):
        return self.client.post_json("/v2/logging", settings, headers=headers)

    def infer(self, request_id, headers=None, base=0):
        req, _ = harness.simple_request([base + i for i in range(16)], [1] * 16,
                                        request_id=request_id)
        r = self.client.infer("simple", req, headers=headers)
        self.assertOk(r, "infer " + request_id)

    def grpc_infer(self, request_id, metadata=None, base=0):
        pb = self.pb
        req = pb.ModelInferRequest(model_name="simple", id=request_id)
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        req.raw_input_contents.append(struct.pack("<16i", *[base + i for i in range(16)]))
        req.raw_input_contents.append(struct.pack("<16i", *([1] * 16)))
        return secure_util.unary(self.channel, "ModelInfer", req, pb.ModelInferResponse,
                                 metadata=metadata)

    def log_settings(self, metadata=None, **values):
        """gRPC LogSettings with `values` (bool/int/str, or a SettingValue as is)."""
        pb = self.pb
        req = pb.LogSettingsRequest()
        for key, v in values.items():
            if isinstance(v, bool):
                req.settings[key].bool_param = v
            elif isinstance(v, int):
                req.settings[key].uint32_param = v
            elif isinstance(v, str):
                req.settings[key].string_param = v
            else:
                req.settings[key].CopyFrom(v)
        r = secure_util.unary(self.channel, "LogSettings", req, pb.LogSettingsResponse,
                              metadata=metadata)
        out = {}
        for key, v in r.settings.items():
            out[key] = getattr(v, v.WhichOneof("parameter_choice"))
        return out

    def wait_for_line(self, needle, plain=True):
        """The first line holding `needle` (default-format view when `plain`), waiting for the
        reader thread."""
        def find():
            lines = self.server.plain_log() if plain else self.server.log()
            return next((l for l in lines if needle in l), None)
        line = harness.wait_until(find, 10, 0.02)
        self.assertTrue(line, "no log line with %r%s" % (needle, self.diag()))
        return line


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class LoggingApiTest(LoggingCase):
    def setUp(self):
        self.assertEqual(self.post_logging(DEFAULTS_NO_FILE).status, 200)

    def test_get_defaults_and_the_extension_is_advertised(self):
        r = self.client.get("/v2/logging")
        self.assertOk(r)
        self.assertEqual(r.json(), DEFAULTS)
        self.assertIn("logging", self.client.get("/v2").json()["extensions"])
        md = secure_util.unary(self.channel, "ServerMetadata", self.pb.ServerMetadataRequest(),
                               self.pb.ServerMetadataResponse)
        self.assertIn("logging", list(md.extensions))
        self.assertEqual(self.log_settings(), DEFAULTS)

    def test_post_answers_every_key_and_null_is_ignored(self):
        r = self.post_logging({"log_verbose_level": 1, "log_info": None, "log_file": None,
                               "log_format": None})
        self.assertOk(r)
        self.assertEqual(r.json(), dict(DEFAULTS, log_verbose_level=1))
        self.assertEqual(self.post_logging({}).json(), dict(DEFAULTS, log_verbose_level=1))
        self.assertEqual(self.client.post("/v2/logging", b"").json(),
                         dict(DEFAULTS, log_verbose_level=1))
        self.assertEqual(self.client.get("/v2/logging").json(), dict(DEFAULTS, log_verbose_level=1))

    def test_verbose_turns_the_request_path_on_and_off_over_http(self):
        self.assertEqual(self.post_logging({"log_verbose_level": 1}).json()["log_verbose_level"], 1)
        self.infer("http-on-1")
        for step in path_lines("HTTP", "http-on-1"):
            line = self.wait_for_line(step)
            self.assertTrue(line.startswith("inferd: verbose: "), line)
        # Level 2 lines (each HTTP request, the response's tensors) are not shown at 1.
        self.assertFalse([l for l in self.server.plain_log() if "HTTP POST /v2/models" in l])
        self.post_logging({"log_verbose_level": 0})
        self.infer("http-off-1")
        self.post_logging({"log_verbose_level": 2})
        self.infer("http-marker-1")
        self.wait_for_line("HTTP response: model 'simple' version latest, id 'http-marker-1'")
        self.wait_for_line("HTTP POST /v2/models/simple/infer")
        self.wait_for_line("outputs OUTPUT0 INT32 [1,16], OUTPUT1 INT32 [1,16]")
        self.assertFalse([l for l in self.server.log() if "http-off-1" in l])

    def test_verbose_turns_the_request_path_on_and_off_over_grpc(self):
        self.assertEqual(self.log_settings(log_verbose_level=1)["log_verbose_level"], 1)
        self.grpc_infer("grpc-on-1")
        for step in path_lines("gRPC", "grpc-on-1"):
            self.wait_for_line(step)
        # The stream's requests and responses too.
        stream = self.channel.stream_stream(
            "/inference.GRPCInferenceService/ModelStreamInfer",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.pb.ModelStreamInferResponse.FromString)
        req = self.pb.ModelInferRequest(model_name="simple", id="stream-1")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
            req.raw_input_contents.append(struct.pack("<16i", *range(16)))
        answers = list(stream(iter([req]), timeout=20))
        self.assertEqual(len(answers), 1)
        self.assertFalse(answers[0].error_message)
        for step in path_lines("gRPC stream", "stream-1"):
            self.wait_for_line(step)
        self.log_settings(log_verbose_level=0)
        self.grpc_infer("grpc-off-1")
        self.log_settings(log_verbose_level=1)
        self.grpc_infer("grpc-marker-1")
        self.wait_for_line("gRPC response: model 'simple' version latest, id 'grpc-marker-1'")
        self.assertFalse([l for l in self.server.log() if "grpc-off-1" in l])

    def test_refused_requests_are_logged(self):
        self.post_logging({"log_verbose_level": 1})
        r = self.client.post("/v2/models/simple/infer", b'{"inputs": [')
        self.assertEqual(r.status, 400)
        self.wait_for_line("HTTP request for model 'simple' refused: error INVALID_ARGUMENT: ")

    def test_log_format_changes_the_prefix(self):
        self.post_logging({"log_verbose_level": 1, "log_format": "ISO8601"})
        self.infer("iso-1")
        line = self.wait_for_line("id 'iso-1'", plain=False)
        self.assertRegex(line, ISO_LINE)
        self.assertIn(" inferd: verbose: ", line)
        self.assertEqual(self.post_logging({"log_format": "json"}).json()["log_format"], "json")
        self.infer("json-1")
        line = self.wait_for_line('"request_id":"json-1"', plain=False)
        obj = json.loads(line)
        self.assertEqual((obj["level"], obj["verbose_level"], obj["model"], obj["request_id"]),
                         ("verbose", 1, "simple", "json-1"))
        self.post_logging({"log_format": "default"})
        self.infer("plain-1")
        line = self.wait_for_line("id 'plain-1'", plain=False)
        self.assertTrue(line.startswith("inferd: verbose: HTTP request: "), line)

    def test_http_refusals_name_the_key_and_change_nothing(self):
        cases = [
            ({"log_info": "yes"}, 400, "'log_info' must be a boolean"),
            ({"log_warning": 1}, 400, "'log_warning' must be a boolean"),
            ({"log_error": []}, 400, "'log_error' must be a boolean"),
            ({"log_verbose_level": -1}, 400, "'log_verbose_level' must be a non-negative integer"),
            ({"log_verbose_level": 1.5}, 400, "'log_verbose_level' must be a non-negative"),
            ({"log_verbose_level": "1"}, 400, "'log_verbose_level' must be a non-negative"),
            ({"log_verbose_level": 101}, 400, "'log_verbose_level' must be between 0 and 100"),
            ({"log_format": "xml"}, 400, "'log_format' must be \"default\", \"ISO8601\""),
            ({"log_format": "iso8601"}, 400, "'log_format'"),
            ({"log_format": 1}, 400, "'log_format' must be a string"),
            ({"log_file": "/tmp/inferd.log"}, 501, "'log_file' cannot be changed"),
            ({"log_file": ""}, 501, "'log_file'"),
            ({"log_verbose": 1}, 400, "unknown log setting 'log_verbose'"),
            # All or nothing: the good key is not applied either.
            ({"log_info": False, "log_format": "xml"}, 400, "'log_format'"),
            ({"log_info": False, "log_file": "x"}, 501, "'log_file'"),
        ]
        for body, status, needle in cases:
            with self.subTest(body=body):
                self.assertError(self.post_logging(body), status, needle)
        for raw in (b"{", b"[]", b"true", b'{"log_info": {"a": [1]}}', b"[" * 10000):
            with self.subTest(raw=raw[:20]):
                self.assertError(self.client.post("/v2/logging", raw), 400,
                                 "logging body must be a JSON object")
        self.assertEqual(self.client.get("/v2/logging").json(), DEFAULTS)
        self.assertStatus(self.client.request("PUT", "/v2/logging", b"{}"), 405)
        self.assertServerAlive()

    def test_grpc_settings_and_refusals(self):
        got = self.log_settings(log_verbose_level=2, log_format="ISO8601", log_warning=False)
        self.assertEqual(got, dict(DEFAULTS, log_verbose_level=2, log_format="ISO8601",
                                   log_warning=False))
        self.assertEqual(self.client.get("/v2/logging").json(), got)
        # A value with no case set is ignored, as JSON null.
        self.assertEqual(self.log_settings(log_info=self.pb.LogSettingsRequest.SettingValue()),
                         got)
        self.log_settings(log_verbose_level=0, log_format="default", log_warning=True)
        cases = [
            ({"log_info": 1}, grpc.StatusCode.INVALID_ARGUMENT,
             "'log_info' must be a boolean (bool_param)"),
            ({"log_error": "false"}, grpc.StatusCode.INVALID_ARGUMENT, "'log_error'"),
            ({"log_verbose_level": True}, grpc.StatusCode.INVALID_ARGUMENT,
             "'log_verbose_level' must be a non-negative integer (uint32_param)"),
            ({"log_verbose_level": 101}, grpc.StatusCode.INVALID_ARGUMENT, "between 0 and 100"),
            ({"log_format": "xml"}, grpc.StatusCode.INVALID_ARGUMENT, "'log_format'"),
            ({"log_format": True}, grpc.StatusCode.INVALID_ARGUMENT,
             "'log_format' must be a string (string_param)"),
            ({"log_file": "/tmp/x.log"}, grpc.StatusCode.UNIMPLEMENTED, "'log_file'"),
            ({"log_bogus": True}, grpc.StatusCode.INVALID_ARGUMENT, "unknown log setting"),
            ({"log_info": False, "log_format": "xml"}, grpc.StatusCode.INVALID_ARGUMENT,
             "'log_format'"),
        ]
        for values, code, needle in cases:
            with self.subTest(values=values):
                with self.assertRaises(grpc.RpcError) as e:
                    self.log_settings(**values)
                self.assertEqual(e.exception.code(), code)
                self.assertIn(needle, e.exception.details())
        self.assertEqual(self.log_settings(), DEFAULTS)


DEFAULTS_NO_FILE = {k: v for k, v in DEFAULTS.items() if k != "log_file"}


class LogInfoAtRunTimeTest(LoggingCase):
    """log_info false hides the info lines written after it (the shutdown's)."""

    def test_log_info_false_hides_info_lines(self):
        self.assertIn("HTTP listening on 127.0.0.1:", "\n".join(self.server.plain_log()))
        self.assertEqual(self.post_logging({"log_info": False}).json()["log_info"], False)
        self.assertEqual(self.server.stop(), 0, self.server.log_tail())
        lines = self.server.plain_log()
        for hidden in ("inferd: received SIGTERM", "inferd: stopped"):
            self.assertFalse([l for l in lines if l.startswith(hidden)], lines)


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class RestrictedLoggingTest(LoggingCase):
    SERVER_ARGS = ("--http-restricted-api=logging:log-key=hush",
                   "--grpc-restricted-protocol=logging:log-key=hush")

    def test_http_needs_the_header(self):
        for method, body in (("GET", None), ("POST", b'{"log_verbose_level": 1}')):
            with self.subTest(method=method):
                r = self.client.request(method, "/v2/logging", body)
                self.assertError(r, 403, "log-key")
                self.assertNotIn("hush", r.body.decode())
                r = self.client.request(method, "/v2/logging", body, headers={"log-key": "wrong"})
                self.assertStatus(r, 403)
        self.assertEqual(self.client.get("/v2/logging").status, 403)
        ok = self.post_logging({"log_verbose_level": 0}, headers={"log-key": "hush"})
        self.assertOk(ok)
        self.assertEqual(ok.json(), DEFAULTS)
        self.assertOk(self.client.get("/v2/health/ready"))  # other groups stay open

    def test_grpc_needs_the_metadata(self):
        with self.assertRaises(grpc.RpcError) as e:
            self.log_settings(log_verbose_level=1)
        self.assertEqual(e.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        self.assertIn("triton-grpc-protocol-log-key", e.exception.details())
        got = self.log_settings(metadata=[("triton-grpc-protocol-log-key", "hush")])
        self.assertEqual(got, DEFAULTS)


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class NeverLoggedTest(LoggingCase):
    """At the highest verbose level, tensor values and credentials stay out of the log."""

    SERVER_ARGS = ("--http-restricted-api=inference:infer-key=TOPSECRET-INFER-KEY",
                   "--grpc-restricted-protocol=inference:infer-key=TOPSECRET-INFER-KEY")
    SECRETS = ("TOPSECRET-INFER-KEY", "AUTH-SECRET-XYZ", "PARAM-SECRET-VALUE", "987654321",
               "987654322", "987654336")

    def test_highest_level_logs_no_values_or_credentials(self):
        self.assertEqual(self.post_logging({"log_verbose_level": 100}).json()["log_verbose_level"],
                         100)
        headers = {"infer-key": "TOPSECRET-INFER-KEY", "Authorization": "Bearer AUTH-SECRET-XYZ",
                   "Cookie": "session=AUTH-SECRET-XYZ"}
        # JSON and binary tensors, a parameter whose value is secret.
        req, _ = harness.simple_request([987654321 + i for i in range(16)], [1] * 16,
                                        request_id="secret-json")
        req["parameters"] = {"note": "PARAM-SECRET-VALUE"}
        self.assertOk(self.client.infer("simple", req, headers=headers))
        req, blobs = harness.simple_request([987654321] * 16, [1] * 16, binary_in=True,
                                            outputs=["OUTPUT0"], binary_out=False,
                                            request_id="secret-binary")
        self.assertOk(self.client.infer("simple", req, blobs=blobs, headers=headers))
        md = [("triton-grpc-protocol-infer-key", "TOPSECRET-INFER-KEY"),
              ("authorization", "Bearer AUTH-SECRET-XYZ")]
        out = self.grpc_infer("secret-grpc", metadata=md, base=987654321)
        self.assertEqual(len(out.raw_output_contents), 2)
        for rid in ("secret-json", "secret-binary", "secret-grpc"):
            self.wait_for_line("response: model 'simple' version latest, id '%s': OK" % rid)
        self.wait_for_line("parameters note")  # level 2 names the parameter, not its value
        leaked = [l for l in self.server.log() for s in self.SECRETS if s in l]
        self.assertFalse(leaked, "\n".join(leaked))


if __name__ == "__main__":
    unittest.main(verbosity=2)
