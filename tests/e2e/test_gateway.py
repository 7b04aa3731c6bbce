#!/usr/bin/python3
"""infer-gateway end to end: a real inferd (digits_pipeline and a slow
pipeline) and a real gateway process in front of it, over HTTP and the
gateway's own gRPC service. Accuracy on the held-out digits rendered as PNG,
the JSON answer, bad images, unknown pipelines, deadlines and client
disconnects cancelling the call to inferd, metrics and health, and inferd
being down."""

import importlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc

from harness import Client, add_sub_config, metric, model_config, write_model
import pipeline_util as pu

SKIP = pu.examples_missing()
PROTO_DIR = os.path.join(pu.REPO_ROOT, "proto")
LABELS = os.path.join(pu.EXAMPLES, "digits_pipeline", "labels.txt")
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

SLOW_PIPELINE = """name: "slow_pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IMAGE" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "SCORES" data_type: TYPE_FP32 dims: [ 1, 8, 8 ] } ]
ensemble_scheduling {
  step [
    { model_name: "digits_preprocess" model_version: -1
      input_map { key: "image_bytes" value: "IMAGE" } output_map { key: "image" value: "px" } },
    { model_name: "slow" model_version: -1
      input_map { key: "INPUT0" value: "px" } output_map { key: "OUTPUT0" value: "SCORES" } }
  ]
}
"""


def gateway_messages(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    done = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--python_out=" + out_dir,
                           os.path.join(PROTO_DIR, "gateway.proto")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("protoc failed: " + done.stderr)
    sys.path.insert(0, out_dir)
    return importlib.import_module("gateway_pb2")


@unittest.skipIf(SKIP, SKIP)
class GatewayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-gateway-")
        cls.inferd = cls.gateway = None
        try:
            repo = os.path.join(cls.tmp, "models")
            os.makedirs(repo)
            pu.copy_digits_pipeline(repo)
            write_model(repo, "slow", model_config(
                "slow", "delay", [("INPUT0", "TYPE_FP32", (1, 8, 8))],
                [("OUTPUT0", "TYPE_FP32", (1, 8, 8))], 8,
                'parameters { key: "execute_delay_ms" value { string_value: "1500" } }'))
            write_model(repo, "slow_pipeline", SLOW_PIPELINE)
            write_model(repo, "simple", add_sub_config("simple", "TYPE_INT32"))
            cls.pb = gateway_messages(os.path.join(cls.tmp, "gen"))
            cls.inferd, grpc_port = pu.start_inferd_with_grpc([repo])
            cls.grpc_port = grpc_port
            cls.gateway = pu.Gateway("127.0.0.1:%d" % grpc_port,
                                     ["--labels", "digits_pipeline=" + LABELS]).start()
            cls.http = Client(cls.gateway.ports["HTTP"], persistent=True)
            cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.gateway.ports["gRPC"])
            cls.classify_rpc = cls.channel.unary_unary(
                "/inferd_gateway.v1.Gateway/Classify",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=cls.pb.ClassifyResponse.FromString)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if getattr(cls, "channel", None):
                cls.channel.close()
            if getattr(cls, "http", None):
                cls.http.close()
            if cls.gateway:
                code = cls.gateway.stop()
                if code != 0:
                    raise AssertionError("infer-gateway exited with %r\n%s"
                                         % (code, cls.gateway.log()))
        finally:
            if cls.inferd:
                cls.inferd.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def classify(self, pipeline, image, query=""):
        return self.http.post("/v1/classify/%s%s" % (pipeline, query), image,
                              {"Content-Type": "application/octet-stream"})

    def assertError(self, r, status, *needles):
        self.assertEqual(r.status, status, r)
        msg = r.json()["error"]
        for n in needles:
            self.assertIn(n, msg)
        return msg

    def test_accuracy_on_held_out_pngs(self):
        images = pu.digit_images(".png")
        self.assertGreater(len(images), 400)
        correct = 0
        for data, label in images:
            r = self.classify("digits_pipeline", data, "?top_k=1")
            self.assertEqual(r.status, 200, r)
            correct += int(r.json()["classes"][0]["index"] == label)
        accuracy = correct / len(images)
        self.assertGreaterEqual(accuracy, 0.95, "accuracy %.3f" % accuracy)

    def test_answer_is_best_first_with_labels(self):
        data, label = pu.digit_images(".png")[3]
        body = self.classify("digits_pipeline", data).json()
        self.assertEqual(body["model"], "digits_pipeline")
        classes = body["classes"]
        self.assertEqual(len(classes), 5)  # the default top_k
        scores = [c["score"] for c in classes]
        self.assertEqual(scores, sorted(scores, reverse=True))
        self.assertEqual(classes[0]["index"], label)
        for c in classes:
            self.assertEqual(c["label"], WORDS[c["index"]])
        self.assertAlmostEqual(sum(scores), 1.0, delta=0.05)
        three = self.classify("digits_pipeline", data, "?top_k=3").json()["classes"]
        self.assertEqual(three, classes[:3])

    def test_jpeg(self):
        for data, label in pu.digit_images(".jpg")[:5]:
            r = self.classify("digits_pipeline", data)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json()["classes"][0]["index"], label)

    def test_bad_image_is_400(self):
        self.assertError(self.classify("digits_pipeline", b"GIF89a not really"), 400,
                         "not a JPEG or PNG image")
        png = pu.digit_images(".png")[0][0]
        self.assertError(self.classify("digits_pipeline", png[:50]), 400, "cannot decode PNG")
        self.assertError(self.classify("digits_pipeline", b""), 400, "empty body")

    def test_bad_top_k_is_400(self):
        png = pu.digit_images(".png")[0][0]
        for q in ("?top_k=0", "?top_k=abc", "?top_k=100000"):
            self.assertError(self.classify("digits_pipeline", png, q), 400, "top_k")

    def test_unknown_pipeline_is_404(self):
        self.assertError(self.classify("no_such_pipeline", b"x"), 404, "no_such_pipeline")

    def test_model_that_is_not_a_pipeline_is_400(self):
        self.assertError(self.classify("digits", b"x"), 400, "not an image pipeline")

    def test_grpc_classify(self):
        data, label = pu.digit_images(".png")[5]
        resp = self.classify_rpc(self.pb.ClassifyRequest(pipeline="digits_pipeline", image=data,
                                                         top_k=2), timeout=10)
        self.assertEqual(resp.model, "digits_pipeline")
        self.assertEqual(len(resp.classes), 2)
        self.assertEqual(resp.classes[0].index, label)
        self.assertEqual(resp.classes[0].label, WORDS[label])
        self.assertGreaterEqual(resp.classes[0].score, resp.classes[1].score)
        self.assertGreaterEqual(metric(self.scrape(), "gateway_grpc_requests_total", code="0"), 1)

    def test_grpc_errors(self):
        with self.assertRaises(grpc.RpcError) as e:
            self.classify_rpc(self.pb.ClassifyRequest(pipeline="digits_pipeline", image=b"nope"),
                              timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("not a JPEG or PNG", e.exception.details())
        with self.assertRaises(grpc.RpcError) as e:
            self.classify_rpc(self.pb.ClassifyRequest(pipeline="missing", image=b"x"), timeout=10)
        self.assertEqual(e.exception.code(), grpc.StatusCode.NOT_FOUND)

    def scrape(self):
        return Client(self.gateway.ports["HTTP"]).get("/metrics").body.decode()

    def test_grpc_deadline_cancels_the_inferd_call(self):
        data = pu.digit_images(".png")[0][0]
        t0 = time.monotonic()
        with self.assertRaises(grpc.RpcError) as e:
            self.classify_rpc(self.pb.ClassifyRequest(pipeline="slow_pipeline", image=data),
                              timeout=0.3)
        self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertLess(time.monotonic() - t0, 1.2)

    def test_client_disconnect_cancels_the_inferd_call(self):
        data = pu.digit_images(".png")[0][0]
        before = metric(self.scrape(), "middleman_inferd_calls_total", code="1")
        s = socket.create_connection(("127.0.0.1", self.gateway.ports["HTTP"]))
        s.sendall(b"POST /v1/classify/slow_pipeline HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(data) + data)
        time.sleep(0.2)
        s.close()
        # The delay model takes 1.5 s; the cancelled call must end well before.
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if metric(self.scrape(), "middleman_inferd_calls_total", code="1") > before:
                break
            time.sleep(0.05)
        self.assertGreater(metric(self.scrape(), "middleman_inferd_calls_total", code="1"),
                           before, "the call to inferd was not cancelled")
        self.assertTrue(self.gateway.alive())

    def test_health_and_metrics(self):
        c = Client(self.gateway.ports["HTTP"])
        self.assertEqual(c.get("/health/live").status, 200)
        self.assertEqual(c.get("/health/ready").status, 200)
        self.assertEqual(self.classify("digits_pipeline", pu.digit_images(".png")[0][0]).status,
                         200)
        text = self.scrape()
        self.assertGreaterEqual(metric(text, "gateway_http_requests_total", code="200",
                                       route="/v1/classify"), 1)
        self.assertGreaterEqual(metric(text, "middleman_inferd_calls_total", code="0"), 1)
        self.assertTrue(re.search(r'^gateway_http_request_duration_seconds_count\{route="/v1/'
                                  r'classify"\} \d+', text, re.M), text[:2000])
        self.assertEqual(c.get("/v1/nothing").status, 404)
        self.assertEqual(c.get("/v1/classify/digits_pipeline").status, 405)


    def test_the_one_page_middleman_example_runs(self):
        """examples/middleman/doubler.cc, the docs' example of the library."""
        binary = os.path.join(os.path.dirname(pu.GATEWAY_BIN), "middleman-doubler")
        proc = subprocess.Popen([binary, "127.0.0.1:%d" % self.grpc_port, "0"],
                                stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            line = proc.stderr.readline().decode()
            m = re.match(r"doubler: HTTP listening on (\d+)", line)
            self.assertTrue(m, line)
            c = Client(int(m.group(1)))
            r = c.get("/v1/double/21")
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json(), {"double": 42})
            self.assertIn('doubler_http_requests_total{code="200",route="/v1/double/{}"} 1',
                          c.get("/metrics").body.decode())
        finally:
            proc.terminate()
            self.assertEqual(proc.wait(10), 0)
            proc.stderr.close()


class GatewayWithoutInferdTest(unittest.TestCase):
    def test_inferd_down_is_503(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        gateway = pu.Gateway("127.0.0.1:%d" % port).start()
        try:
            c = Client(gateway.ports["HTTP"])
            r = c.post("/v1/classify/digits_pipeline", b"\x89PNG....")
            self.assertEqual(r.status, 503, r)
            self.assertIn("unavailable", r.json()["error"])
            self.assertEqual(c.get("/health/live").status, 200)
            self.assertEqual(c.get("/health/ready").status, 503)
        finally:
            self.assertEqual(gateway.stop(), 0, gateway.log())


@unittest.skipIf(SKIP, SKIP)
class GatewaySharedMemoryTest(unittest.TestCase):
    """--shared-memory system: inputs through slots the gateway registered with inferd."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="inferd-gateway-shm-")
        repo = os.path.join(self.tmp, "models")
        os.makedirs(repo)
        pu.copy_digits_pipeline(repo)
        self.repo = repo
        self.inferd = self.gateway = None

    def tearDown(self):
        try:
            if self.gateway:
                self.gateway.stop()
        finally:
            if self.inferd:
                self.inferd.stop()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, allow_shm):
        self.inferd, grpc_port = pu.start_inferd_with_grpc(
            [self.repo], ["--allow-client-shm=%s" % ("true" if allow_shm else "false")])
        self.gateway = pu.Gateway("127.0.0.1:%d" % grpc_port,
                                  ["--shared-memory", "system", "--shm-slots", "4"]).start()
        return Client(self.gateway.ports["HTTP"])

    def wait_for(self, c, name, **labels):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if metric(c.get("/metrics").body.decode(), name, **labels) > 0:
                return True
            time.sleep(0.05)
        return False

    def test_inputs_travel_through_registered_regions(self):
        c = self.start(allow_shm=True)
        status = self.inferd.client().get("/v2/systemsharedmemory/status")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(status.json()) < 4:
            time.sleep(0.05)
            status = self.inferd.client().get("/v2/systemsharedmemory/status")
        regions = status.json()
        self.assertEqual(len(regions), 4, regions)
        key = regions[0]["key"]
        self.assertTrue(os.path.exists("/dev/shm" + key), key)
        images = pu.digit_images(".png")[:100]
        # The gateway flips to shared memory once its last registration has
        # answered, a moment after inferd lists the regions.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            self.assertEqual(c.post("/v1/classify/digits_pipeline", images[0][0]).status, 200)
            if metric(c.get("/metrics").body.decode(), "gateway_inputs_total",
                      path="shared_memory") > 0:
                break
        before = c.get("/metrics").body.decode()
        correct = 0
        for data, label in images:
            r = c.post("/v1/classify/digits_pipeline?top_k=1", data)
            self.assertEqual(r.status, 200, r)
            correct += int(r.json()["classes"][0]["index"] == label)
        self.assertGreaterEqual(correct, 95)
        text = c.get("/metrics").body.decode()
        for path, want in (("shared_memory", len(images)), ("inline", 0)):
            self.assertEqual(metric(text, "gateway_inputs_total", path=path)
                             - metric(before, "gateway_inputs_total", path=path), want, path)
        r = c.post("/v1/classify/digits_pipeline", b"not an image")
        self.assertEqual(r.status, 400, r)
        self.assertIn("not a JPEG or PNG", r.json()["error"])
        # Stopping the gateway unregisters its regions and removes the object.
        self.assertEqual(self.gateway.stop(), 0, self.gateway.log())
        self.gateway = None
        self.assertEqual(self.inferd.client().get("/v2/systemsharedmemory/status").json(), [])
        self.assertFalse(os.path.exists("/dev/shm" + key))

    def test_concurrent_clients_share_the_slots(self):
        c = self.start(allow_shm=True)
        images = pu.digit_images(".png")[:160]
        wrong, lock = [], threading.Lock()

        def client(part):
            conn = Client(self.gateway.ports["HTTP"], persistent=True)
            for data, label in part:
                r = conn.post("/v1/classify/digits_pipeline?top_k=1", data)
                if r.status != 200 or r.json()["classes"][0]["index"] != label:
                    with lock:
                        wrong.append(r)
            conn.close()
        threads = [threading.Thread(target=client, args=(images[i::8],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        # 8 clients on 4 slots: some images go inline; every answer is right
        # (a slot reused too early would mix images up and fail this).
        self.assertLessEqual(len(wrong), 8, wrong[:3])
        self.assertTrue(all(r.status == 200 for r in wrong), wrong[:3])
        text = c.get("/metrics").body.decode()
        self.assertEqual(metric(text, "gateway_inputs_total", path="shared_memory")
                         + metric(text, "gateway_inputs_total", path="inline"), len(images))

    def test_inferd_refusing_shared_memory_means_inline(self):
        c = self.start(allow_shm=False)
        self.assertTrue(self.wait_for(c, "middleman_shm_register_failures_total"),
                        self.gateway.log())
        data, label = pu.digit_images(".png")[0]
        r = c.post("/v1/classify/digits_pipeline?top_k=1", data)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["classes"][0]["index"], label)
        self.assertGreater(metric(c.get("/metrics").body.decode(), "gateway_inputs_total",
                                  path="inline"), 0)
        self.assertIn("registering shared memory with inferd failed", self.gateway.log())


if __name__ == "__main__":
    unittest.main()
