#!/usr/bin/python3
"""A --model-repository that does not exist, is a file or cannot be read: inferd refuses to
start (every control mode) naming the path, with a non-zero exit status. In poll mode, a
repository that disappears later is a warning at each poll, and the loaded models keep serving
until it is back."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ServerTestCase, write_model, identity_config, wait_until  # noqa: E402

MODES = ("none", "poll", "explicit")


class StartupRefusalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-repo-path-")
        cls.good = os.path.join(cls.tmp, "models")
        write_model(cls.good, "ident", identity_config("ident", "TYPE_INT32"))
        cls.missing = os.path.join(cls.tmp, "no_such_dir")
        cls.file = os.path.join(cls.tmp, "a_file")
        with open(cls.file, "w") as f:
            f.write("not a repository")
        cls.locked = os.path.join(cls.tmp, "locked")
        os.makedirs(cls.locked)
        os.chmod(cls.locked, 0)

    @classmethod
    def tearDownClass(cls):
        os.chmod(cls.locked, 0o755)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_inferd(self, repositories, *flags, prefix=()):
        cmd = list(prefix) + [harness.INFERD_BIN]
        for r in repositories:
            cmd += ["--model-repository", r]
        cmd += ["--http-address", "127.0.0.1", "--http-port", "0", "--allow-grpc=false",
                "--allow-metrics=false"] + list(flags)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        self.assertNotIn("listening on", done.stderr, "refused before listening")
        return done.returncode, done.stderr

    def assertRefused(self, repositories, needles, *flags, prefix=()):
        code, err = self.run_inferd(repositories, *flags, prefix=prefix)
        self.assertEqual(code, 1, err)
        for needle in needles:
            self.assertIn("--model-repository: " + needle, err)
        return err

    def test_missing_repository_in_every_mode(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                self.assertRefused([self.missing], ["model repository '%s' does not exist"
                                                    % self.missing],
                                   "--model-control-mode=" + mode)

    def test_file_instead_of_directory(self):
        for mode in MODES:
            with self.subTest(mode=mode):
                self.assertRefused([self.file], ["model repository '%s' is not a directory"
                                                 % self.file], "--model-control-mode=" + mode)

    def test_path_below_a_file(self):
        below = os.path.join(self.file, "models")
        self.assertRefused([below], ["cannot access model repository '%s': Not a directory"
                                     % below])

    def test_each_repository_is_checked(self):
        err = self.assertRefused([self.good, self.missing, self.file],
                                 ["model repository '%s' does not exist" % self.missing,
                                  "model repository '%s' is not a directory" % self.file])
        self.assertNotIn("'%s'" % self.good, err)

    def test_unreadable_repository(self):
        # Tests run as root, which reads a mode-000 directory anyway: inferd runs without
        # the capabilities that allow it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH).
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            self.skipTest("setpriv (util-linux) is not installed")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"] \
            if os.geteuid() == 0 else []
        self.assertRefused([self.locked], ["cannot read model repository '%s': Permission denied"
                                           % self.locked], prefix=prefix)

    def test_good_repository_starts(self):
        server = harness.Server([self.good]).start()
        try:
            self.assertEqual(server.client().get("/v2/models/ident/ready").status, 200)
        finally:
            server.stop()


class PollMissingRepositoryTest(ServerTestCase):
    SERVER_ARGS = ("--model-control-mode=poll", "--repository-poll-secs=1")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "ident", identity_config("ident", "TYPE_INT32"))
        repo2 = os.path.join(root, "models2")
        write_model(repo2, "ident2", identity_config("ident2", "TYPE_INT32"))
        return [repo, repo2]

    def warnings(self, path):
        needle = "poll: model repository '%s' does not exist; loaded models keep serving" % path
        return sum(needle in line for line in self.server.log())

    def states(self):
        r = self.client.post("/v2/repository/index")
        self.assertEqual(r.status, 200, r)
        return {e["name"]: e.get("state") for e in r.json()}

    def assertInfers(self, model):
        body = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "INT32", "data": [7, 8]}]}
        r = self.client.infer(model, body)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["outputs"][0]["data"], [7, 8])

    def test_warning_at_each_poll_and_models_kept(self):
        repo = self.repos[0]
        moved = repo + ".away"
        self.assertInfers("ident")
        self.assertEqual(self.warnings(repo), 0)
        os.rename(repo, moved)
        try:
            # One warning per poll (every second) while it stays missing.
            self.assertTrue(wait_until(lambda: self.warnings(repo) >= 3, 10),
                            self.server.log_tail())
            # Its models are not unloaded, nor those of the other repository.
            self.assertInfers("ident")
            self.assertInfers("ident2")
            self.assertEqual(self.states(), {"ident": "READY", "ident2": "READY"})
        finally:
            os.rename(moved, repo)
        seen = self.warnings(repo)
        time.sleep(2.5)
        self.assertLessEqual(self.warnings(repo), seen + 1, "warnings stop once it is back")
        self.assertInfers("ident")
        self.assertEqual(self.states(), {"ident": "READY", "ident2": "READY"})


if __name__ == "__main__":
    unittest.main()
