#!/usr/bin/python3
"""The peer of bench/fastapi: FastAPI + uvicorn + PyTorch (Debian's packages)
serving the same TorchScript resnet18 and `simple`'s arithmetic (add/sub of two
INT32[16]) over the same KServe v2 HTTP protocol as inferd, binary tensor
extension included (what infer-perf sends), so both servers see the same
bytes. Written the way such a service usually is: one process, the model run
in FastAPI's thread pool.

Usage: server.py PORT RESNET18_MODEL_PT"""
import json
import struct
import sys

import numpy as np
import torch
import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

PORT, MODEL_PT = int(sys.argv[1]), sys.argv[2]
resnet = torch.jit.load(MODEL_PT).eval()

METADATA = {
    "resnet18": {"name": "resnet18", "versions": ["1"], "platform": "pytorch_libtorch",
                 "inputs": [{"name": "input", "datatype": "FP32", "shape": [-1, 3, 224, 224]}],
                 "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 1000]}]},
    "simple": {"name": "simple", "versions": ["1"], "platform": "add_sub",
               "inputs": [{"name": n, "datatype": "INT32", "shape": [-1, 16]}
                          for n in ("INPUT0", "INPUT1")],
               "outputs": [{"name": n, "datatype": "INT32", "shape": [-1, 16]}
                           for n in ("OUTPUT0", "OUTPUT1")]},
}
DTYPES = {"FP32": np.float32, "INT32": np.int32}

app = FastAPI()


@app.get("/v2/models/{name}")
def metadata(name: str):
    if name not in METADATA:
        return JSONResponse({"error": "unknown model %s" % name}, status_code=404)
    return METADATA[name]


def decode(body, header_len):
    """KServe v2 request: JSON header, then binary inputs; or JSON only."""
    header = json.loads(body[:header_len] if header_len else body)
    offset, tensors = header_len or len(body), {}
    for t in header["inputs"]:
        dt = DTYPES[t["datatype"]]
        params = t.get("parameters", {})
        if "binary_data_size" in params:
            n = params["binary_data_size"]
            arr = np.frombuffer(body[offset:offset + n], dtype=dt)
            offset += n
        else:
            arr = np.asarray(t["data"], dtype=dt)
        tensors[t["name"]] = arr.reshape(t["shape"])
    return header, tensors


def encode(model, outputs):
    """Binary outputs (what infer-perf asks for): JSON header, then the bytes."""
    blobs = [a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes() for _, a in outputs]
    header = json.dumps({"model_name": model, "model_version": "1", "outputs": [
        {"name": n, "datatype": "FP32" if a.dtype == np.float32 else "INT32", "shape": list(a.shape),
         "parameters": {"binary_data_size": len(b)}} for (n, a), b in zip(outputs, blobs)]}).encode()
    return Response(header + b"".join(blobs), media_type="application/octet-stream",
                    headers={"Inference-Header-Content-Length": str(len(header))})


@app.post("/v2/models/{name}/infer")
async def infer(name: str, request: Request):
    body = await request.body()
    header_len = int(request.headers.get("inference-header-content-length", "0"))
    return await run_model(name, body, header_len)


def forward(x):
    with torch.inference_mode():  # per thread: the pool's threads start with grad on
        return resnet(x).numpy()


async def run_model(name, body, header_len):
    from starlette.concurrency import run_in_threadpool
    _, t = decode(body, header_len)
    if name == "simple":
        a, b = t["INPUT0"], t["INPUT1"]
        return encode(name, [("OUTPUT0", a + b), ("OUTPUT1", a - b)])
    if name == "resnet18":
        x = torch.from_numpy(t["input"].copy())
        logits = await run_in_threadpool(forward, x)
        return encode(name, [("logits", logits)])
    return JSONResponse({"error": "unknown model %s" % name}, status_code=404)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
