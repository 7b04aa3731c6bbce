#!/usr/bin/python3
"""Tokens per second of a streaming (decoupled) Python model through inferd, over a gRPC
ModelStreamInfer stream and over Server-Sent Events (POST .../generate_stream).

The model is examples/models/char_streamer (one response per character of PROMPT, no pause).
Each transport gets the same prompts, one stream at a time and then STREAMS streams at once;
the figure is responses received per second of wall time, and the time to the first token.

  bench/python/stream_tokens.py [--chars N] [--rounds R] [--streams S]

Starts its own inferd (build/bin/inferd) on examples/models' char_streamer and the built-in
repeat_int32 (the same stream through the C++ `repeat` backend, for comparison) on loopback
ports it picks, and stops it. Needs Debian's python3-grpcio (run with /usr/bin/python3).
"""

import argparse
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import harness  # noqa: E402
from test_grpc_compat import SERVICE, generate_messages, grpc  # noqa: E402


def grpc_char_request(pb, prompt, rid):
    req = pb.ModelInferRequest(model_name="char_streamer", id=rid)
    req.inputs.add(name="PROMPT", datatype="BYTES", shape=[1])
    data = prompt.encode()
    req.raw_input_contents.append(struct.pack("<I", len(data)) + data)
    return req


def grpc_repeat_request(pb, n, rid):
    req = pb.ModelInferRequest(model_name="repeat_int32", id=rid)
    req.inputs.add(name="IN", datatype="INT32", shape=[n])
    req.inputs.add(name="DELAY", datatype="UINT32", shape=[n])
    req.inputs.add(name="WAIT", datatype="UINT32", shape=[1])
    req.raw_input_contents.extend([struct.pack("<%di" % n, *range(n)),
                                   struct.pack("<%dI" % n, *([0] * n)), struct.pack("<I", 0)])
    return req


def grpc_stream(channel, pb, make_request, expected):
    """One stream with one request; returns (tokens, seconds, first-token seconds)."""
    call = channel.stream_stream(SERVICE + "ModelStreamInfer",
                                 request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=pb.ModelStreamInferResponse.FromString)
    start = time.perf_counter()
    first = None
    tokens = 0
    for r in call(iter([make_request()]), timeout=120):
        if r.error_message:
            raise RuntimeError("stream error: " + r.error_message)
        if r.infer_response.outputs:
            tokens += 1
            if first is None:
                first = time.perf_counter() - start
        if tokens == expected:
            break
    return tokens, time.perf_counter() - start, first or 0.0


def sse_stream(port, model, body, expected):
    """One /generate_stream request over a raw socket; counts `data:` events."""
    payload = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    start = time.perf_counter()
    sock.sendall(b"POST /v2/models/%s/generate_stream HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                 b"Connection: close\r\n\r\n" % (model.encode(), len(payload)) + payload)
    first = None
    tokens = 0
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
        n = buf.count(b"data: ")
        if n and first is None:
            first = time.perf_counter() - start
        if n >= expected and buf.endswith(b"\r\n0\r\n\r\n"):
            break
    sock.close()
    tokens = buf.count(b"data: ")
    if b'"error"' in buf:
        raise RuntimeError("SSE error: " + buf[-300:].decode(errors="replace"))
    return tokens, time.perf_counter() - start, first or 0.0


def run_parallel(fn, streams, rounds):
    results = []
    lock = threading.Lock()

    def worker():
        for _ in range(rounds):
            r = fn()
            with lock:
                results.append(r)

    threads = [threading.Thread(target=worker) for _ in range(streams)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    tokens = sum(r[0] for r in results)
    first = sorted(r[2] for r in results)[len(results) // 2]
    return tokens / wall, first


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chars", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--streams", type=int, default=4)
    args = ap.parse_args()
    if grpc is None:
        sys.exit("python3-grpcio is needed (run with /usr/bin/python3)")
    tmp = tempfile.mkdtemp(prefix="inferd-bench-stream-")
    try:
        repo = os.path.join(tmp, "models")
        os.makedirs(repo)
        for m in ("char_streamer", "repeat_int32"):
            shutil.copytree(os.path.join(ROOT, "examples", "models", m), os.path.join(repo, m))
        server = harness.GrpcServer([repo])
        server.start()
        try:
            pb, _ = generate_messages(os.path.join(tmp, "gen"))
            channel = grpc.insecure_channel("127.0.0.1:%d" % server.grpc_port)
            prompt = ("inferd streams one token per response. " * (args.chars // 38 + 1))[:args.chars]
            n = args.chars
            cases = [
                ("python char_streamer, gRPC stream",
                 lambda: grpc_stream(channel, pb, lambda: grpc_char_request(pb, prompt, "b"), n)),
                ("python char_streamer, SSE",
                 lambda: sse_stream(server.port, "char_streamer", {"PROMPT": prompt}, n)),
                ("C++ repeat_int32, gRPC stream",
                 lambda: grpc_stream(channel, pb, lambda: grpc_repeat_request(pb, n, "b"), n)),
                ("C++ repeat_int32, SSE",
                 lambda: sse_stream(server.port, "repeat_int32",
                                    {"IN": list(range(n)), "DELAY": [0] * n, "WAIT": 0}, n)),
            ]
            print("| model, transport | tokens/s, 1 stream | first token (median) | "
                  "tokens/s, %d streams |" % args.streams)
            print("| --- | --- | --- | --- |")
            for name, fn in cases:
                fn()  # warm-up
                one, first = run_parallel(fn, 1, args.rounds)
                many, _ = run_parallel(fn, args.streams, args.rounds)
                print("| %s | %.0f | %.1f ms | %.0f |" % (name, one, first * 1000, many))
            channel.close()
        finally:
            server.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
