#!/usr/bin/python3
"""--model-unload-delay-secs through a real inferd in explicit mode.

An unload of a model that serves first makes it UNLOADING: the repository index says so, model
readiness says not ready, and inferences are still served for the delay; then the model is
unloaded and inference answers the usual "has no available versions". The unload call returns
when the model is unloaded (after the delay). A load during the delay cancels the unload (the
unload call answers 400 "... was cancelled ..."). SIGTERM during a delay does not wait for it.
"""

import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ServerTestCase, write_model, simple_request, outputs_by_name  # noqa: E402

IN0 = list(range(16))
IN1 = [2] * 16
MODEL = "simple"


def entries(client):
    r = client.post("/v2/repository/index")
    if r.status != 200:
        raise AssertionError("POST /v2/repository/index: %s" % r)
    return [e for e in r.json() if e.get("name") == MODEL]


def state(client):
    found = entries(client)
    return found[0].get("state") if found else None


class Unloader(threading.Thread):
    """POST .../unload on its own connection; `response` and `seconds` once it returns."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.client = server.client(timeout=60)
        self.response = None
        self.error = None
        self.sent = None
        self.seconds = None

    def run(self):
        self.sent = time.monotonic()
        try:
            self.response = self.client.post("/v2/repository/models/%s/unload" % MODEL)
        except Exception as e:  # a connection the server closed at shutdown
            self.error = e
        self.seconds = time.monotonic() - self.sent


class UnloadDelayCase(ServerTestCase):
    DELAY = 2

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, MODEL, harness.SIMPLE_CONFIG)
        return [repo]

    def wait_for_state(self, wanted, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if state(self.client) == wanted:
                return
            time.sleep(0.02)
        self.fail("model state never became %s (now %s)%s" % (wanted, entries(self.client),
                                                               self.diag()))

    def infer(self):
        req, _ = simple_request(IN0, IN1)
        return self.client.infer(MODEL, req)

    def assertInfers(self, what=""):
        r = self.infer()
        self.assertOk(r, what)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [a + 2 for a in IN0])


class UnloadDelayTest(UnloadDelayCase):
    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=" + MODEL,
                   "--model-unload-delay-secs=%d" % UnloadDelayCase.DELAY)

    def setUp(self):
        self.assertOk(self.client.post("/v2/repository/models/%s/load" % MODEL), "load")
        self.assertEqual(state(self.client), "READY")

    def tearDown(self):
        self.assertServerAlive()

    def test_unloading_serves_until_the_delay_then_unloads(self):
        unloader = Unloader(self.server)
        unloader.start()
        self.wait_for_state("UNLOADING")
        # Checked only well inside the delay, which starts after the call was sent.
        served = 0
        while time.monotonic() < unloader.sent + self.DELAY * 0.75:
            self.assertEqual(state(self.client), "UNLOADING")
            self.assertEqual([e for e in self.client.post_json(
                "/v2/repository/index", {"ready": True}).json() if e.get("name") == MODEL], [])
            ready = self.client.get("/v2/models/%s/ready" % MODEL)
            self.assertNotEqual(ready.status, 200, "not ready while UNLOADING")
            self.assertInfers("infer while UNLOADING")
            served += 1
        self.assertGreater(served, 0)
        self.assertOk(self.client.get("/v2/health/ready"), "the server stays ready")

        unloader.join(self.DELAY + 30)
        self.assertFalse(unloader.is_alive())
        self.assertIsNone(unloader.error)
        self.assertOk(unloader.response, "unload")
        self.assertGreaterEqual(unloader.seconds, self.DELAY * 0.9,
                                "the unload call returns when the model is unloaded")
        self.assertEqual(entries(self.client)[0].get("state"), "UNAVAILABLE")
        self.assertEqual(entries(self.client)[0].get("reason"), "unloaded")
        self.assertError(self.infer(), 404, "has no available versions")  # as without a delay
        self.assertNotEqual(self.client.get("/v2/models/%s/ready" % MODEL).status, 200)

    def test_a_load_during_the_delay_cancels_the_unload(self):
        unloader = Unloader(self.server)
        unloader.start()
        self.wait_for_state("UNLOADING")
        started = time.monotonic()
        self.assertOk(self.client.post("/v2/repository/models/%s/load" % MODEL), "load")
        self.assertLess(time.monotonic() - started, self.DELAY, "the load does not wait")
        self.assertEqual(state(self.client), "READY")
        self.assertOk(self.client.get("/v2/models/%s/ready" % MODEL))
        unloader.join(30)
        self.assertFalse(unloader.is_alive())
        self.assertError(unloader.response, 400, "cancelled")
        time.sleep(self.DELAY + 0.5)  # past the cancelled deadline: still served
        self.assertEqual(state(self.client), "READY")
        self.assertInfers("after the cancelled unload")


class UnloadDelayShutdownTest(UnloadDelayCase):
    DELAY = 30
    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=" + MODEL,
                   "--model-unload-delay-secs=%d" % DELAY, "--exit-timeout-secs=20")

    def test_sigterm_during_the_delay_exits_promptly(self):
        unloader = Unloader(self.server)
        unloader.start()
        self.wait_for_state("UNLOADING")
        self.assertInfers("infer while UNLOADING")
        started = time.monotonic()
        self.server.send_signal(signal.SIGTERM)
        code = self.server.wait(timeout=15)
        took = time.monotonic() - started
        self.assertEqual(code, 0, self.diag())
        self.assertLess(took, 10, "shutdown does not wait for the unload delay")
        unloader.join(10)
        self.assertFalse(unloader.is_alive())
        if unloader.response is not None:  # answered before the connection closed
            self.assertOk(unloader.response, "unload at shutdown")


if __name__ == "__main__":
    unittest.main()
