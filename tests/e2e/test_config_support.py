#!/usr/bin/python3
"""Config fields inferd does not implement are refused or warned about, never silently
ignored (docs/backends.md, "Model configuration fields"): a model using a refused field is
UNAVAILABLE with a reason naming the field, in the index and in the load answer, while the
others serve; a performance-only field loads the model, logs a warning naming the field and
shows it as the READY entry's reason in the index.

Implicit sequence state (sequence_batching.state) is honoured through the real server: a
stateful model migrated from Triton (the built-in add_sub backend, whose INPUT1/OUTPUT0 are
made the state) accumulates per sequence, starts from its initial state (zero_data or an
initial_state/ file), and the state output reaches a client only when it is a configured output
the client asked for."""

import os
import struct
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ServerTestCase, write_model, model_config, outputs_by_name  # noqa: E402

BASE = model_config("%s", "identity", [("INPUT0", "TYPE_FP32", (4,))],
                    [("OUTPUT0", "TYPE_FP32", (4,))], max_batch_size=8)

# model name -> (extra config, text the reason must contain)
REFUSED = {
    "agents": ('model_repository_agents { agents [ { name: "checksum" } ] }',
               "'model_repository_agents'"),
    "ops": ('model_operations { op_library_filename: "libops.so" }', "'model_operations'"),
    "ragged": ('batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "INPUT0" '
               'data_type: TYPE_FP32 source_input: "INPUT0" } ]', "'batch_input'"),
}
WARNED = {
    "accel": ('optimization { execution_accelerators { cpu_execution_accelerator [ '
              '{ name: "openvino" } ] } }', "'optimization.execution_accelerators'"),
    "tags": ('metric_tags { key: "team" value: "search" }', "'metric_tags'"),
}


def model_with(name, extra):
    return (BASE % name) + extra + "\n"


def index_entry(client, name):
    r = client.post("/v2/repository/index")
    assert r.status == 200, r
    entries = [e for e in r.json() if e.get("name") == name]
    assert len(entries) == 1, entries
    return entries[0]


class RefusedAndWarnedFieldsTest(ServerTestCase):
    SERVER_ARGS = ("--exit-on-error=false",)

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        for name, (extra, _) in list(REFUSED.items()) + list(WARNED.items()):
            write_model(repo, name, model_with(name, extra))
        return [repo]

    def test_refused_fields_make_the_model_unavailable_naming_the_field(self):
        for name, (_, needle) in REFUSED.items():
            with self.subTest(model=name):
                e = index_entry(self.client, name)
                self.assertEqual(e.get("state"), "UNAVAILABLE", e)
                self.assertIn(needle, e.get("reason", ""), e)
                self.assertIn("remove it to load the model", e.get("reason", ""), e)
                self.assertNotEqual(self.client.get("/v2/models/%s/ready" % name).status, 200)
        self.assertEqual(index_entry(self.client, "simple"),
                         {"name": "simple", "version": "1", "state": "READY"})

    def test_performance_fields_load_with_a_warning_in_the_log(self):
        for name, (_, needle) in WARNED.items():
            with self.subTest(model=name):
                e = index_entry(self.client, name)
                self.assertEqual(e.get("state"), "READY", e)
                self.assertIn(needle, e.get("reason", ""), "the index shows the warning: %s" % e)
                self.assertEqual(self.client.get("/v2/models/%s/ready" % name).status, 200)
                lines = [ln for ln in self.server.log()
                         if "model '%s'" % name in ln and needle in ln]
                self.assertTrue(lines, "no warning naming %s for %s%s" % (needle, name,
                                                                         self.diag()))
                self.assertIn("has no effect in inferd", lines[0])


class LoadApiRefusalTest(ServerTestCase):
    SERVER_ARGS = ("--model-control-mode", "explicit")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "ops", model_with("ops", REFUSED["ops"][0]))
        return [repo]

    def test_load_answer_names_the_field(self):
        r = self.client.post("/v2/repository/models/ops/load")
        self.assertError(r, 400, "ops", "'model_operations' (model config) is not supported")


# ---- implicit state ---------------------------------------------------------------------

SEQ = """
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }
  ]
  state [ { input_name: "INPUT1" output_name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ]
            %s } ]
}
"""


def stateful(name, outputs, initial=""):
    """add_sub with INPUT1 fed from the state and OUTPUT0 (= INPUT0 + state) stored as it:
    OUTPUT0 is the running sum of the sequence, OUTPUT1 = INPUT0 - previous sum."""
    return model_config(name, "add_sub", [("INPUT0", "TYPE_INT32", (1,))],
                        [(o, "TYPE_INT32", (1,)) for o in outputs], max_batch_size=4,
                        extra=SEQ % initial)


def seq_request(corr, value, start=False, end=False, outputs=None):
    req = {"inputs": [{"name": "INPUT0", "shape": [1, 1], "datatype": "INT32", "data": [value]}],
           "parameters": {"sequence_id": corr, "sequence_start": start, "sequence_end": end}}
    if outputs is not None:
        req["outputs"] = [{"name": o} for o in outputs]
    return req


class ImplicitStateTest(ServerTestCase):

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "running_sum", stateful("running_sum", ["OUTPUT0", "OUTPUT1"]))
        write_model(repo, "hidden_state", stateful("hidden_state", ["OUTPUT1"]))
        d = write_model(repo, "from_file", stateful(
            "from_file", ["OUTPUT0", "OUTPUT1"],
            'initial_state { data_type: TYPE_INT32 dims: [ 1 ] data_file: "start.bin" }'))
        os.makedirs(os.path.join(d, "initial_state"))
        with open(os.path.join(d, "initial_state", "start.bin"), "wb") as f:
            f.write(struct.pack("<i", 1000))
        write_model(repo, "bad_file", stateful(
            "bad_file", ["OUTPUT0", "OUTPUT1"],
            'initial_state { data_type: TYPE_INT32 dims: [ 1 ] data_file: "missing.bin" }'))
        return [repo]

    def infer(self, model, *args, **kwargs):
        r = self.server.client().infer(model, seq_request(*args, **kwargs))
        self.assertOk(r, model)
        return {k: v["data"] for k, v in outputs_by_name(r.json()).items()}

    def test_interleaved_sequences_accumulate_in_their_own_state(self):
        errors = []

        def run(i):
            try:
                total = 0
                for k in range(6):
                    total += i * 10 + k
                    out = self.infer("running_sum", 500 + i, i * 10 + k, start=(k == 0),
                                     end=(k == 5))
                    if out["OUTPUT0"] != [total]:
                        errors.append((i, k, out, total))
            except AssertionError as e:
                errors.append(str(e))
        threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [], self.diag())
        # A new START begins from zero again.
        self.assertEqual(self.infer("running_sum", 500, 7, start=True)["OUTPUT0"], [7])

    def test_state_output_is_sent_only_when_configured_and_asked(self):
        out = self.infer("running_sum", 9, 5, start=True)
        self.assertEqual(out, {"OUTPUT0": [5], "OUTPUT1": [5]})
        out = self.infer("running_sum", 9, 2, outputs=["OUTPUT1"])
        self.assertEqual(out, {"OUTPUT1": [2 - 5]})  # the state still moved on to 7
        self.assertEqual(self.infer("running_sum", 9, 1, end=True), {"OUTPUT0": [8],
                                                                     "OUTPUT1": [1 - 7]})
        out = self.infer("hidden_state", 4, 3, start=True)
        self.assertEqual(out, {"OUTPUT1": [3]})
        self.assertEqual(self.infer("hidden_state", 4, 10, end=True), {"OUTPUT1": [10 - 3]})
        # Not a configured output of hidden_state: a client cannot ask for it.
        r = self.client.infer("hidden_state", seq_request(4, 1, start=True, outputs=["OUTPUT0"]))
        self.assertError(r, 400, "OUTPUT0")

    def test_initial_state_from_a_file(self):
        self.assertEqual(self.infer("from_file", 1, 1, start=True)["OUTPUT0"], [1001])
        self.assertEqual(self.infer("from_file", 1, 2, end=True)["OUTPUT0"], [1003])
        e = index_entry(self.client, "bad_file")
        self.assertEqual(e.get("state"), "UNAVAILABLE", e)
        self.assertIn("initial_state/missing.bin", e.get("reason", ""), e)

    def test_metadata_does_not_show_the_state_tensors(self):
        md = self.client.get("/v2/models/hidden_state").json()
        self.assertEqual([t["name"] for t in md["inputs"]], ["INPUT0"])
        self.assertEqual([t["name"] for t in md["outputs"]], ["OUTPUT1"])


# ---- implicit state with a Python model (runs once the Python backend is merged) -------------

PYTHON_BACKEND = os.path.normpath(os.path.join(os.path.dirname(harness.INFERD_BIN), "..", "lib",
                                               "inferd", "backends", "libinferd_python.so"))
PY_SKIP = None if os.path.exists(PYTHON_BACKEND) else (
    "the Python backend is not built (%s missing)" % PYTHON_BACKEND)

# As a Triton user writes it: the state arrives as an input, leaves as an output.
PY_STATEFUL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            state = pb_utils.get_input_tensor_by_name(request, "INPUT_STATE").as_numpy()
            total = (state + x).astype(np.int32)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT", total), pb_utils.Tensor("OUTPUT_STATE", total)]))
        return responses
"""

PY_CONFIG = """name: "py_running_sum"
backend: "python"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }
  ]
  state [ { input_name: "INPUT_STATE" output_name: "OUTPUT_STATE" data_type: TYPE_INT32
            dims: [ 1 ] initial_state { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } } ]
}
instance_group [ { kind: KIND_CPU } ]
"""


@unittest.skipIf(PY_SKIP, PY_SKIP)
class PythonImplicitStateTest(ServerTestCase):

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "py_running_sum", PY_CONFIG, files={"1/model.py": PY_STATEFUL})
        return [repo]

    def test_a_python_model_keeps_its_state_in_the_server(self):
        def req(corr, v, start=False, end=False):
            return {"inputs": [{"name": "INPUT", "shape": [1, 1], "datatype": "INT32",
                                "data": [v]}],
                    "parameters": {"sequence_id": corr, "sequence_start": start,
                                   "sequence_end": end}}
        sums = {"a": 0, "b": 0}
        for k in range(5):
            for corr in sums:
                v = k + (100 if corr == "b" else 1)
                sums[corr] += v
                r = self.client.infer("py_running_sum", req(corr, v, start=k == 0, end=k == 4))
                self.assertOk(r)
                outs = outputs_by_name(r.json())
                self.assertEqual(list(outs), ["OUTPUT"], "the state output stays in the server")
                self.assertEqual(outs["OUTPUT"]["data"], [sums[corr]])


if __name__ == "__main__":
    unittest.main()
