#!/usr/bin/python3
"""Inference over HTTP: JSON and binary tensors, datatypes, batching, compression, keep-alive
and concurrency."""

import gzip
import json
import math
import os
import socket
import sys
import threading
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (ServerTestCase, pack, unpack, parse_infer_response, outputs_by_name,  # noqa: E402
                     simple_request, fp32)

IN0 = list(range(16))
IN1 = [1] * 16
SUM = [a + b for a, b in zip(IN0, IN1)]
DIFF = [a - b for a, b in zip(IN0, IN1)]

# JSON-able test values per datatype (exactly representable where floating point).
JSON_VALUES = {
    "BOOL": [True, False, True],
    "UINT8": [0, 1, 255],
    "UINT16": [0, 7, 65535],
    "UINT32": [0, 123456, 4294967295],
    "UINT64": [0, 1, 18446744073709551615],
    "INT8": [-128, 0, 127],
    "INT16": [-32768, -1, 32767],
    "INT32": [-2147483648, 5, 2147483647],
    "INT64": [-9223372036854775808, 0, 9223372036854775807],
    "FP32": [0.5, -2.25, 1024.0, 0.0],
    "FP64": [0.1, -1e300, 2.5e-300, 3.0],
    "BYTES": ["hello", "", "w\u00f6rld \u2603", "with \"quotes\" and \\ and \n", "\x00\x01\x1f\t\u2028 \U0001F600"],
}
BINARY_VALUES = dict(JSON_VALUES)
BINARY_VALUES.update({
    "FP16": [0.5, -2.0, 65504.0, 0.0],
    "BF16": [1.0, -2.5, 3.0e38, 0.0],
    "BYTES": [b"\x00\x01\xff", b"", b"plain", b"\xc3\x28 invalid utf8"],
})


class InferTest(ServerTestCase):

    def tearDown(self):
        self.assertServerAlive()

    def infer_ok(self, model, req, version=None, blobs=None, headers=None):
        r = self.client.infer(model, req, version, blobs, headers)
        self.assertOk(r, "infer %s" % model)
        return r

    # ---- add_sub ------------------------------------------------------------------------------

    def test_simple_json(self):
        req, _ = simple_request(IN0, IN1)
        r = self.infer_ok("simple", req)
        self.assertIn("json", r.header("Content-Type", ""))
        self.assertIsNone(r.header("Inference-Header-Content-Length"))
        resp = r.json()
        self.assertEqual(resp["model_name"], "simple")
        self.assertEqual(resp["model_version"], "1")
        self.assertNotIn("id", resp)
        outs = outputs_by_name(resp)
        self.assertEqual(sorted(outs), ["OUTPUT0", "OUTPUT1"])
        for name, expect in (("OUTPUT0", SUM), ("OUTPUT1", DIFF)):
            self.assertEqual(outs[name]["datatype"], "INT32")
            self.assertEqual(outs[name]["shape"], [1, 16])
            self.assertEqual(outs[name]["data"], expect)
            self.assertNotIn("binary_data_size", outs[name].get("parameters") or {})

    def test_simple_nested_json_data(self):
        req, _ = simple_request(IN0, IN1)
        req["inputs"][0]["data"] = [IN0]
        req["inputs"][1]["data"] = [[IN1[:8], IN1[8:]]]  # deeper nesting, same element count
        outs = outputs_by_name(self.infer_ok("simple", req).json())
        self.assertEqual(outs["OUTPUT0"]["data"], SUM)  # responses are flat
        self.assertEqual(outs["OUTPUT1"]["data"], DIFF)

    def test_simple_request_id_echo(self):
        req, _ = simple_request(IN0, IN1, request_id="my-request-42")
        self.assertEqual(self.infer_ok("simple", req).json()["id"], "my-request-42")

    def test_request_id_escaping(self):
        rid = "q\"b\\s/\u00e9\u2603\n\t\x01 \U0001F600"
        req, _ = simple_request(IN0, IN1, request_id=rid)
        self.assertEqual(self.infer_ok("simple", req).json()["id"], rid)
        req, _ = simple_request(IN0, IN1, request_id="")
        self.assertNotIn("id", self.infer_ok("simple", req).json())

    def test_json_unicode_escapes_in_names(self):
        body = json.dumps(simple_request(IN0, IN1)[0]).replace('"INPUT0"', '"\\u0049NPUT0"')
        self.assertIn("\\u0049NPUT0", body)
        r = self.client.post("/v2/models/simple/infer", body.encode())
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], SUM)

    def test_simple_output_selection(self):
        req, _ = simple_request(IN0, IN1, outputs=["OUTPUT1"])
        resp = self.infer_ok("simple", req).json()
        self.assertEqual([o["name"] for o in resp["outputs"]], ["OUTPUT1"])
        self.assertEqual(resp["outputs"][0]["data"], DIFF)

    def test_simple_version_path(self):
        req, _ = simple_request(IN0, IN1)
        resp = self.infer_ok("simple", req, version=1).json()
        self.assertEqual(resp["model_version"], "1")
        self.assertEqual(outputs_by_name(resp)["OUTPUT0"]["data"], SUM)

    def test_simple_batched(self):
        batch = 8
        a = [i * 3 - 50 for i in range(16 * batch)]
        b = [i * 7 for i in range(16 * batch)]
        req, _ = simple_request(a, b, batch=batch)
        outs = outputs_by_name(self.infer_ok("simple", req).json())
        self.assertEqual(outs["OUTPUT0"]["shape"], [batch, 16])
        self.assertEqual(outs["OUTPUT0"]["data"], [x + y for x, y in zip(a, b)])
        self.assertEqual(outs["OUTPUT1"]["data"], [x - y for x, y in zip(a, b)])

    def test_simple_batched_binary(self):
        batch = 3
        a = [i for i in range(16 * batch)]
        b = [-i * 2 for i in range(16 * batch)]
        req, blobs = simple_request(a, b, batch=batch, binary_in=True,
                                    outputs=["OUTPUT0", "OUTPUT1"], binary_out=True)
        hdr, out = parse_infer_response(self.infer_ok("simple", req, blobs=blobs))
        self.assertEqual(unpack("INT32", out["OUTPUT0"]), [x + y for x, y in zip(a, b)])
        self.assertEqual(unpack("INT32", out["OUTPUT1"]), [x - y for x, y in zip(a, b)])
        self.assertEqual(outputs_by_name(hdr)["OUTPUT1"]["shape"], [batch, 16])

    def test_simple_int32_wraparound_values(self):
        a = [2147483647, -2147483648] + [0] * 14
        b = [0, 0] + [5] * 14
        req, _ = simple_request(a, b)
        outs = outputs_by_name(self.infer_ok("simple", req).json())
        self.assertEqual(outs["OUTPUT0"]["data"][:3], [2147483647, -2147483648, 5])

    def test_simple_int8(self):
        a = [i - 8 for i in range(16)]
        b = [3] * 16
        req, _ = simple_request(a, b, dtype="INT8")
        outs = outputs_by_name(self.infer_ok("simple_int8", req).json())
        self.assertEqual(outs["OUTPUT0"]["datatype"], "INT8")
        self.assertEqual(outs["OUTPUT0"]["data"], [x + y for x, y in zip(a, b)])
        self.assertEqual(outs["OUTPUT1"]["data"], [x - y for x, y in zip(a, b)])

    def test_simple_fp32(self):
        a = [i * 0.5 for i in range(16)]
        b = [0.25] * 16
        req, _ = simple_request(a, b, dtype="FP32")
        outs = outputs_by_name(self.infer_ok("simple_fp32", req).json())
        self.assertEqual(outs["OUTPUT0"]["datatype"], "FP32")
        self.assertEqual(outs["OUTPUT0"]["data"], [x + y for x, y in zip(a, b)])
        self.assertEqual(outs["OUTPUT1"]["data"], [x - y for x, y in zip(a, b)])

    def test_simple_string_json(self):
        a = [str(i) for i in range(16)]
        b = [str(100 - i) for i in range(16)]
        req, _ = simple_request(a, b, dtype="BYTES")
        outs = outputs_by_name(self.infer_ok("simple_string", req).json())
        self.assertEqual(outs["OUTPUT0"]["datatype"], "BYTES")
        self.assertEqual(outs["OUTPUT0"]["shape"], [1, 16])
        self.assertEqual(outs["OUTPUT0"]["data"], ["100"] * 16)
        self.assertEqual(outs["OUTPUT1"]["data"], [str(2 * i - 100) for i in range(16)])

    def test_simple_string_binary(self):
        a = [str(i * 11) for i in range(16)]
        b = [str(-i) for i in range(16)]
        req, blobs = simple_request(a, b, dtype="BYTES", binary_in=True,
                                    outputs=["OUTPUT0", "OUTPUT1"], binary_out=True)
        hdr, out = parse_infer_response(self.infer_ok("simple_string", req, blobs=blobs))
        self.assertEqual(unpack("BYTES", out["OUTPUT0"]), [str(i * 10).encode() for i in range(16)])
        self.assertEqual(unpack("BYTES", out["OUTPUT1"]), [str(i * 12).encode() for i in range(16)])
        self.assertEqual(outputs_by_name(hdr)["OUTPUT0"]["parameters"]["binary_data_size"],
                         len(out["OUTPUT0"]))

    # ---- binary extension -----------------------------------------------------------------

    def test_binary_in_json_out(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        r = self.infer_ok("simple", req, blobs=blobs)
        self.assertIsNone(r.header("Inference-Header-Content-Length"))
        outs = outputs_by_name(r.json())
        self.assertEqual(outs["OUTPUT0"]["data"], SUM)
        self.assertEqual(outs["OUTPUT1"]["data"], DIFF)

    def test_json_in_binary_out(self):
        req, _ = simple_request(IN0, IN1, outputs=["OUTPUT0", "OUTPUT1"], binary_out=True)
        r = self.infer_ok("simple", req)
        self.assertEqual(r.header("Content-Type"), "application/octet-stream")
        hdr, out = parse_infer_response(r)
        outs = outputs_by_name(hdr)
        for name, expect in (("OUTPUT0", SUM), ("OUTPUT1", DIFF)):
            self.assertEqual(outs[name]["parameters"]["binary_data_size"], 64)
            self.assertNotIn("data", outs[name])
            self.assertEqual(unpack("INT32", out[name]), expect)

    def test_mixed_binary_and_json_outputs(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        req["outputs"] = [{"name": "OUTPUT0", "parameters": {"binary_data": True}},
                          {"name": "OUTPUT1", "parameters": {"binary_data": False}}]
        hdr, out = parse_infer_response(self.infer_ok("simple", req, blobs=blobs))
        outs = outputs_by_name(hdr)
        self.assertEqual(unpack("INT32", out["OUTPUT0"]), SUM)
        self.assertEqual(outs["OUTPUT1"]["data"], DIFF)
        self.assertNotIn("OUTPUT1", out)

    def test_mixed_binary_and_json_inputs(self):
        req, _ = simple_request(IN0, IN1)
        blob = pack("INT32", IN1)
        req["inputs"][1] = {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32",
                            "parameters": {"binary_data_size": len(blob)}}
        outs = outputs_by_name(self.infer_ok("simple", req, blobs=[blob]).json())
        self.assertEqual(outs["OUTPUT0"]["data"], SUM)

    def test_binary_input_order_follows_inputs_array(self):
        # INPUT1 listed first: its blob comes first.
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        req["inputs"].reverse()
        blobs.reverse()
        outs = outputs_by_name(self.infer_ok("simple", req, blobs=blobs).json())
        self.assertEqual(outs["OUTPUT1"]["data"], DIFF)

    def test_binary_data_output_request_parameter(self):
        req, _ = simple_request(IN0, IN1)
        req["parameters"] = {"binary_data_output": True}
        hdr, out = parse_infer_response(self.infer_ok("simple", req))
        self.assertEqual(sorted(out), ["OUTPUT0", "OUTPUT1"])
        self.assertEqual(unpack("INT32", out["OUTPUT0"]), SUM)
        self.assertEqual(unpack("INT32", out["OUTPUT1"]), DIFF)

    def test_lowercase_inference_header_content_length(self):
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        hb = json.dumps(req).encode()
        r = self.client.post("/v2/models/simple/infer", hb + b"".join(blobs),
                             {"inference-header-content-length": str(len(hb))})
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], SUM)

    def test_binary_header_with_json_only_body(self):
        # Inference-Header-Content-Length equal to the whole body is legal.
        req, _ = simple_request(IN0, IN1)
        r = self.client.post_binary("/v2/models/simple/infer", req, [])
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT1"]["data"], DIFF)

    def test_raw_binary_request(self):
        # Inference-Header-Content-Length: 0 -> the whole body is the single input (1.8.4).
        vals = [1.5, -2.0, 3.25]
        r = self.client.post("/v2/models/identity/infer", pack("FP32", vals),
                             {"Inference-Header-Content-Length": "0"})
        self.assertOk(r)
        hdr, out = parse_infer_response(r)
        self.assertEqual(unpack("FP32", out["OUTPUT0"]), vals)
        self.assertEqual(outputs_by_name(hdr)["OUTPUT0"]["shape"], [3])

    def test_empty_tensor(self):
        req = {"inputs": [{"name": "INPUT0", "shape": [0], "datatype": "FP32", "data": []}]}
        out = outputs_by_name(self.infer_ok("identity", req).json())["OUTPUT0"]
        self.assertEqual(out["shape"], [0])
        self.assertEqual(out.get("data", []), [])
        req = {"inputs": [{"name": "INPUT0", "shape": [0], "datatype": "FP32",
                           "parameters": {"binary_data_size": 0}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
        r = self.client.post_binary("/v2/models/identity/infer", req, [])
        self.assertOk(r)
        # 1.8.4: no blob bytes appended -> plain JSON response without the header-length header
        self.assertIsNone(r.header("Inference-Header-Content-Length"), r.headers)
        hdr, out = parse_infer_response(r)
        self.assertEqual(outputs_by_name(hdr)["OUTPUT0"]["shape"], [0])
        self.assertEqual(outputs_by_name(hdr)["OUTPUT0"]["parameters"]["binary_data_size"], 0)
        self.assertEqual(out.get("OUTPUT0", b""), b"")

    def test_zero_size_binary_output_between_others(self):
        # OUTPUT0 empty (0 bytes, no blob), OUTPUT1 non-empty: blobs located by summing sizes.
        b1 = pack("BYTES", [b"abc", b""])
        req = {"inputs": [{"name": "INPUT0", "shape": [0], "datatype": "INT32",
                           "parameters": {"binary_data_size": 0}},
                          {"name": "INPUT1", "shape": [2], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(b1)}}],
               "parameters": {"binary_data_output": True}}
        hdr, out = parse_infer_response(self.infer_ok("identity_pair", req, blobs=[b1]))
        outs = outputs_by_name(hdr)
        self.assertEqual(outs["OUTPUT0"]["parameters"]["binary_data_size"], 0)
        self.assertEqual(outs["OUTPUT0"]["shape"], [0])
        self.assertEqual(out["OUTPUT1"], b1)

    # ---- identity / datatypes -------------------------------------------------------------

    def test_identity_all_datatypes_json(self):
        for t, vals in JSON_VALUES.items():
            with self.subTest(datatype=t):
                req = {"inputs": [{"name": "INPUT0", "shape": [len(vals)], "datatype": t, "data": vals}]}
                r = self.client.infer("identity_" + t.lower(), req)
                self.assertOk(r, t)
                out = outputs_by_name(r.json())["OUTPUT0"]
                self.assertEqual(out["datatype"], t)
                self.assertEqual(out["shape"], [len(vals)])
                self.assertEqual(out["data"], vals)

    def test_identity_all_datatypes_binary(self):
        for t, vals in BINARY_VALUES.items():
            with self.subTest(datatype=t):
                blob = pack(t, vals)
                req = {"inputs": [{"name": "INPUT0", "shape": [len(vals)], "datatype": t,
                                   "parameters": {"binary_data_size": len(blob)}}],
                       "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
                r = self.client.infer("identity_" + t.lower(), req, blobs=[blob])
                self.assertOk(r, t)
                hdr, out = parse_infer_response(r)
                o = outputs_by_name(hdr)["OUTPUT0"]
                self.assertEqual(o["datatype"], t)
                self.assertEqual(o["shape"], [len(vals)])
                self.assertEqual(out["OUTPUT0"], blob)  # bit-exact round trip

    def test_fp16_outputs_binary_via_binary_data_output(self):
        # FP16 output cannot be JSON; asking for all outputs in binary must work.
        blob = pack("FP16", [1.0, 2.0])
        req = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "FP16",
                           "parameters": {"binary_data_size": 4}}],
               "parameters": {"binary_data_output": True}}
        hdr, out = parse_infer_response(self.infer_ok("identity_fp16", req, blobs=[blob]))
        self.assertEqual(out["OUTPUT0"], blob)

    def test_identity_fp32_json_rounding(self):
        vals = [1.1, 3.14159, -1e-3, 1e30]
        req = {"inputs": [{"name": "INPUT0", "shape": [4], "datatype": "FP32", "data": vals}]}
        got = outputs_by_name(self.infer_ok("identity", req).json())["OUTPUT0"]["data"]
        # Triton writes the float32 widened to double (1.100000023841858); a shortest float32
        # rendering ("1.1") decodes to the same float32 -- accept either, compare as float32.
        self.assertEqual([fp32(g) for g in got], [fp32(v) for v in vals])

    def test_identity_fp32_integers_in_json(self):
        req = {"inputs": [{"name": "INPUT0", "shape": [3], "datatype": "FP32", "data": [1, -2, 300]}]}
        got = outputs_by_name(self.infer_ok("identity", req).json())["OUTPUT0"]["data"]
        self.assertEqual(got, [1.0, -2.0, 300.0])

    def test_identity_nan_infinity_json(self):
        body = b'{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"FP32","data":[NaN,Infinity,-Infinity]}]}'
        r = self.client.post("/v2/models/identity/infer", body)
        self.assertOk(r)
        # The literals are accepted in; out they are strict JSON's strings (test_json_strict.py).
        got = outputs_by_name(r.json())["OUTPUT0"]["data"]
        self.assertEqual(got, ["NaN", "Infinity", "-Infinity"])

    def test_identity_2d_nested(self):
        data = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        req = {"inputs": [{"name": "INPUT0", "shape": [2, 3], "datatype": "FP32", "data": data}]}
        out = outputs_by_name(self.infer_ok("identity_2d", req).json())["OUTPUT0"]
        self.assertEqual(out["shape"], [2, 3])
        self.assertEqual(out["data"], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])

    def test_identity_pair_positional_outputs(self):
        req = {"inputs": [{"name": "INPUT1", "shape": [2], "datatype": "BYTES", "data": ["a", "bc"]},
                          {"name": "INPUT0", "shape": [3], "datatype": "INT32", "data": [7, 8, 9]}]}
        outs = outputs_by_name(self.infer_ok("identity_pair", req).json())
        self.assertEqual(outs["OUTPUT0"]["data"], [7, 8, 9])
        self.assertEqual(outs["OUTPUT0"]["datatype"], "INT32")
        self.assertEqual(outs["OUTPUT1"]["data"], ["a", "bc"])
        self.assertEqual(outs["OUTPUT1"]["datatype"], "BYTES")

    def test_simple_identity_bytes_batched(self):
        data = [["a", "bb", "ccc"], ["", "\u00e9", "zz"]]
        req = {"inputs": [{"name": "INPUT0", "shape": [2, 3], "datatype": "BYTES", "data": data}]}
        out = outputs_by_name(self.infer_ok("simple_identity", req).json())["OUTPUT0"]
        self.assertEqual(out["shape"], [2, 3])
        self.assertEqual(out["data"], data[0] + data[1])

    def test_simple_identity_bytes_binary_arbitrary(self):
        vals = [bytes(range(256)), b"", b"\x00" * 10, b"x" * 70000]
        blob = pack("BYTES", vals)
        req = {"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blob)}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
        hdr, out = parse_infer_response(self.infer_ok("simple_identity", req, blobs=[blob]))
        self.assertEqual(unpack("BYTES", out["OUTPUT0"]), vals)
        self.assertEqual(outputs_by_name(hdr)["OUTPUT0"]["shape"], [1, 4])

    def test_large_binary_tensor(self):
        n = 1 << 20  # 4 MiB of FP32
        vals = [float(i % 1000) for i in range(n)]
        blob = pack("FP32", vals)
        req = {"inputs": [{"name": "INPUT0", "shape": [n], "datatype": "FP32",
                           "parameters": {"binary_data_size": len(blob)}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
        hdr, out = parse_infer_response(self.infer_ok("identity", req, blobs=[blob]))
        self.assertEqual(out["OUTPUT0"], blob)

    def test_large_json_tensor(self):
        vals = [i % 977 for i in range(100000)]
        req = {"inputs": [{"name": "INPUT0", "shape": [len(vals)], "datatype": "INT32", "data": vals}]}
        out = outputs_by_name(self.infer_ok("identity_int32", req).json())["OUTPUT0"]
        self.assertEqual(out["data"], vals)

    def test_versioned_model(self):
        req = {"inputs": [{"name": "INPUT0", "shape": [4], "datatype": "INT32", "data": [1, 2, 3, 4]}]}
        self.assertEqual(self.infer_ok("versioned", req).json()["model_version"], "2")
        self.assertEqual(self.infer_ok("versioned", req, version=1).json()["model_version"], "1")
        self.assertEqual(self.infer_ok("versioned", req, version=2).json()["model_version"], "2")

    def test_custom_request_parameters_accepted(self):
        req, _ = simple_request(IN0, IN1)
        req["parameters"] = {"my_string": "x", "my_int": 3, "my_bool": True, "my_float": 0.5}
        self.assertEqual(outputs_by_name(self.infer_ok("simple", req).json())["OUTPUT0"]["data"], SUM)

    def test_query_string_on_infer(self):
        req, _ = simple_request(IN0, IN1)
        r = self.client.post_json("/v2/models/simple/infer?query=1", req)
        self.assertOk(r)

    # ---- compression --------------------------------------------------------------------------

    def test_gzip_request_body(self):
        req, _ = simple_request(IN0, IN1)
        body = gzip.compress(json.dumps(req).encode())
        r = self.client.post("/v2/models/simple/infer", body, {"Content-Encoding": "gzip"})
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], SUM)

    def test_deflate_request_body(self):
        req, _ = simple_request(IN0, IN1)
        body = zlib.compress(json.dumps(req).encode())
        r = self.client.post("/v2/models/simple/infer", body, {"Content-Encoding": "deflate"})
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT1"]["data"], DIFF)

    def test_gzip_binary_request_body(self):
        # Inference-Header-Content-Length refers to the decompressed body.
        req, blobs = simple_request(IN0, IN1, binary_in=True)
        hb = json.dumps(req).encode()
        body = gzip.compress(hb + b"".join(blobs))
        r = self.client.post("/v2/models/simple/infer", body,
                             {"Content-Encoding": "gzip", "Inference-Header-Content-Length": str(len(hb))})
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], SUM)

    def test_gzip_response(self):
        req, _ = simple_request(IN0, IN1)
        r = self.infer_ok("simple", req, headers={"Accept-Encoding": "gzip"})
        self.assertEqual(r.header("Content-Encoding"), "gzip")
        resp = json.loads(gzip.decompress(r.body))
        self.assertEqual(outputs_by_name(resp)["OUTPUT0"]["data"], SUM)

    def test_deflate_response(self):
        req, _ = simple_request(IN0, IN1)
        r = self.infer_ok("simple", req, headers={"Accept-Encoding": "deflate"})
        self.assertEqual(r.header("Content-Encoding"), "deflate")
        resp = json.loads(zlib.decompress(r.body))
        self.assertEqual(outputs_by_name(resp)["OUTPUT1"]["data"], DIFF)

    def test_gzip_binary_response(self):
        req, _ = simple_request(IN0, IN1, outputs=["OUTPUT0", "OUTPUT1"], binary_out=True)
        r = self.infer_ok("simple", req, headers={"Accept-Encoding": "gzip"})
        self.assertEqual(r.header("Content-Encoding"), "gzip")
        plain = harness.Response(r.status, r.reason,
                                 [h for h in r.headers if h[0].lower() != "content-encoding"],
                                 gzip.decompress(r.body))
        hdr, out = parse_infer_response(plain)  # header length counts the uncompressed JSON
        self.assertEqual(unpack("INT32", out["OUTPUT0"]), SUM)
        self.assertEqual(unpack("INT32", out["OUTPUT1"]), DIFF)

    def test_accept_encoding_identity_and_weights(self):
        req, _ = simple_request(IN0, IN1)
        r = self.infer_ok("simple", req, headers={"Accept-Encoding": "identity"})
        self.assertIn(r.header("Content-Encoding"), (None, "identity"))
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], SUM)
        r = self.infer_ok("simple", req, headers={"Accept-Encoding": "gzip;q=0.1, deflate;q=0.9"})
        self.assertEqual(r.header("Content-Encoding"), "deflate")
        self.assertEqual(outputs_by_name(json.loads(zlib.decompress(r.body)))["OUTPUT0"]["data"], SUM)

    def test_chunked_request_body(self):
        req, _ = simple_request(IN0, IN1)
        body = json.dumps(req).encode()
        chunks = [body[i:i + 37] for i in range(0, len(body), 37)]
        wire = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
        data = harness.http_request_bytes("POST", "/v2/models/simple/infer", wire,
                                          {"Transfer-Encoding": "chunked"}, content_length=False)
        r = harness.raw_request(self.server.port, data)
        self.assertIsNotNone(r, "connection closed without a response")
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], SUM)

    # ---- connections -----------------------------------------------------------------------

    def test_keepalive_many_requests_one_connection(self):
        s = harness.raw_connect(self.server.port)
        try:
            for i in range(200):
                a = [i + k for k in range(16)]
                req, blobs = simple_request(a, IN1, binary_in=(i % 2 == 0))
                hb = json.dumps(req).encode()
                hdrs = {"Inference-Header-Content-Length": str(len(hb))} if blobs else {}
                s.sendall(harness.http_request_bytes("POST", "/v2/models/simple/infer",
                                                     hb + b"".join(blobs), hdrs))
                r = harness.read_http_response(s)
                self.assertIsNotNone(r, "server closed the keep-alive connection after %d requests" % i)
                self.assertOk(r, "request %d on one connection" % i)
                self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [x + 1 for x in a])
                self.assertNotEqual((r.header("Connection") or "").lower(), "close",
                                    "server asked to close the keep-alive connection")
                if i % 50 == 0:
                    s.sendall(harness.http_request_bytes("GET", "/v2/health/live", content_length=False))
                    r = harness.read_http_response(s)
                    self.assertIsNotNone(r)
                    self.assertOk(r)
        finally:
            s.close()

    def test_pipelined_requests(self):
        # Two requests written back-to-back before reading: both answered in order.
        reqs = []
        for i in (1, 2):
            req, _ = simple_request([i] * 16, IN1)
            reqs.append(harness.http_request_bytes("POST", "/v2/models/simple/infer",
                                                   json.dumps(req).encode()))
        s = harness.raw_connect(self.server.port)
        try:
            s.sendall(reqs[0] + reqs[1])
            for i in (1, 2):
                r = harness.read_http_response(s)
                self.assertIsNotNone(r)
                self.assertOk(r)
                self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [i + 1] * 16)
        finally:
            s.close()

    def test_concurrent_connections(self):
        n_threads, n_requests = 64, 20
        errors = []
        barrier = threading.Barrier(n_threads, timeout=30)

        def worker(t):
            c = harness.Client(self.server.port, persistent=True, timeout=30)
            try:
                barrier.wait()
                for i in range(n_requests):
                    a = [t * 1000 + i * 16 + k for k in range(16)]
                    b = [t] * 16
                    binary = (t + i) % 2 == 0
                    req, blobs = simple_request(a, b, binary_in=binary, request_id="%d-%d" % (t, i),
                                                outputs=["OUTPUT0", "OUTPUT1"], binary_out=binary)
                    r = c.infer("simple", req, blobs=blobs)
                    if r.status != 200:
                        errors.append("thread %d req %d: %s" % (t, i, r))
                        return
                    hdr, out = parse_infer_response(r)
                    if hdr.get("id") != "%d-%d" % (t, i):
                        errors.append("thread %d req %d: wrong id %r" % (t, i, hdr.get("id")))
                        return
                    outs = outputs_by_name(hdr)
                    got0 = unpack("INT32", out["OUTPUT0"]) if binary else outs["OUTPUT0"]["data"]
                    got1 = unpack("INT32", out["OUTPUT1"]) if binary else outs["OUTPUT1"]["data"]
                    if got0 != [x + t for x in a] or got1 != [x - t for x in a]:
                        errors.append("thread %d req %d: data mismatch" % (t, i))
                        return
            except Exception as e:  # noqa: BLE001
                errors.append("thread %d: %r" % (t, e))
            finally:
                c.close()

        threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        self.assertFalse(any(th.is_alive() for th in threads), "worker threads hung")
        self.assertEqual(errors, [], "%d failures, first: %s" % (len(errors), errors[:5]))

    def test_expect_100_continue(self):
        # curl sends "Expect: 100-continue" for larger bodies; the request must still succeed.
        req, _ = simple_request(IN0, IN1)
        body = json.dumps(req).encode()
        s = harness.raw_connect(self.server.port)
        try:
            s.sendall(harness.http_request_bytes("POST", "/v2/models/simple/infer", b"",
                                                 {"Expect": "100-continue"}, content_length=len(body)))
            s.settimeout(1.0)
            interim = b""
            try:
                interim = s.recv(4096)
            except socket.timeout:
                pass  # no interim response: allowed, client sends the body after a delay
            if interim:
                self.assertTrue(interim.startswith(b"HTTP/1.1 100"), interim[:100])
            s.sendall(body)
            if interim and b"\r\n\r\n" in interim and interim.split(b"\r\n\r\n", 1)[1]:
                self.fail("unexpected data after the 100 Continue: %r" % interim[:200])
            r = harness.read_http_response(s)
            self.assertIsNotNone(r)
            self.assertOk(r)
            self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], SUM)
        finally:
            s.close()

    def test_connection_close_honoured(self):
        s = harness.raw_connect(self.server.port)
        try:
            s.sendall(harness.http_request_bytes("GET", "/v2/health/live", content_length=False,
                                                 headers={"Connection": "close"}))
            r = harness.read_http_response(s)
            self.assertIsNotNone(r)
            self.assertOk(r)
            s.settimeout(3)
            self.assertEqual(s.recv(1), b"", "server kept the connection open after Connection: close")
        finally:
            s.close()

    def test_http10_request(self):
        r = harness.raw_request(self.server.port, b"GET /v2/health/live HTTP/1.0\r\n\r\n")
        self.assertIsNotNone(r)
        self.assertOk(r)


if __name__ == "__main__":
    unittest.main()
