#!/usr/bin/python3
"""auto_complete_config of Python models end to end: a config.pbtxt that names only the backend
is completed by the model's hook (inputs, outputs, max_batch_size, dynamic batching) and served;
a hook that raises, returns the wrong type or contradicts config.pbtxt fails the load with the
reason."""

import os
import unittest

from harness import ServerTestCase, write_model

AUTO = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4]})
        auto_complete_model_config.add_output({"name": "OUT", "data_type": "TYPE_FP32",
                                               "dims": [4]})
        auto_complete_model_config.set_max_batch_size(4)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() * 2)]) for r in requests]
'''

RAISES = '''
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        raise RuntimeError("no config for you")

    def execute(self, requests):
        return []
'''

WRONG_TYPE = '''
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        return {"not": "a ModelConfig"}

    def execute(self, requests):
        return []
'''


def bare_config(name, extra=""):
    return 'name: "%s"\nbackend: "python"\n%s' % (name, extra)


class PythonAutoCompleteTest(ServerTestCase):
    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "py_auto", bare_config("py_auto"), files={"1/model.py": AUTO})
        write_model(repo, "py_auto_raises", bare_config("py_auto_raises"),
                    files={"1/model.py": RAISES})
        write_model(repo, "py_auto_wrong", bare_config("py_auto_wrong"),
                    files={"1/model.py": WRONG_TYPE})
        write_model(repo, "py_auto_conflict", bare_config(
            "py_auto_conflict", 'input [ { name: "IN" data_type: TYPE_INT32 dims: [4] } ]\n'),
            files={"1/model.py": AUTO})
        return repo

    def model_state(self, name):
        for m in self.client.post_json("/v2/repository/index", {}).json():
            if m["name"] == name:
                return m
        return None

    def test_completed_and_served(self):
        self.assertEqual(self.model_state("py_auto")["state"], "READY",
                         self.model_state("py_auto"))
        cfg = self.client.get("/v2/models/py_auto/config").json()
        self.assertEqual(cfg["max_batch_size"], 4)
        self.assertIn("dynamic_batching", cfg)
        self.assertEqual([(i["name"], i["data_type"], i["dims"]) for i in cfg["input"]],
                         [("IN", "TYPE_FP32", [4])])
        self.assertEqual([(o["name"], o["data_type"]) for o in cfg["output"]],
                         [("OUT", "TYPE_FP32")])
        r = self.client.infer("py_auto", {"inputs": [{"name": "IN", "datatype": "FP32",
                                                      "shape": [1, 4], "data": [1, 2, 3, 4]}]})
        self.assertOk(r)
        self.assertEqual(r.json()["outputs"][0]["data"], [2, 4, 6, 8])

    def test_hook_raises(self):
        m = self.model_state("py_auto_raises")
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("RuntimeError: no config for you", m["reason"])

    def test_hook_returns_wrong_type(self):
        m = self.model_state("py_auto_wrong")
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("auto_complete_config function in model 'py_auto_wrong' must return a "
                      "valid pb.ModelConfig object.", m["reason"])

    def test_hook_contradicts_config(self):
        m = self.model_state("py_auto_conflict")
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("data_type", m["reason"])
        self.assertIn("TYPE_INT32", m["reason"])


if __name__ == "__main__":
    unittest.main()
