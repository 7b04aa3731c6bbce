#!/usr/bin/python3
"""Strict JSON over real HTTP (docs/decisions.md): JSON `data` out of range for its datatype is
refused with 400 naming the input, the flat element index and the value; negative or
fractional typed parameters likewise; responses are always strict JSON: NaN and infinities of
FP32/FP64 outputs are the strings "NaN", "Infinity", "-Infinity" (read back by numpy, as
tritonclient's as_numpy does), FP16 and BYTES that are not UTF-8 must be asked for binary; the
classification extension still answers with NaN scores."""

import json
import math
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ServerTestCase, outputs_by_name, pack, parse_infer_response  # noqa: E402


def strict_json(body):
    """Parses like a browser's JSON.parse: NaN/Infinity literals are not JSON."""
    def refuse(name):
        raise ValueError("not JSON: %s" % name)
    return json.loads(body.decode("utf-8"), parse_constant=refuse)


def one_input(datatype, data, name="INPUT0", shape=None):
    return {"inputs": [{"name": name, "shape": shape or [len(data)], "datatype": datatype,
                        "data": data}]}


class JsonInputRangeTest(ServerTestCase):

    def tearDown(self):
        self.assertServerAlive()

    def post(self, model, body):
        return self.client.post("/v2/models/%s/infer" % model,
                                body if isinstance(body, bytes) else json.dumps(body).encode())

    def test_out_of_range_integers_are_refused_naming_input_and_element(self):
        cases = [("INT32", 2 ** 40, "1099511627776", "-2147483648 to 2147483647"),
                 ("INT32", -2 ** 31 - 1, "-2147483649", "-2147483648 to 2147483647"),
                 ("UINT8", -1, "-1", "0 to 255"),
                 ("UINT8", 256, "256", "0 to 255"),
                 ("INT8", 128, "128", "-128 to 127"),
                 ("INT16", -32769, "-32769", "-32768 to 32767"),
                 ("UINT16", 65536, "65536", "0 to 65535"),
                 ("UINT32", 2 ** 32, "4294967296", "0 to 4294967295"),
                 ("INT64", 2 ** 63, "9223372036854775808", "to 9223372036854775807"),
                 ("UINT64", 2 ** 64, "18446744073709551616.0", "0 to 18446744073709551615")]
        for dt, bad, text, rng in cases:
            with self.subTest(dt=dt, bad=bad):
                r = self.post("identity_" + dt.lower(), one_input(dt, [0, 1, 0, bad]))
                self.assertError(r, 400, "input 'INPUT0': element 3 (%s) is out of range for %s"
                                 % (text, dt), rng)

    def test_each_type_takes_its_whole_range(self):
        cases = {"INT8": [-128, 127], "UINT8": [0, 255], "INT16": [-32768, 32767],
                 "UINT16": [0, 65535], "INT32": [-2 ** 31, 2 ** 31 - 1], "UINT32": [0, 2 ** 32 - 1],
                 "INT64": [-2 ** 63, 2 ** 63 - 1], "UINT64": [0, 2 ** 64 - 1]}
        for dt, values in cases.items():
            with self.subTest(dt=dt):
                r = self.post("identity_" + dt.lower(), one_input(dt, values))
                self.assertOk(r)
                self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], values)

    def test_nested_data_counts_the_flat_index(self):
        r = self.post("identity_2d", {"inputs": [{"name": "INPUT0", "shape": [2, 2],
                                                  "datatype": "FP32", "data": [[1, 2], [1e39, 4]]}]})
        self.assertError(r, 400, "input 'INPUT0': element 2 (1e+39) is out of range for FP32")

    def test_fp32_overflow_is_refused_but_rounding_is_not(self):
        self.assertError(self.post("identity_fp32", one_input("FP32", [-1e39])), 400,
                         "element 0 (-1e+39) is out of range for FP32")
        r = self.post("identity_fp32", one_input("FP32", [1e-50, 3.4028235e38, 0.1]))
        self.assertOk(r)
        got = outputs_by_name(r.json())["OUTPUT0"]["data"]
        self.assertEqual(got[0], 0.0)
        self.assertEqual(got[1], struct.unpack("<f", struct.pack("<f", 3.4028234663852886e38))[0])

    def test_fractions_and_kind_mixups_are_refused(self):
        cases = [("INT32", 1.5, "element 1 (1.5) of INT32 data must be an integer"),
                 ("UINT8", 2.0, "element 1 (2.0) of UINT8 data must be an integer"),
                 ("INT64", True, "element 1 (true) of INT64 data must be an integer"),
                 ("BOOL", 1, "element 1 (1) of BOOL data must be true or false"),
                 ("FP32", "x", "element 1 (\"x\") of FP32 data must be a number"),
                 ("FP64", False, "element 1 (false) of FP64 data must be a number")]
        for dt, bad, words in cases:
            with self.subTest(dt=dt, bad=bad):
                first = True if dt == "BOOL" else 0
                r = self.post("identity_" + dt.lower(), one_input(dt, [first, bad]))
                self.assertError(r, 400, "input 'INPUT0': " + words)

    def test_fp16_is_refused_in_json_input(self):
        self.assertError(self.post("identity_fp16", one_input("FP16", [70000])), 400,
                         "receiving FP16 data via JSON is not supported", "'INPUT0'")

    def test_binary_inputs_are_not_range_checked(self):
        # Binary data is exactly the type's bytes: nothing to be out of range.
        hdr = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "UINT8",
                           "parameters": {"binary_data_size": 2}}]}
        r = self.client.infer("identity_uint8", hdr, blobs=[b"\xff\x00"])
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [255, 0])

    def test_typed_parameters_out_of_range_are_refused(self):
        cases = [({"sequence_id": -1}, "parameter 'sequence_id' must be an unsigned integer or "
                  "a string, got int64 -1"),
                 ({"sequence_id": 1.5}, "parameter 'sequence_id' must be an unsigned integer or "
                  "a string, got double 1.5"),
                 ({"priority": -1}, "parameter 'priority' must be a non-negative integer"),
                 ({"priority": 2 ** 64}, "parameter 'priority' must be a non-negative integer"),
                 ({"timeout": 0.5}, "parameter 'timeout' must be a non-negative integer, "
                  "got double 0.5")]
        for params, words in cases:
            with self.subTest(params=params):
                req = one_input("FP32", [1.0])
                req["parameters"] = params
                self.assertError(self.post("identity", req), 400, words)

    def test_request_json_that_is_not_utf8_is_refused(self):
        body = (b'{"id":"\xff","inputs":[{"name":"INPUT0","shape":[1],"datatype":"FP32",'
                b'"data":[1]}]}')
        self.assertError(self.post("identity", body), 400, "Invalid encoding")


class JsonOutputStrictTest(ServerTestCase):

    def tearDown(self):
        self.assertServerAlive()

    def nonfinite(self, dt, fmt, binary_out):
        values = [float("nan"), float("inf"), float("-inf"), 1.5]
        hdr = {"inputs": [{"name": "INPUT0", "shape": [4], "datatype": dt,
                           "parameters": {"binary_data_size": 4 * struct.calcsize(fmt)}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": binary_out}}]}
        return self.client.infer("identity_" + dt.lower(), hdr,
                                 blobs=[struct.pack("<4" + fmt, *values)])

    def test_nonfinite_fp32_fp64_outputs_are_json_strings(self):
        import numpy as np
        for dt, fmt, npt in [("FP32", "f", np.float32), ("FP64", "d", np.float64)]:
            with self.subTest(dt=dt):
                r = self.nonfinite(dt, fmt, binary_out=False)
                self.assertOk(r)
                doc = strict_json(r.body)  # strict JSON: parses without NaN literals
                data = outputs_by_name(doc)["OUTPUT0"]["data"]
                self.assertEqual(data, ["NaN", "Infinity", "-Infinity", 1.5])
                # What tritonclient's as_numpy does with JSON data.
                arr = np.array(data, dtype=npt)
                self.assertTrue(math.isnan(arr[0]))
                self.assertEqual(list(arr[1:]), [math.inf, -math.inf, 1.5])
                # Binary output carries the bits exactly.
                r = self.nonfinite(dt, fmt, binary_out=True)
                self.assertOk(r)
                _, blobs = parse_infer_response(r)
                got = struct.unpack("<4" + fmt, blobs["OUTPUT0"])
                self.assertTrue(math.isnan(got[0]))
                self.assertEqual(list(got[1:]), [math.inf, -math.inf, 1.5])

    def test_nonfinite_strings_round_trip_as_json_input(self):
        for dt in ("FP32", "FP64"):
            with self.subTest(dt=dt):
                r = self.client.infer("identity_" + dt.lower(),
                                      one_input(dt, ["NaN", "Infinity", "-Infinity", 2.0]))
                self.assertOk(r)
                self.assertEqual(outputs_by_name(strict_json(r.body))["OUTPUT0"]["data"],
                                 ["NaN", "Infinity", "-Infinity", 2.0])

    def test_nonfinite_fp16_must_be_binary(self):
        r = self.nonfinite("FP16", "e", binary_out=False)
        self.assertError(r, 400, "sending FP16 data via JSON is not supported", "'OUTPUT0'")
        r = self.nonfinite("FP16", "e", binary_out=True)
        self.assertOk(r)
        _, blobs = parse_infer_response(r)
        got = struct.unpack("<4e", blobs["OUTPUT0"])
        self.assertTrue(math.isnan(got[0]))
        self.assertEqual(list(got[1:]), [math.inf, -math.inf, 1.5])

    def test_classification_with_nan_scores_is_strict_json(self):
        values = [0.5, float("nan"), 2.0, float("inf")]
        hdr = {"inputs": [{"name": "INPUT0", "shape": [4], "datatype": "FP32",
                           "parameters": {"binary_data_size": 16}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 2}}]}
        r = self.client.infer("identity_fp32", hdr, blobs=[struct.pack("<4f", *values)])
        self.assertOk(r)
        out = outputs_by_name(strict_json(r.body))["OUTPUT0"]
        self.assertEqual(out["datatype"], "BYTES")
        self.assertEqual(len(out["data"]), 2)
        self.assertTrue(all(isinstance(s, str) for s in out["data"]), out)

    def test_bytes_outputs_that_are_not_utf8_must_be_binary(self):
        elements = [b"ok", b"\xc3\x28 invalid"]
        hdr = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(pack("BYTES", elements))}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": False}}]}
        r = self.client.infer("identity_bytes", hdr, blobs=[pack("BYTES", elements)])
        self.assertError(r, 400, "output 'OUTPUT0': element 1 is not valid UTF-8",
                         "binary data format")
        hdr["outputs"][0]["parameters"]["binary_data"] = True
        r = self.client.infer("identity_bytes", hdr, blobs=[pack("BYTES", elements)])
        self.assertOk(r)
        _, blobs = parse_infer_response(r)
        self.assertEqual(blobs["OUTPUT0"], pack("BYTES", elements))


class ErrorAndStatusBodiesTest(ServerTestCase):
    """Names arrive as percent-decoded bytes; every body that echoes one is still JSON."""
    SERVER_ARGS = ("--allow-client-shm=true",)

    def tearDown(self):
        self.client.post("/v2/systemsharedmemory/unregister")
        self.assertServerAlive()

    def test_names_that_are_not_utf8_are_escaped_in_error_bodies(self):
        for method, path, text in [("GET", "/v2/models/%ff", "'\\xff'"),
                                   ("POST", "/v2/models/%ff/infer", "'\\xff'"),
                                   ("GET", "/v2/models/a%c3%28b", "'a\\xc3(b'"),
                                   ("GET", "/v2/systemsharedmemory/region/%ff/status",
                                    "'\\xff'")]:
            with self.subTest(path=path):
                r = self.client.request(method, path, b"{}" if method == "POST" else None)
                self.assertGreaterEqual(r.status, 400, r)
                self.assertIn(text, strict_json(r.body)["error"])

    def test_region_names_that_are_not_utf8_are_escaped_in_status(self):
        from multiprocessing import shared_memory
        region = shared_memory.SharedMemory(create=True, size=16)
        try:
            r = self.client.post_json("/v2/systemsharedmemory/region/r%ff/register",
                                      {"key": "/" + region.name, "byte_size": 16})
            self.assertOk(r)
            status = strict_json(self.client.get("/v2/systemsharedmemory/status").body)
            self.assertEqual([s["name"] for s in status], ["r\\xff"])
        finally:
            region.close()
            region.unlink()


if __name__ == "__main__":
    unittest.main()
