#!/usr/bin/python3
"""Markdown for docs/performance.md (section placement) from placement.py's
JSON. Usage: report.py RESULTS.json COMMAND DATE CORES LOAD_BEFORE LOAD_AFTER VETH_NOTE PERF.txt
(PERF.txt: lines "MODE P50_MS INFER_PER_S" from the infer-perf cross-check)"""

import json
import statistics
import sys


def main():
    path, command, date, cores, load_before, load_after, veth_note, perf_path = sys.argv[1:9]
    with open(path) as f:
        d = json.load(f)
    rows = {(r["group"], r["variant"]): r for r in d["results"]}

    def row(r, what):
        spread = "%.2f-%.2f" % (min(r["round_p50_ms"]), max(r["round_p50_ms"]))
        return "| %s | %s | %.2f | %s | %.2f |" % (r["variant"], what, r["p50_ms"], spread,
                                                   r["cpu_ms_per_request"])

    def ratio(a, b, key):
        return rows[a][key] / rows[b][key]

    shm_t, grpc_t = ("transfer", "in pod: shared memory"), ("transfer", "other pod: gRPC, loopback")
    veth_t, veth_e = ("transfer", "other pod: gRPC, veth"), ("e2e", "other pod: gRPC, veth")
    shm_e, grpc_e = ("e2e", "in pod: shared memory"), ("e2e", "other pod: gRPC, loopback")
    ens, pre = ("e2e", "in process: ensemble"), ("pre", "pre-processing alone")
    out = []
    out.append("## Placing pre-processing: in process, in the pod, in another pod (issue 27)")
    out.append("")
    out.append("Command: `%s` (measured %s on the %s-core development machine; load average %s "
               "before, %s after). One client (bench/placement/placement.py, Python grpcio, "
               "gRPC ModelInfer like the middleman), concurrency 1, %d rounds with the variants "
               "alternating (order reversed each round); p50 over every request of every round, "
               "the range of the round medians, and CPU per request = the client's process time + "
               "inferd's utime+stime over the same requests. The tensor is resnet50's input, "
               "[1,3,224,224] FP32 = %s bytes, written anew for every request (into the slot, or "
               "into the request); the JPEG is 640x480, %s bytes. veth: %s."
               % (command, date, cores, load_before, load_after, d["rounds"],
                  format(d["tensor_bytes"], ","), format(d["jpeg_bytes"], ","), veth_note))
    out.append("")
    out.append("Data movement alone (`identity_224`: the tensor there and back; shared memory: "
               "input and output regions, only the request and answer headers on the socket):")
    out.append("")
    out.append("| placement | path | p50 (ms) | round p50s | CPU (ms/request) |")
    out.append("| --- | --- | --- | --- | --- |")
    out.append(row(rows[shm_t], "registered system shared memory"))
    out.append(row(rows[grpc_t], "request and response bodies, 127.0.0.1"))
    if veth_t in rows:
        out.append(row(rows[veth_t], "request and response bodies, veth"))
    out.append("")
    out.append("End to end with resnet50 (what inferd receives: the JPEG for the ensemble, the "
               "tensor otherwise; the answer is 1,000 logits in the response body):")
    out.append("")
    out.append("| placement | inferd receives | p50 (ms) | round p50s | CPU (ms/request) |")
    out.append("| --- | --- | --- | --- | --- |")
    out.append(row(rows[ens], "JPEG; resnet50_preprocess + resnet50 in inferd"))
    out.append(row(rows[shm_e], "tensor through shared memory"))
    out.append(row(rows[grpc_e], "tensor in the body, 127.0.0.1"))
    if veth_e in rows:
        out.append(row(rows[veth_e], "tensor in the body, veth"))
    out.append(row(rows[pre], "JPEG -> tensor only (resnet50_preprocess, tensor out through shared "
                              "memory): the work the other two placements do outside inferd"))
    out.append("")
    text = ("Copy over shared memory, data movement alone: **%.1fx** the latency and %.1fx the CPU "
            "on loopback" % (ratio(grpc_t, shm_t, "p50_ms"), ratio(grpc_t, shm_t, "cpu_ms_per_request")))
    if veth_t in rows:
        text += ", %.1fx and %.1fx over the veth pair" % (ratio(veth_t, shm_t, "p50_ms"),
                                                          ratio(veth_t, shm_t, "cpu_ms_per_request"))
    # One direction of the copy (resnet50 sends the tensor one way; the
    # identity rows move it both ways), as a share of resnet50's request.
    one_way = (rows[grpc_t]["p50_ms"] - rows[shm_t]["p50_ms"]) / 2
    text += (". What the copy adds per 602 KB one way, from those rows: %.2f ms, %.1f%% of the "
             "resnet50 request's %.1f ms (shared-memory path). Measured end to end, the copy path "
             "takes %.2fx the shared-memory path's latency and %.2fx its CPU"
             % (one_way, 100 * one_way / rows[shm_e]["p50_ms"], rows[shm_e]["p50_ms"],
                ratio(grpc_e, shm_e, "p50_ms"), ratio(grpc_e, shm_e, "cpu_ms_per_request")))
    spread = max(max(rows[k]["round_p50_ms"]) - min(rows[k]["round_p50_ms"]) for k in (shm_e, grpc_e))
    diff = abs(rows[grpc_e]["p50_ms"] - rows[shm_e]["p50_ms"])
    text += (": %.1f ms apart, %s the %.1f ms by which the round medians of one variant move"
             % (diff, "inside" if diff <= spread else "more than", spread))
    text += (". The ensemble takes %.2fx the shared-memory path: it includes the pre-processing "
             "(%.2f ms alone, above) that the other placements run outside inferd."
             % (ratio(ens, shm_e, "p50_ms"), rows[pre]["p50_ms"]))
    out.append(text)
    perf = {}
    with open(perf_path) as f:
        for line in f:
            mode, p50, tput = line.split()
            perf.setdefault(mode, []).append((float(p50), float(tput)))
    if perf:
        out.append("")
        out.append("Cross-check with the C++ client (`infer-perf -m identity_224 --measurement-interval "
                   "2000`, concurrency 1, %d rounds alternating; median of the rounds' p50; "
                   "infer-perf writes its input into the region once, not per request):"
                   % len(next(iter(perf.values()))))
        out.append("")
        out.append("| infer-perf | p50 (ms) | round p50s | infer/s |")
        out.append("| --- | --- | --- | --- |")
        names = {"shm": "`-i grpc --shared-memory system`", "grpc": "`-i grpc`", "http": "`-i http` (binary)"}
        for mode in ("shm", "grpc", "http"):
            if mode in perf:
                p50s = [p for p, _ in perf[mode]]
                out.append("| %s | %.2f | %.2f-%.2f | %.0f |" % (
                    names[mode], statistics.median(p50s), min(p50s), max(p50s),
                    statistics.median(t for _, t in perf[mode])))
    print("\n".join(out))


if __name__ == "__main__":
    main()
