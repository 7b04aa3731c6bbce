#!/usr/bin/python3
"""The Python example models of examples/models, driven as Triton's client examples drive
their namesakes (PROTOCOL-NEXT §4): simple_sequence (HTTP, uint64 and string correlation ids),
simple_dyna_sequence (gRPC ModelStreamInfer, uint64 ids; a string id is refused because its
CORRID control is UINT64), char_streamer (a decoupled model streaming one response per
character over a gRPC stream, interleaved, with the empty final response), and
digits_pipeline_py (a Python pre-processing step in an ensemble) giving the same classes as the
OpenCV digits_pipeline.

These need the Python backend (libinferd_python.so in the build's backend directory): without
it every test is skipped with that reason."""

import os
import queue
import shutil
import struct
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pipeline_util as pu  # noqa: E402
from harness import parse_infer_response  # noqa: E402
from test_grpc_compat import SERVICE, GrpcServerTestCase, grpc  # noqa: E402

EXAMPLES = os.path.join(harness.REPO_ROOT, "examples", "models")
BACKEND_DIR = os.path.normpath(os.path.join(os.path.dirname(harness.INFERD_BIN), "..", "lib",
                                            "inferd", "backends"))
PYTHON_BACKEND = os.path.join(BACKEND_DIR, "libinferd_python.so")


def why_skip():
    if not os.path.exists(PYTHON_BACKEND):
        return ("the Python backend is not built (%s missing); these tests run once the Python "
                "backend of issue 23 is merged" % PYTHON_BACKEND)
    if grpc is None:
        return "grpcio is not installed (python3-grpcio)"
    return None


SKIP = why_skip()
PY_MODELS = ("simple_sequence", "simple_dyna_sequence", "char_streamer")
DIGITS = ("digits", "digits_preprocess", "digits_pipeline", "digits_preprocess_py",
          "digits_pipeline_py")

# Triton's sequence client examples: each sequence sends 0 (or 100) then these values
# (negated for the second sequence), START on the first request and END on the last.
VALUES = [11, 7, 5, 3, 2, 0, 1]


def sequence_inputs(second):
    return [100] + [-v for v in VALUES] if second else [0] + VALUES


def expected_simple(second):
    sent = sequence_inputs(second)
    return [sent[0] + 1] + sent[1:]  # OUTPUT = (INPUT + START) * READY


def expected_dyna(second, corrid):
    out = expected_simple(second)
    out[-1] += corrid  # ... + END * int32(CORRID)
    return out


@unittest.skipIf(SKIP, SKIP)
class ExampleModelsTest(GrpcServerTestCase):

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        os.makedirs(repo)
        names = list(PY_MODELS)
        if pu.examples_missing() is None:
            names += DIGITS
        for m in names:
            shutil.copytree(os.path.join(EXAMPLES, m), os.path.join(repo, m),
                            ignore=shutil.ignore_patterns("__pycache__"))
            os.makedirs(os.path.join(repo, m, "1"), exist_ok=True)
        return [repo]

    def tearDown(self):
        self.assertServerAlive()

    # ---- simple_sequence: HTTP, uint64 and string ids -------------------------------------

    def http_sequence(self, model, corr, values):
        out = []
        for i, v in enumerate(values):
            req = {"inputs": [{"name": "INPUT", "shape": [1, 1], "datatype": "INT32",
                               "data": [v]}],
                   "parameters": {"sequence_id": corr, "sequence_start": i == 0,
                                  "sequence_end": i == len(values) - 1}}
            r = self.client.infer(model, req)
            self.assertOk(r, "%s sequence %r request %d" % (model, corr, i))
            out.append(r.json()["outputs"][0]["data"][0])
        return out

    def test_simple_sequence_with_uint64_ids(self):
        for corr, second in ((1000, False), (1001, True)):
            self.assertEqual(self.http_sequence("simple_sequence", corr, sequence_inputs(second)),
                             expected_simple(second))

    def test_simple_sequence_with_string_ids(self):
        for second in (False, True):
            corr = str(uuid.uuid4())
            self.assertEqual(self.http_sequence("simple_sequence", corr, sequence_inputs(second)),
                             expected_simple(second))

    def test_simple_dyna_sequence_refuses_a_string_id(self):
        req = {"inputs": [{"name": "INPUT", "shape": [1, 1], "datatype": "INT32", "data": [0]}],
               "parameters": {"sequence_id": "abc", "sequence_start": True}}
        self.assertError(self.client.infer("simple_dyna_sequence", req), 400, "CORRID",
                         "'BYTES'", "'UINT64'")

    # ---- simple_dyna_sequence: gRPC stream, two interleaved sequences -------------------------

    def infer_request(self, model, rid, inputs, params=None):
        pb = self.pb
        req = pb.ModelInferRequest(model_name=model, id=rid)
        for name, datatype, shape, raw in inputs:
            t = req.inputs.add()
            t.name, t.datatype = name, datatype
            t.shape.extend(shape)
            req.raw_input_contents.append(raw)
        for k, v in (params or {}).items():
            if isinstance(v, bool):
                req.parameters[k].bool_param = v
            elif isinstance(v, int):
                req.parameters[k].int64_param = v
            else:
                req.parameters[k].string_param = v
        return req

    def stream(self, requests, expected_finals, timeout=60):
        """Sends `requests` on one ModelStreamInfer stream and keeps it open until
        `expected_finals` responses flagged final have arrived; returns every response."""
        pb = self.pb
        done = queue.Queue()

        def gen():
            for r in requests:
                yield r
            done.get(timeout=timeout)  # keep the stream open until every answer is in

        call = self.channel.stream_stream(
            SERVICE + "ModelStreamInfer", request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.ModelStreamInferResponse.FromString)
        received, finals = [], 0
        responses = call(gen(), timeout=timeout)
        for r in responses:
            received.append((time.monotonic(), r))
            final = r.infer_response.parameters.get("triton_final_response")
            if r.error_message or final is None or final.bool_param:
                finals += 1
            if finals == expected_finals:
                done.put(True)
                break
        responses.cancel()
        return received

    def test_simple_dyna_sequence_over_a_grpc_stream(self):
        reqs = []
        seqs = {1000: sequence_inputs(False), 1001: sequence_inputs(True)}
        for i in range(len(VALUES) + 1):
            for corr, sent in seqs.items():
                reqs.append(self.infer_request(
                    "simple_dyna_sequence", "%d_%d" % (corr, i),
                    [("INPUT", "INT32", [1, 1], struct.pack("<i", sent[i]))],
                    {"sequence_id": corr, "sequence_start": i == 0,
                     "sequence_end": i == len(VALUES)}))
        received = self.stream(reqs, len(reqs))
        got = {1000: [], 1001: []}
        for _, r in received:
            self.assertEqual(r.error_message, "")
            corr = int(r.infer_response.id.split("_")[0])
            got[corr].append(struct.unpack("<i", r.infer_response.raw_output_contents[0])[0])
        self.assertEqual(got[1000], expected_dyna(False, 1000))
        self.assertEqual(got[1001], expected_dyna(True, 1001))

    # ---- char_streamer: decoupled, one response per character ---------------------------------

    def prompt_request(self, rid, text, delay_ms=None):
        data = text.encode("utf-8")
        params = {"triton_enable_empty_final_response": True}
        if delay_ms is not None:
            params["delay_ms"] = delay_ms
        return self.infer_request("char_streamer", rid,
                                  [("PROMPT", "BYTES", [1], struct.pack("<I", len(data)) + data)],
                                  params)

    def test_char_streamer_streams_each_character_then_an_empty_final(self):
        prompts = {"a": "héllo, world", "b": "streams", "empty": ""}
        received = self.stream([self.prompt_request(k, v, delay_ms=5)
                                for k, v in prompts.items()], len(prompts))
        text = {k: [] for k in prompts}
        index = {k: [] for k in prompts}
        finals = {}
        for _, r in received:
            self.assertEqual(r.error_message, "")
            resp = r.infer_response
            rid = resp.id
            self.assertNotIn(rid, finals, "a response after the final one")
            if resp.parameters["triton_final_response"].bool_param:
                finals[rid] = True
                self.assertEqual(len(resp.outputs), 0, "the final response is empty")
                continue
            outs = {o.name: resp.raw_output_contents[k] for k, o in enumerate(resp.outputs)}
            n = struct.unpack("<I", outs["TEXT"][:4])[0]
            text[rid].append(outs["TEXT"][4:4 + n].decode("utf-8"))
            index[rid].append(struct.unpack("<I", outs["INDEX"])[0])
        self.assertEqual(set(finals), set(prompts))
        for k, prompt in prompts.items():
            self.assertEqual("".join(text[k]), prompt)
            self.assertEqual(index[k], list(range(len(prompt))))

    def test_char_streamer_responses_arrive_as_produced(self):
        received = self.stream([self.prompt_request("slow", "abcdef", delay_ms=60)], 1)
        times = [t for t, r in received if not
                 r.infer_response.parameters["triton_final_response"].bool_param]
        self.assertEqual(len(times), 6)
        self.assertGreater(times[-1] - times[0], 0.2, "the characters came in one burst")

    def test_char_streamer_refuses_unary_infer(self):
        req = {"inputs": [{"name": "PROMPT", "shape": [1], "datatype": "BYTES",
                           "data": ["hi"]}]}
        r = self.client.infer("char_streamer", req)
        self.assertNotEqual(r.status, 200, r)
        self.assertIn("decoupled", r.body.decode("utf-8", "replace"))

    # ---- Python pre-processing in an ensemble -----------------------------------------------

    def classes(self, model, images):
        blobs = [b"".join(pu.bytes_element(i) for i, _ in images)]
        req = {"inputs": [{"name": "IMAGE", "shape": [len(images), 1], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blobs[0])}}],
               "outputs": [{"name": "PROBABILITIES", "parameters": {"binary_data": True}}]}
        r = self.client.infer(model, req, blobs=blobs)
        self.assertOk(r, model)
        _, outs = parse_infer_response(r)
        probs = struct.unpack("<%df" % (10 * len(images)), outs["PROBABILITIES"])
        return [max(range(10), key=lambda c: probs[10 * k + c]) for k in range(len(images))]

    @unittest.skipIf(pu.examples_missing(), pu.examples_missing())
    def test_python_preprocessing_classifies_as_the_opencv_pipeline(self):
        for kind in (".png", ".jpg"):
            images = pu.digit_images(kind)[:64]
            self.assertTrue(images)
            py = self.classes("digits_pipeline_py", images)
            cv = self.classes("digits_pipeline", images)
            same = sum(int(a == b) for a, b in zip(py, cv))
            self.assertGreaterEqual(same, len(images) - 1, (kind, py, cv))
            correct = sum(int(c == label) for c, (_, label) in zip(py, images))
            self.assertGreaterEqual(correct / len(images), 0.9, kind)

    @unittest.skipIf(pu.examples_missing(), pu.examples_missing())
    def test_python_preprocessing_refuses_a_non_image(self):
        blob = pu.bytes_element(b"hello, world")
        req = {"inputs": [{"name": "IMAGE", "shape": [1, 1], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blob)}}]}
        r = self.client.infer("digits_pipeline_py", req, blobs=[blob])
        self.assertError(r, 400, "not a PNG or JPEG image")


if __name__ == "__main__":
    unittest.main()
