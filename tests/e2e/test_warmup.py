#!/usr/bin/python3
"""model_warmup through a real inferd: the samples run on every instance before the model is
READY, with zero, random and warmup/ file data, batch_size requests in one execution and count
repetitions. A Python model writes every execute call to a side file, which proves what ran;
the statistics extension still shows no inference (warmup is not counted). A warmup that fails
(a file too short, a missing file, a model raising) leaves the model UNAVAILABLE with the
reason while the server serves the others; an ensemble with model_warmup is refused with
Triton's text; warmup/ is not taken for a version directory."""

import json
import os
import shutil
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ServerTestCase, model_config, write_model  # noqa: E402
from python_models import python_model  # noqa: E402

# Appends one JSON line per execute call: the instance, and per request its input values.
COUNTING = '''
import json
import os
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        cfg = json.loads(args["model_config"])
        self.log = cfg["parameters"]["LOG"]["string_value"]
        self.instance = args["model_instance_name"]
        self.fail = cfg["parameters"].get("FAIL", {}).get("string_value") == "yes"

    def execute(self, requests):
        seen = []
        for r in requests:
            t = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            seen.append({"shape": list(t.shape), "values": t.flatten().tolist()})
        line = json.dumps({"instance": self.instance, "requests": seen}) + "\\n"
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        if self.fail:
            raise pb_utils.TritonModelException("warmup refused by the model")
        return [pb_utils.InferenceResponse([pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests]
'''

FILE_VALUES = [7, -1, 300, 42]

WARMUP = '''
model_warmup [
  { name: "zeros" batch_size: 3 count: 2
    inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } } },
  { name: "file" batch_size: 1
    inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] input_data_file: "in0.bin" } } },
  { name: "random" batch_size: 2
    inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] random_data: true } } },
  { name: "skipped" batch_size: 0
    inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } } }
]
'''


def counting_model(repo, name, log, fail=False, instances=2):
    extra = ('parameters { key: "LOG" value { string_value: "%s" } }\n' % log
             + ('parameters { key: "FAIL" value { string_value: "yes" } }\n' if fail else "")
             + "instance_group [ { kind: KIND_CPU count: %d } ]\n" % instances + WARMUP)
    d = python_model(repo, name, COUNTING, [("INPUT0", "TYPE_INT32", [4])],
                     [("OUTPUT0", "TYPE_INT32", [4])], max_batch_size=8, extra=extra)
    os.makedirs(os.path.join(d, "warmup"), exist_ok=True)
    with open(os.path.join(d, "warmup", "in0.bin"), "wb") as f:
        f.write(struct.pack("<4i", *FILE_VALUES) + b"trailing bytes are ignored")
    return d


def identity_with_warmup(name, data):
    return model_config(name, "identity", [("INPUT0", "TYPE_FP32", (4,))],
                        [("OUTPUT0", "TYPE_FP32", (4,))], max_batch_size=8, extra=(
                            'model_warmup [ { name: "w" batch_size: 1 inputs { key: "INPUT0" '
                            'value { data_type: TYPE_FP32 dims: [ 4 ] %s } } } ]' % data))


def read_log(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class WarmupTest(ServerTestCase):
    SERVER_ARGS = ("--exit-on-error=false",)

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        cls.log = os.path.join(root, "counting.log")
        cls.fail_log = os.path.join(root, "failing.log")
        counting_model(repo, "counting", cls.log)
        counting_model(repo, "failing", cls.fail_log, fail=True, instances=1)
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        d = write_model(repo, "short_file", identity_with_warmup(
            "short_file", 'input_data_file: "short.bin"'))
        os.makedirs(os.path.join(d, "warmup"))
        with open(os.path.join(d, "warmup", "short.bin"), "wb") as f:
            f.write(b"\0" * 10)
        write_model(repo, "missing_file", identity_with_warmup(
            "missing_file", 'input_data_file: "missing.bin"'))
        write_model(repo, "no_data_kind", identity_with_warmup("no_data_kind", ""))
        ens = model_config("ens", "", [("A", "TYPE_INT32", (16,)), ("B", "TYPE_INT32", (16,))],
                           [("S", "TYPE_INT32", (16,))], 8).replace(
                               'backend: ""\n', 'platform: "ensemble"\n')
        ens += ('ensemble_scheduling { step { model_name: "simple" model_version: -1 '
                'input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" } '
                'output_map { key: "OUTPUT0" value: "S" } } }\n'
                'model_warmup [ { name: "w" batch_size: 1 inputs { key: "A" value { '
                'data_type: TYPE_INT32 dims: [ 16 ] zero_data: true } } } ]\n')
        write_model(repo, "ens", ens)
        # A decoupled model (several responses, sent from the stub after execute returned):
        # the load waits for each warmup request's final answer.
        d = os.path.join(repo, "streamer")
        shutil.copytree(os.path.join(harness.REPO_ROOT, "examples", "models", "char_streamer"), d)
        with open(os.path.join(d, "config.pbtxt")) as f:
            cfg = f.read().replace('name: "char_streamer"', 'name: "streamer"')
        with open(os.path.join(d, "config.pbtxt"), "w") as f:
            f.write(cfg + 'model_warmup [ { name: "prompt" batch_size: 2 count: 2 inputs { '
                    'key: "PROMPT" value { data_type: TYPE_STRING dims: [ 1 ] '
                    'input_data_file: "prompt.bin" } } } ]\n')
        os.makedirs(os.path.join(d, "warmup"))
        with open(os.path.join(d, "warmup", "prompt.bin"), "wb") as f:
            f.write(struct.pack("<I", 5) + b"hello")
        return [repo]

    def entries(self, name):
        r = self.client.post("/v2/repository/index")
        self.assertOk(r, "index")
        return [e for e in r.json() if e.get("name") == name]

    def stats(self, name):
        r = self.client.get("/v2/models/%s/stats" % name)
        self.assertOk(r, "stats")
        return r.json()["model_stats"][0]

    def assertUnavailable(self, name, *needles):
        entries = self.entries(name)
        self.assertEqual(len(entries), 1, entries)
        self.assertEqual(entries[0].get("state"), "UNAVAILABLE", entries)
        for n in needles:
            self.assertIn(n, entries[0].get("reason", ""), entries)
        self.assertNotEqual(self.client.get("/v2/models/%s/ready" % name).status, 200)

    def test_1_samples_ran_on_every_instance_before_ready(self):
        # Read before any request: everything in the log is warmup.
        calls = read_log(self.log)
        self.assertEqual(self.entries("counting"),
                         [{"name": "counting", "version": "1", "state": "READY"}],
                         "warmup/ is no version directory")
        instances = sorted({c["instance"] for c in calls})
        self.assertEqual(len(instances), 2, calls)
        for inst in instances:
            mine = [c["requests"] for c in calls if c["instance"] == inst]
            # zeros twice (count 2) with 3 requests each, the file once, random once with 2
            # requests, the batch_size 0 sample never; in config order.
            self.assertEqual([len(c) for c in mine], [3, 3, 1, 2], mine)
            for req in mine[0] + mine[1]:
                self.assertEqual(req, {"shape": [1, 4], "values": [0, 0, 0, 0]})
            self.assertEqual(mine[2], [{"shape": [1, 4], "values": FILE_VALUES}])
            self.assertEqual(mine[3][0], mine[3][1], "one random draw per sample")
            self.assertEqual(mine[3][0]["shape"], [1, 4])

    def test_2_warmup_is_not_in_the_statistics(self):
        s = self.stats("counting")
        before = len(read_log(self.log))
        self.assertEqual(s["inference_count"], 0, s)
        self.assertEqual(s["execution_count"], 0, s)
        r = self.client.infer("counting", {"inputs": [
            {"name": "INPUT0", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}]})
        self.assertOk(r, "infer")
        self.assertEqual(r.json()["outputs"][0]["data"], [1, 2, 3, 4])
        s = self.stats("counting")
        self.assertEqual((s["inference_count"], s["execution_count"]), (1, 1), s)
        self.assertEqual(len(read_log(self.log)), before + 1)

    def test_decoupled_model_warms_up_with_string_file_data(self):
        self.assertEqual(self.entries("streamer"),
                         [{"name": "streamer", "version": "1", "state": "READY"}])
        s = self.stats("streamer")
        self.assertEqual((s["inference_count"], s["execution_count"]), (0, 0), s)
        self.assertTrue(any("model 'streamer' version 1: warmup of instance 0 took" in line
                            for line in self.server.log()), self.diag())

    def test_failing_warmups_leave_the_model_unavailable_with_the_reason(self):
        self.assertUnavailable(
            "short_file", "[request id: <id_unknown>] warmup setting expects 16 bytes, but the "
            "data provided from short.binonly has 10 bytes")
        self.assertUnavailable("missing_file", "'warmup/missing.bin'")
        self.assertUnavailable("no_data_kind",
                               "warmup setting expects input 'INPUT0' to have input_data_type set")
        self.assertUnavailable("failing", "failed to run warmup sample 'zeros': ",
                               "warmup refused by the model")
        self.assertEqual(len(read_log(self.fail_log)), 1, "the first failing execution stops it")
        self.assertUnavailable("ens", "model_warmup can not be specified for ensemble 'ens'")

    def test_the_server_keeps_serving_the_others(self):
        req, _ = harness.simple_request(list(range(16)), [1] * 16)
        r = self.client.infer("simple", req)
        self.assertOk(r, "simple")
        self.assertOk(self.client.get("/v2/health/live"))
        self.assertServerAlive()


class WarmupLoadApiTest(ServerTestCase):
    """A load through the API answers the warmup failure; fixing the file makes it load."""
    SERVER_ARGS = ("--model-control-mode=explicit",)

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        cls.model_dir = write_model(repo, "late_file", identity_with_warmup(
            "late_file", 'input_data_file: "in.bin"'))
        return [repo]

    def test_load_answers_the_reason_then_succeeds_once_the_file_exists(self):
        r = self.client.post("/v2/repository/models/late_file/load")
        self.assertError(r, 400, "'warmup/in.bin'")
        os.makedirs(os.path.join(self.model_dir, "warmup"), exist_ok=True)
        with open(os.path.join(self.model_dir, "warmup", "in.bin"), "wb") as f:
            f.write(struct.pack("<4f", 1, 2, 3, 4))
        self.assertOk(self.client.post("/v2/repository/models/late_file/load"), "load")
        self.assertOk(self.client.get("/v2/models/late_file/ready"))


if __name__ == "__main__":
    unittest.main()
