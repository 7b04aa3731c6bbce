"""simple_sequence: the arithmetic of Triton's example ONNX sequence model,
OUTPUT = (INPUT + START) * READY, computed per request (START and READY are
the control inputs the sequence batcher adds; each tensor is INT32 [1, 1])."""

import numpy as np
import triton_python_backend_utils as pb_utils


def _input(request, name):
    return pb_utils.get_input_tensor_by_name(request, name).as_numpy().astype(np.int64)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            value = (_input(request, "INPUT") + _input(request, "START")) * _input(request, "READY")
            out = pb_utils.Tensor("OUTPUT", value.astype(np.int32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
