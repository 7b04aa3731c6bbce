"""inferd's log end to end: --log-verbose, --log-info, --log-warning, --log-error, and the
formats of --log-format (default, ISO8601, json) and --log-file.

Lines (src/core/log.h): "inferd: error: ...", "inferd: warning: ...", "inferd: ..." (info),
"inferd: verbose: ..."; ISO8601 puts a UTC timestamp before them; json writes one object per
line. The "listening on" lines are printed whatever the flags (launchers read the ports from
them), in the chosen format (the harness reads all three). The logging extension, which changes
these at run time: test_logging_api.py.
"""
import json
import os
import re
import shutil
import subprocess
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


JSON_KEYS = {"time", "level", "component", "message"}
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
ISO_LINE_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z inferd: ")


class LogFormatsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-e2e-logfmt-")
        cls.repo = harness.copy_test_models(os.path.join(cls.tmp, "models"), ["simple"])
        harness.write_model(cls.repo, "broken", BROKEN)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self, *args, request_id="fmt-1"):
        """Starts inferd (HTTP and gRPC) with `args`, makes one inference, stops it; returns
        its stderr lines."""
        server = harness.GrpcServer(self.repo, ["--strict-readiness=false"] + list(args))
        try:
            server.start()
            req, _ = harness.simple_request(list(range(16)), [1] * 16, request_id=request_id)
            self.assertEqual(server.client().infer("simple", req).status, 200)
        finally:
            self.assertEqual(server.stop(), 0, server.log_tail())
        lines = server.log()
        self.assertFalse([l for l in lines if l.startswith("[stdout] ")], lines)
        return lines

    def test_json_every_line_is_an_object_with_the_fields(self):
        lines = self.serve("--log-format=json", "--log-verbose=2", request_id='json "1"')
        objects = []
        for line in lines:
            obj = json.loads(line)  # every line, the listening lines included
            self.assertTrue(JSON_KEYS <= set(obj), line)
            self.assertRegex(obj["time"], TIME_RE)
            self.assertIn(obj["level"], ("error", "warning", "info", "verbose"))
            self.assertEqual("verbose_level" in obj, obj["level"] == "verbose", line)
            objects.append(obj)
        messages = [o["message"] for o in objects]
        self.assertTrue(any(m.startswith("HTTP listening on 127.0.0.1:") for m in messages))
        self.assertTrue(any(m.startswith("gRPC listening on 127.0.0.1:") for m in messages))
        self.assertIn("model 'broken' is UNAVAILABLE",
                      " ".join(o["message"] for o in objects if o["level"] == "warning"))
        self.assertEqual(objects[-1]["message"], "stopped")
        # The request's lines carry its model and id, from each component on its path.
        mine = [o for o in objects if o.get("request_id") == 'json "1"']
        self.assertTrue(all(o["model"] == "simple" for o in mine), mine)
        self.assertEqual({o["component"] for o in mine}, {"http", "scheduler"}, mine)
        self.assertGreaterEqual(len(mine), 5, mine)
        self.assertTrue(all("model" not in o for o in objects if o["component"] == "server"))

    def test_iso8601_prefixes_every_line(self):
        lines = self.serve("--log-format=ISO8601")
        for line in lines:
            self.assertRegex(line, ISO_LINE_RE)
        plain = [harness.plain_line(l) for l in lines]
        self.assertTrue(any(l.startswith("inferd: warning: model 'broken'") for l in plain))
        self.assertEqual(plain[-1], "inferd: stopped")

    def test_default_lines_are_unchanged_by_the_request_path(self):
        lines = self.serve("--log-verbose=1", request_id="plain-1")
        self.assertIn("inferd: verbose: HTTP request: model 'simple' version latest, id 'plain-1',"
                      " inputs INPUT0 INT32 [1,16], INPUT1 INT32 [1,16]", lines)
        self.assertEqual(lines[-1], "inferd: stopped")

    def test_log_file_gets_the_lines_and_stderr_keeps_the_listening_ones(self):
        path = os.path.join(self.tmp, "inferd.log")
        with open(path, "w") as f:
            f.write("kept\n")
        server = harness.Server(self.repo, ["--strict-readiness=false", "--log-file=" + path])
        try:
            server.start()
            self.assertEqual(server.client().get("/v2/logging").json()["log_file"], path)
        finally:
            self.assertEqual(server.stop(), 0, server.log_tail())
        with open(path) as f:
            in_file = f.read().splitlines()
        self.assertEqual(in_file[0], "kept")
        self.assertTrue(any(l.startswith("inferd: HTTP listening on 127.0.0.1:") for l in in_file))
        self.assertTrue(any(l.startswith("inferd: warning: model 'broken'") for l in in_file))
        self.assertEqual(in_file[-1], "inferd: stopped")
        on_stderr = server.log()
        self.assertTrue(on_stderr and all("listening on" in l for l in on_stderr), on_stderr)

    def test_bad_flags(self):
        for flag, needle in (("--log-format=xml", "--log-format must be default, ISO8601 or json"),
                             ("--log-file=/nonexistent-dir/inferd.log", "/nonexistent-dir")):
            with self.subTest(flag=flag):
                done = subprocess.run([harness.INFERD_BIN, "--model-repository", self.repo, flag],
                                      capture_output=True, text=True, timeout=30)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn(needle, done.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
