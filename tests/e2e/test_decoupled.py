#!/usr/bin/python3
"""Decoupled models (model_transaction_policy { decoupled: true }) over gRPC ModelStreamInfer,
against the built-in `repeat` backend's repeat_int32 (PROTOCOL-NEXT §2, §4.1): 0, 1 and 1,000
responses, the empty final response on request, interleaved requests on one stream, errors kept
in-band, cancellation mid-stream, the unary refusals with Triton's texts, readiness and the index.
Runs with Debian's python3-grpcio (messages generated at test time, test_grpc_compat)."""

import os
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import write_model, add_sub_config, simple_request, outputs_by_name  # noqa: E402
from test_grpc_compat import SERVICE, GrpcServerTestCase, grpc  # noqa: E402

GRPC_REFUSAL = "ModelInfer RPC doesn't support models with decoupled transaction policy"
HTTP_REFUSAL = "HTTP end point doesn't support models with decoupled transaction policy"
DECOUPLED = "model_transaction_policy { decoupled: true }"
ENSEMBLE = """name: "over_repeat"
platform: "ensemble"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
        { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
        { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [ { model_name: "repeat_int32" model_version: -1
  input_map { key: "IN" value: "IN" } input_map { key: "DELAY" value: "DELAY" }
  input_map { key: "WAIT" value: "WAIT" } output_map { key: "OUT" value: "OUT" } } ] }
"""


def u32(values):
    return struct.pack("<%dI" % len(values), *values)


def i32(values):
    return struct.pack("<%di" % len(values), *values)


def final_flag(r):
    p = r.infer_response.parameters
    return p["triton_final_response"].bool_param if "triton_final_response" in p else None


class StreamHelpers:
    """Requests for repeat_int32's signature and a stream to send them on."""

    def repeat_request(self, rid, values, delays=None, wait=0, outputs=("OUT", "IDX"),
                       empty_final=None, wait_shape=(1,)):
        pb = self.pb
        delays = [0] * len(values) if delays is None else delays
        req = pb.ModelInferRequest(model_name="repeat_int32", id=rid)
        req.inputs.add(name="IN", datatype="INT32", shape=[len(values)])
        req.inputs.add(name="DELAY", datatype="UINT32", shape=[len(delays)])
        req.inputs.add(name="WAIT", datatype="UINT32", shape=list(wait_shape))
        n_wait = 1
        for d in wait_shape:
            n_wait *= d
        req.raw_input_contents.extend([i32(values), u32(delays), u32([wait] * n_wait)])
        for name in outputs:
            req.outputs.add(name=name)
        if empty_final is not None:
            req.parameters["triton_enable_empty_final_response"].bool_param = empty_final
        return req

    def stream(self, requests, timeout=60, metadata=None):
        call = self.channel.stream_stream(SERVICE + "ModelStreamInfer",
                                          request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=self.pb.ModelStreamInferResponse.FromString)
        return call(iter(requests), timeout=timeout, metadata=metadata)

    def run_stream(self, requests, timeout=60):
        responses = self.stream(requests, timeout)
        received = list(responses)
        self.assertEqual(responses.code(), grpc.StatusCode.OK)
        return received

    def values(self, r):
        out = {}
        for o, raw in zip(r.infer_response.outputs, r.infer_response.raw_output_contents):
            fmt = "<%d%s" % (len(raw) // 4, "i" if o.datatype == "INT32" else "I")
            out[o.name] = list(struct.unpack(fmt, raw))
        return out


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class DecoupledTest(StreamHelpers, GrpcServerTestCase):

    @classmethod
    def build_repository(cls, root):
        repo = harness.copy_test_models(os.path.join(root, "models"), ["simple", "repeat_int32"])
        write_model(repo, "stream_add_sub",
                    add_sub_config("stream_add_sub", "TYPE_INT32", extra=DECOUPLED))
        write_model(repo, "over_repeat", ENSEMBLE)
        return [repo]

    def tearDown(self):
        self.assertServerAlive()

    def stats(self, model):
        r = self.client.get("/v2/models/%s/stats" % model)
        self.assertOk(r)
        return r.json()["model_stats"][0]["inference_stats"]

    # -- responses ---------------------------------------------------------------------------

    def test_one_response_per_element_then_nothing_without_empty_final(self):
        got = self.run_stream([self.repeat_request("a", [100, 101, 102], [10, 10, 10])])
        self.assertEqual(len(got), 3, got)
        for i, r in enumerate(got):
            self.assertEqual(r.error_message, "")
            self.assertEqual(r.infer_response.id, "a")
            self.assertEqual(r.infer_response.model_name, "repeat_int32")
            self.assertEqual(r.infer_response.model_version, "1")
            self.assertIs(final_flag(r), False)
            self.assertEqual(self.values(r), {"OUT": [100 + i], "IDX": [i]})

    def test_empty_final_response_on_request(self):
        got = self.run_stream([self.repeat_request("b", [7, 8], empty_final=True)])
        self.assertEqual(len(got), 3, got)
        self.assertEqual([final_flag(r) for r in got], [False, False, True])
        last = got[-1].infer_response
        # id, model name and version as the request gave them (no version: "")
        self.assertEqual((last.id, last.model_name, last.model_version), ("b", "repeat_int32", ""))
        self.assertEqual(len(last.outputs), 0)
        self.assertEqual(len(last.raw_output_contents), 0)
        got = self.run_stream([self.repeat_request("b2", [7, 8], empty_final=False)])
        self.assertEqual([final_flag(r) for r in got], [False, False])

    def test_zero_one_and_a_thousand_responses(self):
        self.assertEqual(self.run_stream([self.repeat_request("z", [])]), [])
        got = self.run_stream([self.repeat_request("z2", [], empty_final=True)])
        self.assertEqual(len(got), 1)
        self.assertIs(final_flag(got[0]), True)
        got = self.run_stream([self.repeat_request("one", [42])])
        self.assertEqual([self.values(r) for r in got], [{"OUT": [42], "IDX": [0]}])
        n = 1000
        got = self.run_stream([self.repeat_request("k", list(range(n)), empty_final=True)])
        self.assertEqual(len(got), n + 1)
        self.assertEqual([self.values(r)["OUT"][0] for r in got[:n]], list(range(n)))
        self.assertEqual([self.values(r)["IDX"][0] for r in got[:n]], list(range(n)))
        self.assertTrue(all(final_flag(r) is False for r in got[:n]))
        self.assertIs(final_flag(got[n]), True)

    def test_unrequested_outputs_are_pruned(self):
        got = self.run_stream([self.repeat_request("p", [5, 6], outputs=("OUT",))])
        self.assertEqual([self.values(r) for r in got], [{"OUT": [5]}, {"OUT": [6]}])

    def test_interleaved_requests_on_one_stream(self):
        # WAIT 0: each request is released at once; the three run side by side, so their
        # responses interleave. Each request's own responses stay in order.
        reqs = [self.repeat_request("r%d" % k, [k * 100 + i for i in range(5)], [40] * 5,
                                    empty_final=True) for k in range(3)]
        got = self.run_stream(reqs)
        by_id = {}
        for r in got:
            self.assertEqual(r.error_message, "")
            by_id.setdefault(r.infer_response.id, []).append(r)
        self.assertEqual(sorted(by_id), ["r0", "r1", "r2"])
        for k in range(3):
            mine = by_id["r%d" % k]
            self.assertEqual(len(mine), 6)
            self.assertEqual([self.values(r)["OUT"][0] for r in mine[:5]],
                             [k * 100 + i for i in range(5)])
            self.assertEqual([final_flag(r) for r in mine], [False] * 5 + [True])
        ids = [r.infer_response.id for r in got]
        self.assertLess(ids.index("r2"), len(ids) - 6, "responses interleave: %s" % ids)

    def test_errors_stay_in_band_and_the_stream_goes_on(self):
        reqs = [self.repeat_request("ok1", [1, 2]),
                # IN and DELAY differ: the backend fails the request (after validation)
                self.repeat_request("mismatch", [1, 2, 3], [0, 0]),
                # WAIT of two elements: refused before inference (config dims [1])
                self.repeat_request("badwait", [1], wait_shape=(2,)),
                self.repeat_request("ok2", [3])]
        got = self.run_stream(reqs)
        by_id = {}
        for r in got:
            by_id.setdefault(r.infer_response.id, []).append(r)
        self.assertEqual([self.values(r)["OUT"] for r in by_id["ok1"]], [[1], [2]])
        self.assertEqual([self.values(r)["OUT"] for r in by_id["ok2"]], [[3]])
        [m] = by_id["mismatch"]
        self.assertIn("expected IN and DELAY shape to match, got [3] and [2]", m.error_message)
        self.assertEqual(m.infer_response.model_name, "repeat_int32")
        self.assertIs(final_flag(m), True)
        [w] = by_id["badwait"]
        self.assertIn("WAIT", w.error_message)
        self.assertEqual(w.infer_response.model_name, "", "a rejection carries the id only")
        self.assertIsNone(final_flag(w), "a rejection carries no triton_final_response")

    def test_cancelling_the_stream_stops_the_model(self):
        before = self.stats("repeat_int32")["fail"]["count"]
        responses = self.stream([self.repeat_request("c", list(range(200)), [50] * 200)],
                                timeout=60)
        first = []
        for r in responses:
            first.append(r)
            if len(first) == 3:
                break
        responses.cancel()
        self.assertEqual([self.values(r)["IDX"][0] for r in first], [0, 1, 2])
        # The worker sees the cancellation and ends the request long before its 10 s.
        self.assertTrue(harness.wait_until(
            lambda: self.stats("repeat_int32")["fail"]["count"] == before + 1, timeout=3),
            self.stats("repeat_int32"))
        got = self.run_stream([self.repeat_request("after", [9])])
        self.assertEqual([self.values(r)["OUT"] for r in got], [[9]])

    def test_many_concurrent_streams(self):
        errors = []

        def one(k):
            try:
                got = self.run_stream([self.repeat_request("s%d" % k, list(range(20)), [1] * 20,
                                                           empty_final=True)])
                if len(got) != 21 or final_flag(got[-1]) is not True:
                    errors.append((k, len(got)))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append((k, e))

        threads = [threading.Thread(target=one, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_a_model_that_is_not_decoupled_on_the_stream(self):
        pb = self.pb
        req = pb.ModelInferRequest(model_name="simple", id="s")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        req.raw_input_contents.extend([i32(range(16)), i32([1] * 16)])
        got = self.run_stream([self.repeat_request("d", [1, 2], [100, 100]), req])
        self.assertEqual([r.infer_response.id for r in got], ["s", "d", "d"])
        self.assertIs(final_flag(got[0]), True)

    # -- unary refusals, readiness, ensembles --------------------------------------------------

    def test_unary_grpc_refuses_a_decoupled_model(self):
        call = self.channel.unary_unary(SERVICE + "ModelInfer",
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=self.pb.ModelInferResponse.FromString)
        for model in ("repeat_int32", "stream_add_sub"):
            req = self.repeat_request("u", [1])
            req.model_name = model
            with self.assertRaises(grpc.RpcError) as e:
                call(req, timeout=20)
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
            self.assertEqual(e.exception.details(), GRPC_REFUSAL)

    def test_http_infer_refuses_a_decoupled_model(self):
        req, _ = simple_request(list(range(16)), [1] * 16)
        r = self.client.infer("stream_add_sub", req)
        self.assertEqual(r.status, 501, r)
        self.assertEqual(r.json(), {"error": HTTP_REFUSAL})
        body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [1]},
                           {"name": "DELAY", "datatype": "UINT32", "shape": [1], "data": [0]},
                           {"name": "WAIT", "datatype": "UINT32", "shape": [1], "data": [0]}]}
        r = self.client.infer("repeat_int32", body)
        self.assertEqual(r.status, 501, r)
        self.assertEqual(r.json(), {"error": HTTP_REFUSAL})
        # an ordinary model still answers
        req, _ = simple_request(list(range(16)), [2] * 16)
        r = self.client.infer("simple", req)
        self.assertOk(r)
        self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [i + 2 for i in range(16)])

    def test_decoupled_models_are_ready_and_in_the_index(self):
        for model in ("repeat_int32", "stream_add_sub"):
            self.assertOk(self.client.get("/v2/models/%s/ready" % model))
            config = self.client.get("/v2/models/%s/config" % model).json()
            self.assertTrue(config["model_transaction_policy"]["decoupled"], config)
        index = {e["name"]: e for e in self.client.post("/v2/repository/index").json()}
        self.assertEqual(index["repeat_int32"]["state"], "READY", index)
        self.assertEqual(self.client.get("/v2/health/ready").status, 200)

    def test_an_ensemble_step_on_a_decoupled_model_is_refused(self):
        body = {"inputs": [{"name": "IN", "datatype": "INT32", "shape": [1], "data": [1]},
                           {"name": "DELAY", "datatype": "UINT32", "shape": [1], "data": [0]},
                           {"name": "WAIT", "datatype": "UINT32", "shape": [1], "data": [0]}]}
        r = self.client.infer("over_repeat", body)
        self.assertNotEqual(r.status, 200, r)
        self.assertIn("ensembles do not support decoupled composing models", r.json()["error"])


RELAY = """name: "%s"
backend: "bls_relay"
max_batch_size: 0
model_transaction_policy { decoupled: true }
parameters { key: "callee" value { string_value: "%s" } }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
        { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
        { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
         { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] } ]
"""


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class CallsIntoTheServerTest(StreamHelpers, GrpcServerTestCase):
    """A backend calling other models (ABI v2 infer_*, Triton's BLS): the test backend
    bls_relay relays each response of its callee as its own."""

    @classmethod
    def build_repository(cls, root):
        backends = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
            harness.INFERD_BIN))), "test-backends")
        if not os.path.exists(os.path.join(backends, "libinferd_bls_relay.so")):
            raise unittest.SkipTest("the bls_relay test backend is not built")
        cls.SERVER_ARGS = ("--backend-directory", backends)
        repo = harness.copy_test_models(os.path.join(root, "models"), ["repeat_int32"])
        write_model(repo, "relay", RELAY % ("relay", "repeat_int32"))
        write_model(repo, "relay_nowhere", RELAY % ("relay_nowhere", "no_such_model"))
        return [repo]

    def tearDown(self):
        self.assertServerAlive()

    def test_a_decoupled_callee_s_responses_are_relayed_as_they_come(self):
        req = self.repeat_request("bls", [4, 5, 6], [20, 20, 20], empty_final=True)
        req.model_name = "relay"
        got = self.run_stream([req])
        self.assertEqual([self.values(r) for r in got[:3]],
                         [{"OUT": [4 + i], "IDX": [i]} for i in range(3)])
        self.assertEqual([r.infer_response.model_name for r in got], ["relay"] * 4)
        self.assertEqual([final_flag(r) for r in got], [False, False, False, True])

    def test_a_failing_call_is_the_request_s_error(self):
        req = self.repeat_request("bls-err", [1])
        req.model_name = "relay_nowhere"
        got = self.run_stream([req])
        self.assertEqual(len(got), 1, got)
        self.assertIn("no_such_model", got[0].error_message)
        self.assertIs(final_flag(got[0]), True)
        ok = self.repeat_request("bls-ok", [8])
        ok.model_name = "relay"
        self.assertEqual([self.values(r)["OUT"] for r in self.run_stream([ok])], [[8]])


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class RepeatLoadChecksTest(StreamHelpers, GrpcServerTestCase):
    """The repeat backend checks its model's signature at load, with Triton's wording; an
    unload with requests in flight stops them (FINAL) and is clean."""
    SERVER_ARGS = ("--model-control-mode", "explicit")

    @classmethod
    def build_repository(cls, root):
        repo = harness.copy_test_models(os.path.join(root, "models"), ["repeat_int32"])
        text = harness.read_test_config("repeat_int32")
        write_model(repo, "wrong_name", text.replace('name: "repeat_int32"', 'name: "wrong_name"')
                    .replace('name: "IN"', 'name: "INPUT"'))
        write_model(repo, "not_decoupled", text.replace('name: "repeat_int32"',
                                                        'name: "not_decoupled"')
                    .replace("decoupled: true", "decoupled: false"))
        return [repo]

    def test_a_wrong_first_input_is_refused(self):
        r = self.client.post("/v2/repository/models/wrong_name/load")
        self.assertError(r, 400, "expected first input tensor name to be IN, got INPUT")

    def test_a_repeat_model_must_be_decoupled(self):
        r = self.client.post("/v2/repository/models/not_decoupled/load")
        self.assertError(r, 400, "decoupled")

    def test_unloading_with_requests_in_flight_ends_them(self):
        self.assertOk(self.client.post("/v2/repository/models/repeat_int32/load"))
        responses = self.stream([self.repeat_request("u", list(range(100)), [100] * 100,
                                                     empty_final=True)])
        first = next(responses)
        self.assertEqual(self.values(first)["IDX"], [0])
        started = time.monotonic()
        self.assertOk(self.client.post("/v2/repository/models/repeat_int32/unload"))
        rest = list(responses)  # the worker stops at the unload and sends FINAL
        self.assertLess(time.monotonic() - started, 5, "not the 10 s the request asked for")
        self.assertEqual(responses.code(), grpc.StatusCode.OK)
        self.assertIs(final_flag(rest[-1]), True)
        self.assertTrue(harness.wait_until(
            lambda: self.client.get("/v2/models/repeat_int32/ready").status != 200, timeout=5))
        self.assertServerAlive()


if __name__ == "__main__":
    unittest.main()
