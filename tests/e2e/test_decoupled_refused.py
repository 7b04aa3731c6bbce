#!/usr/bin/python3
"""Decoupled models (model_transaction_policy { decoupled: true }) are refused at load with a
reason, in explicit mode (load API, from config.pbtxt or a config override) and at start-up; the
model shows UNAVAILABLE with that reason in the index and the others keep serving."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ServerTestCase, write_model, add_sub_config, simple_request, outputs_by_name  # noqa: E402

REASON = ("decoupled models (model_transaction_policy.decoupled: true) are not supported by this "
          "server yet")
DECOUPLED = "model_transaction_policy { decoupled: true }"
IN0 = list(range(16))
IN1 = [2] * 16


def index_entries(client, name):
    r = client.post("/v2/repository/index")
    if r.status != 200:
        raise AssertionError("POST /v2/repository/index: %s" % r)
    return [e for e in r.json() if e.get("name") == name]


class DecoupledTestCase(ServerTestCase):

    def tearDown(self):
        self.assertServerAlive()

    def assertSimpleServes(self):
        req, _ = simple_request(IN0, IN1)
        r = self.client.infer("simple", req)
        self.assertOk(r, "infer simple")
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [a + 2 for a in IN0])

    def assertUnavailableWithReason(self, name):
        entries = index_entries(self.client, name)
        self.assertEqual(len(entries), 1, entries)
        self.assertEqual(entries[0].get("state"), "UNAVAILABLE", entries)
        self.assertIn(REASON, entries[0].get("reason", ""), entries)
        self.assertNotIn("version", entries[0], "the config failed before any version: %s" % entries)
        r = self.client.get("/v2/models/%s/ready" % name)
        self.assertNotEqual(r.status, 200, r)
        req, _ = simple_request(IN0, IN1)
        self.assertIn(self.client.infer(name, req).status, (400, 404, 503))


class ExplicitModeDecoupledTest(DecoupledTestCase):
    SERVER_ARGS = ("--model-control-mode", "explicit", "--load-model", "simple")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        write_model(repo, "stream", add_sub_config("stream", "TYPE_INT32", extra=DECOUPLED))
        write_model(repo, "plain", add_sub_config("plain", "TYPE_INT32"))
        return [repo]

    def test_load_of_a_decoupled_model_fails_with_the_reason(self):
        r = self.client.post("/v2/repository/models/stream/load")
        msg = self.assertError(r, 400, "stream", REASON)
        self.assertNotIn(self.tmp, msg, "server paths are not shown to clients")
        self.assertUnavailableWithReason("stream")
        self.assertSimpleServes()

    def test_config_override_asking_for_decoupled_fails(self):
        config = {"backend": "add_sub", "max_batch_size": 8,
                  "model_transaction_policy": {"decoupled": True},
                  "input": [{"name": "INPUT%d" % i, "data_type": "TYPE_INT32", "dims": [16]}
                            for i in (0, 1)],
                  "output": [{"name": "OUTPUT%d" % i, "data_type": "TYPE_INT32", "dims": [16]}
                             for i in (0, 1)]}
        r = self.client.post_json("/v2/repository/models/plain/load",
                                  {"parameters": {"config": json.dumps(config)}})
        self.assertError(r, 400, "plain", REASON)
        self.assertUnavailableWithReason("plain")
        # the same model without the override loads
        self.assertOk(self.client.post("/v2/repository/models/plain/load"))
        self.assertOk(self.client.get("/v2/models/plain/ready"))
        self.assertSimpleServes()


class StartupDecoupledTest(DecoupledTestCase):
    SERVER_ARGS = ("--exit-on-error=false",)

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        write_model(repo, "stream", add_sub_config("stream", "TYPE_INT32", extra=DECOUPLED))
        return [repo]

    def test_decoupled_model_is_unavailable_and_others_serve(self):
        self.assertUnavailableWithReason("stream")
        self.assertSimpleServes()
        self.assertNotEqual(self.client.get("/v2/health/ready").status, 200,
                            "strict readiness: a failed model makes the server not ready")


if __name__ == "__main__":
    unittest.main()
