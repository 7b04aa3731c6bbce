#!/usr/bin/python3
"""The Python backend when things go wrong and under load, end to end over HTTP: a stub that
kills itself (os._exit) or hangs past execute_timeout_seconds gives its requests UNAVAILABLE,
the model becomes UNAVAILABLE with the reason, inferd keeps serving and a reload brings the
model back; dynamic batching hands execute separate requests; two instances run in parallel
(one process each); a Python model as an ensemble step."""

import json
import os
import threading
import time
import unittest

from harness import ServerTestCase, model_config, wait_until, write_model
from python_models import ADD_SUB, FAULTY, children_stubs, python_model

# Reports the size of the list execute received, and the pid that ran it; sleeps so that two
# requests in flight overlap.
BATCH_PROBE = '''
import json
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        start = time.time()
        time.sleep(float(pb_utils.get_input_tensor_by_name(requests[0], "DELAY").as_numpy()[0]))
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "DELAY").as_numpy()
            info = json.dumps({"n": len(requests), "pid": os.getpid(), "shape": list(x.shape),
                               "start": start, "end": time.time()})
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor(
                "INFO", np.array([[info.encode()]] * x.shape[0], dtype=np.object_))]))
        return out
'''


# Sums INPUT per sequence (correlation_id), restarting at SEQUENCE_START.
SEQUENCE = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.acc = {}

    def execute(self, requests):
        out = []
        for r in requests:
            cid, flags = r.correlation_id(), r.flags()
            x = int(pb_utils.get_input_tensor_by_name(r, "INPUT").as_numpy().flat[0])
            if flags & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
                self.acc[cid] = 0
            self.acc[cid] = self.acc.get(cid, 0) + x
            v = self.acc[cid]
            if flags & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END:
                del self.acc[cid]
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT", np.array([[v]], dtype=np.int32)),
                pb_utils.Tensor("FLAGS", np.array([[flags]], dtype=np.int32))]))
        return out
'''


def int32_request(values):
    return {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [len(values)],
                        "data": list(values)}]}


def probe_request(delay, batch=1):
    return {"inputs": [{"name": "DELAY", "datatype": "FP32", "shape": [batch, 1],
                        "data": [delay] * batch}]}


class PythonFaultTest(ServerTestCase):
    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=*")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        python_model(repo, "py_exit", FAULTY, [("INPUT0", "TYPE_INT32", [-1])],
                     [("OUTPUT0", "TYPE_INT32", [-1])])
        python_model(repo, "py_hang", FAULTY, [("INPUT0", "TYPE_INT32", [-1])],
                     [("OUTPUT0", "TYPE_INT32", [-1])],
                     extra='parameters { key: "execute_timeout_seconds" value { '
                           'string_value: "2" } }')
        python_model(repo, "py_batch", BATCH_PROBE, [("DELAY", "TYPE_FP32", [1])],
                     [("INFO", "TYPE_STRING", [1])], max_batch_size=8,
                     extra="dynamic_batching { max_queue_delay_microseconds: 200000 }\n"
                     # Classic batching: the three requests wait for one another.
                     'parameters { key: "batching" value { string_value: "fixed" } }')
        python_model(repo, "py_two", BATCH_PROBE, [("DELAY", "TYPE_FP32", [1])],
                     [("INFO", "TYPE_STRING", [1])], max_batch_size=8,
                     extra="instance_group [ { count: 2 kind: KIND_CPU } ]")
        for name in ("py_add_sub", "py_step"):
            python_model(repo, name, ADD_SUB,
                         [("INPUT0", "TYPE_INT32", [16]), ("INPUT1", "TYPE_INT32", [16])],
                         [("OUTPUT0", "TYPE_INT32", [16]), ("OUTPUT1", "TYPE_INT32", [16])],
                         max_batch_size=8)
        python_model(repo, "py_sequence", SEQUENCE, [("INPUT", "TYPE_INT32", [1])],
                     [("OUTPUT", "TYPE_INT32", [1]), ("FLAGS", "TYPE_INT32", [1])],
                     max_batch_size=4, extra="sequence_batching { max_sequence_idle_microseconds: "
                                             "5000000 }")
        # (a+b, a-b) by Python, then the built-in add_sub: (2a, 2b).
        write_model(repo, "simple", model_config(
            "simple", "add_sub", [("INPUT0", "TYPE_INT32", [16]), ("INPUT1", "TYPE_INT32", [16])],
            [("OUTPUT0", "TYPE_INT32", [16]), ("OUTPUT1", "TYPE_INT32", [16])], 8))
        text = model_config("py_pipeline", "", [("A", "TYPE_INT32", [16]),
                                                ("B", "TYPE_INT32", [16])],
                            [("X", "TYPE_INT32", [16]), ("Y", "TYPE_INT32", [16])], 8)
        text = text.replace('backend: ""\n', 'platform: "ensemble"\n')
        text += '''ensemble_scheduling {
  step { model_name: "py_step" model_version: -1
    input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" }
    output_map { key: "OUTPUT0" value: "s" } output_map { key: "OUTPUT1" value: "d" } }
  step { model_name: "simple" model_version: -1
    input_map { key: "INPUT0" value: "s" } input_map { key: "INPUT1" value: "d" }
    output_map { key: "OUTPUT0" value: "X" } output_map { key: "OUTPUT1" value: "Y" } }
}
'''
        write_model(repo, "py_pipeline", text)
        return repo

    def model_state(self, name):
        for m in self.client.post_json("/v2/repository/index", {}).json():
            if m["name"] == name:
                return m
        return None

    def check_recovery(self, name, needles):
        st = self.model_state(name)
        self.assertEqual(st["state"], "UNAVAILABLE", st)
        for n in needles:
            self.assertIn(n, st["reason"])
        r = self.client.infer(name, int32_request([0]))
        self.assertIn(r.status, (400, 503), r)
        self.assertServerAlive()
        # A reload brings a fresh stub.
        self.assertOk(self.client.post("/v2/repository/models/%s/load" % name))
        r = self.client.infer(name, int32_request([0, 7]))
        self.assertOk(r)
        self.assertEqual(r.json()["outputs"][0]["data"], [0, 7])

    def test_os_exit_in_execute(self):
        if "UNAVAILABLE" not in str(self.model_state("py_exit")):
            r = self.client.infer("py_exit", int32_request([2]))
            self.assertError(r, 503, "py_exit", "exited with status 3")
        self.assertTrue(wait_until(
            lambda: self.model_state("py_exit")["state"] == "UNAVAILABLE", 10),
            self.model_state("py_exit"))
        self.check_recovery("py_exit", ["py_exit", "exited with status 3"])

    def test_hang_past_timeout(self):
        t0 = time.monotonic()
        r = self.client.infer("py_hang", int32_request([3]))
        self.assertLess(time.monotonic() - t0, 30)
        self.assertError(r, 503, "py_hang", "execute_timeout_seconds")
        self.check_recovery("py_hang", ["py_hang", "did not return within 2 s"])

    def test_kill_stub_from_outside(self):
        pid = self.server.proc.pid
        before = set(children_stubs(pid))
        self.assertOk(self.client.post("/v2/repository/models/py_add_sub/unload"))
        self.assertTrue(wait_until(lambda: len(set(children_stubs(pid))) < len(before), 10))
        self.assertOk(self.client.post("/v2/repository/models/py_add_sub/load"))
        new = set(children_stubs(pid)) - before
        self.assertEqual(len(new), 1, new)
        os.kill(new.pop(), 9)
        self.assertTrue(wait_until(
            lambda: self.model_state("py_add_sub")["state"] == "UNAVAILABLE", 10))
        self.assertIn("killed by signal 9", self.model_state("py_add_sub")["reason"])
        self.assertOk(self.client.post("/v2/repository/models/py_add_sub/load"))
        self.assertServerAlive()

    def parallel(self, model, reqs):
        results = [None] * len(reqs)

        def run(i):
            results[i] = self.server.client(timeout=30).infer(model, reqs[i])
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(reqs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        infos = []
        for r in results:
            self.assertOk(r)
            infos.append(json.loads(r.json()["outputs"][0]["data"][0]))
        return infos

    def test_dynamic_batching_separate_requests(self):
        infos = self.parallel("py_batch", [probe_request(0.0, batch=b) for b in (1, 2, 3)])
        # Each request kept its own batch dimension; they arrived in one execute.
        self.assertEqual(sorted(i["shape"][0] for i in infos), [1, 2, 3])
        self.assertEqual(max(i["n"] for i in infos), 3, infos)

    def test_two_instances_run_in_parallel(self):
        t0 = time.monotonic()
        infos = self.parallel("py_two", [probe_request(1.0), probe_request(1.0)])
        elapsed = time.monotonic() - t0
        self.assertNotEqual(infos[0]["pid"], infos[1]["pid"])
        overlap = min(i["end"] for i in infos) - max(i["start"] for i in infos)
        self.assertGreater(overlap, 0.5, infos)
        self.assertLess(elapsed, 1.9)

    def test_python_step_in_ensemble(self):
        a, b = list(range(16)), [3] * 16
        req = {"inputs": [{"name": "A", "datatype": "INT32", "shape": [1, 16], "data": a},
                          {"name": "B", "datatype": "INT32", "shape": [1, 16], "data": b}]}
        r = self.client.infer("py_pipeline", req)
        self.assertOk(r)
        outs = {o["name"]: o["data"] for o in r.json()["outputs"]}
        self.assertEqual(outs["X"], [2 * x for x in a])
        self.assertEqual(outs["Y"], [2 * x for x in b])

    def test_sequence_batching(self):
        def step(seq, value, start=False, end=False):
            req = {"inputs": [{"name": "INPUT", "datatype": "INT32", "shape": [1, 1],
                               "data": [value]}],
                   "parameters": {"sequence_id": seq, "sequence_start": start,
                                  "sequence_end": end}}
            r = self.client.infer("py_sequence", req)
            self.assertOk(r)
            outs = {o["name"]: o["data"][0] for o in r.json()["outputs"]}
            return outs["OUTPUT"], outs["FLAGS"]
        self.assertEqual(step(11, 1, start=True), (1, 1))
        self.assertEqual(step(12, 100, start=True), (100, 1))
        self.assertEqual(step(11, 2), (3, 0))
        self.assertEqual(step(12, 5), (105, 0))
        self.assertEqual(step(11, 3, end=True), (6, 2))
        self.assertEqual(step(12, 1, end=True), (106, 2))


if __name__ == "__main__":
    unittest.main()
