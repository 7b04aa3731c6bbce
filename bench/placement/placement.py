#!/usr/bin/python3
"""Driver of bench/placement/run.sh: what placing pre-processing costs, three
ways, measured by one client against one inferd (docs/placement.md).

  in process  the ensemble resnet50_pipeline: the encoded image goes to
              inferd, which decodes, resizes and normalises it
              (resnet50_preprocess) and runs resnet50, all in one process.
  in pod      a separate process on the same host (the middleman container)
              has made the tensor; it writes it into a system shared-memory
              region registered with inferd and sends only the request.
  other pod   the tensor travels in the request body over gRPC: loopback
              here, and (--veth-url) to an inferd in another network
              namespace through a veth pair, as between two pods on a node.

Data movement alone: the `identity_224` model ([1,3,224,224] FP32, 602,112
bytes, returned unchanged) with the tensor there and back (shared memory:
input and output regions; copy: request and response bodies). End to end:
resnet50 on that tensor, and the ensemble on a JPEG; plus
resnet50_preprocess alone, the pre-processing that the in-pod and other-pod
variants do elsewhere.

Every request is a gRPC ModelInfer from this process (the protocol the
middleman uses), at concurrency 1. Variants alternate within each round (the
order reversed every round) so that drift in the machine's load spreads over
all of them; reported: the median latency over every request of every round,
the spread of the round medians, and CPU per request (this client's process
time + inferd's utime+stime, from /proc) over the same requests.

Output: JSON on stdout (run.sh writes the table)."""

import argparse
import io
import json
import mmap
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

import grpc

TENSOR_BYTES = 3 * 224 * 224 * 4


def load_protos(proto_dir, out_dir):
    subprocess.run(["protoc", "--proto_path=" + proto_dir, "--python_out=" + out_dir,
                    os.path.join(proto_dir, "grpc_service.proto"),
                    os.path.join(proto_dir, "model_config.proto")], check=True)
    sys.path.insert(0, out_dir)
    import grpc_service_pb2
    return grpc_service_pb2


def http_post(base, path, obj):
    req = urllib.request.Request(base + path, data=json.dumps(obj).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


class Region:
    """A POSIX shared-memory object registered with inferd (HTTP API)."""

    def __init__(self, http_base, name, size):
        self.http_base, self.name, self.size = http_base, name, size
        self.key = "/" + name
        fd = os.open("/dev/shm" + self.key, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, size)
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        http_post(http_base, "/v2/systemsharedmemory/region/%s/register" % name,
                  {"key": self.key, "offset": 0, "byte_size": size})

    def close(self):
        try:
            http_post(self.http_base, "/v2/systemsharedmemory/region/%s/unregister" % self.name, {})
        finally:
            self.map.close()
            os.unlink("/dev/shm" + self.key)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_jpeg():
    """A 640x480 photo-like JPEG (smooth gradients and noise, quality 90),
    the same bytes on every run."""
    import numpy
    from PIL import Image
    rng = numpy.random.default_rng(0)
    y, x = numpy.mgrid[0:480, 0:640]
    img = numpy.stack([(x * 255 // 639), (y * 255 // 479), ((x + y) * 255 // 1118)], axis=-1)
    img = numpy.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(numpy.uint8)
    out = io.BytesIO()
    Image.fromarray(img).save(out, format="JPEG", quality=90)
    return out.getvalue()


class Variant:
    """One way of sending one kind of request; call() does one request."""

    def __init__(self, name, group, model, inferd_pid, build):
        self.name, self.group, self.model, self.inferd_pid = name, group, model, inferd_pid
        self.call = build()
        self.latencies, self.round_medians, self.cpu, self.requests = [], [], 0.0, 0

    def block(self, n):
        lat = []
        c0, s0 = time.process_time(), cpu_seconds(self.inferd_pid)
        for _ in range(n):
            t0 = time.perf_counter()
            self.call()
            lat.append(time.perf_counter() - t0)
        self.cpu += time.process_time() - c0 + cpu_seconds(self.inferd_pid) - s0
        self.requests += n
        self.latencies += lat
        self.round_medians.append(statistics.median(lat))

    def result(self):
        return {"variant": self.name, "group": self.group, "model": self.model,
                "requests": self.requests,
                "p50_ms": round(statistics.median(self.latencies) * 1e3, 3),
                "round_p50_ms": [round(m * 1e3, 3) for m in self.round_medians],
                "cpu_ms_per_request": round(self.cpu / self.requests * 1e3, 3)}


def set_shm(parameters, region, size):
    """A tensor's parameters naming its place in a registered region."""
    parameters["shared_memory_region"].string_param = region
    parameters["shared_memory_byte_size"].int64_param = size
    parameters["shared_memory_offset"].int64_param = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grpc", required=True, help="inferd's gRPC HOST:PORT on this host")
    ap.add_argument("--http", required=True, help="inferd's HTTP HOST:PORT (region registration)")
    ap.add_argument("--pid", type=int, required=True, help="inferd's pid (CPU time)")
    ap.add_argument("--veth-grpc", help="the same inferd setup in another network namespace")
    ap.add_argument("--veth-pid", type=int)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--identity-requests", type=int, default=400, help="per variant and round")
    ap.add_argument("--model-requests", type=int, default=10, help="per variant and round")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="inferd-placement-")
    pb = load_protos(a.proto_dir, tmp)
    options = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]

    def stub_for(url):
        ch = grpc.insecure_channel(url, options=options)
        grpc.channel_ready_future(ch).result(timeout=10)
        return ch.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                              request_serializer=lambda m: m.SerializeToString(),
                              response_deserializer=pb.ModelInferResponse.FromString)

    local = stub_for(a.grpc)
    remote = stub_for(a.veth_grpc) if a.veth_grpc else None
    http_base = "http://" + a.http
    tag = "placement-%d" % os.getpid()
    # The producer's tensor (what pre-processing made), written anew for
    # every request: into the slot (in pod) or into the request (copy).
    tensor = struct.pack("<%df" % (TENSOR_BYTES // 4), *[(i % 255) / 255.0 for i in range(TENSOR_BYTES // 4)])
    jpeg = test_jpeg()
    regions = [Region(http_base, tag + "-in", TENSOR_BYTES), Region(http_base, tag + "-out", TENSOR_BYTES)]
    shm_in, shm_out = regions

    def tensor_request(model, input_name, via_shm, output=None):
        r = pb.ModelInferRequest(model_name=model)
        t = r.inputs.add(name=input_name, datatype="FP32", shape=[1, 3, 224, 224])
        if via_shm:
            set_shm(t.parameters, shm_in.name, TENSOR_BYTES)
            if output:
                o = r.outputs.add(name=output)
                set_shm(o.parameters, shm_out.name, TENSOR_BYTES)
        return r

    def copy_call(stub, model, input_name):
        def build():
            base = tensor_request(model, input_name, False)

            def call():
                r = pb.ModelInferRequest()
                r.CopyFrom(base)
                r.raw_input_contents.append(tensor)
                resp = stub(r, timeout=60)
                assert resp.raw_output_contents, resp
            return call
        return build

    def shm_call(model, input_name, output=None):
        def build():
            r = tensor_request(model, input_name, True, output)

            def call():
                shm_in.map[0:TENSOR_BYTES] = tensor
                resp = local(r, timeout=60)
                if output:
                    assert not any(resp.raw_output_contents), "output not in the region"
                    assert shm_out.map[0:4] == tensor[0:4]
                else:
                    assert resp.raw_output_contents, resp
            return call
        return build

    def image_call(model, input_name, output=None):
        def build():
            r = pb.ModelInferRequest(model_name=model)
            r.inputs.add(name=input_name, datatype="BYTES", shape=[1, 1])
            r.raw_input_contents.append(struct.pack("<I", len(jpeg)) + jpeg)
            if output:    # the tensor into shared memory: preprocessing's cost alone
                o = r.outputs.add(name=output)
                set_shm(o.parameters, shm_out.name, TENSOR_BYTES)

            def call():
                local(r, timeout=60)
            return call
        return build

    specs = [
        ("in pod: shared memory", "transfer", "identity_224", shm_call("identity_224", "INPUT0", "OUTPUT0"), a.pid),
        ("other pod: gRPC, loopback", "transfer", "identity_224", copy_call(local, "identity_224", "INPUT0"), a.pid),
        ("in process: ensemble", "e2e", "resnet50_pipeline", image_call("resnet50_pipeline", "IMAGE"), a.pid),
        ("in pod: shared memory", "e2e", "resnet50", shm_call("resnet50", "input"), a.pid),
        ("other pod: gRPC, loopback", "e2e", "resnet50", copy_call(local, "resnet50", "input"), a.pid),
        ("pre-processing alone", "pre", "resnet50_preprocess",
         image_call("resnet50_preprocess", "image_bytes", "input"), a.pid),
    ]
    if remote:
        specs.insert(2, ("other pod: gRPC, veth", "transfer", "identity_224",
                         copy_call(remote, "identity_224", "INPUT0"), a.veth_pid))
        specs.append(("other pod: gRPC, veth", "e2e", "resnet50", copy_call(remote, "resnet50", "input"),
                      a.veth_pid))
    try:
        variants = [Variant(n, g, m, pid, b) for n, g, m, b, pid in specs]
        for v in variants:          # warm-up: connections, first runs, allocators
            for _ in range(3):
                v.call()
        order = list(variants)
        for rnd in range(a.rounds):
            for v in order:
                v.block(a.identity_requests if v.group == "transfer" else a.model_requests)
            print("round %d done" % (rnd + 1), file=sys.stderr)
            order.reverse()
        json.dump({"jpeg_bytes": len(jpeg), "tensor_bytes": TENSOR_BYTES, "rounds": a.rounds,
                   "results": [v.result() for v in variants]}, sys.stdout, indent=1)
        print()
    finally:
        for r in regions:
            r.close()


if __name__ == "__main__":
    main()
