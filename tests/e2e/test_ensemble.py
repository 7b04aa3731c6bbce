#!/usr/bin/python3
"""Ensembles (ensemble_scheduling) end to end: a DAG of steps run in
process, errors coming back from any step, statistics per step and for the
ensemble, and batching inside pipelines."""

import os
import threading
import unittest

from harness import ServerTestCase, model_config, write_model, add_sub_config


def ensemble_config(name, inputs, outputs, steps, max_batch_size=8):
    text = model_config(name, "", inputs, outputs, max_batch_size).replace(
        'backend: ""\n', 'platform: "ensemble"\n')
    text += "ensemble_scheduling {\n"
    for model, imap, omap in steps:
        text += '  step {\n    model_name: "%s"\n    model_version: -1\n' % model
        for k, v in imap.items():
            text += '    input_map { key: "%s" value: "%s" }\n' % (k, v)
        for k, v in omap.items():
            text += '    output_map { key: "%s" value: "%s" }\n' % (k, v)
        text += "  }\n"
    return text + "}\n"


I16 = "TYPE_INT32"


class EnsembleTest(ServerTestCase):
    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", add_sub_config("simple", I16))
        write_model(repo, "simple_string", add_sub_config("simple_string", "TYPE_STRING"))
        write_model(repo, "slow_identity", model_config(
            "slow_identity", "delay", [("INPUT0", I16, (16,))], [("OUTPUT0", I16, (16,))], 16,
            'parameters { key: "execute_delay_ms" value { string_value: "30" } }\n'
            "dynamic_batching { max_queue_delay_microseconds: 20000 }"))
        # (a+b, a-b) then (sum+diff, sum-diff) = (2a, 2b); the identity branch in parallel.
        write_model(repo, "pipeline", ensemble_config(
            "pipeline", [("A", I16, (16,)), ("B", I16, (16,))],
            [("TWO_A", I16, (16,)), ("TWO_B", I16, (16,)), ("COPY_A", I16, (16,))],
            [("simple", {"INPUT0": "A", "INPUT1": "B"}, {"OUTPUT0": "sum", "OUTPUT1": "diff"}),
             ("simple", {"INPUT0": "sum", "INPUT1": "diff"},
              {"OUTPUT0": "TWO_A", "OUTPUT1": "TWO_B"}),
             ("slow_identity", {"INPUT0": "A"}, {"OUTPUT0": "COPY_A"})]))
        write_model(repo, "string_pipeline", ensemble_config(
            "string_pipeline", [("A", "TYPE_STRING", (16,)), ("B", "TYPE_STRING", (16,))],
            [("S", "TYPE_STRING", (16,))],
            [("simple_string", {"INPUT0": "A", "INPUT1": "B"}, {"OUTPUT0": "S"})]))
        write_model(repo, "dangling", ensemble_config(
            "dangling", [("A", I16, (16,)), ("B", I16, (16,))], [("X", I16, (16,))],
            [("missing_model", {"INPUT0": "A", "INPUT1": "B"}, {"OUTPUT0": "X"})]))
        write_model(repo, "broken_ensemble", ensemble_config(
            "broken_ensemble", [("A", I16, (16,)), ("B", I16, (16,))], [("NEVER", I16, (16,))],
            [("simple", {"INPUT0": "A", "INPUT1": "B"}, {"OUTPUT0": "sum"})]))
        return [repo]

    def request(self, a, b, dtype="INT32", outputs=None):
        req = {"inputs": [{"name": "A", "shape": [1, 16], "datatype": dtype, "data": a},
                          {"name": "B", "shape": [1, 16], "datatype": dtype, "data": b}]}
        if outputs:
            req["outputs"] = [{"name": o} for o in outputs]
        return req

    def stats(self, model):
        return self.server.client().get("/v2/models/%s/stats" % model).json()["model_stats"][0]

    def test_dag_computes_through_every_step(self):
        a = list(range(16))
        b = [3 * x + 1 for x in range(16)]
        r = self.client.infer("pipeline", self.request(a, b))
        self.assertOk(r)
        out = {o["name"]: o["data"] for o in r.json()["outputs"]}
        self.assertEqual(out["TWO_A"], [2 * x for x in a])
        self.assertEqual(out["TWO_B"], [2 * x for x in b])
        self.assertEqual(out["COPY_A"], a)
        self.assertEqual(r.json()["model_name"], "pipeline")

    def test_output_selection(self):
        r = self.client.infer("pipeline", self.request([1] * 16, [2] * 16, outputs=["TWO_B"]))
        self.assertOk(r)
        self.assertEqual([o["name"] for o in r.json()["outputs"]], ["TWO_B"])

    def test_classification_of_an_ensemble_output(self):
        b = [3 * x + 1 for x in range(16)]
        req = self.request(list(range(16)), b)
        req["outputs"] = [{"name": "TWO_B", "parameters": {"classification": 2}}]
        r = self.client.infer("pipeline", req)
        self.assertOk(r)
        out = r.json()["outputs"][0]
        self.assertEqual(out["datatype"], "BYTES")
        self.assertEqual(out["shape"], [1, 2])
        self.assertEqual(out["data"], ["%d:15" % (2 * b[15]), "%d:14" % (2 * b[14])])

    def test_step_error_comes_back_to_the_caller(self):
        r = self.client.infer("string_pipeline",
                              self.request(["x"] * 16, ["1"] * 16, dtype="BYTES"))
        self.assertError(r, 400, "simple_string", "decimal integer")
        r = self.client.infer("string_pipeline",
                              self.request([str(i) for i in range(16)], ["1"] * 16, dtype="BYTES"))
        self.assertOk(r)
        self.assertEqual(r.json()["outputs"][0]["data"], [str(i + 1) for i in range(16)])

    def test_missing_composing_model_fails_the_request(self):
        r = self.client.infer("dangling", self.request([1] * 16, [1] * 16))
        self.assertError(r, 404, "missing_model")
        self.assertServerAlive()

    def test_invalid_pipeline_is_unavailable_with_reason(self):
        index = self.client.post_json("/v2/repository/index", {}).json()
        entry = [e for e in index if e["name"] == "broken_ensemble"]
        self.assertTrue(entry and entry[0]["state"] == "UNAVAILABLE", index)
        self.assertIn("NEVER", entry[0]["reason"])

    def test_statistics_per_step_and_for_the_ensemble(self):
        before_e = self.stats("pipeline")["inference_stats"]["success"]["count"]
        before_s = self.stats("simple")["inference_stats"]["success"]["count"]
        self.assertOk(self.client.infer("pipeline", self.request([1] * 16, [1] * 16)))
        self.assertEqual(self.stats("pipeline")["inference_stats"]["success"]["count"],
                         before_e + 1)
        self.assertEqual(self.stats("simple")["inference_stats"]["success"]["count"],
                         before_s + 2)

    def test_batching_inside_the_pipeline(self):
        before = self.stats("slow_identity")
        errors = []

        def client(i):
            c = self.server.client()
            for k in range(3):
                r = c.infer("pipeline", self.request([i] * 16, [k] * 16))
                if r.status != 200 or r.json()["outputs"][2]["data"] != [i] * 16:
                    errors.append(r)
        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertFalse(errors, errors[:2])
        after = self.stats("slow_identity")
        inferences = after["inference_count"] - before["inference_count"]
        executions = after["execution_count"] - before["execution_count"]
        self.assertEqual(inferences, 48)
        self.assertLess(executions, inferences / 2, "no batching inside the pipeline")


if __name__ == "__main__":
    unittest.main()
