#!/usr/bin/python3
"""Our clients over xds:///inferd through the real inferd-discovery.

Two inferd hosts on loopback: host A serves only `simple`, host B only
`identity_int32`. inferd-discovery (--hosts A,B) publishes the route
`inferd-model: <m>` -> the hosts where m is READY, everything else -> both.
Every call of infer-perf, the infer CLI, infer-gateway and infer-batcher to one model must
reach the one host that has it, so zero errors prove that the clients send
the header and that xds:/// targets work. A raw grpcio control without the
header shows that the fleet route alone would fail about half the calls.

Skipped when the inferd-discovery binary is not built."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

import discovery_util
import harness
from discovery_util import Discovery
import pipeline_util as pu

BIN_DIR = os.path.dirname(harness.INFERD_BIN)
DISCOVERY_BIN = discovery_util.DISCOVERY_BIN
PERF_BIN = os.environ.get("INFER_PERF_BIN", os.path.join(BIN_DIR, "infer-perf"))
INFER_BIN = os.environ.get("INFER_BIN", os.path.join(BIN_DIR, "infer"))
MODEL_A, MODEL_B = "simple", "identity_int32"
POLL_MS = 200


def metadata_request(name):
    """A serialized inference.ModelMetadataRequest (field 1: name)."""
    data = name.encode()
    return b"\x0a" + bytes([len(data)]) + data


@unittest.skipUnless(os.access(DISCOVERY_BIN, os.X_OK), "inferd-discovery not built: " + DISCOVERY_BIN)
class DiscoveryClientsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-discovery-clients-")
        cls.hosts = []
        cls.discovery = None
        try:
            for model in (MODEL_A, MODEL_B):
                repo = harness.copy_test_models(os.path.join(cls.tmp, "repo-" + model), [model])
                cls.hosts.append(harness.GrpcServer([repo]).start())
            cls.start_discovery()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def start_discovery(cls):
        hosts = ",".join("127.0.0.1:%d" % h.grpc_port for h in cls.hosts)
        cls.discovery = Discovery(cls.tmp, ["--hosts=" + hosts, "--poll-interval-ms=%d" % POLL_MS],
                                  name="discovery-clients").wait_ready()
        cls.bootstrap = cls.discovery.bootstrap
        # Ready once both hosts are ready with their model in the snapshot.
        cls.discovery.wait_for(
            lambda: all(cls.discovery.ready_hosts(m) == ["127.0.0.1:%d" % h.grpc_port]
                        for h, m in zip(cls.hosts, (MODEL_A, MODEL_B))),
            timeout=30, what="both hosts ready with their model")

    @classmethod
    def discovery_log(cls):
        return cls.discovery.log()[-4000:]

    @classmethod
    def tearDownClass(cls):
        if cls.discovery is not None:
            cls.discovery.stop()
        for h in cls.hosts:
            h.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def env(self):
        return dict(os.environ, GRPC_XDS_BOOTSTRAP=self.bootstrap)

    def run_tool(self, cmd, timeout=90):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.env())
        p.what = "%s\nrc=%d\n%s%s\n--- discovery:\n%s" % (
            " ".join(cmd), p.returncode, p.stdout, p.stderr, self.discovery_log())
        return p

    def test_infer_perf_reaches_the_host_of_each_model(self):
        for model, extra in ((MODEL_A, []), (MODEL_B, ["--shape", "INPUT0:4"]),
                             (MODEL_A, ["--streaming"]), (MODEL_B, ["-a", "--shape", "INPUT0:4"])):
            with self.subTest(model=model, extra=extra):
                p = self.run_tool([PERF_BIN, "-i", "grpc", "-u", "xds:///inferd", "-m", model,
                                   "--concurrency-range", "4", "--measurement-interval", "300",
                                   "--warmup-ms", "100", "--max-trials", "2", "--json"] + extra)
                self.assertEqual(p.returncode, 0, p.what)
                for r in json.loads(p.stdout)["results"]:
                    self.assertGreater(r["requests"], 0, p.what)
                    self.assertEqual(r["errors"], 0, p.what)

    def test_infer_perf_refuses_xds_over_http(self):
        p = self.run_tool([PERF_BIN, "-i", "http", "-u", "xds:///inferd", "-m", MODEL_A])
        self.assertEqual(p.returncode, 2, p.what)
        self.assertIn("needs -i grpc", p.stderr)

    def test_infer_cli_model_commands(self):
        base = [INFER_BIN, "-i", "grpc", "-u", "xds:///inferd", "--json"]
        # Several times each: on the fleet route half of them would miss.
        for _ in range(6):
            for model in (MODEL_A, MODEL_B):
                for cmd in (["metadata", model], ["config", model], ["stats", model]):
                    p = self.run_tool(base + cmd)
                    self.assertEqual(p.returncode, 0, p.what)
            p = self.run_tool(base + ["infer", MODEL_A,
                                      "--input", "INPUT0:INT32:1,16:" + json.dumps(list(range(16))),
                                      "--input", "INPUT1:INT32:1,16:" + json.dumps([1] * 16)])
            self.assertEqual(p.returncode, 0, p.what)
            self.assertIn("OUTPUT0", p.stdout, p.what)
            p = self.run_tool(base + ["infer", MODEL_B, "--input", "INPUT0:INT32:3:[7,8,9]"])
            self.assertEqual(p.returncode, 0, p.what)

    def test_the_header_decides_the_route(self):
        # A custom header wins over the client's own: MODEL_A's calls pinned to
        # MODEL_B's route all reach host B, which does not have MODEL_A.
        p = self.run_tool([INFER_BIN, "-i", "grpc", "-u", "xds:///inferd", "-H",
                           "inferd-model: " + MODEL_B, "metadata", MODEL_A])
        self.assertEqual(p.returncode, 1, p.what)

    def test_without_the_header_calls_miss(self):
        """The control: grpcio on the fleet route (no header) misses on some calls."""
        try:
            import grpc
        except ImportError:
            self.skipTest("no grpcio")
        os.environ["GRPC_XDS_BOOTSTRAP"] = self.bootstrap
        channel = grpc.insecure_channel("xds:///inferd")
        call = channel.unary_unary("/inference.GRPCInferenceService/ModelMetadata")
        try:
            codes = {"header": [], "fleet": []}
            for _ in range(20):
                for kind, md in (("header", (("inferd-model", MODEL_A),)), ("fleet", ())):
                    try:
                        call(metadata_request(MODEL_A), metadata=md, timeout=10,
                             wait_for_ready=True)
                        codes[kind].append("OK")
                    except grpc.RpcError as e:
                        codes[kind].append(e.code().name)
            self.assertEqual(set(codes["header"]), {"OK"}, codes)
            self.assertIn("OK", codes["fleet"], codes)
            self.assertIn("NOT_FOUND", codes["fleet"], codes)
        finally:
            channel.close()

    def test_gateway_pool_routes_by_pipeline(self):
        """infer-gateway --inferd-url xds:///inferd: the pool's ModelMetadata calls carry
        the pipeline's name. Neither model is an image pipeline, so each classify is a
        400 naming what the pipeline lacks (the model was found), never a 404."""
        os.environ["GRPC_XDS_BOOTSTRAP"] = self.bootstrap
        if not os.access(pu.GATEWAY_BIN, os.X_OK):
            self.skipTest("infer-gateway not built")
        gw = pu.Gateway("xds:///inferd").start()
        try:
            for _ in range(8):
                for model in (MODEL_A, MODEL_B):
                    c = harness.Client(gw.ports["HTTP"])
                    r = c.post("/v1/classify/" + model, b"\x89PNG not really",
                               headers={"Content-Type": "image/png"})
                    self.assertEqual(r.status, 400, "%s %s\n%s" % (model, r.body, gw.log()))
                    self.assertIn(b"BYTES input", r.body)
        finally:
            gw.stop()

    def test_batcher_over_xds_reaches_the_host_of_each_model(self):
        """infer-batcher --upstream xds:///inferd: merged `simple` batches, the model
        info calls and the pass-through `identity_int32` requests all carry their
        model's header, so every request reaches the one host that has the model."""
        os.environ["GRPC_XDS_BOOTSTRAP"] = self.bootstrap
        if not os.access(pu.BATCHER_BIN, os.X_OK):
            self.skipTest("infer-batcher not built")
        requests = {
            MODEL_A: ({"inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
                {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]},
                "OUTPUT0", list(range(1, 17))),
            MODEL_B: ({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [4],
                                   "data": [7, 8, 9, 10]}]}, "OUTPUT0", [7, 8, 9, 10]),
        }
        # Batches wait for their delay (no idle rule), so concurrent `simple`
        # requests merge.
        batcher = pu.Batcher("xds:///inferd", ["--max-delay-us", "20000",
                                               "--max-inflight-batches", "0"]).start()

        def one(i):
            model = (MODEL_A, MODEL_B)[i % 2]
            body, name, want = requests[model]
            r = harness.Client(batcher.ports["HTTP"]).post_json("/v2/models/%s/infer" % model, body)
            out = {o["name"]: o["data"] for o in r.json().get("outputs", [])} if r.status == 200 else {}
            return model, r.status, out.get(name) == want, r.body

        try:
            with ThreadPoolExecutor(16) as pool:
                answers = list(pool.map(one, range(48)))
            for model, status, right, body in answers:
                self.assertEqual((status, right), (200, True), "%s: %s\n%s" % (model, body, batcher.log()))
            text = harness.Client(batcher.ports["HTTP"]).get("/metrics").body.decode()
            self.assertGreater(harness.metric(text, "batcher_pass_through_total", reason="not_batchable"), 0,
                               text)
            merged = (harness.metric(text, "batcher_batch_requests_count")
                      - harness.metric(text, "batcher_batch_requests_bucket", le="1"))
            self.assertGreater(merged, 0, text)
        finally:
            self.assertEqual(batcher.stop(), 0, batcher.log())

    def test_gateway_refuses_shared_memory_with_xds(self):
        p = subprocess.run([pu.GATEWAY_BIN, "--inferd-url", "xds:///inferd", "--shared-memory",
                            "system"], capture_output=True, text=True, timeout=30, env=self.env())
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not an xds: target", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2 if harness.VERBOSE else 1, argv=sys.argv[:1])
