#!/usr/bin/python3
"""`cmake --install` lays out what a package ships, and the installed inferd works from wherever
it is put: programs in bin/, backends in lib/inferd/backends/ (found relative to the executable,
with no --backend-directory and nothing of the build tree compiled in), headers in
include/inferd/. The build tree itself is removed from the picture by moving the installed tree
after installing it."""

import os
import shutil
import subprocess
import tempfile
import unittest

from harness import INFERD_BIN, REPO_ROOT, Client, Server

BUILD_DIR = os.environ.get("INFERD_BUILD_DIR") or \
    os.path.dirname(os.path.dirname(os.path.abspath(INFERD_BIN)))


class InstallLayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-install-test.")
        staged = os.path.join(cls.tmp, "staged")
        r = subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", staged],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError("cmake --install failed:\n" + r.stdout + r.stderr)
        # Moved after installing: the tree must not depend on where it was installed.
        cls.prefix = os.path.join(cls.tmp, "moved", "opt", "inferd")
        os.makedirs(os.path.dirname(cls.prefix))
        shutil.move(staged, cls.prefix)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_tree_has_programs_backends_and_headers(self):
        for program in ("inferd", "infer", "infer-perf", "infer-gateway"):
            path = os.path.join(self.prefix, "bin", program)
            self.assertTrue(os.access(path, os.X_OK), path)
        backends = os.listdir(os.path.join(self.prefix, "lib", "inferd", "backends"))
        self.assertIn("libinferd_identity.so", backends)
        self.assertNotIn("libinferd_wrong_abi.so", backends)  # test plugins stay in the build
        for header in ("backend.h", "client/client.h"):
            path = os.path.join(self.prefix, "include", "inferd", header)
            self.assertTrue(os.path.isfile(path), path)
        self.assertTrue(os.path.isfile(os.path.join(self.prefix, "lib", "libinferclient.a")))

    def test_installed_server_finds_its_backends(self):
        # `identity` is served by the shared-library backend libinferd_identity.so.
        server = Server(os.path.join(REPO_ROOT, "examples", "models"),
                        ["--model-control-mode=explicit", "--load-model=identity"],
                        binary=os.path.join(self.prefix, "bin", "inferd")).start()
        try:
            client = Client(server.port)
            ready = client.get("/v2/models/identity/ready")
            self.assertEqual(ready.status, 200, ready.body)
            resp = client.infer("identity", {"inputs": [
                {"name": "INPUT0", "shape": [3], "datatype": "FP32", "data": [0.5, 1.5, 2.5]}]})
            self.assertEqual(resp.status, 200, resp.body)
            self.assertEqual(resp.json()["outputs"][0]["data"], [0.5, 1.5, 2.5])
            # The installed command-line client talks to it too.
            r = subprocess.run([os.path.join(self.prefix, "bin", "infer"), "-u",
                                "127.0.0.1:%d" % server.port, "health"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
