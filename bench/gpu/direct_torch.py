#!/usr/bin/env python3
"""The same TorchScript model run directly with torch, no server: the reference that inferd's
throughput is compared with. For each batch size: inputs start in pinned host memory and are
copied to the device each iteration (as a server must), the model runs under inference_mode,
outputs come back to the host; timed with the device synchronised. Prints JSON with every batch
size and the best.

Usage: direct_torch.py MODEL.pt --device cuda|cpu [--precision fp32|fp16] [--batches 1,8,...]
       [--seconds S]"""

import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--precision", choices=["fp32", "fp16"], default="fp32")
    ap.add_argument("--batches", default="1,8,16,32,64")
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device(args.device)
    gpu = dev.type == "cuda"
    model = torch.jit.load(args.model, map_location=dev).eval()
    half = args.precision == "fp16"
    if half:
        model = model.half()
        model = model.to(memory_format=torch.channels_last)
    results = []
    with torch.inference_mode():
        for b in [int(x) for x in args.batches.split(",")]:
            host = torch.rand(b, 3, 224, 224).pin_memory() if gpu else torch.rand(b, 3, 224, 224)

            def step():
                x = host.to(dev, non_blocking=True)
                if half:
                    x = x.half().contiguous(memory_format=torch.channels_last)
                return model(x).float().cpu()

            for _ in range(3):
                step()
            if gpu:
                torch.cuda.synchronize()
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < args.seconds:
                step()
                n += 1
            if gpu:
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            results.append({"batch": b, "images_per_sec": n * b / dt, "iterations": n})
    best = max(results, key=lambda r: r["images_per_sec"])
    print(json.dumps({"device": torch.cuda.get_device_name(dev) if gpu else "cpu",
                      "torch": torch.__version__, "precision": args.precision,
                      "results": results, "best": best}))


if __name__ == "__main__":
    main()
