#!/usr/bin/env python3
"""Makes the GPU benchmark's model repository: resnet50 and resnet18 (torchvision, random
weights, torch.manual_seed(0), traced to TorchScript on the CPU, as examples/make_models.py
does), each with a config for the pytorch backend.

Usage: make_models.py REPO --kind gpu|cpu [--count N] [--precision fp32|fp16] [--tiny]
  --kind gpu   KIND_GPU gpus [0] (run.sh on the GPU machine); cpu: KIND_CPU (--dry-run here)
  --tiny       a two-layer convolution net under both names instead (fast, for --dry-run)
Prints one JSON line describing what it wrote."""

import argparse
import json
import os
import time

SEED = 0
MAX_BATCH = 64




def build(name, tiny):
    import torch
    torch.manual_seed(SEED)
    if tiny:
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=4), torch.nn.ReLU(),
                                  torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                  torch.nn.Linear(8, 1000))
    else:
        import torchvision
        net = getattr(torchvision.models, name)(weights=None)

    class Wrapped(torch.nn.Module):
        def __init__(self, body):
            super().__init__()
            self.body = body

        def forward(self, input):  # noqa: A002 -- the served input is named "input"
            return self.body(input)

    with torch.no_grad():
        return torch.jit.trace(Wrapped(net.eval()).eval(), torch.zeros(1, 3, 224, 224))


def config(name, kind, count, precision):
    group = "kind: KIND_GPU gpus: [ 0 ]" if kind == "gpu" else "kind: KIND_CPU"
    params = ""
    if precision == "fp16":
        params = ('parameters { key: "COMPUTE_PRECISION" value { string_value: "fp16" } }\n'
                  'parameters { key: "CHANNELS_LAST" value { string_value: "true" } }\n')
    return ('name: "%s"\nbackend: "pytorch"\nmax_batch_size: %d\n'
            'input [ { name: "input" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]\n'
            'output [ { name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] } ]\n'
            'dynamic_batching { max_queue_delay_microseconds: 500 }\n'
            'instance_group [ { %s count: %d } ]\n%s' % (name, MAX_BATCH, group, count, params))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repo")
    ap.add_argument("--kind", choices=["gpu", "cpu"], required=True)
    ap.add_argument("--count", type=int, default=2)
    ap.add_argument("--precision", choices=["fp32", "fp16"], default="fp32")
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    written = {}
    for name in ("resnet50", "resnet18"):
        d = os.path.join(args.repo, name)
        os.makedirs(os.path.join(d, "1"), exist_ok=True)
        path = os.path.join(d, "1", "model.pt")
        if not os.path.exists(path):
            build(name, args.tiny).save(path)
        with open(os.path.join(d, "config.pbtxt"), "w") as f:
            f.write(config(name, args.kind, args.count, args.precision))
        written[name] = path
    print(json.dumps({"models": written, "seconds": round(time.time() - t0, 1),
                      "kind": args.kind, "precision": args.precision, "tiny": args.tiny}))


if __name__ == "__main__":
    main()
