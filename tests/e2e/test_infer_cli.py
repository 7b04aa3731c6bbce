#!/usr/bin/python3
"""The `infer` command-line client against a real inferd, over HTTP and gRPC:
every command, readable and --json output, and its errors and exit codes."""

import json
import os
import struct
import subprocess
import tempfile
import unittest

import harness
from harness import GrpcServer, ServerTestCase

INFER = os.environ.get("INFER_BIN") or os.path.join(harness.REPO_ROOT, "build", "bin", "infer")


class InferCliTest(ServerTestCase):
    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=*")
    SERVER_CLASS = GrpcServer

    def urls(self):
        return (("http", "127.0.0.1:%d" % self.server.port),
                ("grpc", "127.0.0.1:%d" % self.server.grpc_port))

    def infer(self, protocol, url, *args, expect=0):
        cmd = [INFER, "-i", protocol, "-u", url] + list(args)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, expect, "%s\nstdout: %s\nstderr: %s" % (cmd, p.stdout, p.stderr))
        return p

    def test_health_and_metadata(self):
        for protocol, url in self.urls():
            with self.subTest(protocol=protocol):
                p = self.infer(protocol, url, "health")
                self.assertEqual(p.stdout, "live: yes\nready: yes\n")
                self.assertEqual(json.loads(self.infer(protocol, url, "health", "--json").stdout),
                                 {"live": True, "ready": True})
                p = self.infer(protocol, url, "metadata")
                self.assertIn("name: inferd\n", p.stdout)
                self.assertIn("statistics", p.stdout)
                d = json.loads(self.infer(protocol, url, "--json", "metadata", "simple").stdout)
                self.assertEqual(d["name"], "simple")
                self.assertEqual([i["name"] for i in d["inputs"]], ["INPUT0", "INPUT1"])
                p = self.infer(protocol, url, "metadata", "simple")
                self.assertRegex(p.stdout, r"inputs:\n  INPUT0 +INT32 +\[-1,16\]")

    def test_config(self):
        for protocol, url in self.urls():
            with self.subTest(protocol=protocol):
                d = json.loads(self.infer(protocol, url, "config", "simple", "--json").stdout)
                self.assertEqual(d["name"], "simple")
                self.assertEqual(int(d["max_batch_size"]), 8)
                # readable form is indented JSON
                self.assertIn('\n  "name": "simple"', self.infer(protocol, url, "config", "simple").stdout)

    def test_infer_from_json_values_raw_files_and_request_files(self):
        in0 = list(range(16))
        in1 = [2] * 16
        with tempfile.TemporaryDirectory() as d:
            raw = os.path.join(d, "in1.bin")
            with open(raw, "wb") as f:
                f.write(struct.pack("<16i", *in1))
            req = os.path.join(d, "req.json")
            with open(req, "w") as f:
                json.dump({"inputs": [
                    {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": [in0]},
                    {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": in1}]}, f)
            for protocol, url in self.urls():
                with self.subTest(protocol=protocol):
                    p = self.infer(protocol, url, "infer", "simple", "--json",
                                   "--input", "INPUT0:INT32:1,16:" + json.dumps(in0),
                                   "--input", "INPUT1:INT32:1,16:@" + raw, "--id", "r7")
                    out = json.loads(p.stdout)
                    self.assertEqual(out["model_name"], "simple")
                    self.assertEqual(out["id"], "r7")
                    got = {o["name"]: o for o in out["outputs"]}
                    self.assertEqual(got["OUTPUT0"]["data"], [a + b for a, b in zip(in0, in1)])
                    self.assertEqual(got["OUTPUT1"]["data"], [a - b for a, b in zip(in0, in1)])
                    self.assertEqual(got["OUTPUT0"]["shape"], [1, 16])
                    p = self.infer(protocol, url, "infer", "simple", "--input-json", req,
                                   "--output", "OUTPUT1")
                    self.assertIn("OUTPUT1 INT32 [1,16]: [-2,-1,0,1,", p.stdout)
                    self.assertNotIn("OUTPUT0", p.stdout)

    def test_infer_bytes(self):
        vals = [str(i) for i in range(16)]
        for protocol, url in self.urls():
            with self.subTest(protocol=protocol):
                p = self.infer(protocol, url, "--json", "infer", "simple_string",
                               "--input", "INPUT0:BYTES:1,16:" + json.dumps(vals),
                               "--input", "INPUT1:BYTES:1,16:" + json.dumps(["1"] * 16))
                got = {o["name"]: o["data"] for o in json.loads(p.stdout)["outputs"]}
                self.assertEqual(got["OUTPUT0"], [str(i + 1) for i in range(16)])

    def test_index_load_unload_and_stats(self):
        for protocol, url in self.urls():
            with self.subTest(protocol=protocol):
                self.assertEqual(self.infer(protocol, url, "unload", "simple_int8").stdout,
                                 "unloaded simple_int8\n")
                idx = json.loads(self.infer(protocol, url, "index", "--json").stdout)
                if protocol == "grpc":
                    idx = idx["models"]
                state = {e["name"]: e.get("state") for e in idx}
                self.assertEqual(state["simple_int8"], "UNAVAILABLE")
                self.assertEqual(state["simple"], "READY")
                self.infer(protocol, url, "load", "simple_int8")
                p = self.infer(protocol, url, "index")
                self.assertRegex(p.stdout, r"\nsimple_int8 +1 +READY")
                self.infer(protocol, url, "infer", "simple",
                           "--input", "INPUT0:INT32:16:" + json.dumps([1] * 16),
                           "--input", "INPUT1:INT32:16:" + json.dumps([1] * 16), expect=1)
                self.infer(protocol, url, "infer", "simple",
                           "--input", "INPUT0:INT32:1,16:" + json.dumps([1] * 16),
                           "--input", "INPUT1:INT32:1,16:" + json.dumps([1] * 16))
                d = json.loads(self.infer(protocol, url, "stats", "simple", "--json").stdout)
                self.assertEqual(d["model_stats"][0]["name"], "simple")
                self.assertGreaterEqual(int(d["model_stats"][0]["inference_stats"]["success"]["count"]), 1)
                p = self.infer(protocol, url, "stats")
                self.assertRegex(p.stdout, r"\nsimple +1 +[1-9]")

    def test_errors_name_the_problem(self):
        for protocol, url in self.urls():
            with self.subTest(protocol=protocol):
                p = self.infer(protocol, url, "infer", "no_such_model",
                               "--input", "A:INT32:1:[1]", expect=1)
                self.assertIn("no_such_model", p.stderr)
                p = self.infer(protocol, url, "infer", "simple",
                               "--input", "INPUT0:INT32:1,16:[1,2]", expect=2)
                self.assertIn("2 values for a shape of 16 elements", p.stderr)
                p = self.infer(protocol, url, "infer", "simple", "--input", "INPUT0:FLOAT:1:[1]",
                               expect=2)
                self.assertIn("unknown datatype 'FLOAT'", p.stderr)
                p = self.infer(protocol, url, "config", "no_such_model", expect=1)
                self.assertIn("no_such_model", p.stderr)
                p = self.infer(protocol, url, "frobnicate", expect=2)
                self.assertIn("unknown command 'frobnicate'", p.stderr)
                p = self.infer(protocol, url, "load", "no_such_model", expect=1)
                self.assertIn("no_such_model", p.stderr)
                self.assertTrue(self.server.alive())
        # nothing listens on port 1
        p = self.infer("http", "127.0.0.1:1", "health", expect=3)
        self.assertIn("cannot connect", p.stderr)
        p = self.infer("grpc", "127.0.0.1:1", "health", expect=3)
        self.assertIn("UNAVAILABLE", p.stderr)


if __name__ == "__main__":
    unittest.main()
