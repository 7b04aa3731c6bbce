#!/usr/bin/python3
"""Bad input over HTTP.  Every case: a 4xx with {"error": "..."} naming the problem, and the
server keeps serving (checked after every test in tearDown)."""

import gzip
import json
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ServerTestCase, pack, simple_request, outputs_by_name  # noqa: E402

IN0 = list(range(16))
IN1 = [1] * 16
SIMPLE = "/v2/models/simple/infer"
IDENTITY = "/v2/models/identity/infer"


class BadInputTest(ServerTestCase):

    def tearDown(self):
        self.assertServerAlive()

    def post_raw_json(self, path, body, headers=None):
        if isinstance(body, str):
            body = body.encode("utf-8")
        return self.client.post(path, body, headers)

    def simple_req(self, **kw):
        return simple_request(IN0, IN1, **kw)[0]

    # ---- JSON syntax --------------------------------------------------------------------------

    def test_malformed_json(self):
        self.assertError(self.post_raw_json(SIMPLE, '{"inputs": [{"name": "INPUT0",, }]}'), 400)

    def test_truncated_json(self):
        body = json.dumps(self.simple_req())
        for cut in (1, len(body) // 2, len(body) - 1):
            with self.subTest(cut=cut):
                self.assertError(self.post_raw_json(SIMPLE, body[:cut]), 400)

    def test_body_not_json(self):
        self.assertError(self.post_raw_json(SIMPLE, "this is not json"), 400)
        self.assertError(self.post_raw_json(SIMPLE, b"\x00\xff\xfe binary junk"), 400)

    def test_empty_body(self):
        msg = self.assertError(self.post_raw_json(SIMPLE, b""), 400)
        # no Inference-Header-Content-Length was sent: the message must not blame that header
        self.assertNotIn("Inference-Header-Content-Length", msg)

    def test_trailing_nul_after_json(self):
        # A NUL byte is not the end of a JSON document: "<json>\0garbage" has trailing data.
        body = json.dumps(self.simple_req()).encode() + b"\x00garbage"
        self.assertError(self.post_raw_json(SIMPLE, body), 400)
        body = json.dumps(self.simple_req()).encode() + b"\x00"
        self.assertError(self.post_raw_json(SIMPLE, body), 400)

    def test_json_not_an_object(self):
        for body in ("[1, 2, 3]", "42", '"inputs"', "null"):
            with self.subTest(body=body):
                self.assertError(self.post_raw_json(SIMPLE, body), 400)

    def test_trailing_garbage_after_json(self):
        self.assertError(self.post_raw_json(SIMPLE, json.dumps(self.simple_req()) + " xyz"), 400)

    def test_binary_blob_without_header_length(self):
        # Blobs appended but no Inference-Header-Content-Length: whole body parsed as JSON -> error.
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        self.assertError(self.post_raw_json(SIMPLE, json.dumps(req).encode() + b"".join(blobs)), 400)

    def test_deep_nesting_data(self):
        depth = 5000
        data = "[" * depth + "1" + "]" * depth
        body = '{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP32","data":%s}]}' % data
        self.assertError(self.post_raw_json(IDENTITY, body), 400)

    def test_deep_nesting_moderate_data(self):
        # Depth 200 (> Triton's 100 limit for data arrays), well-formed JSON.
        depth = 200
        data = "[" * depth + "1" + "]" * depth
        body = '{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP32","data":%s}]}' % data
        self.assertError(self.post_raw_json(IDENTITY, body), 400)

    def test_deep_nesting_elsewhere(self):
        depth = 100000
        for body in ("[" * depth, "[" * depth + "]" * depth,
                     '{"inputs":[], "parameters": {"x": ' + "{\"a\":" * depth + "1" + "}" * depth + "}}"):
            with self.subTest(prefix=body[:20]):
                self.assertError(self.post_raw_json(SIMPLE, body), 400)

    # ---- request structure --------------------------------------------------------------------

    def test_inputs_missing(self):
        self.assertError(self.client.post_json(SIMPLE, {"id": "x"}), 400)

    def test_inputs_not_array(self):
        self.assertError(self.client.post_json(SIMPLE, {"inputs": {"name": "INPUT0"}}), 400)

    def test_input_not_object(self):
        self.assertError(self.client.post_json(SIMPLE, {"inputs": [1, 2]}), 400)

    def test_input_missing_name(self):
        req = self.simple_req()
        del req["inputs"][0]["name"]
        self.assertError(self.client.post_json(SIMPLE, req), 400)

    def test_input_missing_shape(self):
        req = self.simple_req()
        del req["inputs"][0]["shape"]
        self.assertError(self.client.post_json(SIMPLE, req), 400, ("INPUT0", "shape"))

    def test_input_missing_datatype(self):
        req = self.simple_req()
        del req["inputs"][1]["datatype"]
        self.assertError(self.client.post_json(SIMPLE, req), 400, ("INPUT1", "datatype"))

    def test_input_missing_data(self):
        req = self.simple_req()
        del req["inputs"][1]["data"]
        self.assertError(self.client.post_json(SIMPLE, req), 400, ("INPUT1", "data"))

    def test_input_data_and_binary_size(self):
        req = self.simple_req()
        req["inputs"][0]["parameters"] = {"binary_data_size": 64}
        r = self.client.post_binary(SIMPLE, req, [pack("INT32", IN0)])
        self.assertError(r, 400)

    def test_wrong_json_kinds(self):
        cases = {
            "name not string": ("name", 5),
            "shape not array": ("shape", "1,16"),
            "datatype not string": ("datatype", 8),
            "data not array": ("data", "0123"),
        }
        for what, (k, v) in cases.items():
            with self.subTest(what=what):
                req = self.simple_req()
                req["inputs"][1][k] = v
                self.assertError(self.client.post_json(SIMPLE, req), 400)

    def test_id_not_string(self):
        req = self.simple_req()
        req["id"] = 17
        self.assertError(self.client.post_json(SIMPLE, req), 400)

    def test_parameters_invalid(self):
        req = self.simple_req()
        req["parameters"] = {"custom": {"nested": 1}}
        self.assertError(self.client.post_json(SIMPLE, req), 400, "custom")
        req["parameters"] = {"triton_reserved": 1}
        self.assertError(self.client.post_json(SIMPLE, req), 400, "triton_")

    # ---- datatypes --------------------------------------------------------------------------

    def test_wrong_datatype(self):
        req = self.simple_req()
        req["inputs"][0]["datatype"] = "FP32"
        self.assertError(self.client.post_json(SIMPLE, req), 400, "INPUT0")

    def test_invalid_datatype_string(self):
        for dt in ("fp32", "STRING", "INT128", "", "TYPE_INT32"):
            with self.subTest(datatype=dt):
                req = self.simple_req()
                req["inputs"][0]["datatype"] = dt
                self.assertError(self.client.post_json(SIMPLE, req), 400)

    def test_data_element_wrong_kind(self):
        cases = [("simple", "INT32", [16], ["1"] * 16),
                 ("simple", "INT32", [16], [1.5] * 16),
                 ("identity_bool", "BOOL", [2], [0, 1]),
                 ("identity_uint8", "UINT8", [2], [-1, 2]),
                 ("identity_uint64", "UINT64", [1], [18446744073709551616]),
                 ("identity_int64", "INT64", [1], [9223372036854775808]),
                 ("identity_bytes", "BYTES", [2], [1, 2]),
                 ("identity_fp32", "FP32", [2], ["1.0", "2.0"]),
                 ("identity_int32", "INT32", [2], [None, 1]),
                 ("identity_int32", "INT32", [2], [{"a": 1}, 1])]
        for model, dt, shape, data in cases:
            with self.subTest(model=model, data=data):
                if model == "simple":
                    shape = [1] + shape
                    req = self.simple_req()
                    req["inputs"][0]["data"] = data
                else:
                    req = {"inputs": [{"name": "INPUT0", "shape": shape, "datatype": dt, "data": data}]}
                self.assertError(self.client.post_json("/v2/models/%s/infer" % model, req), 400)

    def test_fp16_json_refused(self):
        req = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "FP16", "data": [1.0, 2.0]}]}
        self.assertError(self.client.post_json("/v2/models/identity_fp16/infer", req), 400, "FP16")

    def test_bf16_json_refused(self):
        req = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "BF16", "data": [1.0, 2.0]}]}
        self.assertError(self.client.post_json("/v2/models/identity_bf16/infer", req), 400, "BF16")

    def test_fp16_json_output_refused(self):
        blob = pack("FP16", [1.0, 2.0])
        req = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "FP16",
                           "parameters": {"binary_data_size": 4}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": False}}]}
        r = self.client.post_binary("/v2/models/identity_fp16/infer", req, [blob])
        self.assertError(r, 400, "FP16")

    # ---- shapes -----------------------------------------------------------------------------

    def test_element_count_mismatch(self):
        req = self.simple_req()
        req["inputs"][0]["data"] = IN0[:15]
        self.assertError(self.client.post_json(SIMPLE, req), 400, "INPUT0")
        req = self.simple_req()
        req["inputs"][1]["data"] = IN1 + [1]
        self.assertError(self.client.post_json(SIMPLE, req), 400, "INPUT1")

    def test_shape_mismatch_with_model(self):
        for shape in ([1, 15], [16], [1, 16, 1], [1, 4, 4]):
            with self.subTest(shape=shape):
                req = self.simple_req()
                n = 1
                for d in shape:
                    n *= d
                req["inputs"][0]["shape"] = shape
                req["inputs"][0]["data"] = list(range(n))
                # [16] reads as batch 16 > max_batch_size 8: a batch-size message is fine too
                self.assertError(self.client.post_json(SIMPLE, req), 400, ("INPUT0", "batch"))

    def test_negative_dimensions(self):
        for shape in ([-1, 16], [1, -16], [-1]):
            with self.subTest(shape=shape):
                req = self.simple_req()
                req["inputs"][0]["shape"] = shape
                self.assertError(self.client.post_json(SIMPLE, req), 400)
        req = {"inputs": [{"name": "INPUT0", "shape": [-3], "datatype": "FP32", "data": [1, 2, 3]}]}
        self.assertError(self.client.post_json(IDENTITY, req), 400)

    def test_non_integer_dimensions(self):
        for shape in ([1.5, 16], ["1", 16], [None, 16], [True, 16]):
            with self.subTest(shape=shape):
                req = self.simple_req()
                req["inputs"][0]["shape"] = shape
                self.assertError(self.client.post_json(SIMPLE, req), 400)

    def test_overflowing_dimensions_json(self):
        for shape in ([2 ** 62], [2 ** 63 - 1], [2 ** 63], [2 ** 64 - 1], [2 ** 64], [10 ** 30]):
            with self.subTest(shape=shape):
                req = {"inputs": [{"name": "INPUT0", "shape": shape, "datatype": "FP32", "data": [1.0]}]}
                self.assertError(self.client.post_json(IDENTITY, req), 400)

    def test_overflowing_element_count(self):
        # each dim fits, product overflows 64 bits
        for shape in ([2 ** 32, 2 ** 32], [2 ** 40, 2 ** 40], [2 ** 63 - 1, 2]):
            with self.subTest(shape=shape):
                req = {"inputs": [{"name": "INPUT0", "shape": shape, "datatype": "FP32", "data": [1.0]}]}
                self.assertError(self.client.post_json("/v2/models/identity_2d/infer", req), 400)

    def test_overflowing_byte_size_binary(self):
        # element count fits in int64, byte size (x4 / x8) does not; must not try to allocate.
        for dt, shape in (("FP32", [2 ** 62]), ("FP32", [2 ** 61 + 1]), ("FP64", [2 ** 61])):
            with self.subTest(datatype=dt, shape=shape):
                req = {"inputs": [{"name": "INPUT0", "shape": shape, "datatype": dt,
                                   "parameters": {"binary_data_size": 16}}]}
                r = self.client.post_binary("/v2/models/identity_%s/infer" % dt.lower(), req, [b"\0" * 16])
                self.assertError(r, 400)

    def test_huge_shape_small_data(self):
        # plausible but huge shape (16 GiB) with 4 bytes of data: refused, not allocated.
        req = {"inputs": [{"name": "INPUT0", "shape": [2 ** 32], "datatype": "FP32",
                           "parameters": {"binary_data_size": 4}}]}
        self.assertError(self.client.post_binary(IDENTITY, req, [b"\0" * 4]), 400, "INPUT0")

    def test_batch_over_max_batch_size(self):
        req, _ = simple_request(list(range(16 * 9)), [1] * (16 * 9), batch=9)
        self.assertError(self.client.post_json(SIMPLE, req), 400, ("batch", "Batch"))

    def test_batch_dimension_zero_or_inconsistent(self):
        req = self.simple_req()
        req["inputs"][1]["shape"] = [2, 16]
        req["inputs"][1]["data"] = [1] * 32
        self.assertError(self.client.post_json(SIMPLE, req), 400)

    # ---- inputs / outputs -----------------------------------------------------------------

    def test_missing_input(self):
        req = self.simple_req()
        del req["inputs"][1]
        self.assertError(self.client.post_json(SIMPLE, req), 400, "INPUT1")

    def test_no_inputs(self):
        self.assertError(self.client.post_json(SIMPLE, {"inputs": []}), 400)

    def test_unknown_input(self):
        req = self.simple_req()
        req["inputs"].append({"name": "INPUT7", "shape": [1, 16], "datatype": "INT32", "data": IN0})
        self.assertError(self.client.post_json(SIMPLE, req), 400, "INPUT7")

    def test_duplicate_input(self):
        req = self.simple_req()
        req["inputs"].append(dict(req["inputs"][0]))
        self.assertError(self.client.post_json(SIMPLE, req), 400, "INPUT0")

    def test_unknown_output(self):
        req = self.simple_req()
        req["outputs"] = [{"name": "OUTPUT0"}, {"name": "OUTPUT9"}]
        self.assertError(self.client.post_json(SIMPLE, req), 400, "OUTPUT9")

    def test_output_missing_name(self):
        req = self.simple_req()
        req["outputs"] = [{"parameters": {"binary_data": True}}]
        self.assertError(self.client.post_json(SIMPLE, req), 400)

    def test_duplicate_output(self):
        req = self.simple_req()
        req["outputs"] = [{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]
        r = self.client.post_json(SIMPLE, req)
        # Not specified by the contract: either refused (400) or answered once per request entry.
        self.assertStatus(r, (200, 400))
        if r.status == 400:
            self.assertError(r, 400, "OUTPUT0")

    # ---- binary extension -----------------------------------------------------------------

    def test_header_length_past_body(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        hb = json.dumps(req).encode()
        body = hb + b"".join(blobs)
        for v in (len(body) + 1, len(body) + 100000, 2 ** 63, 2 ** 64 + 5):
            with self.subTest(value=v):
                r = self.client.post(SIMPLE, body, {"Inference-Header-Content-Length": str(v)})
                self.assertError(r, 400)

    def test_header_length_not_a_number(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        hb = json.dumps(req).encode()
        for v in ("abc", "-5", "12x", "", "1e3"):
            with self.subTest(value=v):
                r = self.client.post(SIMPLE, hb + b"".join(blobs), {"Inference-Header-Content-Length": v})
                self.assertError(r, 400)

    def test_header_length_cuts_json(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        hb = json.dumps(req).encode()
        r = self.client.post(SIMPLE, hb + b"".join(blobs), {"Inference-Header-Content-Length": str(len(hb) - 3)})
        self.assertError(r, 400)

    def test_binary_short(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        r = self.client.post_binary(SIMPLE, req, [blobs[0], blobs[1][:-4]])
        self.assertError(r, 400, "INPUT1")

    def test_binary_missing_entirely(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        r = self.client.post_binary(SIMPLE, req, [])
        self.assertError(r, 400, "INPUT0")

    def test_binary_extra_bytes(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        r = self.client.post_binary(SIMPLE, req, blobs + [b"\x01\x02\x03"])
        self.assertError(r, 400)

    def test_binary_size_not_matching_shape(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        req["inputs"][0]["parameters"]["binary_data_size"] = 60
        r = self.client.post_binary(SIMPLE, req, [blobs[0][:60], blobs[1]])
        self.assertError(r, 400, "INPUT0")
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        req["inputs"][1]["parameters"]["binary_data_size"] = 68
        r = self.client.post_binary(SIMPLE, req, [blobs[0], blobs[1] + b"\0\0\0\0"])
        self.assertError(r, 400, "INPUT1")

    def test_binary_size_invalid_values(self):
        for v in (-64, "64", 64.5, None, 2 ** 64):
            with self.subTest(binary_data_size=v):
                req, blobs = simple_request(IN0, IN1, binary_in=True)
                req["inputs"][0]["parameters"]["binary_data_size"] = v
                self.assertError(self.client.post_binary(SIMPLE, req, blobs), 400)

    def test_binary_size_huge(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        req["inputs"][0]["parameters"]["binary_data_size"] = 2 ** 63
        self.assertError(self.client.post_binary(SIMPLE, req, blobs), 400)
        req["inputs"][0]["parameters"]["binary_data_size"] = 2 ** 64 - 1
        self.assertError(self.client.post_binary(SIMPLE, req, blobs), 400)

    def _bytes_req(self, blob, shape=(1, 1)):
        req = {"inputs": [{"name": "INPUT0", "shape": list(shape), "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blob)}}]}
        return self.client.post_binary("/v2/models/simple_identity/infer", req, [blob])

    def test_bytes_length_prefix_past_end(self):
        self.assertError(self._bytes_req(b"\x64\x00\x00\x00abcd"), 400, "INPUT0")
        self.assertError(self._bytes_req(b"\xff\xff\xff\xffabcd"), 400, "INPUT0")

    def test_bytes_truncated_length_prefix(self):
        self.assertError(self._bytes_req(pack("BYTES", [b"ab"]) + b"\x01\x00", shape=(1, 2)), 400, "INPUT0")
        self.assertError(self._bytes_req(b"\x01\x00"), 400, "INPUT0")

    def test_bytes_element_count_mismatch(self):
        self.assertError(self._bytes_req(pack("BYTES", [b"a", b"b"]), shape=(1, 3)), 400, "INPUT0")
        self.assertError(self._bytes_req(pack("BYTES", [b"a", b"b", b"c"]), shape=(1, 2)), 400, "INPUT0")

    def test_bytes_non_numeric_for_add_sub(self):
        req, blobs = simple_request(["x"] * 16, ["1"] * 16, dtype="BYTES")
        r = self.client.post_json("/v2/models/simple_string/infer", req)
        self.assertNotEqual(r.status, 200, r)
        self.assertTrue(400 <= r.status < 600, r)

    # ---- models, versions, names ------------------------------------------------------------

    def test_unknown_model(self):
        req = self.simple_req()
        for path in ("/v2/models/no_such_model/infer", "/v2/models/no_such_model/versions/1/infer"):
            with self.subTest(path=path):
                msg = self.assertError(self.client.post_json(path, req), 404, "no_such_model")
                self.assertTrue(msg.startswith("Request for unknown model"), msg)

    def test_unknown_version(self):
        msg = self.assertError(self.client.post_json("/v2/models/simple/versions/99/infer",
                                                     self.simple_req()), 404)
        self.assertIn("simple", msg)

    def test_non_numeric_version(self):
        for v in ("abc", "-1", "1.0", "1a", "99999999999999999999999", "18446744073709551617"):
            with self.subTest(version=v):
                r = self.client.post_json("/v2/models/simple/versions/%s/infer" % v, self.simple_req())
                self.assertStatus(r, (400, 404))

    def test_model_names_escaping(self):
        paths = ["/v2/models/../infer", "/v2/models/%2E%2E/infer", "/v2/models/..%2Fsimple/infer",
                 "/v2/models/..%2f..%2fetc%2fpasswd/infer", "/v2/models/simple%2F..%2Fsimple/infer",
                 "/v2/models/%2Fetc/infer", "/v2/models/a%2Fb/infer", "/v2/models/.%2Fsimple/infer",
                 "/v2/models/simple%00/infer", "/v2/models/%2e%2e%5csimple/infer"]
        req = self.simple_req()
        for p in paths:
            for method, path in (("POST", p), ("GET", p.replace("/infer", "/config")),
                                 ("GET", p.replace("/infer", "")),
                                 ("GET", p.replace("/infer", "/ready"))):
                with self.subTest(method=method, path=path):
                    body = json.dumps(req).encode() if method == "POST" else None
                    r = self.client.request(method, path, body)
                    self.assertIn(r.status, (400, 404), "%s %s -> %s" % (method, path, r))

    def test_model_name_dotdot_raw(self):
        # request-target written verbatim (http.client would not normalise it either)
        for target in ("/v2/models/../../etc/passwd", "/v2/models/simple/../../health/live/../../models/x/infer",
                       "/v2/models/..", "/v2/models/./simple/infer"):
            with self.subTest(target=target):
                r = harness.raw_request(self.server.port, harness.http_request_bytes("GET", target))
                if r is not None:
                    self.assertNotEqual(r.status, 200, "%s -> %s" % (target, r))
                    self.assertLess(r.status, 500, "%s -> %s" % (target, r))

    def test_long_model_name(self):
        r = self.client.get("/v2/models/%s" % ("m" * 5000))
        self.assertStatus(r, (400, 404, 414, 431))

    def test_repository_bad_bodies(self):
        for path in ("/v2/repository/index", "/v2/repository/models/simple/load",
                     "/v2/repository/models/simple/unload"):
            for body in (b"{not json", b"[1,2]", b'{"parameters": 5}'):
                if path.endswith("index") and b"parameters" in body:
                    continue  # index only reads "ready"; other members are ignored (Triton)
                with self.subTest(path=path, body=body):
                    r = self.client.post(path, body)
                    self.assertIn(r.status, (400, 503), r)  # 503: load/unload refused in none mode
                    self.assertIn("error", r.json())

    # ---- encodings ----------------------------------------------------------------------------

    def test_unsupported_content_encoding(self):
        r = self.client.post(SIMPLE, json.dumps(self.simple_req()).encode(), {"Content-Encoding": "br"})
        self.assertError(r, (400, 415, 501))

    def test_corrupt_gzip_body(self):
        good = gzip.compress(json.dumps(self.simple_req()).encode())
        for body in (b"not gzip at all", good[:len(good) // 2], good[:10] + b"\x00" * 20 + good[30:]):
            with self.subTest(size=len(body)):
                r = self.client.post(SIMPLE, body, {"Content-Encoding": "gzip"})
                self.assertError(r, 400)

    # ---- broken HTTP / connections ----------------------------------------------------------

    def test_client_disconnect_mid_body(self):
        for _ in range(20):
            s = harness.raw_connect(self.server.port)
            s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 1000\r\n\r\n0123456789")
            s.close()
        for _ in range(5):  # abortive close (RST)
            s = harness.raw_connect(self.server.port)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
            s.close()
        time.sleep(0.2)
        self.assertServerAlive()
        r = self.client.post_json(SIMPLE, self.simple_req())
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [a + b for a, b in zip(IN0, IN1)])

    def test_client_disconnect_mid_headers(self):
        for part in (b"POST /v2/models/sim", b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 5000):
            s = harness.raw_connect(self.server.port)
            s.sendall(part)
            s.close()
        self.assertServerAlive()

    def test_client_disconnect_before_response_read(self):
        req, _ = simple_request(list(range(16 * 8)), [1] * (16 * 8), batch=8)
        data = harness.http_request_bytes("POST", SIMPLE, json.dumps(req).encode())
        for _ in range(10):
            s = harness.raw_connect(self.server.port)
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            s.close()
        time.sleep(0.2)
        self.assertServerAlive()

    def test_garbage_request_line(self):
        for data in (b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,
                     b"GET /v2/health/live HTTP/9.9\r\n\r\n", b"GET\r\n\r\n"):
            with self.subTest(data=data[:16]):
                try:
                    r = harness.raw_request(self.server.port, data, timeout=5)
                except (socket.timeout, ConnectionError):
                    r = None
                if r is not None:
                    self.assertTrue(400 <= r.status < 600, r)
        self.assertServerAlive()

    def test_bad_content_length(self):
        for cl in ("abc", "-1", "99999999999999999999999"):
            with self.subTest(content_length=cl):
                data = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: "
                        + cl.encode() + b"\r\n\r\n{}")
                try:
                    r = harness.raw_request(self.server.port, data, timeout=5)
                except (socket.timeout, ConnectionError):
                    r = None
                if r is not None:
                    self.assertTrue(400 <= r.status < 500, r)
        self.assertServerAlive()

    def test_conflicting_content_lengths(self):
        body = json.dumps(self.simple_req()).encode()
        data = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                b"Content-Length: %d\r\n\r\n" % (len(body), len(body) - 10)) + body
        try:
            r = harness.raw_request(self.server.port, data, timeout=5)
        except (socket.timeout, ConnectionError):
            r = None
        if r is not None:  # RFC 9112 6.3: must be rejected (or the connection closed)
            self.assertTrue(400 <= r.status < 500, r)
        self.assertServerAlive()

    def test_content_length_and_chunked(self):
        body = json.dumps(self.simple_req()).encode()
        wire = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        data = (b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n") + wire
        try:
            r = harness.raw_request(self.server.port, data, timeout=5)
        except (socket.timeout, ConnectionError):
            r = None
        if r is not None:  # either refused, or Transfer-Encoding wins (RFC 9112 6.3)
            self.assertIn(r.status, (200, 400), r)
            if r.status == 200:
                self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [a + 1 for a in IN0])
        self.assertServerAlive()

    def test_malformed_chunked_body(self):
        for wire in (b"zz\r\nabc\r\n0\r\n\r\n", b"5\r\nabc\r\n0\r\n\r\n",
                     b"ffffffffffffffffffff\r\nab\r\n0\r\n\r\n", b"-5\r\nabcde\r\n0\r\n\r\n"):
            with self.subTest(wire=wire[:12]):
                data = harness.http_request_bytes("POST", SIMPLE, wire, {"Transfer-Encoding": "chunked"},
                                                  content_length=False)
                try:
                    r = harness.raw_request(self.server.port, data, timeout=5)
                except (socket.timeout, ConnectionError):
                    r = None
                if r is not None:
                    self.assertTrue(400 <= r.status < 500, r)
        self.assertServerAlive()

    def test_huge_headers_and_url(self):
        for data in (b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n",
                     b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n" + b"X-H: v\r\n" * 20000 + b"\r\n",
                     b"GET /v2/models/" + b"a" * 200000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"):
            with self.subTest(size=len(data)):
                try:
                    r = harness.raw_request(self.server.port, data, timeout=5)
                except (socket.timeout, ConnectionError):
                    r = None
                if r is not None:
                    self.assertIn(r.status, (200, 400, 404, 413, 414, 431), r)
        self.assertServerAlive()

    def test_idle_and_stalled_connections_do_not_starve_server(self):
        socks = []
        try:
            for i in range(150):
                s = harness.raw_connect(self.server.port)
                socks.append(s)
                if i % 3 == 1:  # headers only, body never sent
                    s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n")
                elif i % 3 == 2:  # half a request line
                    s.sendall(b"GET /v2/hea")
            time.sleep(0.3)
            t0 = time.monotonic()
            r = self.server.client(timeout=5).post_json(SIMPLE, self.simple_req())
            self.assertOk(r, "request while 150 connections sit idle/stalled")
            self.assertLess(time.monotonic() - t0, 5)
        finally:
            for s in socks:
                s.close()

    def test_unread_large_response_does_not_block_others(self):
        n = 4 << 20  # 16 MiB FP32 response the client never reads
        blob = b"\0" * (4 * n)
        req = {"inputs": [{"name": "INPUT0", "shape": [n], "datatype": "FP32",
                           "parameters": {"binary_data_size": len(blob)}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
        hb = json.dumps(req).encode()
        s = harness.raw_connect(self.server.port)
        try:
            s.sendall(harness.http_request_bytes("POST", IDENTITY, hb + blob,
                                                 {"Inference-Header-Content-Length": str(len(hb))}))
            time.sleep(0.5)
            r = self.server.client(timeout=5).post_json(SIMPLE, self.simple_req())
            self.assertOk(r, "request while another client does not read its 16 MiB response")
        finally:
            s.close()

    def test_error_then_success_on_same_connection(self):
        c = harness.Client(self.server.port, persistent=True)
        try:
            self.assertError(c.post(SIMPLE, b"{not json"), 400)
            r = c.post_json(SIMPLE, self.simple_req())
            self.assertOk(r)
        finally:
            c.close()


class BodySizeLimitTest(ServerTestCase):
    """--http-max-input-size 1024: larger bodies refused (400/413) before being buffered whole."""

    SERVER_ARGS = ("--http-max-input-size", "1024")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
        harness.write_model(repo, "identity", harness.identity_config("identity", "TYPE_FP32"))
        return [repo]

    def tearDown(self):
        self.assertServerAlive()

    def assertRefused(self, r, what):
        self.assertIsNotNone(r, "%s: connection closed without a response" % what)
        self.assertIn(r.status, (400, 413), "%s: %s" % (what, r))
        if r.body:
            self.assertIn("error", r.json(), r)

    def test_small_body_accepted(self):
        req, _ = simple_request(IN0, IN1)
        self.assertLess(len(json.dumps(req)), 1024)
        self.assertOk(self.client.post_json(SIMPLE, req))

    def test_body_over_limit_refused(self):
        req = {"inputs": [{"name": "INPUT0", "shape": [400], "datatype": "FP32", "data": [1.5] * 400}]}
        body = json.dumps(req).encode()
        self.assertGreater(len(body), 1024)
        r = self.client.post(IDENTITY, body)
        self.assertRefused(r, "%d-byte body" % len(body))

    def test_refused_before_buffered(self):
        # Announce 10 MB, send 2 KB, then wait: the server must answer without the rest.
        s = harness.raw_connect(self.server.port)
        try:
            s.sendall(b"POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n"
                      b"Content-Type: application/json\r\n\r\n" + b" " * 2048)
            try:
                r = harness.read_http_response(s, timeout=5)
            except socket.timeout:
                self.fail("no response within 5 s to a request announcing 10 MB over a 1 KiB limit")
            except ConnectionResetError:
                r = None
            self.assertRefused(r, "Content-Length 10000000")
        finally:
            s.close()

    def test_binary_body_over_limit_refused(self):
        n = 1000
        blob = pack("FP32", [0.0] * n)
        req = {"inputs": [{"name": "INPUT0", "shape": [n], "datatype": "FP32",
                           "parameters": {"binary_data_size": len(blob)}}]}
        self.assertRefused(self.client.post_binary(IDENTITY, req, [blob]), "binary body")

    def test_chunked_body_over_limit_refused(self):
        chunk = b" " * 500
        wire = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(10)) + b"0\r\n\r\n"
        data = harness.http_request_bytes("POST", IDENTITY, wire, {"Transfer-Encoding": "chunked"},
                                          content_length=False)
        try:
            r = harness.raw_request(self.server.port, data, timeout=5)
        except ConnectionResetError:
            r = None
        self.assertRefused(r, "chunked body of 5000 bytes")

    def test_decompressed_body_over_limit_refused(self):
        # valid request padded with 500 KB of whitespace: ~1 KB compressed, 500 KB inflated
        req, _ = simple_request(IN0, IN1)
        plain = json.dumps(req).encode()
        plain = plain[:-1] + b" " * 500000 + b"}"
        body = gzip.compress(plain, 9)
        self.assertLess(len(body), 1024)
        r = self.client.post(SIMPLE, body, {"Content-Encoding": "gzip"})
        self.assertRefused(r, "gzip body inflating to %d bytes" % len(plain))

    def test_still_serving_after_refusals(self):
        for _ in range(3):
            self.client.post(IDENTITY, b"x" * 5000)
        req, _ = simple_request(IN0, IN1)
        self.assertOk(self.client.post_json(SIMPLE, req))


if __name__ == "__main__":
    unittest.main()
