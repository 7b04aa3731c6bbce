"""simple_dyna_sequence: the arithmetic of Triton's example ONNX model with a
CORRID control, OUTPUT = ((INPUT + START) + END * int32(CORRID)) * READY,
computed per request after the configured `execute_delay_ms` (the delay lets
the Oldest strategy form batches, as in Triton's QA)."""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _input(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        delay = config.get("parameters", {}).get("execute_delay_ms", {}).get("string_value", "0")
        self.delay_s = int(delay) / 1000.0

    def execute(self, requests):
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        responses = []
        for request in requests:
            # int32(CORRID): the id truncated to its low 32 bits, as the ONNX Cast does.
            corrid = _input(request, "CORRID").astype(np.uint64).astype(np.uint32).view(np.int32)
            value = ((_input(request, "INPUT").astype(np.int64) + _input(request, "START"))
                     + _input(request, "END") * corrid.astype(np.int64)) * _input(request, "READY")
            out = pb_utils.Tensor("OUTPUT", value.astype(np.int32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
