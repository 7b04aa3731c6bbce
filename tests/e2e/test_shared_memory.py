#!/usr/bin/python3
"""System shared memory (Triton's system_shared_memory extension) over real
HTTP: register/status/unregister, inputs read from and outputs written to
regions, equal to the non-shm path, and every bad-input case."""

import base64
import json
import os
import struct
import unittest
from multiprocessing import shared_memory

from harness import ServerTestCase, standard_repository, Server


def ints(values):
    return struct.pack("<%di" % len(values), *values)


class SharedMemoryTest(ServerTestCase):
    SERVER_ARGS = ("--allow-client-shm=true",)

    def setUp(self):
        self.regions = []
        self.client.post("/v2/systemsharedmemory/unregister")

    def tearDown(self):
        self.client.post("/v2/systemsharedmemory/unregister")
        for r in self.regions:
            r.close()
            r.unlink()

    def make(self, size):
        r = shared_memory.SharedMemory(create=True, size=size)
        self.regions.append(r)
        return r, "/" + r.name

    def register(self, name, key, byte_size, offset=None):
        body = {"key": key, "byte_size": byte_size}
        if offset is not None:
            body["offset"] = offset
        return self.client.post_json("/v2/systemsharedmemory/region/%s/register" % name, body)

    def simple_shm_request(self, in_region, out_region):
        p = lambda reg, off, size: {"shared_memory_region": reg, "shared_memory_offset": off,
                                    "shared_memory_byte_size": size}
        return {"inputs": [
            {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "parameters": p(in_region, 0, 64)},
            {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "parameters": p(in_region, 64, 64)}],
            "outputs": [{"name": "OUTPUT0", "parameters": p(out_region, 0, 64)},
                        {"name": "OUTPUT1", "parameters": p(out_region, 64, 64)}]}

    def test_register_status_unregister(self):
        r, key = self.make(256)
        self.assertOk(self.register("a", key, 128, offset=64))
        st = self.client.get("/v2/systemsharedmemory/status").json()
        self.assertEqual(st, [{"name": "a", "key": key, "offset": 64, "byte_size": 128}])
        self.assertOk(self.client.get("/v2/systemsharedmemory/region/a/status"))
        self.assertError(self.client.get("/v2/systemsharedmemory/region/zz/status"), 404, "zz")
        self.assertError(self.register("a", key, 128), 400, "already")
        self.assertOk(self.client.post("/v2/systemsharedmemory/region/a/unregister"))
        self.assertEqual(self.client.get("/v2/systemsharedmemory/status").json(), [])

    def test_inference_through_shared_memory_equals_the_normal_path(self):
        inp, in_key = self.make(128)
        out, out_key = self.make(128)
        a = list(range(16))
        b = [7] * 16
        inp.buf[:128] = ints(a) + ints(b)
        self.assertOk(self.register("in", in_key, 128))
        self.assertOk(self.register("out", out_key, 128))
        r = self.client.infer("simple", self.simple_shm_request("in", "out"))
        self.assertOk(r)
        body = r.json()
        for o in body["outputs"]:
            self.assertNotIn("data", o)
            self.assertNotIn("parameters", o)
        got = struct.unpack("<32i", bytes(out.buf[:128]))
        plain = self.client.infer("simple", {"inputs": [
            {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": a},
            {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": b}]}).json()
        expected = {o["name"]: o["data"] for o in plain["outputs"]}
        self.assertEqual(list(got[:16]), expected["OUTPUT0"])
        self.assertEqual(list(got[16:]), expected["OUTPUT1"])

    def test_mixed_shm_input_and_json_output(self):
        inp, key = self.make(64)
        inp.buf[:64] = ints(range(16))
        self.assertOk(self.register("x", key, 64))
        req = {"inputs": [
            {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32",
             "parameters": {"shared_memory_region": "x", "shared_memory_byte_size": 64}},
            {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1] * 16}]}
        r = self.client.infer("simple", req)
        self.assertOk(r)
        self.assertEqual(r.json()["outputs"][0]["data"], [i + 1 for i in range(16)])

    def test_bad_inputs(self):
        inp, key = self.make(4096)
        self.assertOk(self.register("ok", key, 128))
        cases = [
            ("past the object", self.register("big", key, 8192), 400, "past the end"),
            ("offset past the object", self.register("big", key, 10, offset=4090), 400, "past"),
            ("missing key", self.client.post_json("/v2/systemsharedmemory/region/m/register",
                                                  {"byte_size": 10}), 400, "key"),
            ("missing byte_size", self.client.post_json(
                "/v2/systemsharedmemory/region/m/register", {"key": key}), 400, "byte_size"),
            ("no such object", self.register("m", "/inferd_nonexistent_obj", 10), 400, "unable"),
            ("empty key", self.register("m", "", 10), 400, "key"),
            ("dotdot key", self.register("m", "/..", 10), 400, "key"),
            ("slashes", self.register("m", "/a/b/c", 10), 400, "key"),
            ("long key", self.register("m", "/" + "k" * 400, 10), 400, "key"),
            ("no region name", self.client.post_json("/v2/systemsharedmemory/register",
                                                     {"key": key, "byte_size": 1}), 400, "region"),
        ]
        for what, resp, status, needle in cases:
            msg = self.assertError(resp, status, what=what)
            self.assertIn(needle.lower(), msg.lower(), what)
            self.assertNotIn("inferd_nonexistent_obj", msg, "error echoes the key: " + what)

        def infer_with(params, data=None):
            inp = {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "parameters": params}
            if data is not None:
                inp["data"] = data
            return self.client.infer("simple", {"inputs": [
                inp, {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [0] * 16}]})
        self.assertError(infer_with({"shared_memory_region": "nope", "shared_memory_byte_size": 64}),
                         400, "nope")
        self.assertError(infer_with({"shared_memory_byte_size": 64}), 400, "shared_memory_region")
        self.assertError(infer_with({"shared_memory_region": "ok"}), 400, "byte_size")
        self.assertError(infer_with({"shared_memory_region": "ok", "shared_memory_byte_size": 64,
                                     "shared_memory_offset": 100}), 400, "out of bounds")
        self.assertError(infer_with({"shared_memory_region": "ok", "shared_memory_byte_size": 64,
                                     "shared_memory_offset": 2 ** 64 - 1}), 400, "out of bounds")
        self.assertError(infer_with({"shared_memory_region": "ok", "shared_memory_byte_size": 64},
                                    data=[0] * 16), 400, "only one")
        self.assertError(infer_with({"shared_memory_region": "ok", "shared_memory_byte_size": 60}),
                         400, "INPUT0")
        # Output region too small.
        req = {"inputs": [
            {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": [0] * 16},
            {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [0] * 16}],
            "outputs": [{"name": "OUTPUT0", "parameters": {
                "shared_memory_region": "ok", "shared_memory_byte_size": 32}}]}
        self.assertError(self.client.infer("simple", req), 400, "at least 64 bytes")
        req["outputs"][0]["parameters"]["binary_data"] = True
        self.assertError(self.client.infer("simple", req), 400, "binary_data")
        self.assertServerAlive()

    def test_unregister_of_an_unknown_name_is_nothing_to_do(self):
        # Triton succeeds: clients unregister defensively before they register.
        self.assertOk(self.client.post("/v2/systemsharedmemory/region/nope/unregister"))
        _, key = self.make(64)
        self.assertOk(self.register("kept", key, 64))
        # Unregistering it as a CUDA region leaves the system region alone.
        self.assertOk(self.client.post("/v2/cudasharedmemory/region/kept/unregister"))
        self.assertOk(self.client.get("/v2/systemsharedmemory/region/kept/status"))
        self.assertOk(self.client.post("/v2/systemsharedmemory/region/kept/unregister"))
        self.assertOk(self.client.post("/v2/systemsharedmemory/region/kept/unregister"))
        self.assertError(self.client.get("/v2/systemsharedmemory/region/kept/status"), 404,
                         "'kept'")
        self.assertServerAlive()

    def test_unregister_while_in_use_is_safe(self):
        inp, key = self.make(128)
        out, out_key = self.make(128)
        self.assertOk(self.register("in", key, 128))
        self.assertOk(self.register("out", out_key, 128))
        # Unregister all between requests; the next request names unknown regions.
        self.assertOk(self.client.infer("simple", self.simple_shm_request("in", "out")))
        self.assertOk(self.client.post("/v2/systemsharedmemory/unregister"))
        self.assertError(self.client.infer("simple", self.simple_shm_request("in", "out")), 400, "in")
        self.assertServerAlive()

    def test_cuda_shared_memory_on_a_cpu_build(self):
        self.assertEqual(self.client.get("/v2/cudasharedmemory/status").json(), [])
        self.assertOk(self.client.post("/v2/cudasharedmemory/unregister"))
        r = self.client.post_json("/v2/cudasharedmemory/region/g/register",
                                  {"raw_handle": {"b64": ""}, "device_id": 0, "byte_size": 4})
        # Triton's code and words (400), then inferd's reason in parentheses.
        self.assertError(r, 400, "failed to register CUDA shared memory region: 'g', "
                         "GPUs not supported (")
        # Without a GPU the reason says so (CUDA build or not).
        handle = base64.b64encode(bytes(64)).decode()
        r = self.client.post_json("/v2/cudasharedmemory/region/g/register",
                                  {"raw_handle": {"b64": handle}, "device_id": 0, "byte_size": 4})
        self.assertError(r, 400, "no CUDA device")
        # Malformed bodies are named before any device is involved.
        for body, needle in [({"device_id": 0, "byte_size": 4}, "raw_handle"),
                             ({"raw_handle": {"b64": "%%%%"}, "device_id": 0, "byte_size": 4},
                              "base64"),
                             ({"raw_handle": {"b64": handle}, "byte_size": 4}, "device_id"),
                             ({"raw_handle": {"b64": handle}, "device_id": -1, "byte_size": 4},
                              "device_id"),
                             ({"raw_handle": {"b64": handle}, "device_id": 0}, "byte_size")]:
            self.assertError(self.client.post_json("/v2/cudasharedmemory/region/g/register",
                                                   body), 400, needle)
        self.assertError(self.client.get("/v2/cudasharedmemory/region/g/status"), 404,
                         "Unable to find cuda shared memory region: 'g'")
        # Unregistering a region that is not registered is nothing to do (Triton).
        self.assertOk(self.client.post("/v2/cudasharedmemory/region/g/unregister"))
        self.assertEqual(self.client.get("/v2/cudasharedmemory/status").json(), [])
        self.assertServerAlive()


class SharedMemoryDisabledTest(ServerTestCase):
    def test_register_is_refused_by_default(self):
        r = self.client.post_json("/v2/systemsharedmemory/region/a/register",
                                  {"key": "/x", "byte_size": 4})
        self.assertError(r, 501, "--allow-client-shm")
        self.assertOk(self.client.get("/v2/systemsharedmemory/status"))


if __name__ == "__main__":
    unittest.main()
