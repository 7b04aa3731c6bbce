"""The e2e harness itself: a sanitizer report that a server prints when it stops
(a leak found at exit, a race during shutdown), or a non-zero exit on the
shutdown signal, fails the test that stopped it; the launcher's options (command
prefix, address, ports, log file); the canonical test repository's copies.

The "server" here is a small shell script standing in for inferd, so that the
report is certain to appear; the real reports come from `make test-asan` and
`make test-tsan`, whose inferd prints them the same way.
"""
import os
import shutil
import signal
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
    def fake_server(self, report, exit_code, **kwargs):
        fd, path = tempfile.mkstemp(prefix="fake-inferd-", suffix=".sh")
        with os.fdopen(fd, "w") as f:
            f.write(FAKE_SERVER % (report, exit_code))
        os.chmod(path, stat.S_IRWXU)
        self.addCleanup(os.remove, path)
        server = harness.Server([tempfile.gettempdir()], binary=path, **kwargs)
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

    def test_a_signal_sent_earlier_counts_at_wait(self):
        # send_signal + wait (a drain watched from elsewhere) checks the exit as stop() does.
        server = self.fake_server("==1==ERROR: LeakSanitizer: detected memory leaks", 23)
        server.send_signal(signal.SIGTERM)
        with self.assertRaises(harness.SanitizerReport):
            server.wait(10)
        server = self.fake_server("inferd: exiting badly", 3)
        server.send_signal(signal.SIGTERM)
        with self.assertRaises(harness.SanitizerReport) as ctx:
            server.wait(10)
        self.assertIn("exited with code 3", str(ctx.exception))
        server = self.fake_server("inferd: stopped", 0)
        server.send_signal(signal.SIGTERM)
        self.assertEqual(server.wait(10), 0)


class LauncherOptionsTest(unittest.TestCase):
    """The options the cluster test and the gRPC compatibility test use."""

    def test_prefix_address_ports_and_log_file(self):
        tmp = tempfile.mkdtemp(prefix="inferd-harness-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "fake.sh")
        with open(path, "w") as f:
            f.write(FAKE_SERVER % ("inferd: stopped", 0))
        os.chmod(path, stat.S_IRWXU)
        log_path = os.path.join(tmp, "h1.log")
        server = harness.Server([tmp], ["--extra"], binary=path, prefix=["env", "X=1"],
                                address="127.0.0.2", http_port=8000, grpc_port=8001,
                                log_path=log_path)
        cmd = server.command()
        self.assertEqual(cmd[:3], ["env", "X=1", path])
        self.assertEqual(cmd[cmd.index("--http-address") + 1], "127.0.0.2")
        self.assertEqual(cmd[cmd.index("--http-port") + 1], "8000")
        self.assertEqual(cmd[cmd.index("--grpc-port") + 1], "8001")
        self.assertNotIn("--allow-grpc=false", cmd)
        self.assertEqual(cmd[-1], "--extra")  # extra arguments come last and win
        # The fake prints no gRPC line: start() waits for one (or "not served") and fails.
        server.startup_timeout = 2
        with self.assertRaises(harness.ServerError):
            server.start()
        self.assertEqual(server.port, 9)
        self.assertEqual(server.stop(), -signal.SIGKILL)  # killed by the failed start
        with open(log_path) as f:
            self.assertIn("inferd: HTTP listening on 127.0.0.1:9\n", f.read())

    def test_env_is_added_to_the_inherited_environment(self):
        # The S3 tests hand inferd its credentials this way.
        tmp = tempfile.mkdtemp(prefix="inferd-harness-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "fake.sh")
        with open(path, "w") as f:
            f.write('#!/bin/sh\necho "env: $INFERD_HARNESS_X ${PATH:+path}" >&2\n'
                    + FAKE_SERVER.split("\n", 1)[1] % ("inferd: stopped", 0))
        os.chmod(path, stat.S_IRWXU)
        server = harness.Server([tmp], binary=path, env={"INFERD_HARNESS_X": "a b"})
        server.start()
        self.addCleanup(server.kill)
        self.assertIn("env: a b path", server.log())
        self.assertEqual(server.stop(), 0)

    def test_a_build_without_grpc_is_told_apart(self):
        self.assertTrue(harness.GRPC_NOT_SERVED_RE.match(
            "inferd: gRPC is not served (built with INFERD_WITH_GRPC=OFF)"))
        m = harness.LISTEN_RE.match("inferd: HTTP listening on 10.77.3.11:8000")
        self.assertEqual((m.group(1), m.group(2)), ("10.77.3.11", "8000"))
        m = harness.GRPC_LISTEN_RE.match("inferd: gRPC listening on ::1:8001")
        self.assertEqual((m.group(1), m.group(2)), ("::1", "8001"))


class TestRepositoryTest(unittest.TestCase):
    def test_copies_are_files_with_the_canonical_text(self):
        tmp = tempfile.mkdtemp(prefix="inferd-harness-")
        self.addCleanup(shutil.rmtree, tmp, True)
        harness.standard_repository(tmp)
        self.assertEqual(sorted(os.listdir(tmp)), sorted(harness.STANDARD_MODELS))
        self.assertFalse(os.path.islink(os.path.join(tmp, "simple")))
        with open(os.path.join(tmp, "simple", "config.pbtxt")) as f:
            self.assertEqual(f.read(), harness.SIMPLE_CONFIG)
        self.assertIn('backend: "add_sub"', harness.SIMPLE_CONFIG)
        self.assertTrue(os.path.isdir(os.path.join(tmp, "versioned", "2")))
        with self.assertRaises(ValueError):
            harness.copy_test_models(tmp, ["no_such_model"])


if __name__ == "__main__":
    unittest.main()
