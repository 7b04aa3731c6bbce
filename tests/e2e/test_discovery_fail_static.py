#!/usr/bin/python3
"""inferd-discovery fails static: when no host answers at all (here: the one
host is stopped with SIGSTOP, so every probe times out), it keeps the last
assignment instead of publishing an empty one, says so in its metrics, and
publishes again once hosts answer. A host that answers "not ready" still
leaves (test_discovery_cluster.py drains one)."""

import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import discovery_util as du  # noqa: E402
import harness  # noqa: E402

MODEL = "simple"
POLL_MS = 200


@unittest.skipUnless(os.access(du.DISCOVERY_BIN, os.X_OK),
                     "inferd-discovery not built: " + du.DISCOVERY_BIN)
class FailStaticTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="inferd-discovery-fail-static-")
        repo = harness.copy_test_models(os.path.join(self.tmp, "repo"), [MODEL])
        self.host = harness.GrpcServer([repo]).start()
        self.discovery = du.Discovery(
            self.tmp, ["--hosts=127.0.0.1:%d" % self.host.grpc_port,
                       "--poll-interval-ms=%d" % POLL_MS])

    def tearDown(self):
        self.host.proc.send_signal(signal.SIGCONT)
        self.discovery.stop()
        self.host.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def fail_static(self):
        return du.metric(self.discovery.metrics(), "discovery_fail_static")

    def test_keeps_the_last_assignment_while_no_host_answers(self):
        d = self.discovery
        d.wait_ready()
        d.wait_for(lambda: any(h["ready"] for h in d.hosts().values()), what="the host ready")
        endpoint_version = d.snapshot()["xds"]["versions"]["endpoint"]
        self.assertEqual(self.fail_static(), 0)

        self.host.proc.send_signal(signal.SIGSTOP)
        d.wait_for(lambda: self.fail_static() == 1, what="fail static")
        self.assertFalse(any(h["ready"] for h in d.hosts().values()))
        time.sleep(3 * POLL_MS / 1000)
        snap = d.snapshot()
        self.assertEqual(snap["xds"]["versions"]["endpoint"], endpoint_version,
                         "the assignment is not replaced while no host answers")
        self.assertIn("inferd/" + MODEL, d.resources("ClusterLoadAssignment"))
        self.assertIn("keeping the last assignment", d.log())

        self.host.proc.send_signal(signal.SIGCONT)
        d.wait_for(lambda: self.fail_static() == 0 and
                   any(h["ready"] for h in d.hosts().values()), what="publishing again")
        self.assertIn("hosts answer again", d.log())


if __name__ == "__main__":
    unittest.main(verbosity=2 if harness.VERBOSE else 1)
