#!/usr/bin/python3
"""Triton's generate extension over real HTTP: POST /v2/models/{m}[/versions/{v}]/generate (one
JSON object in, one out) and /generate_stream (Server-Sent Events over chunked transfer).

Covers the mapping of JSON keys onto inputs (by the model's metadata, wildcard shapes filled
from the element count) and request parameters, the flat response object, the errors before
inference (plain JSON bodies), one event then the end of the stream for a non-decoupled model,
a client that disconnects mid-stream (the request is cancelled, the server stays healthy), and
keep-alive after a stream. The decoupled class runs against the built-in `repeat` backend's
repeat_int32 and is skipped, naming the reason, where that model does not load."""

import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (ServerTestCase, copy_test_models, http_request_bytes, raw_connect,  # noqa: E402
                     read_http_response, write_model)

NOT_ONE = ("generate expects model to produce exactly 1 response, use generate stream for model "
           "that generates various number of responses")
SSE_TYPE = "text/event-stream; charset=utf-8"

REPEAT_CONFIG = """name: "repeat_int32"
backend: "repeat"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]
"""

SLOW_ONE_INSTANCE = """name: "slow1"
backend: "delay"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters { key: "execute_delay_ms" value { string_value: "1500" } }
"""


class SseStream:
    """One /generate_stream request on a raw socket: the status line and headers are read at
    once, then the chunked body incrementally; events() yields (seconds since the request,
    parsed JSON) as each `data:` event arrives."""

    def __init__(self, port, path, body, keep=None):
        self.sock = keep or raw_connect(port, timeout=20)
        self.t0 = time.monotonic()
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.sock.sendall(http_request_bytes("POST", path, data,
                                             {"Content-Type": "application/json"}))
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed before the response header")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split(" ")[1])
        self.headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "")
        self.ended = False
        self.text = b""  # the body so far (de-chunked)

    def _need(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed inside the chunked body")
            self.buf += chunk

    def _next_chunk(self):
        while b"\r\n" not in self.buf:
            self._need(len(self.buf) + 1)
        line, self.buf = self.buf.split(b"\r\n", 1)
        size = int(line.split(b";")[0], 16)
        self._need(size + 2)
        data, self.buf = self.buf[:size], self.buf[size + 2:]
        if size == 0:
            self.ended = True
        return data

    def events(self):
        while True:
            while b"\n\n" in self.text:
                event, self.text = self.text.split(b"\n\n", 1)
                assert event.startswith(b"data: "), event
                yield time.monotonic() - self.t0, json.loads(event[len(b"data: "):])
            if self.ended:
                assert self.text == b"", self.text
                return
            self.text += self._next_chunk()

    def all(self):
        return [e for _, e in self.events()]

    def close(self):
        self.sock.close()


def generate_path(model, stream=False, version=None):
    p = "/v2/models/%s" % model
    if version is not None:
        p += "/versions/%s" % version
    return p + ("/generate_stream" if stream else "/generate")


class GenerateTest(ServerTestCase):
    SERVER_ARGS = ("--http-max-input-size", "65536")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        copy_test_models(repo, ["simple", "simple_identity", "identity_bytes", "identity_int32",
                                "identity_bool", "identity_fp32", "slow"])
        write_model(repo, "slow1", SLOW_ONE_INSTANCE)
        return [repo]

    def tearDown(self):
        self.assertServerAlive()

    def generate(self, model, body, stream=False, version=None, headers=None):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return self.client.post(generate_path(model, stream, version), data, headers)

    def stats(self, model):
        r = self.client.get("/v2/models/%s/stats" % model)
        self.assertOk(r)
        return r.json()["model_stats"][0]

    # ---- /generate -------------------------------------------------------------------------

    def test_simple_maps_inputs_and_returns_a_flat_object(self):
        body = {"INPUT0": list(range(16)), "INPUT1": [1] * 16, "id": "r1"}
        r = self.generate("simple", body)
        self.assertOk(r)
        self.assertTrue(r.header("Content-Type", "").startswith("application/json"), r)
        out = r.json()
        self.assertEqual(out["OUTPUT0"], [i + 1 for i in range(16)])
        self.assertEqual(out["OUTPUT1"], [i - 1 for i in range(16)])
        self.assertEqual(out["id"], "r1")
        self.assertEqual(out["model_name"], "simple")
        self.assertEqual(out["model_version"], "1")
        # Keys in byte-wise order.
        self.assertEqual(list(json.loads(r.body.decode())), sorted(out))
        r = self.generate("simple", body, version=1)
        self.assertOk(r)

    def test_one_element_outputs_are_bare_values_and_bytes_are_strings(self):
        r = self.generate("simple_identity", {"INPUT0": "hello world"})
        self.assertOk(r)
        self.assertEqual(r.json(), {"OUTPUT0": "hello world", "model_name": "simple_identity",
                                    "model_version": "1"})
        r = self.generate("identity_bytes", {"INPUT0": ["a", "b"]})
        self.assertOk(r)
        self.assertEqual(r.json()["OUTPUT0"], ["a", "b"])
        self.assertOk(self.generate("identity_bool", {"INPUT0": [True, False]}))
        r = self.generate("identity_fp32", {"INPUT0": 1.5})
        self.assertOk(r)
        self.assertEqual(r.json()["OUTPUT0"], 1.5)

    def test_no_id_means_no_id_key(self):
        r = self.generate("identity_int32", {"INPUT0": [1, 2]})
        self.assertOk(r)
        self.assertNotIn("id", r.json())

    def test_other_keys_are_parameters(self):
        # Unknown keys become request parameters (typed); the identity model ignores them.
        body = {"INPUT0": [3], "temperature": 0.5, "max_tokens": 4, "stream": False, "tag": "x",
                "parameters": {"top_k": 2}}
        self.assertOk(self.generate("identity_int32", body))
        # An input given inside "parameters" is an input.
        r = self.generate("identity_int32", {"parameters": {"INPUT0": [9]}})
        self.assertOk(r)
        self.assertEqual(r.json()["OUTPUT0"], 9)

    def test_errors_before_inference_are_plain_json(self):
        for stream in (False, True):
            r = self.generate("no_such_model", {"INPUT0": [1]}, stream=stream)
            self.assertError(r, 404)
            self.assertTrue(r.header("Content-Type", "").startswith("application/json"), r)
            self.assertError(self.generate("identity_int32", "{not json", stream=stream), 400,
                             "failed to parse the request JSON")
            self.assertError(self.generate("identity_int32", {"INPUT0": ["a"]}, stream=stream),
                             400, "attempt to access JSON non-signed-integer as signed-integer")
            self.assertError(self.generate("simple_identity", {"INPUT0": 5}, stream=stream), 400,
                             "attempt to access JSON non-string as string")
            self.assertError(self.generate("identity_bool", {"INPUT0": 1}, stream=stream), 400,
                             "attempt to access JSON non-boolean as boolean")
            self.assertError(self.generate("identity_int32", {"INPUT0": [1], "x": [1]},
                                           stream=stream),
                             400, "parameter 'x' has invalid type. It should be either 'int', "
                             "'bool', or 'string'.")
            self.assertError(self.generate("identity_int32", {"INPUT0": [1], "id": 3},
                                           stream=stream), 400, "Unable to parse 'id'")
            self.assertError(self.generate("identity_int32", {"parameters": 3}, stream=stream),
                             400, "Expected JSON object for keyword: 'parameters'")
            self.assertError(self.generate("simple", {"INPUT0": [1, 2, 3]}, stream=stream), 400,
                             "The schema can not convert input 'INPUT0' to tensor with proper shape")
            # Missing input: the core's check.
            r = self.generate("simple", {"INPUT0": list(range(16))}, stream=stream)
            self.assertError(r, 400, "INPUT1")
            self.assertTrue(r.header("Content-Type", "").startswith("application/json"), r)
            # Empty body: an empty object, then the missing inputs.
            self.assertError(self.generate("simple", b"", stream=stream), 400)

    def test_input_bytes_against_the_limit(self):
        big = list(range(10000))  # 40,000 bytes as INT32: fits 65536
        self.assertOk(self.generate("identity_int32", {"INPUT0": big}))
        # A 40 KB body whose 20,000 INT32 elements take 80,000 bytes.
        body = '{"INPUT0":[' + ",".join(["1"] * 20000) + "]}"
        self.assertError(self.generate("identity_int32", body), 400,
                         "request size of 80000 bytes with input 'INPUT0' of size 80000 bytes",
                         "exceeds the maximum allowed input size of 65536",
                         "--http-max-input-size")

    def test_methods_and_content_encoding(self):
        for suffix in ("generate", "generate_stream"):
            r = self.client.get("/v2/models/simple/" + suffix)
            self.assertError(r, 405, "Method Not Allowed")
            r = self.client.post("/v2/models/simple/" + suffix, b"{}",
                                 {"Content-Encoding": "gzip"})
            self.assertError(r, 400, "Unsupported content-encoding, only 'identity' is supported.")

    def test_server_metadata_lists_generate(self):
        r = self.client.get("/v2")
        self.assertOk(r)
        self.assertIn("generate", r.json()["extensions"])

    # ---- /generate_stream ------------------------------------------------------------------

    def test_stream_one_event_then_end(self):
        s = SseStream(self.server.port, generate_path("identity_int32", stream=True),
                      {"INPUT0": [4, 5], "id": "s1"})
        try:
            self.assertEqual(s.status, 200)
            self.assertEqual(s.headers.get("content-type"), SSE_TYPE)
            self.assertTrue(s.chunked, s.headers)
            events = s.all()
        finally:
            s.close()
        self.assertEqual(events, [{"OUTPUT0": [4, 5], "id": "s1", "model_name": "identity_int32",
                                   "model_version": "1"}])

    def test_keep_alive_after_a_stream(self):
        sock = raw_connect(self.server.port, timeout=20)
        try:
            for i in range(3):
                s = SseStream(self.server.port, generate_path("identity_int32", stream=True),
                              {"INPUT0": [i]}, keep=sock)
                self.assertEqual(s.status, 200)
                self.assertEqual(s.all(), [{"OUTPUT0": i, "model_name": "identity_int32",
                                            "model_version": "1"}])
                self.assertEqual(s.buf, b"")
            # And an ordinary request on the same connection.
            sock.sendall(http_request_bytes("GET", "/v2/health/ready"))
            r = read_http_response(sock)
            self.assertEqual(r.status, 200)
        finally:
            sock.close()

    def test_http10_stream_ends_at_close(self):
        sock = raw_connect(self.server.port, timeout=20)
        try:
            body = json.dumps({"INPUT0": [7]}).encode()
            sock.sendall(b"POST /v2/models/identity_int32/generate_stream HTTP/1.0\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            data = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        finally:
            sock.close()
        head, _, rest = data.partition(b"\r\n\r\n")
        self.assertIn(b" 200 ", head.split(b"\r\n")[0])
        self.assertNotIn(b"chunked", head.lower())
        self.assertEqual(rest, b'data: {"OUTPUT0":7,"model_name":"identity_int32",'
                               b'"model_version":"1"}\n\n')

    def test_disconnect_mid_stream_cancels_a_queued_request(self):
        before = self.stats("slow1")["inference_stats"]["success"]["count"]
        # The first request occupies slow1's one instance (1.5 s); the second waits in the
        # queue and its client leaves: the scheduler drops it.
        first = threading.Thread(target=lambda: self.generate("slow1", {"INPUT0": [1.0]}))
        first.start()
        time.sleep(0.5)
        sock = raw_connect(self.server.port, timeout=20)
        body = json.dumps({"INPUT0": [2.0]}).encode()
        sock.sendall(http_request_bytes("POST", generate_path("slow1", stream=True), body))
        time.sleep(0.1)
        sock.close()
        first.join(20)
        time.sleep(2.0)  # the queued one would have run by now
        after = self.stats("slow1")["inference_stats"]["success"]["count"]
        self.assertEqual(after - before, 1, "the cancelled request ran")
        self.assertOk(self.generate("slow1", {"INPUT0": [3.0]}))

    def test_disconnect_while_executing(self):
        for _ in range(3):
            sock = raw_connect(self.server.port, timeout=20)
            body = json.dumps({"INPUT0": [2.0]}).encode()
            sock.sendall(http_request_bytes("POST", generate_path("slow", stream=True), body))
            time.sleep(0.05)
            sock.close()
        time.sleep(0.5)
        self.assertOk(self.generate("slow", {"INPUT0": [1.0]}))


class RestrictedGenerateTest(ServerTestCase):
    SERVER_ARGS = ("--http-restricted-api", "inference:key=secret")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        copy_test_models(repo, ["identity_int32"])
        return [repo]

    def test_generate_is_in_the_inference_group(self):
        for suffix in ("generate", "generate_stream"):
            path = "/v2/models/identity_int32/" + suffix
            r = self.client.post(path, b'{"INPUT0":[1]}')
            self.assertError(r, 403)
            r = self.client.post(path, b'{"INPUT0":[1]}', {"key": "secret"})
            self.assertOk(r)


class DecoupledGenerateTest(ServerTestCase):
    """repeat_int32 (built-in `repeat` backend, decoupled): loaded through the repository API;
    the whole class is skipped where it does not load."""

    SERVER_ARGS = ("--model-control-mode", "explicit", "--exit-timeout-secs", "30")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "repeat_int32", REPEAT_CONFIG)
        return [repo]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = cls.server.client(timeout=60).post("/v2/repository/models/repeat_int32/load")
        if r.status != 200:
            reason = r.body.decode("utf-8", "replace")
            super().tearDownClass()
            raise unittest.SkipTest("repeat_int32 (backend 'repeat', decoupled) does not load "
                                    "in this build: %s" % reason)

    def tearDown(self):
        self.assertServerAlive()

    def stream(self, body):
        return SseStream(self.server.port, generate_path("repeat_int32", stream=True), body)

    def test_events_arrive_as_produced(self):
        s = self.stream({"IN": [10, 11, 12], "DELAY": [300, 300, 300], "WAIT": 0})
        try:
            self.assertEqual(s.status, 200)
            self.assertEqual(s.headers.get("content-type"), SSE_TYPE)
            timed = list(s.events())
        finally:
            s.close()
        self.assertEqual([e["OUT"] for _, e in timed], [10, 11, 12])
        self.assertEqual([e["IDX"] for _, e in timed], [0, 1, 2])
        times = [t for t, _ in timed]
        for a, b in zip(times, times[1:]):
            self.assertGreater(b - a, 0.2, "events were not spaced by DELAY: %s" % times)

    def test_zero_responses_is_an_empty_200_stream(self):
        s = self.stream({"IN": [], "DELAY": [], "WAIT": 0})
        try:
            self.assertEqual(s.status, 200)
            self.assertEqual(s.all(), [])
        finally:
            s.close()

    def test_generate_wants_exactly_one_response(self):
        r = self.server.client().post(generate_path("repeat_int32"),
                                      json.dumps({"IN": [5], "DELAY": [0], "WAIT": 0}))
        self.assertOk(r)
        self.assertEqual(r.json()["OUT"], 5)
        for n in (0, 2):
            r = self.server.client().post(
                generate_path("repeat_int32"),
                json.dumps({"IN": list(range(n)), "DELAY": [0] * n, "WAIT": 0}))
            self.assertError(r, 400, NOT_ONE)

    def test_cancellation_mid_stream_stops_the_model(self):
        # 40 responses 250 ms apart (10 s); the client leaves after two. The model sees the
        # cancellation and stops, so the server has nothing in flight soon after: a stop
        # (which drains in-flight work, up to --exit-timeout-secs) returns quickly.
        s = self.stream({"IN": list(range(40)), "DELAY": [250] * 40, "WAIT": 0})
        events = s.events()
        next(events)
        next(events)
        s.close()
        time.sleep(1.0)
        self.assertServerAlive()
        t0 = time.monotonic()
        self.server.stop()
        took = time.monotonic() - t0
        self.assertLess(took, 4.0, "the stream's request was still running after the client left")
        # Later tests in this class need a server again.
        type(self).server = harness.Server(self.repos, self.SERVER_ARGS).start()
        r = self.server.client(timeout=60).post("/v2/repository/models/repeat_int32/load")
        self.assertOk(r)


if __name__ == "__main__":
    unittest.main()
