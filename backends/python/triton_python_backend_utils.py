"""triton_python_backend_utils for inferd's Python backend (imported as pb_utils).

What Triton's Python models use, written for inferd: Tensor, InferenceRequest (incoming and
BLS), InferenceResponse, InferenceResponseSender, TritonError, TritonModelException, Logger,
ModelConfig (auto-complete) and the helper functions and constants.  The stub program
(inferd_python_stub.py) sets ``_runtime`` to its connection to inferd; everything that talks to
the server (senders, BLS, cancellation, logging) goes through it.  Tensor data never goes
through pickling: the stub hands out numpy views of shared memory.
"""

import asyncio
import json
import os
import struct

import numpy as np

_runtime = None  # set by the stub; None in the auto-complete stub and outside inferd

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2
TRITONSERVER_MEMORY_CPU = 0
TRITONSERVER_MEMORY_GPU = 2

_TYPE_BF16 = 14
_TYPE_BYTES = 13
_TO_NUMPY = {1: np.bool_, 2: np.uint8, 3: np.uint16, 4: np.uint32, 5: np.uint64, 6: np.int8,
             7: np.int16, 8: np.int32, 9: np.int64, 10: np.float16, 11: np.float32,
             12: np.float64, 13: np.object_}
_FROM_NUMPY = {np.dtype(v): k for k, v in _TO_NUMPY.items() if k != 13}
_STRING_TO_NUMPY = {"TYPE_BOOL": bool, "TYPE_UINT8": np.uint8, "TYPE_UINT16": np.uint16,
                    "TYPE_UINT32": np.uint32, "TYPE_UINT64": np.uint64, "TYPE_INT8": np.int8,
                    "TYPE_INT16": np.int16, "TYPE_INT32": np.int32, "TYPE_INT64": np.int64,
                    "TYPE_FP16": np.float16, "TYPE_FP32": np.float32, "TYPE_FP64": np.float64,
                    "TYPE_STRING": np.object_}


def triton_string_to_numpy(triton_type_string):
    return _STRING_TO_NUMPY[triton_type_string]


def triton_to_numpy_type(data_type):
    return _TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type):
    if data_type in (np.object_, np.bytes_) or np.dtype(data_type).kind in ("O", "S"):
        return _TYPE_BYTES
    return _FROM_NUMPY.get(np.dtype(data_type))


def serialize_byte_tensor(input_tensor):
    """np array of bytes/str/objects -> 1-D uint8 array (4-byte LE length + bytes each)."""
    if input_tensor.size == 0:
        return np.empty([0], dtype=np.uint8)
    parts = []
    for obj in np.nditer(input_tensor, flags=["refs_ok"], order="C"):
        v = obj.item()
        if not isinstance(v, bytes):
            v = str(v).encode("utf-8")
        parts.append(struct.pack("<I", len(v)))
        parts.append(v)
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def deserialize_bytes_tensor(encoded_tensor):
    buf = encoded_tensor.tobytes() if isinstance(encoded_tensor, np.ndarray) else bytes(encoded_tensor)
    out, off = [], 0
    while off < len(buf):
        (n,) = struct.unpack_from("<I", buf, off)
        out.append(buf[off + 4:off + 4 + n])
        off += 4 + n
    return np.array(out, dtype=np.object_)


def get_input_tensor_by_name(inference_request, name):
    for t in inference_request.inputs():
        if t.name() == name:
            return t
    return None


def get_output_tensor_by_name(inference_response, name):
    for t in inference_response.output_tensors():
        if t.name() == name:
            return t
    return None


def _config_by_name(model_config, key, name):
    for c in model_config.get(key, []) or []:
        if c.get("name") == name:
            return c
    return None


def get_input_config_by_name(model_config, name):
    return _config_by_name(model_config, "input", name)


def get_output_config_by_name(model_config, name):
    return _config_by_name(model_config, "output", name)


def using_decoupled_model_transaction_policy(model_config):
    return bool(model_config.get("model_transaction_policy", {}).get("decoupled", False))


def get_model_dir():
    return _runtime.version_dir if _runtime is not None else os.getcwd()


class TritonError:
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=INTERNAL):
        self._message = str(message)
        self._code = code

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __repr__(self):
        return "TritonError(%r, %d)" % (self._message, self._code)


class TritonModelException(Exception):
    pass


class PreferredMemory:
    def __init__(self, preferred_memory_type=TRITONSERVER_MEMORY_CPU, preferred_device_id=0):
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class Tensor:
    """A named tensor over a numpy array (for inputs: a view of shared memory)."""

    __slots__ = ("_name", "_array", "_dtype", "_shape")

    def __init__(self, name, numpy_array, *_ignored):
        if not isinstance(name, str) or name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        arr = numpy_array if isinstance(numpy_array, np.ndarray) else np.asarray(numpy_array)
        if arr.dtype.kind in ("O", "S", "U"):
            dtype = _TYPE_BYTES
            if arr.dtype.kind != "O":
                arr = arr.astype(np.object_)
        else:
            dtype = _FROM_NUMPY.get(arr.dtype)
            if dtype is None:
                raise TritonModelException("NumPy dtype is not supported.")
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        self._name = name
        self._array = arr
        self._dtype = dtype
        self._shape = None

    @classmethod
    def _wrap(cls, name, dtype, shape, array):
        t = cls.__new__(cls)
        t._name, t._dtype, t._shape, t._array = name, dtype, list(shape), array
        return t

    def name(self):
        return self._name

    def shape(self):
        return list(self._array.shape) if self._shape is None else list(self._shape)

    def triton_dtype(self):
        return self._dtype

    def is_cpu(self):
        return True

    def as_numpy(self):
        if self._dtype == _TYPE_BF16:
            raise TritonModelException("Tensor dtype is BF16 and cannot be converted to NumPy. "
                                       "Use to_dlpack() and from_dlpack() instead.")
        return self._array

    def to_dlpack(self):
        if self._dtype == _TYPE_BYTES:
            raise TritonModelException("DLPack does not have support for string tensors.")
        return self._array.__dlpack__()

    def __dlpack__(self, stream=None):
        return self.to_dlpack()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    @staticmethod
    def from_dlpack(name, dlpack_tensor):
        if hasattr(dlpack_tensor, "__dlpack__"):
            arr = np.from_dlpack(dlpack_tensor)
        else:  # a bare capsule: numpy needs an object with __dlpack__
            arr = np.from_dlpack(_Capsule(dlpack_tensor))
        if not arr.flags.c_contiguous:
            raise TritonModelException("DLPack tensor is not contiguous. Only contiguous DLPack "
                                       "tensors that are stored in C-Order are supported.")
        return Tensor(name, arr)


class _Capsule:
    def __init__(self, capsule):
        self._c = capsule

    def __dlpack__(self, stream=None):
        return self._c

    def __dlpack_device__(self):
        return (1, 0)


def _check_parameters(parameters):
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise TritonModelException("Expect parameters to be a dict")
    for k, v in parameters.items():
        if not isinstance(k, str):
            raise TritonModelException("Expect parameters keys to have type str, found type %s"
                                       % type(k))
        if not isinstance(v, (bool, int, str)):
            raise TritonModelException(
                "Expect parameters values to have type bool/int/str, found type %s" % type(v))
    return dict(parameters)


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None, parameters=None):
        self._outputs = list(output_tensors or [])
        self._error = error
        self._parameters = _check_parameters(parameters)

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return json.dumps(self._parameters)


class InferenceResponseSender:
    """Sends a request's responses (any thread); §1.7's rules."""

    def __init__(self, request):
        self._request = request
        self._closed = False
        self._sent = 0

    def send(self, response=None, flags=0):
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException("Inference Response object must be provided when the "
                                       "response flags is set to zero.")
        if self._closed:
            raise TritonModelException("Unable to send response. Response sender has been closed.")
        if not _runtime.decoupled:
            if response is not None and self._sent >= 1:
                raise TritonModelException("Unable to send response. Non-decoupled model cannot "
                                           "send more than one response.")
            if response is None and self._sent == 0:
                raise TritonModelException("Unable to send response. Non-decoupled model cannot "
                                           "send complete final before sending a response.")
        if response is not None:
            self._sent += 1
        if flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            self._closed = True
        self._request._answered = True
        _runtime.send_response(self._request, response, flags)

    def is_cancelled(self):
        return self._request.is_cancelled()


class InferenceRequest:
    """An incoming request (built by the stub) or a BLS request built by model code."""

    def __init__(self, request_id="", correlation_id=0, inputs=None, requested_output_names=None,
                 model_name=None, model_version=-1, flags=0, timeout=0, preferred_memory=None,
                 trace=None, parameters=None):
        if inputs is None or requested_output_names is None or model_name is None:
            raise TritonModelException("InferenceRequest needs inputs, requested_output_names "
                                       "and model_name")
        if not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        self._id = request_id
        self._corr = correlation_id
        self._inputs = list(inputs)
        self._outputs = list(requested_output_names)
        self._model = model_name
        self._version = model_version
        self._flags = flags
        self._timeout = timeout
        self._params = _check_parameters(parameters)
        self._key = None
        self._sender = None
        self._answered = False

    @classmethod
    def _incoming(cls, key, rid, corr, flags, timeout, params_json, inputs, outputs):
        r = cls.__new__(cls)
        r._key, r._id, r._corr, r._flags, r._timeout = key, rid, corr, flags, timeout
        r._params = params_json
        r._inputs, r._outputs = inputs, outputs
        r._sender, r._answered, r._model, r._version = None, False, None, -1
        return r

    def inputs(self):
        return self._inputs

    def requested_output_names(self):
        return set(self._outputs)

    def request_id(self):
        return self._id

    def correlation_id(self):
        return self._corr

    def flags(self):
        return self._flags

    def timeout(self):
        return self._timeout

    def parameters(self):
        return self._params if isinstance(self._params, str) else json.dumps(self._params)

    def model_name(self):
        return self._model

    def is_cancelled(self):
        if self._key is None or _runtime is None:
            return False
        return _runtime.is_cancelled(self._key)

    def get_response_sender(self):
        if self._key is None:
            raise TritonModelException("only requests passed to execute have a response sender")
        if self._sender is None:
            self._sender = InferenceResponseSender(self)
        return self._sender

    def set_release_flags(self, flags):
        if flags != TRITONSERVER_REQUEST_RELEASE_ALL:
            raise TritonModelException("inferd does not reschedule requests "
                                       "(iterative sequences are not supported)")

    def trace(self):
        return InferenceTrace()

    def exec(self, decoupled=False):
        if _runtime is None:
            raise TritonModelException("BLS is only available inside execute")
        return _runtime.bls(self, decoupled)

    def async_exec(self, decoupled=False):
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(None, self.exec, decoupled)


class InferenceTrace:
    def get_context(self):
        return None


class Logger:
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3

    @staticmethod
    def log(message, level=0):
        if _runtime is not None:
            _runtime.log(level, str(message))
        else:
            import sys
            sys.stderr.write(str(message) + "\n")

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)


class ModelConfig:
    """The config given to auto_complete_config; setters follow Triton's merge rules."""

    def __init__(self, model_config):
        self._model_config = json.loads(model_config) if isinstance(model_config, str) \
            else model_config

    def as_dict(self):
        return self._model_config

    def _name(self):
        return self._model_config.get("name", "")

    def set_max_batch_size(self, max_batch_size):
        have = int(self._model_config.get("max_batch_size", 0) or 0)
        if have > max_batch_size:
            raise ValueError("configuration specified max_batch_size %d, but in auto-complete-config "
                             "function for model '%s' specified max_batch_size %d"
                             % (have, self._name(), max_batch_size))
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        if "sequence_batching" in self._model_config:
            raise ValueError("Configuration specified scheduling_choice as 'sequence_batching', but "
                             "auto-complete-config function for model '%s' tries to set scheduling "
                             "choice as 'dynamic_batching'" % self._name())
        if "ensemble_scheduling" in self._model_config:
            raise ValueError("Configuration specified scheduling_choice as 'ensemble_scheduling', "
                             "but auto-complete-config function for model '%s' tries to set "
                             "scheduling choice as 'dynamic_batching'" % self._name())
        self._model_config.setdefault("dynamic_batching", {})

    def _add(self, kind, tensor, allowed, required):
        if not isinstance(tensor, dict):
            raise ValueError("model %s must be a dict" % kind)
        for k in tensor:
            if k not in allowed:
                raise ValueError("model %s for auto-complete-config function for model '%s' "
                                 "contains property other than %s" % (kind, self._name(),
                                                                      ", ".join(allowed)))
        for k in required:
            if k not in tensor:
                raise ValueError("model %s in auto-complete-config function for model '%s' is "
                                 "missing '%s' property" % (kind, self._name(), k))
        items = self._model_config.setdefault(kind, [])
        for have in items:
            if have.get("name") != tensor["name"]:
                continue
            dt = have.get("data_type", "TYPE_INVALID")
            if dt not in ("TYPE_INVALID", tensor["data_type"]):
                raise ValueError("Unable to update %s '%s' data_type: configuration specified %s, "
                                 "auto-complete-config function specified %s"
                                 % (kind, tensor["name"], dt, tensor["data_type"]))
            if have.get("dims") and list(have["dims"]) != list(tensor["dims"]):
                raise ValueError("Unable to update %s '%s' dims: configuration specified %s, "
                                 "auto-complete-config function specified %s"
                                 % (kind, tensor["name"], have["dims"], tensor["dims"]))
            if "optional" in tensor and bool(have.get("optional", False)) != bool(tensor["optional"]):
                raise ValueError("Unable to update %s '%s' optional: configuration specified %s"
                                 % (kind, tensor["name"], have.get("optional", False)))
            have.update(tensor)
            return
        items.append(dict(tensor))

    def add_input(self, input):
        self._add("input", input, ("name", "data_type", "dims", "optional"),
                  ("name", "data_type", "dims"))

    def add_output(self, output):
        self._add("output", output, ("name", "data_type", "dims"), ("name", "data_type", "dims"))

    def set_model_transaction_policy(self, transaction_policy_dict):
        for k in transaction_policy_dict:
            if k != "decoupled":
                raise ValueError("model transaction property in auto-complete-config function for "
                                 "model '%s' contains property other than 'decoupled'"
                                 % self._name())
        have = self._model_config.get("model_transaction_policy", {})
        want = bool(transaction_policy_dict.get("decoupled", False))
        if "decoupled" in have and bool(have["decoupled"]) != want:
            raise ValueError("trying to change decoupled property in auto-complete-config for model "
                             "'%s', which is already set to %s" % (self._name(), have["decoupled"]))
        self._model_config["model_transaction_policy"] = {"decoupled": want}
