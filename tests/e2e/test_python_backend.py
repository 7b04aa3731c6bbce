#!/usr/bin/python3
"""The Python backend end to end (backend: "python", Triton model.py files unchanged) over HTTP
against a real inferd with real stub processes: initialize(args) and its 7 keys, request
metadata, BYTES, errors raised or returned by model code and their status codes, execute()'s
contract texts, a failing initialize, refused config, and stubs going away on unload."""

import json
import os
import unittest

from harness import ServerError, ServerTestCase, pack, parse_infer_response, unpack, write_model, wait_until
from python_models import (ADD_SUB, FAULTY, INTROSPECT, RAISE_INIT, children_stubs, python_model,
                           stub_pids)


def int32_request(name, values, shape=None):
    return {"inputs": [{"name": name, "datatype": "INT32", "shape": shape or [len(values)],
                        "data": list(values)}]}


class PythonBackendTest(ServerTestCase):
    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        python_model(repo, "py_add_sub", ADD_SUB,
                     [("INPUT0", "TYPE_INT32", [16]), ("INPUT1", "TYPE_INT32", [16])],
                     [("OUTPUT0", "TYPE_INT32", [16]), ("OUTPUT1", "TYPE_INT32", [16])],
                     max_batch_size=8)
        python_model(repo, "py_introspect", INTROSPECT, [("INPUT0", "TYPE_FP32", [-1])],
                     [("INFO", "TYPE_STRING", [1]), ("UNUSED", "TYPE_INT32", [1])],
                     extra='parameters { key: "custom" value { string_value: "v1" } }')
        python_model(repo, "py_faulty", FAULTY, [("INPUT0", "TYPE_INT32", [-1])],
                     [("OUTPUT0", "TYPE_INT32", [-1])])
        python_model(repo, "simple_identity_py", '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
''', [("INPUT0", "TYPE_STRING", [-1])], [("OUTPUT0", "TYPE_STRING", [-1])], max_batch_size=8)
        python_model(repo, "py_params", '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())],
            parameters={"tokens": 3, "stop": True, "note": "hi"}) for r in requests]
''', [("INPUT0", "TYPE_INT32", [-1])], [("OUTPUT0", "TYPE_INT32", [-1])])
        python_model(repo, "py_raise_init", RAISE_INIT, [("INPUT0", "TYPE_INT32", [-1])],
                     [("OUTPUT0", "TYPE_INT32", [-1])])
        python_model(repo, "py_conda", FAULTY, [("INPUT0", "TYPE_INT32", [-1])],
                     [("OUTPUT0", "TYPE_INT32", [-1])],
                     extra='parameters { key: "EXECUTION_ENV_PATH" value { string_value: '
                           '"$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }')
        python_model(repo, "py_custom_stub", FAULTY, [("INPUT0", "TYPE_INT32", [-1])],
                     [("OUTPUT0", "TYPE_INT32", [-1])],
                     files={"triton_python_backend_stub": "not a stub"})
        python_model(repo, "py_force_cpu", FAULTY, [("INPUT0", "TYPE_INT32", [-1])],
                     [("OUTPUT0", "TYPE_INT32", [-1])],
                     extra='parameters { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value { '
                           'string_value: "maybe" } }')
        write_model(repo, "py_no_file", 'name: "py_no_file"\nbackend: "python"\n'
                    'input [ { name: "X" data_type: TYPE_INT32 dims: [1] } ]\n'
                    'output [ { name: "Y" data_type: TYPE_INT32 dims: [1] } ]\n')
        return repo

    def infer(self, model, req, blobs=None):
        return self.client.infer(model, req, blobs=blobs)

    def test_add_sub(self):
        a, b = list(range(16)), [1] * 16
        req = {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": a},
                          {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": b}]}
        r = self.infer("py_add_sub", req)
        self.assertOk(r)
        outs = {o["name"]: o for o in r.json()["outputs"]}
        self.assertEqual(outs["OUTPUT0"]["data"], [x + 1 for x in a])
        self.assertEqual(outs["OUTPUT1"]["data"], [x - 1 for x in a])
        self.assertEqual(outs["OUTPUT0"]["shape"], [1, 16])
        # Only the requested output comes back.
        req["outputs"] = [{"name": "OUTPUT1"}]
        r = self.infer("py_add_sub", req)
        self.assertOk(r)
        self.assertEqual([o["name"] for o in r.json()["outputs"]], ["OUTPUT1"])

    def introspect(self, req_extra=None, params=None):
        req = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [2], "data": [1, 2]}],
               "outputs": [{"name": "INFO"}]}
        req.update(req_extra or {})
        if params:
            req["parameters"] = params
        r = self.infer("py_introspect", req)
        self.assertOk(r)
        return json.loads(r.json()["outputs"][0]["data"][0])

    def test_initialize_args(self):
        info = self.introspect()
        args = info["args"]
        for k in ("model_config", "model_instance_kind", "model_instance_name",
                  "model_instance_device_id", "model_repository", "model_version", "model_name"):
            self.assertIsInstance(args[k], str, k)
        self.assertEqual(args["model_name"], "py_introspect")
        self.assertEqual(args["model_version"], "1")
        self.assertEqual(args["model_instance_kind"], "CPU")
        self.assertEqual(args["model_instance_device_id"], "0")
        self.assertTrue(args["model_repository"].endswith("/py_introspect"), args)
        self.assertTrue(args["model_instance_name"].startswith("py_introspect"), args)
        self.assertEqual(args["executable"], "/usr/bin/python3")
        cfg = json.loads(args["model_config"])
        served = self.client.get("/v2/models/py_introspect/config").json()
        self.assertEqual(cfg, served)
        self.assertEqual(cfg["parameters"]["custom"], {"string_value": "v1"})
        self.assertEqual(info["inputs"], [["INPUT0", [2], 11]])
        self.assertNotEqual(int(args["pid"]), self.server.proc.pid)

    def test_request_metadata(self):
        info = self.introspect({"id": "req-42"}, params={"temperature": 0.5, "mode": "fast",
                                                         "n": 3, "on": True})
        self.assertEqual(info["id"], "req-42")
        self.assertEqual(info["corr"], 0)
        self.assertEqual(info["flags"], 0)
        self.assertEqual(info["outputs"], ["INFO"])
        self.assertFalse(info["cancelled"])
        self.assertEqual(info["params"], {"temperature": 0.5, "mode": "fast", "n": 3, "on": True})

    def test_large_control_messages(self):
        # 300 kB of request parameters: over a datagram's size both ways (exec, exec_done).
        big = "x" * 300000
        req = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1], "data": [1]}],
               "outputs": [{"name": "INFO"}], "parameters": {"big": big}}
        r = self.infer("py_introspect", req)
        self.assertOk(r)
        body = r.json()
        self.assertEqual(json.loads(body["outputs"][0]["data"][0])["params"]["big"], big)
        self.assertEqual(body["parameters"]["echo"], big)

    def test_bytes_echo(self):
        vals = [b"hello", b"", b"\x00\x01binary\xff", "ünïcode".encode()]
        blob = pack("BYTES", vals)
        req = {"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1, 4],
                           "parameters": {"binary_data_size": len(blob)}}],
               "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
        r = self.infer("simple_identity_py", req, blobs=[blob])
        self.assertOk(r)
        header, blobs = parse_infer_response(r)
        self.assertEqual(header["outputs"][0]["datatype"], "BYTES")
        self.assertEqual(header["outputs"][0]["shape"], [1, 4])
        self.assertEqual(unpack("BYTES", blobs["OUTPUT0"]), vals)

    def test_raise_in_execute(self):
        r = self.infer("py_faulty", int32_request("INPUT0", [1]))
        msg = self.assertError(r, 500, "Failed to process the request(s) for model 'py_faulty",
                               "ValueError: model says no")
        self.assertIn("message: ", msg)
        r = self.infer("py_faulty", int32_request("INPUT0", [0, 5]))  # still serving
        self.assertOk(r)
        self.assertEqual(r.json()["outputs"][0]["data"], [0, 5])

    def test_response_parameters(self):
        r = self.infer("py_params", {"inputs": [{"name": "INPUT0", "datatype": "INT32",
                                                 "shape": [2], "data": [4, 5]}]})
        self.assertOk(r)
        body = r.json()
        self.assertEqual(body["outputs"][0]["data"], [4, 5])
        self.assertEqual(body.get("parameters"), {"tokens": 3, "stop": True, "note": "hi"})

    def test_error_codes(self):
        r = self.infer("py_faulty", int32_request("INPUT0", [4]))
        self.assertError(r, 404, "no such thing")

    def test_execute_contract(self):
        r = self.infer("py_faulty", int32_request("INPUT0", [5]))
        self.assertError(r, 500, "Expected a list in the execute return, found type "
                                 "'<class 'str'>'.")
        r = self.infer("py_faulty", int32_request("INPUT0", [6]))
        self.assertError(r, 500, "Number of InferenceResponse objects do not match the number of "
                                 "InferenceRequest objects. InferenceRequest(s) size is:1, and "
                                 "InferenceResponse(s) size is:0")

    def model_state(self, name):
        for m in self.client.post_json("/v2/repository/index", {}).json():
            if m["name"] == name:
                return m
        return None

    def test_raise_in_initialize(self):
        m = self.model_state("py_raise_init")
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("RuntimeError: cannot start: missing weights", m["reason"])
        self.assertIn("py_raise_init", m["reason"])

    def test_refused_config(self):
        m = self.model_state("py_conda")
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("EXECUTION_ENV_PATH", m["reason"])
        m = self.model_state("py_custom_stub")
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("triton_python_backend_stub", m["reason"])
        m = self.model_state("py_force_cpu")
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: maybe", m["reason"])
        m = self.model_state("py_no_file")
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("model.py", m["reason"])

    def test_stubs_are_children(self):
        stubs = children_stubs(self.server.proc.pid)
        # py_add_sub, py_introspect, py_faulty, simple_identity_py: one instance each
        self.assertGreaterEqual(len(stubs), 4, stubs)


class PythonUnloadTest(ServerTestCase):
    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=py_add_sub")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        python_model(repo, "py_add_sub", ADD_SUB,
                     [("INPUT0", "TYPE_INT32", [16]), ("INPUT1", "TYPE_INT32", [16])],
                     [("OUTPUT0", "TYPE_INT32", [16]), ("OUTPUT1", "TYPE_INT32", [16])],
                     max_batch_size=8, extra="instance_group [ { count: 2 kind: KIND_CPU } ]")
        return repo

    def test_unload_stops_stubs(self):
        pid = self.server.proc.pid
        self.assertEqual(len(children_stubs(pid)), 2)
        r = self.client.post("/v2/repository/models/py_add_sub/unload")
        self.assertOk(r)
        self.assertTrue(wait_until(lambda: not children_stubs(pid), 20), children_stubs(pid))
        self.assertIn("add_sub finalized", "\n".join(self.server.log()))
        r = self.client.post("/v2/repository/models/py_add_sub/load")
        self.assertOk(r)
        self.assertEqual(len(children_stubs(pid)), 2)



class PythonParentDeathTest(PythonUnloadTest):
    """A stub dies with inferd (PR_SET_PDEATHSIG and its parent watch), even on SIGKILL."""

    def test_unload_stops_stubs(self):  # the parent's test; not rerun here
        pass

    def test_no_stub_outlives_inferd(self):
        stubs = children_stubs(self.server.proc.pid)
        self.assertEqual(len(stubs), 2)
        server, type(self).server = self.server, None
        server.kill()
        try:
            server._finish(signalled=False)
        except ServerError:
            pass  # killed on purpose

        def gone():
            return not [p for p in stubs if p in stub_pids()]
        self.assertTrue(wait_until(gone, 10))


if __name__ == "__main__":
    unittest.main()
