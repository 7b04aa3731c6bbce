#!/usr/bin/python3
"""infer-batcher end to end (docs/batcher.md): a real inferd and a real infer-batcher in
front of it. Many concurrent batch-1 clients over gRPC and HTTP get answers byte-identical
to the same requests sent to inferd directly (serialized gRPC responses, HTTP bodies and
headers), while the batcher's metrics show that requests were merged; mixed models and
shapes, bad requests in the middle of good ones (each gets inferd's own error), a caller
whose deadline passes (the others succeed), the pass-through cases (a model without
batching, a sequence, a decoupled model, shared memory, streams), the other RPCs proxied,
health, and the drain on SIGTERM.

Environment: INFERD_BIN, INFER_BATCHER_BIN (default: infer-batcher beside INFERD_BIN)."""

import gzip
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import grpc

import harness
from harness import Client, identity_config, metric, model_config, write_model
from pipeline_util import BATCHER_BIN, Batcher
from test_grpc_compat import generate_messages

SERVICE = "/inference.GRPCInferenceService/"
CLIENTS = 24


def int32s(values):
    return struct.pack("<%di" % len(values), *values)


def fp32s(values):
    return struct.pack("<%df" % len(values), *values)


def bytes_elements(elements):
    return b"".join(struct.pack("<I", len(e)) + e for e in elements)


def write_models(repo):
    harness.copy_test_models(repo, ["simple", "identity_bytes", "repeat_int32"])
    write_model(repo, "bytes_batch", identity_config("bytes_batch", "TYPE_STRING", dims=(2,),
                                                     max_batch_size=8))
    write_model(repo, "seq_identity", identity_config(
        "seq_identity", "TYPE_INT32", dims=(4,), max_batch_size=8,
        extra="sequence_batching { max_sequence_idle_microseconds: 5000000 }"))
    write_model(repo, "slow_batch", model_config(
        "slow_batch", "delay", [("INPUT0", "TYPE_FP32", (4,))], [("OUTPUT0", "TYPE_FP32", (4,))],
        8, 'parameters { key: "execute_delay_ms" value { string_value: "400" } }'))


class BatcherTestBase(unittest.TestCase):
    EXTRA = ["--max-delay-us", "20000"]

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-batcher-")
        cls.inferd = cls.batcher = None
        try:
            repo = os.path.join(cls.tmp, "models")
            write_models(repo)
            cls.pb, _ = generate_messages(os.path.join(cls.tmp, "gen"))
            cls.inferd = harness.GrpcServer(repo).start()
            cls.batcher = Batcher("127.0.0.1:%d" % cls.inferd.grpc_port, cls.EXTRA).start()
            cls.direct = grpc.insecure_channel("127.0.0.1:%d" % cls.inferd.grpc_port)
            cls.via = grpc.insecure_channel("127.0.0.1:%d" % cls.batcher.ports["gRPC"])
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            for ch in ("direct", "via"):
                if getattr(cls, ch, None):
                    getattr(cls, ch).close()
            if cls.batcher:
                code = cls.batcher.stop()
                if code != 0:
                    raise AssertionError("infer-batcher exited with %r\n%s"
                                         % (code, cls.batcher.log()))
        finally:
            if cls.inferd:
                cls.inferd.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------

    def call(self, channel, method, request, response_class, timeout=20):
        """(status code, details, serialized response or None) of one unary call."""
        rpc = channel.unary_unary(SERVICE + method,
                                  request_serializer=lambda m: m.SerializeToString(),
                                  response_deserializer=response_class.FromString)
        try:
            resp = rpc(request, timeout=timeout)
            return grpc.StatusCode.OK, "", resp.SerializeToString(deterministic=True)
        except grpc.RpcError as e:
            return e.code(), e.details(), None

    def infer(self, channel, request, timeout=20):
        return self.call(channel, "ModelInfer", request, self.pb.ModelInferResponse, timeout)

    def simple(self, i, rows=1, dtype="INT32"):
        req = self.pb.ModelInferRequest(model_name="simple", id="r%d" % i)
        pack = int32s if dtype == "INT32" else fp32s
        for n, name in enumerate(("INPUT0", "INPUT1")):
            req.inputs.add(name=name, datatype=dtype, shape=[rows, 16])
            req.raw_input_contents.append(pack([i * 100 + n * 7 + k for k in range(16 * rows)]))
        return req

    def scrape(self):
        return Client(self.batcher.ports["HTTP"]).get("/metrics").body.decode()

    def merged_batches(self):
        text = self.scrape()
        return (metric(text, "batcher_batch_requests_count")
                - metric(text, "batcher_batch_requests_bucket", le="1"))

    def assertSameAnswers(self, requests, timeout=20):
        """Sends every request concurrently through the batcher and directly; each
        pair of answers (code, details, bytes) must be equal."""
        with ThreadPoolExecutor(CLIENTS) as pool:
            via = list(pool.map(lambda r: self.infer(self.via, r, timeout), requests))
        direct = [self.infer(self.direct, r, timeout) for r in requests]
        for i, (v, d) in enumerate(zip(via, direct)):
            self.assertEqual(v, d, "request %d (%s)" % (i, requests[i].model_name))
        return via


class BatcherGrpcTest(BatcherTestBase):
    def test_concurrent_batch1_clients_get_direct_answers_in_merged_batches(self):
        before = self.merged_batches()
        answers = self.assertSameAnswers([self.simple(i) for i in range(CLIENTS * 4)])
        self.assertTrue(all(a[0] == grpc.StatusCode.OK for a in answers))
        self.assertGreater(self.merged_batches(), before, self.scrape())

    def test_mixed_models_rows_and_shapes(self):
        requests = []
        for i in range(CLIENTS * 2):
            if i % 3 == 0:
                requests.append(self.simple(i, rows=1 + i % 4))
            elif i % 3 == 1:
                r = self.pb.ModelInferRequest(model_name="bytes_batch", id="b%d" % i)
                r.inputs.add(name="INPUT0", datatype="BYTES", shape=[1, 2])
                r.raw_input_contents.append(bytes_elements([b"x" * i, b"element %d" % i]))
                requests.append(r)
            else:
                requests.append(self.simple(i))
        self.assertSameAnswers(requests)

    def test_bad_requests_in_the_middle_get_inferds_own_errors(self):
        requests = [self.simple(i) for i in range(CLIENTS)]
        wrong_dtype = self.simple(1000, dtype="FP32")
        wrong_shape = self.pb.ModelInferRequest(model_name="simple", id="ws")
        for name in ("INPUT0", "INPUT1"):
            wrong_shape.inputs.add(name=name, datatype="INT32", shape=[1, 15])
            wrong_shape.raw_input_contents.append(int32s(range(15)))
        short = self.simple(1001)
        short.raw_input_contents[0] = short.raw_input_contents[0][:60]
        unknown = self.simple(1002)
        unknown.model_name = "no_such_model"
        requests[3:3] = [wrong_dtype, wrong_shape, wrong_shape, short, unknown]
        answers = self.assertSameAnswers(requests)
        self.assertEqual(answers[3][0], grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(answers[4][0], grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(answers[7][0], grpc.StatusCode.NOT_FOUND)
        self.assertEqual(sum(a[0] == grpc.StatusCode.OK for a in answers), CLIENTS)

    def test_a_caller_whose_deadline_passes_does_not_fail_the_others(self):
        def slow(i):
            r = self.pb.ModelInferRequest(model_name="slow_batch", id="s%d" % i)
            r.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 4])
            r.raw_input_contents.append(fp32s([i, i, i, i]))
            return r
        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(self.infer, self.via, slow(i), 0.1 if i == 2 else 20)
                       for i in range(6)]
            results = [f.result() for f in futures]
        self.assertEqual(results[2][0], grpc.StatusCode.DEADLINE_EXCEEDED)
        for i, r in enumerate(results):
            if i != 2:
                self.assertEqual(r, self.infer(self.direct, slow(i)), i)
        self.assertTrue(self.batcher.proc.poll() is None)

    def test_pass_through_cases(self):
        before = self.scrape()
        not_batchable = self.pb.ModelInferRequest(model_name="identity_bytes", id="nb")
        not_batchable.inputs.add(name="INPUT0", datatype="BYTES", shape=[2])
        not_batchable.raw_input_contents.append(bytes_elements([b"a", b"bc"]))
        seq = self.pb.ModelInferRequest(model_name="seq_identity", id="q")
        seq.parameters["sequence_id"].int64_param = 42
        seq.parameters["sequence_start"].bool_param = True
        seq.inputs.add(name="INPUT0", datatype="INT32", shape=[1, 4])
        seq.raw_input_contents.append(int32s([1, 2, 3, 4]))
        shm = self.simple(5)
        shm.inputs[0].parameters["shared_memory_region"].string_param = "no_such_region"
        shm.inputs[0].parameters["shared_memory_byte_size"].int64_param = 64
        del shm.raw_input_contents[0]
        decoupled = self.pb.ModelInferRequest(model_name="repeat_int32", id="d")
        for name, dtype, shape, data in (("IN", "INT32", [2], int32s([1, 2])),
                                         ("DELAY", "UINT32", [2], int32s([0, 0])),
                                         ("WAIT", "UINT32", [1], int32s([0]))):
            decoupled.inputs.add(name=name, datatype=dtype, shape=shape)
            decoupled.raw_input_contents.append(data)
        for r in (not_batchable, shm, decoupled):
            self.assertEqual(self.infer(self.via, r), self.infer(self.direct, r), r.model_name)
        # A sequence's second request must follow the first: one after the other.
        via_start = self.infer(self.via, seq)
        seq.parameters["sequence_id"].int64_param = 43
        self.assertEqual(via_start, self.infer(self.direct, seq))
        self.assertEqual(via_start[0], grpc.StatusCode.OK, via_start)
        after = self.scrape()
        for reason in ("not_batchable", "sequence", "shared_memory", "decoupled"):
            self.assertGreater(metric(after, "batcher_pass_through_total", reason=reason),
                               metric(before, "batcher_pass_through_total", reason=reason),
                               reason)

    def test_decoupled_stream_is_proxied(self):  # its first request decides
        def requests():
            for i in range(3):
                r = self.pb.ModelInferRequest(model_name="repeat_int32", id="st%d" % i)
                for name, dtype, shape, data in (("IN", "INT32", [3], int32s([i, i + 1, i + 2])),
                                                 ("DELAY", "UINT32", [3], int32s([1, 1, 1])),
                                                 ("WAIT", "UINT32", [1], int32s([0]))):
                    r.inputs.add(name=name, datatype=dtype, shape=shape)
                    r.raw_input_contents.append(data)
                yield r

        def run(channel):
            rpc = channel.stream_stream(SERVICE + "ModelStreamInfer",
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=self.pb.ModelStreamInferResponse
                                        .FromString)
            out = [m.SerializeToString(deterministic=True)
                   for m in rpc(requests(), timeout=20)]
            return sorted(out)

        via, direct = run(self.via), run(self.direct)
        self.assertEqual(len(via), 9)  # one response per element of IN, 3 x 3
        self.assertEqual(via, direct)

    def stream(self, channel, requests, metadata=None):
        """(messages in order, final code, details) of one ModelStreamInfer stream."""
        rpc = channel.stream_stream(SERVICE + "ModelStreamInfer",
                                    request_serializer=lambda m: m.SerializeToString(),
                                    response_deserializer=self.pb.ModelStreamInferResponse
                                    .FromString)
        out = []
        try:
            for m in rpc(iter(requests), timeout=20, metadata=metadata):
                out.append(m.SerializeToString(deterministic=True))
            return out, grpc.StatusCode.OK, ""
        except grpc.RpcError as e:
            return out, e.code(), e.details()

    def test_stream_requests_are_batched_and_answered_as_inferd(self):
        before = self.merged_batches()
        requests = [self.simple(i) for i in range(40)]
        requests[17].inputs[0].shape[1] = 15
        requests[23].model_name = "no_such_model"
        via, direct = self.stream(self.via, requests), self.stream(self.direct, requests)
        self.assertEqual(via, direct)
        self.assertGreater(self.merged_batches(), before, self.scrape())
        self.assertEqual(len(via[0]), 40)
        self.assertTrue(self.pb.ModelStreamInferResponse.FromString(via[0][17]).error_message)
        # With triton_grpc_error the first error ends the stream with its status.
        md = [("triton_grpc_error", "true")]
        via, direct = (self.stream(self.via, requests, md),
                       self.stream(self.direct, requests, md))
        self.assertEqual(via[1:], direct[1:])
        self.assertEqual(via[1], grpc.StatusCode.INVALID_ARGUMENT)

    def test_sequence_stream_is_proxied(self):
        def requests(sequence_id):
            for i in range(4):
                r = self.pb.ModelInferRequest(model_name="seq_identity", id="q%d" % i)
                r.parameters["sequence_id"].int64_param = sequence_id
                r.parameters["sequence_start"].bool_param = i == 0
                r.parameters["sequence_end"].bool_param = i == 3
                r.inputs.add(name="INPUT0", datatype="INT32", shape=[1, 4])
                r.raw_input_contents.append(int32s([i] * 4))
                yield r
        before = metric(self.scrape(), "batcher_pass_through_total", reason="stream")
        via, direct = self.stream(self.via, requests(7)), self.stream(self.direct, requests(8))
        self.assertEqual(via, direct)
        self.assertEqual((len(via[0]), via[1]), (4, grpc.StatusCode.OK))
        self.assertEqual(metric(self.scrape(), "batcher_pass_through_total", reason="stream"),
                         before + 1)

    def test_other_rpcs_are_proxied(self):
        pb = self.pb
        for method, request, response in (
                ("ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse),
                ("ServerReady", pb.ServerReadyRequest(), pb.ServerReadyResponse),
                ("ModelReady", pb.ModelReadyRequest(name="simple"), pb.ModelReadyResponse),
                ("ServerMetadata", pb.ServerMetadataRequest(), pb.ServerMetadataResponse),
                ("ModelMetadata", pb.ModelMetadataRequest(name="simple"),
                 pb.ModelMetadataResponse),
                ("ModelConfig", pb.ModelConfigRequest(name="simple"), pb.ModelConfigResponse),
                ("ModelMetadata", pb.ModelMetadataRequest(name="nope"),
                 pb.ModelMetadataResponse)):
            self.assertEqual(self.call(self.via, method, request, response),
                             self.call(self.direct, method, request, response), method)


class BatcherHttpTest(BatcherTestBase):
    def http_simple(self, i):
        return {"id": "h%d" % i, "inputs": [
            {"name": name, "datatype": "INT32", "shape": [1, 16],
             "data": [i * 10 + n + k for k in range(16)]}
            for n, name in enumerate(("INPUT0", "INPUT1"))]}

    def http_binary(self, i):
        header = {"id": "hb%d" % i,
                  "inputs": [{"name": name, "datatype": "INT32", "shape": [1, 16],
                              "parameters": {"binary_data_size": 64}}
                             for name in ("INPUT0", "INPUT1")],
                  "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}},
                              {"name": "OUTPUT1"}]}
        return header, [int32s([i + k for k in range(16)]), int32s([2 * k for k in range(16)])]

    def both(self, send):
        """(status, content type, header length, body) through the batcher and directly."""
        def answer(port):
            r = send(Client(port))
            return (r.status, r.header("Content-Type"),
                    r.header("Inference-Header-Content-Length"), r.body)
        return answer(self.batcher.ports["HTTP"]), answer(self.inferd.port)

    def test_concurrent_json_and_binary_clients_get_inferds_bytes(self):
        before = self.merged_batches()

        def one(i):
            if i % 2:
                h, blobs = self.http_binary(i)
                return self.both(lambda c: c.infer("simple", h, blobs=blobs))
            return self.both(lambda c: c.infer("simple", self.http_simple(i)))

        with ThreadPoolExecutor(CLIENTS) as pool:
            pairs = list(pool.map(one, range(CLIENTS * 3)))
        for i, (via, direct) in enumerate(pairs):
            self.assertEqual(via, direct, i)
            self.assertEqual(via[0], 200, via)
        self.assertGreater(self.merged_batches(), before, self.scrape())

    def test_errors_and_versions(self):
        bad = self.http_simple(1)
        bad["inputs"][0]["shape"] = [1, 15]
        wrong_type = self.http_simple(2)
        wrong_type["inputs"][1]["datatype"] = "FP32"
        for path, body in (("/v2/models/simple/infer", bad),
                           ("/v2/models/simple/infer", wrong_type),
                           ("/v2/models/simple/versions/1/infer", self.http_simple(3)),
                           ("/v2/models/simple/versions/7/infer", self.http_simple(4)),
                           ("/v2/models/nope/infer", self.http_simple(5)),
                           ("/v2/models/repeat_int32/infer", self.http_simple(6))):
            via, direct = self.both(lambda c: c.post_json(path, body))
            self.assertEqual(via, direct, path)
        via, direct = self.both(lambda c: c.post("/v2/models/simple/infer", b"{not json"))
        self.assertEqual(via, direct)
        self.assertEqual(via[0], 400)

    def test_model_metadata_and_ready(self):
        for path in ("/v2/models/simple", "/v2/models/simple/versions/1",
                     "/v2/models/bytes_batch", "/v2/models/nope", "/v2/models/simple/versions/9",
                     "/v2/models/simple/versions/x", "/v2/models/simple/ready",
                     "/v2/models/simple/versions/1/ready", "/v2/models/nope/ready"):
            via, direct = self.both(lambda c: c.get(path))
            self.assertEqual(via, direct, path)
            bad = "nope" in path or "/9" in path or "/x" in path
            self.assertEqual(via[0] == 200, not bad, (path, via))

    def test_health(self):
        for path in ("/v2/health/live", "/v2/health/ready"):
            via, direct = self.both(lambda c: c.get(path))
            self.assertEqual(via[0], 200, path)
            self.assertEqual(via[3], direct[3], path)
        self.assertIn("batcher_requests_total", self.scrape())


class BatcherOptionsTest(BatcherTestBase):
    """Two upstream entries (the same inferd twice), a per-model batch size and delay, and
    a gzip request body."""

    @classmethod
    def setUpClass(cls):
        cls.EXTRA = ["--max-delay-us", "20000", "--model-max-batch-size=simple=2",
                     "--model-max-delay-us", "simple=50000", "--channels", "2"]
        super().setUpClass()
        cls.batcher.stop()
        upstream = "127.0.0.1:%d" % cls.inferd.grpc_port
        cls.batcher = Batcher(upstream + "," + upstream, cls.EXTRA).start()
        cls.via.close()
        cls.via = grpc.insecure_channel("127.0.0.1:%d" % cls.batcher.ports["gRPC"])

    def test_per_model_batch_size_over_two_upstreams(self):
        self.assertSameAnswers([self.simple(i) for i in range(CLIENTS)])
        text = self.scrape()
        total = metric(text, "batcher_batch_rows_count")
        self.assertGreater(total, 0)
        self.assertEqual(metric(text, "batcher_batch_rows_bucket", le="2"), total, text)
        self.assertGreater(self.merged_batches(), 0, text)

    def test_gzip_body(self):
        body = json.dumps({"inputs": [
            {"name": name, "datatype": "INT32", "shape": [1, 16], "data": list(range(16))}
            for name in ("INPUT0", "INPUT1")]}).encode()
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip",
                   "Accept-Encoding": "gzip"}

        def send(port):
            r = Client(port).post("/v2/models/simple/infer", gzip.compress(body), headers)
            return r.status, r.header("Content-Encoding"), gzip.decompress(r.body)

        via, direct = send(self.batcher.ports["HTTP"]), send(self.inferd.port)
        self.assertEqual(via, direct)
        self.assertEqual(via[0], 200)

    def test_a_lone_request_goes_at_once_unless_told_to_wait(self):
        upstream = "127.0.0.1:%d" % self.inferd.grpc_port
        for flags, waits in ((["--max-delay-us", "10000000"], False),
                             (["--max-delay-us", "1000000", "--max-inflight-batches", "0"], True)):
            batcher = Batcher(upstream, flags).start()
            try:
                with grpc.insecure_channel("127.0.0.1:%d" % batcher.ports["gRPC"]) as channel:
                    self.infer(channel, self.simple(1))  # connected, model info cached
                    start = time.monotonic()
                    answer = self.infer(channel, self.simple(2))
                    took = time.monotonic() - start
                self.assertEqual(answer, self.infer(self.direct, self.simple(2)))
                if waits:  # a batch waits for its delay with the model idle
                    self.assertGreaterEqual(took, 0.9, flags)
                else:  # the model was idle: no wait for the 10 s delay
                    self.assertLess(took, 5, flags)
            finally:
                self.assertEqual(batcher.stop(), 0, batcher.log())

    def test_bad_flags_are_refused_by_name(self):
        for flags, needle in ((["--max-delay-us", "-1"], "--max-delay-us"),
                              (["--max-inflight-batches", "-1"], "--max-inflight-batches"),
                              (["--model-max-batch-size", "simple"], "MODEL=N"),
                              (["--no-such-flag", "1"], "unknown flag --no-such-flag")):
            done = subprocess.run([BATCHER_BIN, "--upstream=127.0.0.1:1"] + flags,
                                  capture_output=True, text=True, timeout=10)
            self.assertEqual(done.returncode, 2, flags)
            self.assertIn(needle, done.stderr)
        done = subprocess.run([BATCHER_BIN], capture_output=True, text=True, timeout=10)
        self.assertIn("--upstream is required", done.stderr)


class BatcherUpstreamDownTest(unittest.TestCase):
    def test_no_upstream_is_unavailable_and_not_ready_and_the_batcher_keeps_serving(self):
        tmp = tempfile.mkdtemp(prefix="inferd-batcher-down-")
        batcher = None
        try:
            pb, _ = generate_messages(os.path.join(tmp, "gen"))
            with socket.socket() as s:  # a port nobody listens on
                s.bind(("127.0.0.1", 0))
                dead = s.getsockname()[1]
            batcher = Batcher("127.0.0.1:%d" % dead).start()
            with grpc.insecure_channel("127.0.0.1:%d" % batcher.ports["gRPC"]) as channel:
                rpc = channel.unary_unary(SERVICE + "ModelInfer",
                                          request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=pb.ModelInferResponse.FromString)
                req = pb.ModelInferRequest(model_name="simple")
                req.inputs.add(name="INPUT0", datatype="INT32", shape=[1, 16])
                req.raw_input_contents.append(int32s(range(16)))
                for _ in range(3):
                    with self.assertRaises(grpc.RpcError) as e:
                        rpc(req, timeout=10)
                    self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
            http = Client(batcher.ports["HTTP"])
            r = http.post_json("/v2/models/simple/infer", {"inputs": [
                {"name": "INPUT0", "datatype": "INT32", "shape": [1, 1], "data": [1]}]})
            self.assertEqual(r.status, 503, r)
            self.assertIn("error", r.json())
            ready = http.get("/v2/health/ready")
            self.assertEqual((ready.status, ready.body), (400, b'{"ready":false}'))
            self.assertEqual(http.get("/v2/health/live").status, 200)
            self.assertEqual(batcher.stop(), 0, batcher.log())
        finally:
            if batcher:
                batcher.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class BatcherDrainTest(unittest.TestCase):
    def test_sigterm_answers_what_is_in_flight_then_exits(self):
        tmp = tempfile.mkdtemp(prefix="inferd-batcher-drain-")
        inferd = batcher = None
        try:
            repo = os.path.join(tmp, "models")
            write_models(repo)
            pb, _ = generate_messages(os.path.join(tmp, "gen"))
            inferd = harness.GrpcServer(repo).start()
            batcher = Batcher("127.0.0.1:%d" % inferd.grpc_port,
                              ["--max-delay-us", "200000", "--drain-delay-secs", "1"]).start()
            channel = grpc.insecure_channel("127.0.0.1:%d" % batcher.ports["gRPC"])
            rpc = channel.unary_unary(SERVICE + "ModelInfer",
                                      request_serializer=lambda m: m.SerializeToString(),
                                      response_deserializer=pb.ModelInferResponse.FromString)

            def slow(i):
                r = pb.ModelInferRequest(model_name="slow_batch", id="d%d" % i)
                r.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 4])
                r.raw_input_contents.append(fp32s([i] * 4))
                return rpc(r, timeout=20)

            with ThreadPoolExecutor(4) as pool:
                futures = [pool.submit(slow, i) for i in range(4)]
                time.sleep(0.1)  # in the batcher's queue or at inferd
                batcher.proc.send_signal(signal.SIGTERM)
                time.sleep(0.3)
                ready = Client(batcher.ports["HTTP"]).get("/v2/health/ready")
                self.assertEqual(ready.status, 503, ready)
                answers = [f.result() for f in futures]
            self.assertEqual([a.id for a in answers], ["d0", "d1", "d2", "d3"])
            channel.close()
            self.assertEqual(batcher.proc.wait(20), 0, batcher.log())
            self.assertIn("infer-batcher: stopped", batcher.log())
        finally:
            if batcher:
                batcher.stop()
            if inferd:
                inferd.stop()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
