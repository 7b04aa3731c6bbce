"""digits_preprocess_py: encoded image bytes (PNG or JPEG) to the `digits`
network's input, FP32 [1, 8, 8] with pixel values 0..16 (light ink on a dark
background, as scikit-learn's digits are).

A request whose image cannot be decoded gets its own INVALID_ARG error; the
other requests of the batch are answered normally."""

import io

import numpy as np
import triton_python_backend_utils as pb_utils
from PIL import Image, UnidentifiedImageError

SIDE = 8
SCALE = 16.0 / 255.0


def to_pixels(data):
    with Image.open(io.BytesIO(data)) as im:
        gray = im.convert("L")  # ITU-R 601 luma, as OpenCV's BGR2GRAY
        small = gray.resize((SIDE, SIDE), Image.BOX)
        return np.asarray(small, dtype=np.float32).reshape(1, SIDE, SIDE) * np.float32(SCALE)


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            images = pb_utils.get_input_tensor_by_name(request, "image_bytes").as_numpy()
            pixels = []
            for i, data in enumerate(images.reshape(-1)):
                try:
                    pixels.append(to_pixels(bytes(data)))
                except (UnidentifiedImageError, OSError, ValueError):
                    pixels = None
                    error = pb_utils.TritonError(
                        "image_bytes element %d is not a PNG or JPEG image that can be decoded"
                        % i, pb_utils.TritonError.INVALID_ARG)
                    responses.append(pb_utils.InferenceResponse(error=error))
                    break
            if pixels is None:
                continue
            batch = np.stack(pixels)
            out = pb_utils.Tensor("image", batch.reshape(images.shape[:1] + (1, SIDE, SIDE)))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
