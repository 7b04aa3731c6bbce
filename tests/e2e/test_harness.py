"""The e2e harness itself: a sanitizer report that a server prints when it stops
(a leak found at exit, a race during shutdown), or a non-zero exit on the
shutdown signal, fails the test that stopped it.

The "server" here is a small shell script standing in for inferd, so that the
report is certain to appear; the real reports come from `make test-asan` and
`make test-tsan`, whose inferd prints them the same way.
"""
import os
import stat
import tempfile
import unittest

import harness

# The trap is set before the listening line, which is when the harness may
# send SIGTERM.
FAKE_SERVER = """#!/bin/sh
trap 'echo "%s" >&2; echo "    #0 0x1 in leaky_function" >&2; exit %d' TERM
echo "inferd: HTTP listening on 127.0.0.1:9" >&2
while true; do sleep 0.05; done
"""


class SanitizerReportTest(unittest.TestCase):
    def fake_server(self, report, exit_code):
        fd, path = tempfile.mkstemp(prefix="fake-inferd-", suffix=".sh")
        with os.fdopen(fd, "w") as f:
            f.write(FAKE_SERVER % (report, exit_code))
        os.chmod(path, stat.S_IRWXU)
        self.addCleanup(os.remove, path)
        server = harness.Server([tempfile.gettempdir()], binary=path)
        server.start()
        self.addCleanup(server.kill)
        return server

    def test_a_report_at_exit_fails_stop(self):
        for report in ("==1==ERROR: LeakSanitizer: detected memory leaks",
                       "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1",
                       "WARNING: ThreadSanitizer: data race (pid=1)",
                       "==1==ERROR: UndefinedBehaviorSanitizer: SEGV on unknown address",
                       "src/x.cc:3:5: runtime error: signed integer overflow"):
            with self.subTest(report=report):
                server = self.fake_server(report, 23)
                with self.assertRaises(harness.SanitizerReport) as ctx:
                    server.stop()
                self.assertIn(report, str(ctx.exception))
                self.assertIn("leaky_function", str(ctx.exception))

    def test_a_failed_exit_on_the_signal_fails_stop(self):
        server = self.fake_server("inferd: exiting badly", 3)
        with self.assertRaises(harness.SanitizerReport) as ctx:
            server.stop()
        self.assertIn("exited with code 3", str(ctx.exception))
        # Reported once: a second stop of the exited server returns the code.
        self.assertEqual(server.stop(), 3)

    def test_text_that_only_mentions_an_error_is_not_a_report(self):
        server = self.fake_server("model 'm': RuntimeError: runtime error: bad input", 0)
        self.assertEqual(server.stop(), 0)

    def test_a_clean_exit_stops_quietly(self):
        server = self.fake_server("inferd: stopped", 0)
        self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
