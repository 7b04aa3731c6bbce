#!/usr/bin/python3
"""infer-perf's load flags against a real inferd: sequences (both protocols, sync and
async, concurrency and rate mode), -a/--async, --grpc-compression-algorithm and
--request-intervals. Each test asserts what the server or the wire saw, so that a flag
parsed and ignored fails it."""

import os
import tempfile
import unittest

from perf_util import PerfTestCase, Relay

COUNT = ("--measurement-mode", "count_windows", "--measurement-request-count", "20")


class InferPerfSequenceTest(PerfTestCase):
    def seq_request(self, seq_id, start=False):
        params = {"sequence_id": seq_id}
        if start:
            params["sequence_start"] = True
        return {"parameters": params,
                "inputs": [{"name": "INPUT", "shape": [1, 1], "datatype": "INT32", "data": [1]}]}

    def assert_ended(self, ids):
        # A request without START to an id infer-perf used is refused: its sequence ended.
        for i in ids:
            r = self.client.infer("accumulator", self.seq_request(i))
            self.assertEqual(r.status, 400, r.body)
            self.assertIn("must specify the START flag", r.json()["error"])

    def test_the_model_refuses_requests_outside_a_sequence(self):
        # Why the runs below prove the flags were sent: without them every request fails.
        r = self.client.infer("accumulator", {"inputs": [
            {"name": "INPUT", "shape": [1, 1], "datatype": "INT32", "data": [1]}]})
        self.assertEqual(r.status, 400)
        self.assertIn("correlation ID", r.json()["error"])
        self.assert_ended([100])

    def test_sequences_in_concurrency_mode_on_both_protocols(self):
        for protocol, api in (("http", []), ("http", ["--sync"]), ("grpc", []),
                              ("grpc", ["--sync"])):
            with self.subTest(protocol=protocol, api=api):
                before = self.success_count("accumulator")
                p = self.perf("-m", "accumulator", "--concurrency-range", "2",
                              "--sequence-length", "4", "--sequence-id-range", "100:102",
                              "--json", *COUNT, *api, protocol=protocol)
                r = p.report["results"][0]
                self.assertGreater(r["requests"], 0)
                self.assertEqual(r["errors"], 0)
                self.assertGreaterEqual(self.success_count("accumulator") - before, r["requests"])
                self.assert_ended([100, 101])

    def test_sequence_length_sets_the_requests_per_sequence(self):
        # What the client sent, read off the wire: with --sequence-length 4 and no
        # variation, one request in four starts a sequence and one in four ends one.
        relay = Relay(self.server.port)
        try:
            self.perf("-m", "accumulator", "--concurrency-range", "1", "--sequence-length", "4",
                      "--sequence-length-variation", "0", "--sync", port=relay.port)
        finally:
            relay.close()
        data = bytes(relay.data)
        posts = data.count(b"POST /v2/models/accumulator/infer")
        starts = data.count(b'"sequence_start":true')
        ends = data.count(b'"sequence_end":true')
        self.assertGreater(posts, 40)
        self.assertLessEqual(abs(starts * 4 - posts), 4)
        self.assertLessEqual(abs(ends * 4 - posts), 4)

    def test_sequence_models_default_to_async_and_say_so(self):
        p = self.perf("-m", "accumulator", "--sequence-length", "3", *COUNT)
        self.assertIn("API: async  Sequences: yes", p.stdout)
        p = self.perf("-m", "accumulator", "--sequence-length", "3", "--sync", *COUNT)
        self.assertIn("API: sync  Sequences: yes", p.stdout)

    def test_sequences_in_rate_mode(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                p = self.perf("-m", "accumulator", "--request-rate-range", "200",
                              "--num-of-sequences", "3", "--sequence-id-range", "200:203",
                              "--serial-sequences", "--sequence-length", "5",
                              "--sequence-length-variation", "0", "--max-threads", "4", "--json",
                              protocol=protocol)
                r = p.report["results"][0]
                self.assertGreater(r["requests"], 0)
                self.assertEqual(r["errors"], 0)
                self.assert_ended([200, 201, 202])

    def test_a_sequence_id_range_too_small_is_refused(self):
        p = self.perf("-m", "accumulator", "--request-rate-range", "100", "--num-of-sequences", "3",
                      "--sequence-id-range", "200:202", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--sequence-id-range 200:202 holds 2 ids, fewer than the 3 concurrent "
                      "sequences", p.stderr)
        p = self.perf("-m", "accumulator", "--concurrency-range", "1:4",
                      "--sequence-id-range", "7:10", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("holds 3 ids, fewer than the 4 concurrent sequences", p.stderr)
        p = self.perf("-m", "accumulator", "--sequence-id-range", "5:5", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("0 < START < END", p.stderr)

    def test_sequence_flags_on_a_plain_model_say_they_do_not_apply(self):
        p = self.perf("-m", "simple", "--sequence-length", "3", *COUNT)
        self.assertIn("has no sequence_batching; the sequence flags do not apply", p.stderr)

    def test_streaming_with_a_sequence_model_is_refused(self):
        p = self.perf("-m", "accumulator", "--streaming", protocol="grpc", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--streaming with a sequence model or -a is not supported", p.stderr)


class InferPerfAsyncAndCompressionTest(PerfTestCase):
    def through_relay(self, *args):
        relay = Relay(self.server.grpc_port)
        try:
            p = self.perf(*args, protocol="grpc", port=relay.port)
            return p, relay
        finally:
            relay.close()

    def test_async_keeps_the_concurrency_on_one_grpc_connection(self):
        # Sync: a client (so a connection) per concurrent request, plus the metadata one.
        p, relay = self.through_relay("-m", "simple", "--concurrency-range", "4", "--json", *COUNT)
        self.assertGreaterEqual(relay.connections, 5)
        p, relay = self.through_relay("-m", "simple", "--concurrency-range", "4", "-a", "--json",
                                      *COUNT)
        self.assertLessEqual(relay.connections, 2)
        r = p.report["results"][0]
        self.assertGreater(r["requests"], 20)
        self.assertEqual(r["errors"], 0)

    def test_async_over_http(self):
        before = self.success_count("simple")
        p = self.perf("-m", "simple", "--concurrency-range", "3", "--async", "--json", *COUNT)
        r = p.report["results"][0]
        self.assertEqual(r["errors"], 0)
        self.assertGreaterEqual(self.success_count("simple") - before, r["requests"])

    def test_grpc_compression_shrinks_the_requests_on_the_wire(self):
        # 64 KiB of zeros a request, 20 requests a second for about a second.
        args = ("-m", "identity", "--shape", "INPUT0:16384", "--input-data", "zero",
                "--request-rate-range", "20", "--max-threads", "4", "--json")
        p, plain = self.through_relay(*args)
        requests = p.report["results"][0]["requests"]
        self.assertGreater(plain.sent, requests * 65536)
        for algorithm in ("gzip", "deflate"):
            with self.subTest(algorithm=algorithm):
                p, packed = self.through_relay(*args, "--grpc-compression-algorithm", algorithm)
                r = p.report["results"][0]
                self.assertGreater(r["requests"], 0)
                self.assertEqual(r["errors"], 0)
                self.assertLess(packed.sent * 10, plain.sent)

    def test_compression_needs_grpc_and_a_known_algorithm(self):
        p = self.perf("-m", "simple", "--grpc-compression-algorithm", "gzip", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--grpc-compression-algorithm needs -i grpc", p.stderr)
        p = self.perf("-m", "simple", "--grpc-compression-algorithm", "br", protocol="grpc",
                      check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("must be none, gzip or deflate", p.stderr)


class InferPerfRequestIntervalsTest(PerfTestCase):
    def intervals(self, *gaps):
        f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
        f.write("".join("%s\n" % g for g in gaps))
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_the_schedule_sets_the_rate(self):
        # 50/s, then gaps of 5 and 95 ms (20/s on average); without the schedule a
        # closed loop would run thousands a second.
        for gaps, rate, low, high in (((20000,), 50, 35, 56), ((5000, 95000), 20, 14, 23)):
            with self.subTest(gaps=gaps):
                p = self.perf("-m", "simple", "--request-intervals", self.intervals(*gaps),
                              "--measurement-interval", "1000", "--max-trials", "1",
                              "--max-threads", "4", "--json",
                              short=False)
                r = p.report["results"][0]
                self.assertAlmostEqual(r["request_rate"], rate, places=3)
                self.assertGreaterEqual(r["throughput_infer_per_sec"], low)
                self.assertLessEqual(r["throughput_infer_per_sec"], high)
                self.assertEqual(r["errors"], 0)

    def test_bad_files_and_combinations_are_refused(self):
        good = self.intervals(1000)
        for extra, words in ((["--concurrency-range", "2"], "--request-intervals cannot be used "
                              "with --concurrency-range or --request-rate-range"),
                             (["--request-rate-range", "5"], "cannot be used with"),):
            p = self.perf("-m", "simple", "--request-intervals", good, *extra, check=False)
            self.assertEqual(p.returncode, 2)
            self.assertIn(words, p.stderr)
        bad = self.intervals(1000, "ten")
        p = self.perf("-m", "simple", "--request-intervals", bad, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("line 2: expected a whole number of microseconds, got 'ten'", p.stderr)
        p = self.perf("-m", "simple", "--request-intervals", "/nonexistent/gaps", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot read '/nonexistent/gaps'", p.stderr)


if __name__ == "__main__":
    unittest.main()
