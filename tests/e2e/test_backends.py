#!/usr/bin/python3
"""Framework backends end to end, over HTTP to a real inferd process: the pytorch backend
(libtorch) and the onnx backend (OpenCV DNN) on the example models that `make models` builds
(examples/models), shared-library loading from --backend-directory, a backend built for another
ABI version, broken model files, requests libtorch rejects, and the classification extension.

The models must exist: `make test` runs `make models` first. A missing file fails the test with
the command that makes it."""

import json
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
import unittest

from harness import (INFERD_BIN, REPO_ROOT, ServerTestCase, model_config, pack, parse_infer_response,
                     unpack, write_model)

EXAMPLES = os.path.join(REPO_ROOT, "examples", "models")
TEST_DATA = os.path.join(REPO_ROOT, "examples", "data", "digits_test.json")
BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(INFERD_BIN)))
SERVED = ["digits", "digits_onnx", "resnet18", "resnet18_onnx", "simple_pytorch"]

# Datatypes the pytorch backend serves with the datatype-generic simple_pytorch module.
TYPED = {"INT8": "TYPE_INT8", "UINT8": "TYPE_UINT8", "INT16": "TYPE_INT16", "INT32": "TYPE_INT32",
         "INT64": "TYPE_INT64", "FP16": "TYPE_FP16", "FP32": "TYPE_FP32", "FP64": "TYPE_FP64",
         "BF16": "TYPE_BF16"}


def required(path):
    if not os.path.exists(path):
        raise AssertionError("%s is missing: run `make models` (examples/make_models.sh) first"
                             % path)
    return path


def fp32_request(name, shape, values, outputs, classification=None):
    blob = pack("FP32", values)
    out = []
    for o in outputs:
        params = {"binary_data": True}
        if classification:
            params = {"classification": classification}
        out.append({"name": o, "parameters": params})
    req = {"inputs": [{"name": name, "shape": shape, "datatype": "FP32",
                       "parameters": {"binary_data_size": len(blob)}}],
           "outputs": out}
    return req, [blob]


# A TorchScript module whose forward() indexes a ModuleList with a value known only at run time,
# which torch.jit.freeze (and so OPTIMIZE_FOR_INFERENCE) refuses. It adds 1 (even batch sizes)
# or 2 (odd ones).
UNFREEZABLE = """
import torch


@torch.jit.interface
class Step(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class Add(torch.nn.Module):
    def __init__(self, k: float):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x + self.k


class Unfreezable(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = torch.nn.ModuleList([Add(1.0), Add(2.0)])

    def forward(self, x):
        step: Step = self.steps[x.size(0) %% 2]
        return step.forward(x)


torch.jit.script(Unfreezable().eval()).save(%r)
"""


class BackendsTest(ServerTestCase):
    @classmethod
    def build_repository(cls, root):
        for m in ("digits", "digits_onnx", "resnet18", "resnet18_onnx"):
            ext = "onnx" if m.endswith("_onnx") else "pt"
            required(os.path.join(EXAMPLES, m, "1", "model." + ext))
        required(os.path.join(EXAMPLES, "simple_pytorch", "1", "model.pt"))
        required(TEST_DATA)

        # The shared-library backends of the build, plus one built for another ABI version, in
        # a directory of their own passed with --backend-directory.
        backends = os.path.join(root, "backends")
        os.makedirs(backends)
        for d in (os.path.join(BUILD_DIR, "lib", "inferd", "backends"),
                  os.path.join(BUILD_DIR, "test-backends")):
            for f in os.listdir(required(d)):
                if f.startswith("libinferd_") and f.endswith(".so"):
                    os.symlink(os.path.join(d, f), os.path.join(backends, f))
        # resnet18_optimized's model.pt is a link to the example outside the repository.
        cls.SERVER_ARGS = ["--backend-directory", backends, "--model-control-mode=explicit",
                           "--repository-follow-external-symlinks=true"] + \
            ["--load-model=" + m for m in SERVED + ["broken_pt", "broken_onnx", "digits_any",
                                                     "wrong_abi", "missing_backend", "digits_gpu",
                                                     "resnet18_optimized", "digits_bad_optimize",
                                                     "resnet18_as_saved", "unfreezable"] +
             ["simple_pytorch_" + t.lower() for t in TYPED]]

        repo = os.path.join(root, "models")
        digits_pt = os.path.join(EXAMPLES, "digits", "1", "model.pt")
        # digits with wildcard dims, so that shapes libtorch rejects reach it.
        write_model(repo, "digits_any", model_config(
            "digits_any", "pytorch", [("image", "TYPE_FP32", (-1, -1, -1))],
            [("probabilities", "TYPE_FP32", (10,))], 8,
            "dynamic_batching { max_queue_delay_microseconds: 20000 }"))
        shutil.copy(digits_pt, os.path.join(repo, "digits_any", "1", "model.pt"))
        # digits on two instances of GPU 0: no GPU here (or a libtorch without CUDA).
        write_model(repo, "digits_gpu", model_config(
            "digits_gpu", "pytorch", [("image", "TYPE_FP32", (1, 8, 8))],
            [("probabilities", "TYPE_FP32", (10,))], 8,
            """instance_group [ { kind: KIND_GPU gpus: [ 0 ] count: 2 } ]
            parameters { key: "COMPUTE_PRECISION" value { string_value: "fp16" } }"""))
        shutil.copy(digits_pt, os.path.join(repo, "digits_gpu", "1", "model.pt"))
        # resnet18 frozen and optimized for inference at load, batching; and a bad value.
        write_model(repo, "resnet18_optimized", model_config(
            "resnet18_optimized", "pytorch", [("input", "TYPE_FP32", (3, 224, 224))],
            [("logits", "TYPE_FP32", (1000,))], 8,
            """dynamic_batching { max_queue_delay_microseconds: 20000 }
            instance_group [ { kind: KIND_CPU count: 1 } ]
            parameters { key: "OPTIMIZE_FOR_INFERENCE" value { string_value: "true" } }"""))
        os.symlink(os.path.join(EXAMPLES, "resnet18", "1", "model.pt"),
                   os.path.join(repo, "resnet18_optimized", "1", "model.pt"))
        # ... and resnet18 as saved (OPTIMIZE_FOR_INFERENCE false; the default is true on CPU).
        write_model(repo, "resnet18_as_saved", model_config(
            "resnet18_as_saved", "pytorch", [("input", "TYPE_FP32", (3, 224, 224))],
            [("logits", "TYPE_FP32", (1000,))], 8,
            'parameters { key: "OPTIMIZE_FOR_INFERENCE" value { string_value: "false" } }'))
        os.symlink(os.path.join(EXAMPLES, "resnet18", "1", "model.pt"),
                   os.path.join(repo, "resnet18_as_saved", "1", "model.pt"))
        # A module libtorch cannot freeze: with the default it is served as saved.
        write_model(repo, "unfreezable", model_config(
            "unfreezable", "pytorch", [("INPUT__0", "TYPE_FP32", (4,))],
            [("OUTPUT__0", "TYPE_FP32", (4,))], 8))
        script = os.path.join(root, "unfreezable.py")
        with open(script, "w") as f:
            f.write(UNFREEZABLE % os.path.join(repo, "unfreezable", "1", "model.pt"))
        subprocess.run([sys.executable, script], check=True, timeout=120)
        write_model(repo, "digits_bad_optimize", model_config(
            "digits_bad_optimize", "pytorch", [("image", "TYPE_FP32", (1, 8, 8))],
            [("probabilities", "TYPE_FP32", (10,))], 8,
            'parameters { key: "OPTIMIZE_FOR_INFERENCE" value { string_value: "maybe" } }'))
        shutil.copy(digits_pt, os.path.join(repo, "digits_bad_optimize", "1", "model.pt"))
        for name, backend, fname in (("broken_pt", "pytorch", "model.pt"),
                                     ("broken_onnx", "onnxruntime", "model.onnx")):
            write_model(repo, name, model_config(
                name, backend, [("image", "TYPE_FP32", (1, 8, 8))],
                [("probabilities", "TYPE_FP32", (10,))], 8),
                files={"1/" + fname: "this is not a model\n"})
        write_model(repo, "wrong_abi", model_config(
            "wrong_abi", "wrong_abi", [("INPUT0", "TYPE_FP32", (1,))],
            [("OUTPUT0", "TYPE_FP32", (1,))], 0))
        write_model(repo, "missing_backend", model_config(
            "missing_backend", "no_such_backend", [("INPUT0", "TYPE_FP32", (1,))],
            [("OUTPUT0", "TYPE_FP32", (1,))], 0))
        simple_pt = os.path.join(EXAMPLES, "simple_pytorch", "1", "model.pt")
        for t, config_type in TYPED.items():
            name = "simple_pytorch_" + t.lower()
            write_model(repo, name, model_config(
                name, "pytorch", [("INPUT__0", config_type, (4,)), ("INPUT__1", config_type, (4,))],
                [("OUTPUT__0", config_type, (4,)), ("OUTPUT__1", config_type, (4,))], 8))
            shutil.copy(simple_pt, os.path.join(repo, name, "1", "model.pt"))
        with open(TEST_DATA) as f:
            cls.digits = json.load(f)
        return [EXAMPLES, repo]

    # -- helpers ---------------------------------------------------------------------------

    def infer_probabilities(self, model, images, client=None):
        """images: list of [1,8,8] nested lists -> list of 10-float lists."""
        flat = [v for img in images for row in img[0] for v in row]
        req, blobs = fp32_request("image", [len(images), 1, 8, 8], flat, ["probabilities"])
        resp = (client or self.client).infer(model, req, blobs=blobs)
        self.assertOk(resp, "%s infer" % model)
        header, outputs = parse_infer_response(resp)
        out = header["outputs"][0]
        self.assertEqual(out["shape"], [len(images), 10])
        values = unpack("FP32", outputs["probabilities"])
        return [values[i * 10:(i + 1) * 10] for i in range(len(images))]

    def all_probabilities(self, model, chunk=8, threads=6):
        """Every held-out image through `model`, from several clients at once so that the
        dynamic batcher concatenates requests."""
        images = self.digits["images"]
        chunks = [list(range(i, min(i + chunk, len(images)))) for i in range(0, len(images), chunk)]
        results = [None] * len(images)
        errors = []

        def worker(mine):
            client = self.server.client()
            try:
                for idx in mine:
                    probs = self.infer_probabilities(model, [images[i] for i in idx], client)
                    for i, p in zip(idx, probs):
                        results[i] = p
            except BaseException as e:  # noqa: BLE001 -- reported below
                errors.append(e)

        ts = [threading.Thread(target=worker, args=(chunks[k::threads],)) for k in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        if errors:
            raise errors[0]
        self.assertTrue(all(r is not None for r in results))
        return results

    def index(self):
        resp = self.client.post("/v2/repository/index", b"{}")
        self.assertOk(resp)
        return {(e["name"]): e for e in resp.json()}

    # -- tests -----------------------------------------------------------------------------

    def stats(self, model):
        resp = self.client.get("/v2/models/%s/stats" % model)
        self.assertOk(resp)
        return resp.json()["model_stats"][0]

    def test_digits_accuracy_through_the_server(self):
        before = self.stats("digits")
        probs = self.all_probabilities("digits")
        labels = self.digits["labels"]
        correct = sum(1 for p, y in zip(probs, labels) if max(range(10), key=p.__getitem__) == y)
        accuracy = correct / len(labels)
        self.assertGreaterEqual(accuracy, 0.95, "digits accuracy %.4f through the server" % accuracy)
        # The same network as the script measured.
        self.assertAlmostEqual(accuracy, self.digits["accuracy"], places=3)
        for p in probs[:20]:
            self.assertAlmostEqual(sum(p), 1.0, places=4)
        after = self.stats("digits")
        requests = (len(labels) + 7) // 8
        self.assertEqual(after["inference_count"] - before["inference_count"], len(labels))
        self.assertLess(after["execution_count"] - before["execution_count"], requests,
                        "dynamic batching should have concatenated requests: %s" % after)

    def test_onnx_agrees_with_pytorch(self):
        torch_probs = self.all_probabilities("digits")
        onnx_probs = self.all_probabilities("digits_onnx", chunk=5, threads=3)
        for i, (a, b) in enumerate(zip(torch_probs, onnx_probs)):
            self.assertEqual(max(range(10), key=a.__getitem__), max(range(10), key=b.__getitem__),
                             "image %d: %s vs %s" % (i, a, b))
            for x, y in zip(a, b):
                self.assertAlmostEqual(x, y, delta=1e-4, msg="image %d" % i)

    def test_resnet18_onnx_with_identity_nodes_agrees_with_pytorch(self):
        rng = random.Random(0)
        values = [rng.uniform(-1, 1) for _ in range(2 * 3 * 224 * 224)]
        logits = {}
        for model in ("resnet18", "resnet18_onnx"):
            req, blobs = fp32_request("input", [2, 3, 224, 224], values, ["logits"])
            resp = self.client.infer(model, req, blobs=blobs)
            self.assertOk(resp, model)
            header, outputs = parse_infer_response(resp)
            self.assertEqual(header["outputs"][0]["shape"], [2, 1000])
            logits[model] = unpack("FP32", outputs["logits"])
        a, b = logits["resnet18"], logits["resnet18_onnx"]
        scale = max(abs(x) for x in a)
        for i in range(0, 2000, 7):
            self.assertAlmostEqual(a[i], b[i], delta=1e-3 * scale + 1e-4, msg="logit %d" % i)
        for row in range(2):
            ra, rb = a[row * 1000:(row + 1) * 1000], b[row * 1000:(row + 1) * 1000]
            self.assertEqual(max(range(1000), key=ra.__getitem__),
                             max(range(1000), key=rb.__getitem__))
        self.assertIn("rewired", "\n".join(self.server.log()))

    def resnet18_logits(self, model, values, rows):
        req, blobs = fp32_request("input", [rows, 3, 224, 224], values, ["logits"])
        resp = self.client.infer(model, req, blobs=blobs)
        self.assertOk(resp, model)
        header, outputs = parse_infer_response(resp)
        self.assertEqual(header["outputs"][0]["shape"], [rows, 1000])
        return unpack("FP32", outputs["logits"])

    def test_optimize_for_inference_agrees_with_the_module_as_saved(self):
        rng = random.Random(1)
        values = [rng.uniform(-1, 1) for _ in range(3 * 3 * 224 * 224)]
        plain = self.resnet18_logits("resnet18_as_saved", values, 3)
        scale = max(abs(x) for x in plain)
        # One request of three rows, then three concurrent one-row requests that the dynamic
        # batcher may join: the optimized graph takes any batch size. resnet18's config says
        # nothing: it is optimized by default.
        optimized = [self.resnet18_logits("resnet18_optimized", values, 3),
                     self.resnet18_logits("resnet18", values, 3)]
        row = 3 * 224 * 224
        results = [None] * 3

        def one(i):
            results[i] = self.resnet18_logits("resnet18_optimized",
                                              values[i * row:(i + 1) * row], 1)

        ts = [threading.Thread(target=one, args=(i,)) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        self.assertTrue(all(r is not None for r in results))
        optimized.append([v for r in results for v in r])
        for got in optimized:
            for i in range(0, 3000, 11):
                self.assertAlmostEqual(plain[i], got[i], delta=1e-4 * scale + 1e-5,
                                       msg="logit %d" % i)
        log = "\n".join(self.server.log())
        self.assertIn("model 'resnet18_optimized' instance 'resnet18_optimized_0_0': frozen and "
                      "optimized for inference\n", log + "\n")
        self.assertIn("model 'resnet18' instance 'resnet18_0': frozen and optimized for "
                      "inference (the default on CPU)", log)
        self.assertNotIn("model 'resnet18_as_saved' instance", log)

    def test_a_module_libtorch_cannot_freeze_is_served_as_saved_by_default(self):
        state = self.index()["unfreezable"]
        self.assertEqual(state["state"], "READY", state)
        for rows, k in ((2, 1.0), (3, 2.0)):
            values = [float(i) for i in range(4 * rows)]
            req = {"inputs": [{"name": "INPUT__0", "shape": [rows, 4], "datatype": "FP32",
                               "data": values}]}
            resp = self.client.infer("unfreezable", req)
            self.assertOk(resp)
            self.assertEqual(resp.json()["outputs"][0]["data"], [v + k for v in values])
        log = "\n".join(self.server.log())
        self.assertIn("model 'unfreezable' instance 'unfreezable_0': served as saved "
                      "(OPTIMIZE_FOR_INFERENCE: libtorch cannot optimize", log)
        self.assertIn("ModuleContainerIndex is not supported", log)

    def test_a_bad_optimize_for_inference_value_is_named(self):
        state = self.index()["digits_bad_optimize"]
        self.assertEqual(state["state"], "UNAVAILABLE", state)
        self.assertIn("parameter 'OPTIMIZE_FOR_INFERENCE' must be true or false, got 'maybe'",
                      state["reason"])
        self.infer_probabilities("digits", self.digits["images"][:1])

    def test_broken_model_files_are_unavailable_while_the_others_serve(self):
        idx = self.index()
        for name, needle in (("broken_pt", "cannot load TorchScript model"),
                             ("broken_onnx", "cannot load ONNX model")):
            self.assertEqual(idx[name]["state"], "UNAVAILABLE", idx[name])
            self.assertIn(needle, idx[name]["reason"])
            self.assertIn(os.path.join(name, "1"), idx[name]["reason"])
            resp = self.client.infer(name, {"inputs": [{"name": "image", "shape": [1, 1, 8, 8],
                                                        "datatype": "FP32", "data": [0] * 64}]})
            self.assertGreaterEqual(resp.status, 400)
        for name in SERVED + ["digits_any"]:
            self.assertEqual(idx[name]["state"], "READY", idx[name])
        self.infer_probabilities("digits", self.digits["images"][:1])

    def test_a_gpu_model_without_a_gpu_is_unavailable_while_the_others_serve(self):
        state = self.index()["digits_gpu"]
        if state["state"] == "READY":
            self.skipTest("this machine serves KIND_GPU models")
        self.assertEqual(state["state"], "UNAVAILABLE", state)
        self.assertIn("KIND_GPU", state["reason"])
        # inferd without a GPU refuses the group; with one, a CPU-only libtorch refuses the
        # instance.
        self.assertTrue("this server has no GPU" in state["reason"] or
                        "without CUDA" in state["reason"], state["reason"])
        self.assertTrue(any("no CUDA device" in line or "CUDA device(s)" in line
                            for line in self.server.log()), self.server.log()[:5])
        resp = self.client.infer("digits_gpu", {"inputs": [{"name": "image", "shape": [1, 1, 8, 8],
                                                            "datatype": "FP32", "data": [0] * 64}]})
        self.assertGreaterEqual(resp.status, 400)
        self.infer_probabilities("digits", self.digits["images"][:1])

    def test_a_backend_of_another_abi_version_is_refused_with_a_reason(self):
        idx = self.index()
        e = idx["wrong_abi"]
        self.assertEqual(e["state"], "UNAVAILABLE")
        self.assertIn("libinferd_wrong_abi.so", e["reason"])
        self.assertIn("built for backend ABI version 42", e["reason"])
        self.assertIn("this server speaks versions 1 to 3", e["reason"])
        m = idx["missing_backend"]
        self.assertEqual(m["state"], "UNAVAILABLE")
        self.assertIn("libinferd_no_such_backend.so does not exist", m["reason"])

    def test_a_request_libtorch_rejects_is_a_400_and_the_server_keeps_serving(self):
        # Three channels where the network's first convolution takes one.
        req, blobs = fp32_request("image", [1, 3, 8, 8], [1.0] * 192, ["probabilities"])
        resp = self.client.infer("digits_any", req, blobs=blobs)
        self.assertError(resp, 400, "the model rejected the request")
        self.assertServerAlive()
        # Good and bad requests batched together: only the bad ones fail.
        good = [v for row in self.digits["images"][0][0] for v in row]
        results = {}

        def send(i):
            client = self.server.client()
            if i % 2:
                r, b = fp32_request("image", [1, 3, 8, 8], [2.0] * 192, ["probabilities"])
            else:
                r, b = fp32_request("image", [1, 1, 8, 8], good, ["probabilities"])
            results[i] = client.infer("digits_any", r, blobs=b)

        ts = [threading.Thread(target=send, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        for i, r in results.items():
            if i % 2:
                self.assertError(r, 400, "rejected")
            else:
                self.assertOk(r)
                _, outputs = parse_infer_response(r)
                p = unpack("FP32", outputs["probabilities"])
                self.assertEqual(max(range(10), key=p.__getitem__), self.digits["labels"][0])
        self.assertEqual(len(results), 8)
        self.assertServerAlive()

    def test_classification_top_k_with_labels(self):
        names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
        images = self.digits["images"][:2]
        flat = [v for img in images for row in img[0] for v in row]
        req, blobs = fp32_request("image", [2, 1, 8, 8], flat, ["probabilities"], classification=3)
        resp = self.client.infer("digits", req, blobs=blobs)
        self.assertOk(resp)
        out = resp.json()["outputs"][0]
        self.assertEqual(out["name"], "probabilities")
        self.assertEqual(out["datatype"], "BYTES")
        self.assertEqual(out["shape"], [2, 3])
        for row in range(2):
            top = out["data"][row * 3].split(":")
            self.assertEqual(len(top), 3, out["data"])
            self.assertEqual(int(top[1]), self.digits["labels"][row])
            self.assertEqual(top[2], names[self.digits["labels"][row]])
            values = [float(s.split(":")[0]) for s in out["data"][row * 3:row * 3 + 3]]
            self.assertEqual(values, sorted(values, reverse=True))
        # Unordered output types are refused; a model without labels omits them.
        req = {"inputs": [{"name": "INPUT__0", "shape": [1, 4], "datatype": "INT64",
                           "data": [1, 5, 2, 0]},
                          {"name": "INPUT__1", "shape": [1, 4], "datatype": "INT64",
                           "data": [0, 0, 0, 0]}],
               "outputs": [{"name": "OUTPUT__0", "parameters": {"classification": 2}}]}
        resp = self.client.infer("simple_pytorch_int64", req)
        self.assertOk(resp)
        self.assertEqual(resp.json()["outputs"][0]["data"], ["5:1", "2:2"])
        req["inputs"][0]["datatype"] = req["inputs"][1]["datatype"] = "FP16"
        for t in req["inputs"]:
            t.pop("data")
            t["parameters"] = {"binary_data_size": 8}
        blob = struct.pack("<4e", 1, 5, 2, 0)
        resp = self.client.infer("simple_pytorch_fp16", req, blobs=[blob, bytes(8)])
        self.assertError(resp, 400, "unsupported type 'FP16'")

    def test_every_numeric_datatype_through_libtorch(self):
        for t in TYPED:
            a = [1, 2, 3, 4] if t != "INT8" else [100, -100, 3, 4]
            b = [4, 3, 2, 1] if t != "INT8" else [100, -100, 5, 1]
            if t in ("FP16", "BF16"):
                inputs = [{"name": n, "shape": [1, 4], "datatype": t,
                           "parameters": {"binary_data_size": 8}} for n in ("INPUT__0", "INPUT__1")]
                blobs = [pack(t, a), pack(t, b)]
            else:
                inputs = [{"name": n, "shape": [1, 4], "datatype": t, "data": v}
                          for n, v in (("INPUT__0", a), ("INPUT__1", b))]
                blobs = None
            req = {"inputs": inputs,
                   "outputs": [{"name": o, "parameters": {"binary_data": True}}
                               for o in ("OUTPUT__0", "OUTPUT__1")]}
            resp = self.client.infer("simple_pytorch_" + t.lower(), req, blobs=blobs)
            self.assertOk(resp, t)
            header, outputs = parse_infer_response(resp)
            self.assertEqual([o["datatype"] for o in header["outputs"]], [t, t])
            total = unpack(t, outputs["OUTPUT__0"])
            diff = unpack(t, outputs["OUTPUT__1"])
            want_sum = [x + y for x, y in zip(a, b)]
            want_diff = [x - y for x, y in zip(a, b)]
            if t == "INT8":  # wraps
                want_sum = [((v + 128) % 256) - 128 for v in want_sum]
                want_diff = [((v + 128) % 256) - 128 for v in want_diff]
            if t == "UINT8":
                want_diff = [v % 256 for v in want_diff]
            self.assertEqual(total, want_sum, t)
            self.assertEqual(diff, want_diff, t)

    def test_models_report_their_platform(self):
        for model, platform in (("digits", "pytorch_libtorch"), ("digits_onnx", "onnxruntime_onnx")):
            meta = self.client.get("/v2/models/%s" % model).json()
            self.assertEqual(meta["platform"], platform)
            self.assertEqual(meta["inputs"][0]["name"], "image")
            self.assertEqual(meta["outputs"][0]["name"], "probabilities")


if __name__ == "__main__":
    unittest.main(verbosity=2)
