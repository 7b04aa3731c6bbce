#!/usr/bin/env python3
"""Closed-loop load through CUDA shared memory: each client thread owns an input and an output
region in device memory (cudaMalloc through CuPy, exported with cudaIpcGetMemHandle),
registered with inferd over HTTP (/v2/cudasharedmemory/region/<r>/register); each request names
the regions instead of carrying tensor bytes. infer-perf has no CUDA shared-memory mode, hence
this client (Python: its own overhead is part of what it measures; the JSON says so).

Usage: cuda_shm_client.py HOST:PORT MODEL --concurrency 1,4,16 [--batch B] [--seconds S]
Prints JSON: one result per concurrency (inferences/s, images/s) and a correctness check of the
first response against the same input sent as binary HTTP data."""

import argparse
import base64
import http.client
import json
import struct
import threading
import time

import cupy

IMAGE = 3 * 224 * 224 * 4
LOGITS = 1000 * 4


def post(conn, path, body, headers=None):
    conn.request("POST", path, body=body, headers=headers or {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise RuntimeError("%s -> %d %s" % (path, r.status, data[:300]))
    return data


class Slot:
    """One client's regions: input (batch images) and output (batch logits)."""

    def __init__(self, host, port, name, batch):
        self.conn = http.client.HTTPConnection(host, port)
        self.batch = batch
        self.inp = cupy.random.rand(batch * IMAGE // 4, dtype=cupy.float32)
        self.out = cupy.cuda.runtime.malloc(batch * LOGITS)
        self.inp_ptr = cupy.cuda.runtime.malloc(batch * IMAGE)
        cupy.cuda.runtime.memcpy(self.inp_ptr, self.inp.data.ptr, batch * IMAGE, 3)
        self.names = (name + "_in", name + "_out")
        for region, ptr, size in ((self.names[0], self.inp_ptr, batch * IMAGE),
                                  (self.names[1], self.out, batch * LOGITS)):
            handle = cupy.cuda.runtime.ipcGetMemHandle(ptr)
            post(self.conn, "/v2/cudasharedmemory/region/%s/register" % region, json.dumps({
                "raw_handle": {"b64": base64.b64encode(bytes(handle)).decode()},
                "device_id": 0, "byte_size": size}))
        self.request = json.dumps({
            "inputs": [{"name": "input", "shape": [batch, 3, 224, 224], "datatype": "FP32",
                        "parameters": {"shared_memory_region": self.names[0],
                                       "shared_memory_byte_size": batch * IMAGE}}],
            "outputs": [{"name": "logits",
                         "parameters": {"shared_memory_region": self.names[1],
                                        "shared_memory_byte_size": batch * LOGITS}}]})

    def infer(self, model):
        post(self.conn, "/v2/models/%s/infer" % model, self.request)

    def logits(self):
        mem = cupy.cuda.UnownedMemory(self.out, self.batch * LOGITS, self)
        arr = cupy.ndarray((self.batch * 1000,), dtype=cupy.float32,
                           memptr=cupy.cuda.MemoryPointer(mem, 0))
        return struct.unpack("<%df" % (self.batch * 1000), arr.get().tobytes())

    def close(self):
        for region in self.names:
            post(self.conn, "/v2/cudasharedmemory/region/%s/unregister" % region, b"")
        cupy.cuda.runtime.free(self.inp_ptr)
        cupy.cuda.runtime.free(self.out)


def check(host, port, model, slot):
    """The CUDA shared-memory answer equals the binary-HTTP answer for the same bytes."""
    slot.infer(model)
    via_shm = slot.logits()
    blob = slot.inp.get().tobytes()
    header = json.dumps({"inputs": [{"name": "input", "shape": [slot.batch, 3, 224, 224],
                                     "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(blob)}}],
                         "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]})
    conn = http.client.HTTPConnection(host, port)
    data = post(conn, "/v2/models/%s/infer" % model, header.encode() + blob,
                {"Content-Type": "application/octet-stream",
                 "Inference-Header-Content-Length": str(len(header))})
    hlen = len(data) - slot.batch * LOGITS
    via_http = struct.unpack("<%df" % (slot.batch * 1000), data[hlen:])
    return max(abs(a - b) for a, b in zip(via_shm, via_http))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("model")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    host, port = args.url.rsplit(":", 1)
    port = int(port)
    levels = [int(c) for c in args.concurrency.split(",")]
    slots = [Slot(host, port, "shm%d" % i, args.batch) for i in range(max(levels))]
    out = {"client": "python threads + http.client (GIL-bound)", "batch": args.batch,
           "max_abs_diff_vs_binary_http": check(host, port, args.model, slots[0]), "results": []}
    for c in levels:
        counts = [0] * c
        stop = time.perf_counter() + 1.0 + args.seconds  # 1 s of warm-up, then measured

        def worker(i):
            while True:
                now = time.perf_counter()
                if now >= stop:
                    return
                slots[i].infer(args.model)
                if now >= stop - args.seconds:
                    counts[i] += 1

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(c)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        n = sum(counts)
        out["results"].append({"concurrency": c, "inferences_per_sec": n / args.seconds,
                               "images_per_sec": n * args.batch / args.seconds})
    for s in slots:
        s.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
