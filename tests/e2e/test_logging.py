"""inferd's log levels end to end: --log-verbose, --log-info, --log-warning, --log-error.

Lines (src/core/log.h): "inferd: error: ...", "inferd: warning: ...", "inferd: ..." (info),
"inferd: verbose: ...". The "listening on" lines are printed whatever the flags (launchers read
the ports from them), so every server here is found by the harness as usual.
"""
import os
import shutil
import tempfile
import unittest

import harness

BROKEN = 'name: "broken"\nbackend: "no_such_backend"\nmax_batch_size: 0\n' \
         'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n' \
         'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'


class LogLevelsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-e2e-log-")
        cls.repo = harness.copy_test_models(os.path.join(cls.tmp, "models"), ["simple"])
        # A model that fails to load: its line is a warning.
        harness.write_model(cls.repo, "broken", BROKEN)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_server(self, *args, server_class=harness.Server):
        """Starts inferd with `args`, makes one request, stops it; returns its lines."""
        server = server_class(self.repo, ["--strict-readiness=false"] + list(args))
        try:
            server.start()
            self.assertEqual(server.client().get("/v2/models/simple/ready").status, 200)
        finally:
            self.assertEqual(server.stop(), 0, server.log_tail())
        return server.log()

    def assertHasLine(self, lines, prefix):
        self.assertTrue(any(l.startswith(prefix) for l in lines),
                        "no line starting %r in:\n%s" % (prefix, "\n".join(lines)))

    def assertNoLine(self, lines, prefix):
        found = [l for l in lines if l.startswith(prefix)]
        self.assertFalse(found, "unexpected %r lines: %s" % (prefix, found))

    def test_defaults_info_warning_no_verbose(self):
        lines = self.run_server()
        self.assertHasLine(lines, "inferd: HTTP listening on 127.0.0.1:")
        self.assertHasLine(lines, "inferd: warning: model 'broken' is UNAVAILABLE: ")
        self.assertTrue(any(l.endswith("serving CPU models") or l.endswith("CUDA device(s)")
                            for l in lines), lines)
        self.assertHasLine(lines, "inferd: received SIGTERM, shutting down")
        self.assertEqual(lines[-1], "inferd: stopped")
        self.assertNoLine(lines, "inferd: verbose:")

    def test_verbose_shows_model_states_and_the_shutdown_steps(self):
        lines = self.run_server("--log-verbose=1", server_class=harness.GrpcServer)
        self.assertIn("inferd: verbose: model 'simple' version 1 is READY", lines)
        self.assertIn("inferd: verbose: model control mode: none", lines)
        self.assertIn("inferd: verbose: model repository: " + self.repo, lines)
        self.assertIn("inferd: verbose: gRPC: every call finished", lines)
        self.assertIn("inferd: verbose: HTTP: no longer accepting connections", lines)
        # The model manager's steps, as they happen.
        self.assertHasLine(lines, "inferd: verbose: loading model 'simple' version 1 from ")
        self.assertHasLine(lines, "inferd: verbose: model 'simple' version 1 is READY (loaded in ")
        self.assertHasLine(lines, "inferd: verbose: model 'broken' version 1 failed to load: ")
        # Requests are level 2.
        self.assertNoLine(lines, "inferd: verbose: HTTP GET")
        # The levels below stay on.
        self.assertHasLine(lines, "inferd: warning: model 'broken' is UNAVAILABLE: ")
        self.assertEqual(lines[-1], "inferd: stopped")

    def test_verbose_level_two_shows_each_http_request(self):
        lines = self.run_server("--log-verbose=2")
        self.assertIn("inferd: verbose: HTTP GET /v2/models/simple/ready", lines)

    def test_info_off_keeps_the_listening_lines(self):
        lines = self.run_server("--log-info=false", server_class=harness.GrpcServer)
        self.assertHasLine(lines, "inferd: HTTP listening on 127.0.0.1:")
        self.assertHasLine(lines, "inferd: gRPC listening on 127.0.0.1:")
        self.assertHasLine(lines, "inferd: warning: model 'broken'")
        for hidden in ("inferd: received SIG", "inferd: stopped", "inferd: verbose:"):
            self.assertNoLine(lines, hidden)
        self.assertFalse([l for l in lines if "serving CPU models" in l or "CUDA device(s)" in l])

    def test_warning_off(self):
        lines = self.run_server("--log-warning=false")
        self.assertNoLine(lines, "inferd: warning:")
        self.assertEqual(lines[-1], "inferd: stopped")

    def test_error_lines_and_error_off(self):
        # A start-up failure (TLS without a certificate) is an error line and exit code 1.
        for flags, shown in (([], True), (["--log-error=false"], False)):
            with self.subTest(flags=flags):
                server = harness.Server(self.repo, ["--http-use-ssl=true"] + flags)
                with self.assertRaises(harness.ServerError):
                    server.start()
                self.assertEqual(server.stop(), 1)
                errors = [l for l in server.log() if l.startswith("inferd: error: ")]
                if shown:
                    self.assertTrue(errors and "--http-server-cert" in errors[0], server.log())
                else:
                    self.assertFalse(errors, server.log())


if __name__ == "__main__":
    unittest.main(verbosity=2)
