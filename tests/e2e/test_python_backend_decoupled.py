#!/usr/bin/python3
"""Decoupled Python models and BLS end to end, against a real inferd with real stub processes:
a Python twin of repeat_int32 over gRPC ModelStreamInfer (0, 1 and many responses, the empty
final response, is_cancelled() after the client cancels), the response sender in a
non-decoupled model, execute()'s decoupled contract, and BLS from Python to a TorchScript model
and to the decoupled repeat_int32 (exec, exec(decoupled=True), async_exec)."""

import os
import struct
import subprocess
import sys
import textwrap
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import write_model  # noqa: E402
from python_models import python_model  # noqa: E402
from test_grpc_compat import SERVICE, GrpcServerTestCase, grpc  # noqa: E402

DECOUPLED = "model_transaction_policy { decoupled: true }"

PY_REPEAT = '''
import threading
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            threading.Thread(target=self.respond, args=(request,)).start()
        return None

    def respond(self, request):
        sender = request.get_response_sender()
        values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
        delays = pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy()
        for i, v in enumerate(values):
            time.sleep(delays[i] / 1000.0)
            if sender.is_cancelled():
                pb_utils.Logger.log_info("py_repeat: request %s cancelled after %d"
                                         % (request.request_id(), i))
                break
            sender.send(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUT", np.array([v], dtype=np.int32)),
                pb_utils.Tensor("IDX", np.array([i], dtype=np.uint32))]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
'''

PY_BAD_DECOUPLED = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([]) for _ in requests]
'''

PY_SENDER = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            s = r.get_response_sender()
            s.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x + 1)]))
            try:
                s.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x)]))
            except pb_utils.TritonModelException as e:
                pb_utils.Logger.log_info("second send refused: %s" % e)
            s.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''

# BLS: OUTPUT0 = torch(a + b) (simple_torch), REPEATED = repeat_int32's OUT values for IN=a[:3].
PY_BLS = '''
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            a = pb_utils.get_input_tensor_by_name(r, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(r, "B").as_numpy()
            resp = pb_utils.InferenceRequest(
                model_name="simple_torch", requested_output_names=["OUTPUT__0"],
                inputs=[pb_utils.Tensor("INPUT__0", a), pb_utils.Tensor("INPUT__1", b)]).exec()
            if resp.has_error():
                raise pb_utils.TritonModelException(resp.error().message())
            s = pb_utils.get_output_tensor_by_name(resp, "OUTPUT__0").as_numpy().copy()
            it = pb_utils.InferenceRequest(
                model_name="repeat_int32", requested_output_names=["OUT"],
                inputs=[pb_utils.Tensor("IN", a.reshape(-1)[:3].astype(np.int32)),
                        pb_utils.Tensor("DELAY", np.zeros(3, dtype=np.uint32)),
                        pb_utils.Tensor("WAIT", np.zeros(1, dtype=np.uint32))]).exec(decoupled=True)
            rep = []
            for item in it:
                if item.has_error():
                    raise pb_utils.TritonModelException(item.error().message())
                t = pb_utils.get_output_tensor_by_name(item, "OUT")
                if t is not None:
                    rep.append(int(t.as_numpy()[0]))
            missing = pb_utils.InferenceRequest(
                model_name="no_such_model", requested_output_names=["X"],
                inputs=[pb_utils.Tensor("X", a)]).exec()
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("SUM", s),
                pb_utils.Tensor("REPEATED", np.array(rep, dtype=np.int32)),
                pb_utils.Tensor("MISSING", np.array([missing.error().code()
                                                     if missing.has_error() else -1],
                                                    dtype=np.int32))]))
        return out
'''

PY_BLS_ASYNC = '''
import asyncio
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        out = []
        for r in requests:
            a = pb_utils.get_input_tensor_by_name(r, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(r, "B").as_numpy()
            calls = [pb_utils.InferenceRequest(
                model_name="simple_torch", requested_output_names=["OUTPUT__0", "OUTPUT__1"],
                inputs=[pb_utils.Tensor("INPUT__0", a), pb_utils.Tensor("INPUT__1", b * k)]
            ).async_exec() for k in (1, 2)]
            r1, r2 = await asyncio.gather(*calls)
            s1 = pb_utils.get_output_tensor_by_name(r1, "OUTPUT__0").as_numpy()
            s2 = pb_utils.get_output_tensor_by_name(r2, "OUTPUT__0").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", s1 + s2)]))
        return out
'''

TORCH_SAVE = textwrap.dedent('''
    import sys
    import torch

    class AddSub(torch.nn.Module):
        def forward(self, INPUT__0, INPUT__1):
            return INPUT__0 + INPUT__1, INPUT__0 - INPUT__1

    torch.jit.script(AddSub()).save(sys.argv[1])
''')


def u32(values):
    return struct.pack("<%dI" % len(values), *values)


def i32(values):
    return struct.pack("<%di" % len(values), *values)


def final_flag(r):
    p = r.infer_response.parameters
    return p["triton_final_response"].bool_param if "triton_final_response" in p else None


def torch_available():
    """torch for /usr/bin/python3 (to write the TorchScript file) and inferd's pytorch backend."""
    backend = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(harness.INFERD_BIN))),
                           "lib", "inferd", "backends", "libinferd_pytorch.so")
    return os.path.exists(backend) and subprocess.call(
        ["/usr/bin/python3", "-c", "import torch"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL) == 0


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class PythonDecoupledTest(GrpcServerTestCase):
    @classmethod
    def build_repository(cls, root):
        repo = harness.copy_test_models(os.path.join(root, "models"), ["repeat_int32"])
        python_model(repo, "py_repeat", PY_REPEAT,
                     [("IN", "TYPE_INT32", [-1]), ("DELAY", "TYPE_UINT32", [-1]),
                      ("WAIT", "TYPE_UINT32", [1])],
                     [("OUT", "TYPE_INT32", [1]), ("IDX", "TYPE_UINT32", [1])], extra=DECOUPLED)
        python_model(repo, "py_bad_decoupled", PY_BAD_DECOUPLED, [("IN", "TYPE_INT32", [-1])],
                     [("OUT", "TYPE_INT32", [1])], extra=DECOUPLED)
        python_model(repo, "py_sender", PY_SENDER, [("INPUT0", "TYPE_INT32", [-1])],
                     [("OUTPUT0", "TYPE_INT32", [-1])])
        ab = [("A", "TYPE_INT32", [4]), ("B", "TYPE_INT32", [4])]
        python_model(repo, "py_bls", PY_BLS, ab, [("SUM", "TYPE_INT32", [4]),
                                                  ("REPEATED", "TYPE_INT32", [-1]),
                                                  ("MISSING", "TYPE_INT32", [1])])
        python_model(repo, "py_bls_async", PY_BLS_ASYNC, ab, [("SUM", "TYPE_INT32", [4])])
        cls.have_torch = torch_available()
        if cls.have_torch:
            d = write_model(repo, "simple_torch", harness.model_config(
                "simple_torch", "", [("INPUT__0", "TYPE_INT32", [4]),
                                     ("INPUT__1", "TYPE_INT32", [4])],
                [("OUTPUT__0", "TYPE_INT32", [4]), ("OUTPUT__1", "TYPE_INT32", [4])]).replace(
                    'backend: ""', 'platform: "pytorch_libtorch"'))
            script = os.path.join(root, "make_torch.py")  # TorchScript needs a source file
            with open(script, "w") as f:
                f.write(TORCH_SAVE)
            subprocess.check_call(["/usr/bin/python3", script, os.path.join(d, "1", "model.pt")])
        return [repo]

    def tearDown(self):
        self.assertServerAlive()

    def stream(self, requests, timeout=60):
        call = self.channel.stream_stream(
            SERVICE + "ModelStreamInfer", request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self.pb.ModelStreamInferResponse.FromString)
        return call(iter(requests), timeout=timeout)

    def run_stream(self, requests):
        responses = self.stream(requests)
        got = list(responses)
        self.assertEqual(responses.code(), grpc.StatusCode.OK)
        return got

    def repeat(self, rid, values, delays=None, empty_final=None, model="py_repeat"):
        req = self.pb.ModelInferRequest(model_name=model, id=rid)
        delays = [0] * len(values) if delays is None else delays
        req.inputs.add(name="IN", datatype="INT32", shape=[len(values)])
        req.inputs.add(name="DELAY", datatype="UINT32", shape=[len(delays)])
        req.inputs.add(name="WAIT", datatype="UINT32", shape=[1])
        req.raw_input_contents.extend([i32(values), u32(delays), u32([0])])
        if empty_final is not None:
            req.parameters["triton_enable_empty_final_response"].bool_param = empty_final
        return req

    def values(self, r):
        out = {}
        for o, raw in zip(r.infer_response.outputs, r.infer_response.raw_output_contents):
            out[o.name] = list(struct.unpack("<%d%s" % (len(raw) // 4,
                                                        "i" if o.datatype == "INT32" else "I"),
                                             raw))
        return out

    def test_many_responses(self):
        got = self.run_stream([self.repeat("m", list(range(100, 150)))])
        self.assertEqual(len(got), 50)
        for i, r in enumerate(got):
            self.assertEqual(r.error_message, "")
            self.assertEqual(r.infer_response.id, "m")
            self.assertIs(final_flag(r), False)
            self.assertEqual(self.values(r), {"OUT": [100 + i], "IDX": [i]})

    def test_zero_and_one_responses(self):
        got = self.run_stream([self.repeat("zero", [], empty_final=True)])
        self.assertEqual(len(got), 1)
        self.assertIs(final_flag(got[0]), True)
        self.assertEqual(list(got[0].infer_response.outputs), [])
        got = self.run_stream([self.repeat("one", [5], empty_final=True)])
        self.assertEqual([self.values(r).get("OUT") for r in got], [[5], None])
        self.assertEqual([final_flag(r) for r in got], [False, True])

    def test_interleaved_requests(self):
        got = self.run_stream([self.repeat("x%d" % k, [k] * 5, [5] * 5) for k in range(4)])
        by_id = {}
        for r in got:
            by_id.setdefault(r.infer_response.id, []).append(self.values(r)["OUT"][0])
        self.assertEqual(by_id, {"x%d" % k: [k] * 5 for k in range(4)})

    def test_concurrent_streams(self):
        errors = []

        def one(k):
            try:
                got = self.run_stream([self.repeat("s%d" % k, list(range(k, k + 30)), [1] * 30,
                                                   empty_final=True)])
                outs = [self.values(r).get("OUT", [None])[0] for r in got]
                if outs != list(range(k, k + 30)) + [None]:
                    errors.append((k, outs))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append((k, e))
        threads = [threading.Thread(target=one, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_cancel_is_seen_by_the_model(self):
        responses = self.stream([self.repeat("c", list(range(200)), [50] * 200)])
        first = []
        for r in responses:
            first.append(r)
            if len(first) == 3:
                break
        responses.cancel()
        self.assertTrue(harness.wait_until(
            lambda: any("py_repeat: request c cancelled" in line for line in self.server.log()),
            timeout=5), self.server.log_tail(10))
        got = self.run_stream([self.repeat("after", [9])])
        self.assertEqual([self.values(r)["OUT"] for r in got], [[9]])

    def test_decoupled_execute_must_return_none(self):
        req = self.pb.ModelInferRequest(model_name="py_bad_decoupled", id="bad")
        req.inputs.add(name="IN", datatype="INT32", shape=[1])
        req.raw_input_contents.append(i32([1]))
        got = self.run_stream([req])
        self.assertEqual(len(got), 1)
        self.assertIn("is using the decoupled mode and the execute function must return None.",
                      got[0].error_message)
        self.assertIn("py_bad_decoupled", got[0].error_message)

    def test_sender_in_non_decoupled_model(self):
        r = self.client.infer("py_sender", {"inputs": [{"name": "INPUT0", "datatype": "INT32",
                                                        "shape": [2], "data": [1, 2]}]})
        self.assertOk(r)
        self.assertEqual(r.json()["outputs"][0]["data"], [2, 3])
        self.assertTrue(harness.wait_until(lambda: any(
            "Non-decoupled model cannot send more than one response." in line
            for line in self.server.log()), 5))

    def ab(self):
        return {"inputs": [{"name": "A", "datatype": "INT32", "shape": [4], "data": [1, 2, 3, 4]},
                           {"name": "B", "datatype": "INT32", "shape": [4],
                            "data": [10, 20, 30, 40]}]}

    def test_bls_to_torchscript_and_decoupled(self):
        if not self.have_torch:
            self.skipTest("no torch for /usr/bin/python3, or no pytorch backend in this build")
        r = self.client.infer("py_bls", self.ab())
        self.assertOk(r)
        outs = {o["name"]: o["data"] for o in r.json()["outputs"]}
        self.assertEqual(outs["SUM"], [11, 22, 33, 44])
        self.assertEqual(outs["REPEATED"], [1, 2, 3])
        self.assertEqual(outs["MISSING"], [2])  # TritonError.NOT_FOUND

    def test_bls_async_exec(self):
        if not self.have_torch:
            self.skipTest("no torch for /usr/bin/python3, or no pytorch backend in this build")
        r = self.client.infer("py_bls_async", self.ab())
        self.assertOk(r)
        self.assertEqual(r.json()["outputs"][0]["data"], [1 + 10 + 1 + 20, 2 + 20 + 2 + 40,
                                                           3 + 30 + 3 + 60, 4 + 40 + 4 + 80])


if __name__ == "__main__":
    unittest.main()
