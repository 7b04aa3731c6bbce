"""model.py sources and configs shared by the Python backend's e2e tests
(tests/e2e/test_python_backend*.py).  Each model is Triton Python model code, unchanged from
what a Triton repository would hold."""

import os
import textwrap

from harness import model_config, write_model

ADD_SUB = '''
import json
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.args = args
        cfg = json.loads(args["model_config"])
        self.out0 = pb_utils.triton_string_to_numpy(
            pb_utils.get_output_config_by_name(cfg, "OUTPUT0")["data_type"])
        pb_utils.Logger.log_info("add_sub initialized: " + args["model_instance_name"])

    def execute(self, requests):
        responses = []
        for request in requests:
            in0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", (in0 + in1).astype(self.out0)),
                pb_utils.Tensor("OUTPUT1", (in0 - in1).astype(self.out0))]))
        return responses

    def finalize(self):
        pb_utils.Logger.log_info("add_sub finalized")
'''

# Echoes what it was given: the args dict, request metadata, and its input.
INTROSPECT = '''
import json
import os
import sys
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.args = dict(args)
        self.args["pid"] = str(os.getpid())
        self.args["executable"] = sys.executable

    def execute(self, requests):
        out = []
        for r in requests:
            info = {"args": self.args, "id": r.request_id(), "corr": r.correlation_id(),
                    "flags": r.flags(), "params": json.loads(r.parameters()),
                    "outputs": sorted(r.requested_output_names()),
                    "inputs": [[t.name(), t.shape(), t.triton_dtype()] for t in r.inputs()],
                    "batch": len(requests), "cancelled": r.is_cancelled()}
            data = np.array([json.dumps(info).encode()], dtype=np.object_)
            big = info["params"].get("big")
            out.append(pb_utils.InferenceResponse(
                [pb_utils.Tensor("INFO", data)],
                parameters={"echo": big} if isinstance(big, str) else None))
        return out
'''

IDENTITY = '''
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse(
            [pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''

# INPUT0 selects the behaviour: 0 echo, 1 raise, 2 os._exit, 3 hang, 4 TritonError NOT_FOUND,
# 5 return a non-list, 6 wrong length, 7 sleep 0.3 s and echo.
FAULTY = '''
import os
import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        mode = int(pb_utils.get_input_tensor_by_name(requests[0], "INPUT0").as_numpy().flat[0])
        if mode == 1:
            raise ValueError("model says no")
        if mode == 2:
            os._exit(3)
        if mode == 3:
            time.sleep(3600)
        if mode == 5:
            return "not a list"
        if mode == 6:
            return []
        if mode == 7:
            time.sleep(0.3)
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            if mode == 4:
                out.append(pb_utils.InferenceResponse(
                    error=pb_utils.TritonError("no such thing", pb_utils.TritonError.NOT_FOUND)))
            else:
                out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", x.copy())]))
        return out
'''

RAISE_INIT = '''
class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("cannot start: missing weights")

    def execute(self, requests):
        return []
'''


def python_model(repo, name, source, inputs, outputs, max_batch_size=0, extra="", files=None):
    cfg = model_config(name, "python", inputs, outputs, max_batch_size, extra)
    all_files = {"1/model.py": textwrap.dedent(source)}
    all_files.update(files or {})
    return write_model(repo, name, cfg, files=all_files)


def stub_pids():
    """Pids of running stub processes of this machine (any inferd)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"inferd_python_stub.py" in cmd:
            pids.append(int(p))
    return pids


def children_stubs(parent_pid):
    out = []
    for pid in stub_pids():
        try:
            with open("/proc/%d/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid == parent_pid:
            out.append(pid)
    return out
