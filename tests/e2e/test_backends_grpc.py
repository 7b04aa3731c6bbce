#!/usr/bin/python3
"""Framework backends end to end over gRPC (the HTTP side is test_backends.py): digits accuracy
through the pytorch backend, digits_onnx agreeing with it, the classification extension with
labels, a request libtorch rejects (INVALID_ARGUMENT, the server keeps serving), a broken model
that is UNAVAILABLE while the others serve, and resnet18 with its input and output in system
shared memory giving exactly the bytes of the normal path.

Runs with Debian's /usr/bin/python3 and python3-grpcio; messages are generated from proto/ as
in test_grpc_compat.py. The example models must exist (`make models`)."""

import json
import mmap
import os
import random
import shutil
import struct
import tempfile
import threading
import unittest

import harness
from harness import REPO_ROOT
from test_grpc_compat import SERVICE, generate_messages, grpc

EXAMPLES = os.path.join(REPO_ROOT, "examples", "models")
TEST_DATA = os.path.join(REPO_ROOT, "examples", "data", "digits_test.json")
NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

BROKEN_CONFIG = """name: "broken_pt"
backend: "pytorch"
max_batch_size: 8
input [ { name: "image" data_type: TYPE_FP32 dims: [ 1, 8, 8 ] } ]
output [ { name: "probabilities" data_type: TYPE_FP32 dims: [ 10 ] } ]
"""

# digits with wildcard dims, so that shapes libtorch rejects reach it.
ANY_CONFIG = """name: "digits_any"
backend: "pytorch"
max_batch_size: 8
input [ { name: "image" data_type: TYPE_FP32 dims: [ -1, -1, -1 ] } ]
output [ { name: "probabilities" data_type: TYPE_FP32 dims: [ 10 ] } ]
"""


def required(path):
    if not os.path.exists(path):
        raise AssertionError("%s is missing: run `make models` first" % path)
    return path


def floats(data):
    return list(struct.unpack("<%df" % (len(data) // 4), data))


def argmax(v):
    return max(range(len(v)), key=v.__getitem__)


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class BackendsGrpcTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for m, f in (("digits", "model.pt"), ("digits_onnx", "model.onnx"),
                     ("resnet18", "model.pt")):
            required(os.path.join(EXAMPLES, m, "1", f))
        with open(required(TEST_DATA)) as f:
            cls.digits = json.load(f)
        cls.tmp = tempfile.mkdtemp(prefix="inferd-backends-grpc-")
        repo = os.path.join(cls.tmp, "models")
        for name, config in (("broken_pt", BROKEN_CONFIG), ("digits_any", ANY_CONFIG)):
            os.makedirs(os.path.join(repo, name, "1"))
            with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
                f.write(config)
        with open(os.path.join(repo, "broken_pt", "1", "model.pt"), "w") as f:
            f.write("this is not a model\n")
        shutil.copy(os.path.join(EXAMPLES, "digits", "1", "model.pt"),
                    os.path.join(repo, "digits_any", "1", "model.pt"))
        cls.pb, _ = generate_messages(os.path.join(cls.tmp, "gen"))
        cls.server = harness.GrpcServer(
            [EXAMPLES, repo], ["--model-control-mode", "explicit", "--allow-client-shm=true"]
            + ["--load-model=" + m for m in ("digits", "digits_onnx", "resnet18", "broken_pt",
                                             "digits_any")], startup_timeout=120)
        try:
            cls.server.start()
        except BaseException:
            cls.server.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise
        cls.channel = grpc.insecure_channel(
            "127.0.0.1:%d" % cls.server.grpc_port,
            options=[("grpc.max_receive_message_length", 64 << 20),
                     ("grpc.max_send_message_length", 64 << 20)])

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        try:
            # Raises harness.SanitizerReport on a report or an unclean exit.
            code = cls.server.stop(timeout=20)
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)
        if code != 0:
            raise AssertionError("inferd exited with %r\n%s" % (code, cls.server.log_tail(40)))

    # -- helpers ---------------------------------------------------------------------------

    def unary(self, method, request, response_class):
        call = self.channel.unary_unary(SERVICE + method,
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=response_class.FromString)
        return call(request, timeout=60)

    def infer(self, request):
        return self.unary("ModelInfer", request, self.pb.ModelInferResponse)

    def digits_request(self, model, images, classification=0):
        req = self.pb.ModelInferRequest(model_name=model)
        req.inputs.add(name="image", datatype="FP32", shape=[len(images), 1, 8, 8])
        flat = [v for img in images for row in img[0] for v in row]
        req.raw_input_contents.append(struct.pack("<%df" % len(flat), *flat))
        out = req.outputs.add(name="probabilities")
        if classification:
            out.parameters["classification"].int64_param = classification
        return req

    def probabilities(self, model, images):
        resp = self.infer(self.digits_request(model, images))
        self.assertEqual(list(resp.outputs[0].shape), [len(images), 10])
        values = floats(resp.raw_output_contents[0])
        return [values[i * 10:(i + 1) * 10] for i in range(len(images))]

    def all_probabilities(self, model, chunk=8, threads=4):
        images = self.digits["images"]
        results = [None] * len(images)
        errors = []
        starts = list(range(0, len(images), chunk))

        def worker(mine):
            try:
                for s in mine:
                    for i, p in enumerate(self.probabilities(model, images[s:s + chunk])):
                        results[s + i] = p
            except BaseException as e:  # noqa: BLE001 -- reported below
                errors.append(e)

        ts = [threading.Thread(target=worker, args=(starts[k::threads],)) for k in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        if errors:
            raise errors[0]
        return results

    def assertStillServing(self):
        probs = self.probabilities("digits", self.digits["images"][:1])
        self.assertEqual(argmax(probs[0]), self.digits["labels"][0])

    # -- tests -----------------------------------------------------------------------------

    def test_digits_accuracy_over_grpc(self):
        probs = self.all_probabilities("digits")
        labels = self.digits["labels"]
        accuracy = sum(1 for p, y in zip(probs, labels) if argmax(p) == y) / len(labels)
        self.assertGreaterEqual(accuracy, 0.95)
        self.assertAlmostEqual(accuracy, self.digits["accuracy"], places=3)

    def test_onnx_agrees_with_pytorch_over_grpc(self):
        images = self.digits["images"][:64]
        a = self.probabilities("digits", images)
        b = self.probabilities("digits_onnx", images)
        for i, (x, y) in enumerate(zip(a, b)):
            self.assertEqual(argmax(x), argmax(y), "image %d" % i)
            for u, v in zip(x, y):
                self.assertAlmostEqual(u, v, delta=1e-4, msg="image %d" % i)

    def test_classification_with_labels_over_grpc(self):
        images = self.digits["images"][:2]
        resp = self.infer(self.digits_request("digits", images, classification=3))
        out = resp.outputs[0]
        self.assertEqual(out.datatype, "BYTES")
        self.assertEqual(list(out.shape), [2, 3])
        raw = resp.raw_output_contents[0]
        entries, pos = [], 0
        while pos < len(raw):
            (n,) = struct.unpack_from("<I", raw, pos)
            entries.append(raw[pos + 4:pos + 4 + n].decode())
            pos += 4 + n
        self.assertEqual(len(entries), 6)
        for row in range(2):
            value, index, label = entries[row * 3].split(":")
            self.assertEqual(int(index), self.digits["labels"][row])
            self.assertEqual(label, NAMES[self.digits["labels"][row]])
            scores = [float(e.split(":")[0]) for e in entries[row * 3:row * 3 + 3]]
            self.assertEqual(scores, sorted(scores, reverse=True))

    def test_a_request_libtorch_rejects_is_invalid_argument(self):
        req = self.pb.ModelInferRequest(model_name="digits_any")
        req.inputs.add(name="image", datatype="FP32", shape=[1, 3, 8, 8])
        req.raw_input_contents.append(struct.pack("<192f", *([1.0] * 192)))
        with self.assertRaises(grpc.RpcError) as err:
            self.infer(req)
        self.assertEqual(err.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("the model rejected the request", err.exception.details())
        self.assertStillServing()

    def test_a_broken_model_is_unavailable_while_the_others_serve(self):
        pb = self.pb
        ready = self.unary("ModelReady", pb.ModelReadyRequest(name="broken_pt"),
                           pb.ModelReadyResponse)
        self.assertFalse(ready.ready)
        index = self.unary("RepositoryIndex", pb.RepositoryIndexRequest(),
                           pb.RepositoryIndexResponse)
        entry = {m.name: m for m in index.models}["broken_pt"]
        self.assertEqual(entry.state, "UNAVAILABLE")
        self.assertIn("cannot load TorchScript model", entry.reason)
        req = self.digits_request("broken_pt", self.digits["images"][:1])
        with self.assertRaises(grpc.RpcError) as err:
            self.infer(req)
        # No READY version: NOT_FOUND, as PROTOCOL.md §1.2 has it.
        self.assertEqual(err.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn("has no available versions", err.exception.details())
        self.assertStillServing()

    def test_resnet18_through_shared_memory_equals_raw_contents(self):
        pb = self.pb
        rng = random.Random(1)
        values = [rng.uniform(-1, 1) for _ in range(3 * 224 * 224)]
        blob = struct.pack("<%df" % len(values), *values)
        key = "/inferd_backends_grpc_%d" % os.getpid()
        size = len(blob) + 4000
        path = "/dev/shm" + key
        with open(path, "wb+") as f:
            f.truncate(size)
            mem = mmap.mmap(f.fileno(), size)
        try:
            mem[:len(blob)] = blob
            self.unary("SystemSharedMemoryRegister",
                       pb.SystemSharedMemoryRegisterRequest(name="r18", key=key, byte_size=size),
                       pb.SystemSharedMemoryRegisterResponse)
            req = pb.ModelInferRequest(model_name="resnet18")
            t = req.inputs.add(name="input", datatype="FP32", shape=[1, 3, 224, 224])
            t.parameters["shared_memory_region"].string_param = "r18"
            t.parameters["shared_memory_byte_size"].int64_param = len(blob)
            o = req.outputs.add(name="logits")
            o.parameters["shared_memory_region"].string_param = "r18"
            o.parameters["shared_memory_offset"].int64_param = len(blob)
            o.parameters["shared_memory_byte_size"].int64_param = 4000
            resp = self.infer(req)
            self.assertEqual(list(resp.outputs[0].shape), [1, 1000])
            self.assertEqual(resp.raw_output_contents[0], b"")
            via_shm = bytes(mem[len(blob):len(blob) + 4000])

            plain = pb.ModelInferRequest(model_name="resnet18")
            plain.inputs.add(name="input", datatype="FP32", shape=[1, 3, 224, 224])
            plain.raw_input_contents.append(blob)
            direct = self.infer(plain).raw_output_contents[0]
            self.assertEqual(via_shm, direct)
        finally:
            self.unary("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest(),
                       pb.SystemSharedMemoryUnregisterResponse)
            mem.close()
            os.unlink(path)


if __name__ == "__main__":
    unittest.main()
