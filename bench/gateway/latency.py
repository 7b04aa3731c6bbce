#!/usr/bin/python3
"""Closed-loop latency client for bench/gateway/run.sh (standard library only).

Classifies the same held-out digit PNGs, one request at a time over one
keep-alive HTTP connection, through each target in turn, interleaved in
rounds so that background load hits all targets alike:
  direct   POST /v2/models/digits_pipeline/infer on inferd (binary BYTES input)
  gateway  POST /v1/classify/digits_pipeline on infer-gateway (-> inferd over gRPC)
  gateway_shm  the same on a gateway started with --shared-memory system
Prints one JSON object: per target p50/p90/p99 latency in microseconds and
the count."""

import argparse
import http.client
import json
import os
import struct
import time


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def direct_request(image):
    header = json.dumps({"inputs": [{"name": "IMAGE", "shape": [1, 1], "datatype": "BYTES",
                                     "parameters": {"binary_data_size": len(image) + 4}}],
                         "outputs": [{"name": "PROBABILITIES",
                                      "parameters": {"binary_data": True}}]}).encode()
    body = header + struct.pack("<I", len(image)) + image
    return "/v2/models/digits_pipeline/infer", body, {
        "Inference-Header-Content-Length": str(len(header)),
        "Content-Type": "application/octet-stream"}


def gateway_request(image):
    return "/v1/classify/digits_pipeline?top_k=1", image, {
        "Content-Type": "application/octet-stream"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", action="append", required=True,
                   help="NAME=PORT:direct|gateway (repeatable)")
    p.add_argument("--images", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--per-round", type=int, default=200)
    args = p.parse_args()
    index = json.load(open(os.path.join(args.images, "index.json")))
    images = [open(os.path.join(args.images, n), "rb").read()
              for n in sorted(index) if n.endswith(".png")]
    targets = []
    for t in args.target:
        name, rest = t.split("=")
        port, kind = rest.split(":")
        conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
        make = direct_request if kind == "direct" else gateway_request
        targets.append((name, conn, make, []))
    for name, conn, make, _ in targets:  # warm up: connections, caches, regions
        for image in images[:50]:
            path, body, headers = make(image)
            conn.request("POST", path, body, headers)
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise SystemExit("%s answered %d" % (name, r.status))
    k = 0
    for _ in range(args.rounds):
        for name, conn, make, samples in targets:
            for _ in range(args.per_round):
                path, body, headers = make(images[k % len(images)])
                k += 1
                t0 = time.perf_counter()
                conn.request("POST", path, body, headers)
                r = conn.getresponse()
                r.read()
                samples.append(time.perf_counter() - t0)
                if r.status != 200:
                    raise SystemExit("%s answered %d" % (name, r.status))
    out = {}
    for name, _, _, samples in targets:
        s = sorted(samples)
        out[name] = {"count": len(s), "p50_us": percentile(s, 0.5) * 1e6,
                     "p90_us": percentile(s, 0.9) * 1e6, "p99_us": percentile(s, 0.99) * 1e6}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
