#!/usr/bin/python3
"""The response cache (--cache-config local,size=N; docs/response_cache.md) through a real inferd.

A repeated request to a model with `response_cache { enable: true }` is answered from the cache:
the same answer (with the new request's id), and the model does not run (its execution_count
stays). Any change of an input byte, of a shape, or of the requested outputs is a miss. Entries
are evicted least-recently-used when the cache is full. Requests with a sequence id are not
cached; decoupled and sequence-batching models with the cache enabled fail to load with Triton's
messages. Statistics (cache_hit, cache_miss over HTTP and gRPC) and the nv_cache_* and
inferd_response_cache_* metrics follow. Flags: Triton's error for both cache flags, other caches
refused, and without a cache an enabled model loads and is not cached.
"""

import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ServerTestCase, write_model, simple_request, outputs_by_name  # noqa: E402
from test_grpc_compat import SERVICE, generate_messages, grpc  # noqa: E402
from test_ensemble import ensemble_config  # noqa: E402

CACHE = "response_cache { enable: true }"
CACHE_BYTES = 300 * 1024
BIG = 15 * 1024  # fp32 values of the eviction test: ~2 x 60 KiB per entry (key + output)


def cached(name, text):
    """`text` (a config) renamed to `name`, with the cache enabled."""
    text = re.sub(r'^name: ".*"$', 'name: "%s"' % name, text, count=1, flags=re.M)
    return text + CACHE + "\n"


def build_cache_repository(root):
    repo = os.path.join(root, "models")
    harness.copy_test_models(repo, ["simple", "identity_2d", "repeat_int32"])
    write_model(repo, "simple_cached", cached("simple_cached", harness.read_test_config("simple")))
    write_model(repo, "identity_cached",
                cached("identity_cached", harness.read_test_config("identity_2d")))
    write_model(repo, "repeat_cached",
                cached("repeat_cached", harness.read_test_config("repeat_int32")))
    write_model(repo, "sequence_cached", harness.identity_config(
        "sequence_cached", "TYPE_INT32", dims=(1,), max_batch_size=1,
        extra="sequence_batching { }\n" + CACHE))
    # An ensemble caching its whole answer over a step that does not cache.
    write_model(repo, "ensemble_cached", ensemble_config(
        "ensemble_cached", [("IN0", "TYPE_INT32", (16,)), ("IN1", "TYPE_INT32", (16,))],
        [("SUM", "TYPE_INT32", (16,))],
        [("simple", {"INPUT0": "IN0", "INPUT1": "IN1"}, {"OUTPUT0": "SUM"})]) + CACHE + "\n")
    return repo


class CacheServer(harness.MetricsListener, harness.GrpcServer):
    pass


def model_stats(client, model):
    r = client.get("/v2/models/%s/versions/1/stats" % model)
    assert r.status == 200, r
    return r.json()["model_stats"][0]


class ResponseCacheTest(ServerTestCase):
    SERVER_ARGS = ("--cache-config", "local,size=%d" % CACHE_BYTES)

    @classmethod
    def build_repository(cls, root):
        return [build_cache_repository(root)]

    @classmethod
    def start_server(cls):
        return CacheServer(cls.repos, cls.SERVER_ARGS).start()

    # -- helpers ---------------------------------------------------------------------------

    def infer_simple(self, in0, in1, outputs=None, request_id=None, params=None):
        req, _ = simple_request(in0, in1, outputs=outputs, request_id=request_id)
        if params:
            req["parameters"] = params
        r = self.client.infer("simple_cached", req)
        self.assertOk(r)
        return r.json()

    def infer_2d(self, values, shape, model="identity_cached"):
        req = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": shape, "data": values}]}
        r = self.client.infer(model, req)
        self.assertOk(r)
        return r.json()

    def executions(self, model="simple_cached"):
        return model_stats(self.client, model)["execution_count"]

    def cache_counts(self, model="simple_cached"):
        s = model_stats(self.client, model)["inference_stats"]
        return s["cache_hit"]["count"], s["cache_miss"]["count"]

    # -- tests -----------------------------------------------------------------------------

    def test_hit_answers_the_same_without_running_the_model(self):
        in0, in1 = list(range(100, 116)), [3] * 16
        first = self.infer_simple(in0, in1, request_id="first")
        runs = self.executions()
        stats_before = model_stats(self.client, "simple_cached")
        for i in range(3):
            again = self.infer_simple(in0, in1, request_id="again%d" % i)
            self.assertEqual(again["id"], "again%d" % i)
            self.assertEqual(again["outputs"], first["outputs"])
            self.assertEqual(again["model_name"], "simple_cached")
            self.assertEqual(again["model_version"], "1")
        after = model_stats(self.client, "simple_cached")
        self.assertEqual(after["execution_count"], runs, "the model ran on a hit")
        self.assertEqual(after["inference_count"], stats_before["inference_count"])
        s0, s1 = stats_before["inference_stats"], after["inference_stats"]
        self.assertEqual(s1["cache_hit"]["count"] - s0["cache_hit"]["count"], 3)
        self.assertGreater(s1["cache_hit"]["ns"], s0["cache_hit"]["ns"])
        self.assertEqual(s1["success"]["count"] - s0["success"]["count"], 3, "hits are successes")
        self.assertEqual(s1["queue"]["count"] - s0["queue"]["count"], 3)
        self.assertEqual(s1["compute_infer"]["count"], s0["compute_infer"]["count"])
        # The answer is the model's: OUTPUT0 = INPUT0 + INPUT1.
        out = outputs_by_name(first)
        self.assertEqual(out["OUTPUT0"]["data"], [a + b for a, b in zip(in0, in1)])

    def test_changed_byte_is_a_miss(self):
        in0, in1 = list(range(200, 216)), [1] * 16
        self.infer_simple(in0, in1)
        hits, misses = self.cache_counts()
        runs = self.executions()
        changed = list(in1)
        changed[15] = 2
        r = self.infer_simple(in0, changed)
        self.assertEqual(outputs_by_name(r)["OUTPUT0"]["data"][15], in0[15] + 2)
        self.assertEqual(self.executions(), runs + 1)
        self.assertEqual(self.cache_counts(), (hits, misses + 1))

    def test_changed_shape_is_a_miss(self):
        values = [float(v) for v in range(8)]
        a = self.infer_2d(values, [2, 4])
        runs = self.executions("identity_cached")
        b = self.infer_2d(values, [4, 2])  # the same bytes
        self.assertEqual(self.executions("identity_cached"), runs + 1)
        self.assertEqual(a["outputs"][0]["shape"], [2, 4])
        self.assertEqual(b["outputs"][0]["shape"], [4, 2])
        self.infer_2d(values, [4, 2])
        self.assertEqual(self.executions("identity_cached"), runs + 1, "now a hit")

    def test_changed_requested_outputs_is_a_miss(self):
        in0, in1 = list(range(300, 316)), [5] * 16
        both = self.infer_simple(in0, in1)
        runs = self.executions()
        only1 = self.infer_simple(in0, in1, outputs=["OUTPUT1"])
        self.assertEqual(self.executions(), runs + 1)
        self.assertEqual([o["name"] for o in only1["outputs"]], ["OUTPUT1"])
        self.assertEqual(len(both["outputs"]), 2)
        self.infer_simple(in0, in1, outputs=["OUTPUT1"])
        self.assertEqual(self.executions(), runs + 1, "now a hit")

    def test_ensemble_hit_skips_its_steps(self):
        req = {"inputs": [{"name": n, "datatype": "INT32", "shape": [1, 16], "data": [4] * 16}
                          for n in ("IN0", "IN1")]}
        first = self.client.infer("ensemble_cached", req)
        self.assertOk(first)
        steps = self.executions("simple")
        again = self.client.infer("ensemble_cached", req)
        self.assertOk(again)
        self.assertEqual(again.json()["outputs"], first.json()["outputs"])
        self.assertEqual(self.executions("simple"), steps, "the step ran on a hit")
        self.assertEqual(self.cache_counts("ensemble_cached"), (1, 1))

    def test_sequence_id_is_not_cached(self):
        in0, in1 = list(range(400, 416)), [7] * 16
        hits, misses = self.cache_counts()
        runs = self.executions()
        for _ in range(2):
            self.infer_simple(in0, in1, params={"sequence_id": 42})
        self.assertEqual(self.executions(), runs + 2)
        self.assertEqual(self.cache_counts(), (hits, misses), "neither hit nor miss")

    def test_eviction_by_size(self):
        # Each entry holds the key (the input bytes) and the output: two fit, not three.
        def big(seed):
            return [float(seed)] + [0.5] * (BIG - 1)
        metrics_before = self.metric("inferd_response_cache_evictions_total")
        runs = self.executions("identity_cached")
        for seed in (1, 2, 3):
            self.infer_2d(big(seed), [1, BIG])
        self.assertEqual(self.executions("identity_cached"), runs + 3)
        self.infer_2d(big(3), [1, BIG])  # the most recent: still there
        self.infer_2d(big(2), [1, BIG])
        self.assertEqual(self.executions("identity_cached"), runs + 3)
        self.infer_2d(big(1), [1, BIG])  # the least recent: evicted by the third
        self.assertEqual(self.executions("identity_cached"), runs + 4)
        self.assertGreater(self.metric("inferd_response_cache_evictions_total"), metrics_before)
        self.assertLessEqual(self.metric("inferd_response_cache_bytes"), CACHE_BYTES)
        self.assertEqual(self.metric("inferd_response_cache_capacity_bytes"), CACHE_BYTES)

    def test_decoupled_and_sequence_models_are_refused_at_load(self):
        r = self.client.post("/v2/repository/index")
        self.assertOk(r)
        index = {e["name"]: e for e in r.json()}
        self.assertEqual(index["repeat_cached"].get("state"), "UNAVAILABLE")
        self.assertIn("Response Cache does not currently support model repeat_cached with "
                      "'decoupled' transaction policy. Please disable the response cache.",
                      index["repeat_cached"].get("reason", ""))
        self.assertEqual(index["sequence_cached"].get("state"), "UNAVAILABLE")
        self.assertIn("Response Cache does not currently support model sequence_cached with "
                      "sequence batching scheduler. Please disable the response cache.",
                      index["sequence_cached"].get("reason", ""))
        self.assertEqual(index["simple_cached"].get("state"), "READY")

    def metric_text(self):
        r = self.server.metrics_client().get("/metrics")
        self.assertOk(r)
        return r.body.decode()

    def metric(self, name, labels=""):
        m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), self.metric_text(),
                      re.M)
        self.assertIsNotNone(m, name + labels)
        return float(m.group(1))

    def test_metrics(self):
        in0, in1 = list(range(500, 516)), [9] * 16
        labels = '{model="simple_cached",version="1"}'
        self.infer_simple(in0, in1)
        hits = self.metric("nv_cache_num_hits_per_model", labels)
        misses = self.metric("nv_cache_num_misses_per_model", labels)
        self.infer_simple(in0, in1)
        self.assertEqual(self.metric("nv_cache_num_hits_per_model", labels), hits + 1)
        self.assertEqual(self.metric("nv_cache_num_misses_per_model", labels), misses)
        self.metric("nv_cache_hit_duration_per_model", labels)
        self.metric("nv_cache_miss_duration_per_model", labels)
        self.assertGreaterEqual(self.metric("inferd_response_cache_entries"), 1)
        self.assertGreater(self.metric("inferd_response_cache_bytes"), 0)
        # Only models that cache have the per-model cache counters.
        self.assertNotIn('nv_cache_num_hits_per_model{model="simple"', self.metric_text())

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_hit_and_statistics(self):
        pb, _ = generate_messages(os.path.join(self.tmp, "gen"))
        channel = grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port)
        try:
            def unary(method, request, response_class):
                call = channel.unary_unary(SERVICE + method,
                                           request_serializer=lambda m: m.SerializeToString(),
                                           response_deserializer=response_class.FromString)
                return call(request, timeout=30)
            req = pb.ModelInferRequest(model_name="simple_cached", id="g")
            for name in ("INPUT0", "INPUT1"):
                req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
                req.raw_input_contents.append(struct.pack("<16i", *range(600, 616)))
            first = unary("ModelInfer", req, pb.ModelInferResponse)
            runs = self.executions()
            second = unary("ModelInfer", req, pb.ModelInferResponse)
            self.assertEqual(self.executions(), runs)
            self.assertEqual(list(second.raw_output_contents), list(first.raw_output_contents))
            self.assertEqual(second.id, "g")
            stats = unary("ModelStatistics", pb.ModelStatisticsRequest(name="simple_cached"),
                          pb.ModelStatisticsResponse)
            s = stats.model_stats[0].inference_stats
            http = model_stats(self.client, "simple_cached")["inference_stats"]
            self.assertGreaterEqual(s.cache_hit.count, 1)
            self.assertEqual(s.cache_hit.count, http["cache_hit"]["count"])
            self.assertEqual(s.cache_miss.count, http["cache_miss"]["count"])
            self.assertGreater(s.cache_miss.ns, 0)
        finally:
            channel.close()


def run_inferd(args, timeout=15):
    return subprocess.run([harness.INFERD_BIN] + args, capture_output=True, text=True,
                          timeout=timeout)


class CacheFlagsTest(unittest.TestCase):
    def test_both_flags_are_refused_with_tritons_message(self):
        with tempfile.TemporaryDirectory() as repo:
            done = run_inferd(["--model-repository", repo, "--cache-config", "local,size=1024",
                               "--response-cache-byte-size", "1024"])
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("Incompatible flags --response-cache-byte-size and --cache-config both "
                      "provided. Please provide one or the other.", done.stderr)

    def test_other_caches_are_refused(self):
        with tempfile.TemporaryDirectory() as repo:
            done = run_inferd(["--model-repository", repo, "--cache-config", "redis,host=x"])
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("cache 'redis' is not supported", done.stderr)

    def test_without_a_cache_enabled_models_load_and_run_every_time(self):
        with tempfile.TemporaryDirectory() as root:
            repo = os.path.join(root, "models")
            write_model(repo, "simple_cached",
                        cached("simple_cached", harness.read_test_config("simple")))
            server = harness.Server([repo]).start()
            try:
                client = server.client()
                req, _ = simple_request(list(range(16)), [1] * 16)
                for _ in range(2):
                    self.assertEqual(client.infer("simple_cached", req).status, 200)
                s = model_stats(client, "simple_cached")
                self.assertEqual(s["execution_count"], 2)
                self.assertEqual(s["inference_stats"]["cache_hit"]["count"], 0)
                self.assertEqual(s["inference_stats"]["cache_miss"]["count"], 0)
            finally:
                server.stop()
            self.assertTrue(any("response_cache" in line for line in server.log()),
                            "the ignored setting is logged")

    def test_deprecated_flag_enables_the_cache(self):
        with tempfile.TemporaryDirectory() as root:
            repo = os.path.join(root, "models")
            write_model(repo, "simple_cached",
                        cached("simple_cached", harness.read_test_config("simple")))
            server = harness.Server([repo], ["--response-cache-byte-size", "65536"]).start()
            try:
                client = server.client()
                req, _ = simple_request(list(range(16)), [1] * 16)
                for _ in range(2):
                    self.assertEqual(client.infer("simple_cached", req).status, 200)
                s = model_stats(client, "simple_cached")
                self.assertEqual(s["execution_count"], 1)
                self.assertEqual(s["inference_stats"]["cache_hit"]["count"], 1)
            finally:
                server.stop()


if __name__ == "__main__":
    unittest.main()
