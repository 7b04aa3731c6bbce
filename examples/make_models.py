#!/usr/bin/python3
"""Builds the framework example models of examples/models (run by make_models.sh).

Uses Debian's python3-torch, python3-torchvision, python3-sklearn and python3-onnx; downloads
nothing. Every model comes from fixed seeds, so two runs give the same networks. A model whose
files exist is left alone unless --force is given.

  digits       small CNN trained here on scikit-learn's 8x8 digits; TorchScript (pytorch backend)
  digits_onnx  the same trained network exported to ONNX (onnx backend)
  resnet18     torchvision ResNet-18 with random weights (seed 0); TorchScript
  resnet18_onnx  the same ResNet-18 exported to ONNX (onnx backend; its graph has the Identity
               nodes that torch 1.13's exporter emits for shared constants)
  resnet50     torchvision ResNet-50 with random weights (seed 0); TorchScript
  simple_pytorch  Triton's `simple` arithmetic (OUTPUT__0 = INPUT__0 + INPUT__1, OUTPUT__1 =
               INPUT__0 - INPUT__1) as a scripted module that works for any numeric datatype

The held-out digits split goes to examples/data/digits_test.json for the accuracy tests, and
rendered as images to examples/data/digits_images/ (32x32 grayscale PNGs, each 8x8 pixel a 4x4
block, values 0..16 scaled to 0..255, plus JPEGs of the first 20; index.json maps file to label)
for the image pipelines (digits_pipeline = digits_preprocess -> digits, and resnet50_pipeline =
resnet50_preprocess -> resnet50, whose configs are kept in the repository) and the gateway.
"""

import argparse
import json
import os
import struct
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0


def log(msg):
    print("make_models: " + msg, flush=True)


def digits_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    d = load_digits()
    # Raw pixel values 0..16, as the served model takes them.
    return train_test_split(d.data.astype("float32"), d.target.astype("int64"), test_size=0.25,
                            random_state=SEED, stratify=d.target)


def digits_network():
    import torch
    from torch import nn

    class Digits(nn.Module):
        """image [N,1,8,8] raw pixel values 0..16 -> probabilities [N,10] (softmax)."""

        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                nn.MaxPool2d(2))
            self.classifier = nn.Sequential(
                nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))

        def forward(self, image):
            return torch.softmax(self.classifier(self.features(image / 16.0)), dim=1)

    return Digits()


def train_digits(x_train, y_train):
    import torch
    torch.manual_seed(SEED)
    net = digits_network()
    x = torch.from_numpy(x_train).reshape(-1, 1, 8, 8)
    y = torch.from_numpy(y_train)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(SEED)
    net.train()
    for _ in range(40):
        perm = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            probs = net(x[idx])
            loss = torch.nn.functional.nll_loss(torch.log(probs + 1e-9), y[idx])
            loss.backward()
            opt.step()
    net.eval()
    return net


def make_digits(models, data, force):
    import torch
    pt = os.path.join(models, "digits", "1", "model.pt")
    onnx_path = os.path.join(models, "digits_onnx", "1", "model.onnx")
    test_json = os.path.join(data, "digits_test.json")
    if not force and all(os.path.exists(p) for p in (pt, onnx_path, test_json)):
        log("digits, digits_onnx: present (--force rebuilds)")
        return
    t0 = time.time()
    x_train, x_test, y_train, y_test = digits_split()
    net = train_digits(x_train, y_train)
    with torch.no_grad():
        xt = torch.from_numpy(x_test).reshape(-1, 1, 8, 8)
        acc = float((net(xt).argmax(1) == torch.from_numpy(y_test)).float().mean())
    log("digits: held-out accuracy %.4f on %d images (trained in %.1f s)"
        % (acc, len(y_test), time.time() - t0))
    if acc < 0.95:
        sys.exit("make_models: digits accuracy %.4f is below 0.95" % acc)
    os.makedirs(os.path.dirname(pt), exist_ok=True)
    torch.jit.script(net).save(pt)
    os.makedirs(os.path.dirname(onnx_path), exist_ok=True)
    torch.onnx.export(net, torch.zeros(1, 1, 8, 8), onnx_path, input_names=["image"],
                      output_names=["probabilities"], opset_version=11,
                      dynamic_axes={"image": {0: "batch"}, "probabilities": {0: "batch"}})
    os.makedirs(data, exist_ok=True)
    with open(test_json, "w") as f:
        json.dump({"images": x_test.reshape(-1, 1, 8, 8).tolist(), "labels": y_test.tolist(),
                   "accuracy": acc}, f)
    log("digits: wrote %s, %s, %s" % (pt, onnx_path, test_json))


def png_gray(pixels):
    """A grayscale 8-bit PNG of `pixels` (rows of ints 0..255), standard library only."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    height, width = len(pixels), len(pixels[0])
    raw = b"".join(b"\0" + bytes(row) for row in pixels)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def render_digit(image8x8, block=4):
    """8x8 values 0..16 -> (8*block)^2 rows of 0..255, light ink on dark as in the data set."""
    rows = []
    for r in image8x8:
        row = []
        for v in r:
            row += [min(255, int(round(v * 255.0 / 16.0)))] * block
        rows += [row] * block
    return rows


def make_digit_images(data, force):
    out = os.path.join(data, "digits_images")
    index_path = os.path.join(out, "index.json")
    if not force and os.path.exists(index_path):
        log("digits_images: present (--force rebuilds)")
        return
    _, x_test, _, y_test = digits_split()
    os.makedirs(out, exist_ok=True)
    index = {}
    jpeg_writer = None
    try:
        from PIL import Image  # python3-pil, a dependency of python3-torchvision
        jpeg_writer = Image
    except ImportError:
        log("digits_images: PIL missing, writing PNGs only")
    for i, (x, y) in enumerate(zip(x_test, y_test)):
        rows = render_digit(x.reshape(8, 8).tolist())
        name = "digit_%03d.png" % i
        with open(os.path.join(out, name), "wb") as f:
            f.write(png_gray(rows))
        index[name] = int(y)
        if jpeg_writer is not None and i < 20:
            name = "digit_%03d.jpg" % i
            img = jpeg_writer.frombytes("L", (len(rows[0]), len(rows)),
                                        bytes(v for row in rows for v in row))
            img.save(os.path.join(out, name), quality=95)
            index[name] = int(y)
    with open(index_path, "w") as f:
        json.dump(index, f, indent=0, sort_keys=True)
    log("digits_images: wrote %d images to %s" % (len(index), out))


def make_resnet(models, name, force, onnx_name=None):
    import torch
    import torchvision
    pt = os.path.join(models, name, "1", "model.pt")
    onnx_path = os.path.join(models, onnx_name, "1", "model.onnx") if onnx_name else None
    if not force and os.path.exists(pt) and (onnx_path is None or os.path.exists(onnx_path)):
        log("%s: present (--force rebuilds)" % name)
        return
    t0 = time.time()
    torch.manual_seed(SEED)
    net = getattr(torchvision.models, name)(weights=None).eval()

    class Classifier(torch.nn.Module):
        def __init__(self, body):
            super().__init__()
            self.body = body

        def forward(self, input):  # noqa: A002 -- the served input is named "input"
            return self.body(input)

    with torch.no_grad():
        traced = torch.jit.trace(Classifier(net), torch.zeros(1, 3, 224, 224))
    os.makedirs(os.path.dirname(pt), exist_ok=True)
    traced.save(pt)
    log("%s: wrote %s (%.1f s)" % (name, pt, time.time() - t0))
    if onnx_path:
        os.makedirs(os.path.dirname(onnx_path), exist_ok=True)
        torch.onnx.export(net, torch.zeros(1, 3, 224, 224), onnx_path, input_names=["input"],
                          output_names=["logits"], opset_version=11,
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
        log("%s: wrote %s" % (onnx_name, onnx_path))


def make_simple(models, force):
    import torch
    pt = os.path.join(models, "simple_pytorch", "1", "model.pt")
    if not force and os.path.exists(pt):
        log("simple_pytorch: present (--force rebuilds)")
        return

    class AddSub(torch.nn.Module):
        def forward(self, INPUT__0, INPUT__1):  # noqa: N803 -- Triton's naming convention
            return INPUT__0 + INPUT__1, INPUT__0 - INPUT__1

    os.makedirs(os.path.dirname(pt), exist_ok=True)
    torch.jit.script(AddSub()).save(pt)
    log("simple_pytorch: wrote %s" % pt)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=os.path.join(HERE, "models"))
    p.add_argument("--data", default=os.path.join(HERE, "data"))
    p.add_argument("--force", action="store_true", help="rebuild models that exist")
    args = p.parse_args()
    import torch
    # One thread: the digits network is tiny, and more threads only spin against each other
    # on a busy 2-core machine.
    torch.set_num_threads(1)
    make_digits(args.models, args.data, args.force)
    make_digit_images(args.data, args.force)
    make_resnet(args.models, "resnet18", args.force, onnx_name="resnet18_onnx")
    make_resnet(args.models, "resnet50", args.force)
    make_simple(args.models, args.force)


if __name__ == "__main__":
    main()
