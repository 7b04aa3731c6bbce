"""Helpers of the image-pipeline and gateway tests (standard library only):
PNG writers, the digits pipeline repository, inferd with its gRPC port, and
infer-gateway and infer-batcher processes."""

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import threading
import time
import zlib

from harness import REPO_ROOT, Server, INFERD_BIN

EXAMPLES = os.path.join(REPO_ROOT, "examples", "models")
IMAGES = os.path.join(REPO_ROOT, "examples", "data", "digits_images")
GATEWAY_BIN = os.environ.get("INFER_GATEWAY_BIN",
                             os.path.join(os.path.dirname(INFERD_BIN), "infer-gateway"))
BATCHER_BIN = os.environ.get("INFER_BATCHER_BIN",
                             os.path.join(os.path.dirname(INFERD_BIN), "infer-batcher"))
DIGITS_MODELS = ("digits", "digits_preprocess", "digits_pipeline")


def examples_missing():
    """Why the digits pipeline cannot be served here, or None."""
    if not os.path.exists(os.path.join(EXAMPLES, "digits", "1", "model.pt")):
        return "examples/models/digits/1/model.pt missing (run make models)"
    if not os.path.exists(os.path.join(IMAGES, "index.json")):
        return "examples/data/digits_images missing (run make models)"
    return None


def copy_digits_pipeline(repo):
    for m in DIGITS_MODELS:
        shutil.copytree(os.path.join(EXAMPLES, m), os.path.join(repo, m))


def digit_images(kind=".png"):
    """[(bytes, label)] of the held-out digits rendered by make_models.py."""
    with open(os.path.join(IMAGES, "index.json")) as f:
        index = json.load(f)
    out = []
    for name in sorted(index):
        if name.endswith(kind):
            with open(os.path.join(IMAGES, name), "rb") as f:
                out.append((f.read(), index[name]))
    return out


def png(rows, channels):
    """An 8-bit PNG: rows of pixel values (channels 1: gray, 3: RGB, interleaved)."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    height, width = len(rows), len(rows[0]) // channels
    color_type = 0 if channels == 1 else 2
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8,
                                                              color_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def bytes_element(data):
    return struct.pack("<I", len(data)) + data


def start_inferd_with_grpc(repos, extra=()):
    """A harness Server that also serves gRPC on a kernel-chosen loopback port;
    returns (server, grpc_port)."""
    server = Server(repos, ["--allow-grpc=true", "--grpc-address", "127.0.0.1",
                            "--grpc-port", "0"] + list(extra)).start()
    line = re.compile(r"^inferd: gRPC listening on 127\.0\.0\.1:(\d+)\s*$")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for entry in server.log():
            m = line.match(entry)
            if m:
                return server, int(m.group(1))
        time.sleep(0.02)
    server.stop()
    raise RuntimeError("inferd printed no gRPC port\n" + server.log_tail())


class Middleman:
    """One middleman program (infer-gateway, infer-batcher) on loopback ports chosen by
    the kernel: started, it has printed both of its listening lines."""

    def __init__(self, program, binary, args, extra=()):
        self.program, self.binary = program, binary
        self.line = re.compile(r"^%s: (HTTP|gRPC) listening on 127\.0\.0\.1:(\d+)\s*$"
                               % re.escape(program))
        self.cmd = [binary] + list(args) + [
            "--http-address", "127.0.0.1", "--http-port", "0",
            "--grpc-address", "127.0.0.1", "--grpc-port", "0"] + list(extra)
        self.lines = []
        self.ports = {}
        self.ready = threading.Event()
        self.proc = None

    def start(self, timeout=20):
        if not os.access(self.binary, os.X_OK):
            raise RuntimeError("%s not built: %s" % (self.program, self.binary))
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(timeout):
            self.stop()
            raise RuntimeError("%s did not start:\n%s" % (self.program, self.log()))
        return self

    def _read(self):
        try:
            for raw in iter(self.proc.stderr.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip()
                self.lines.append(line)
                m = self.line.match(line)
                if m:
                    self.ports[m.group(1)] = int(m.group(2))
                    if "HTTP" in self.ports and "gRPC" in self.ports:
                        self.ready.set()
        except (OSError, ValueError):
            pass  # stderr closed by stop()

    def log(self):
        return "\n".join(self.lines)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10):
        """SIGTERM; returns the exit code (None if it had to be killed)."""
        if self.proc is None:
            return None
        code = self.proc.poll()
        if code is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                code = None
        self.proc.stderr.close()
        return code


class Gateway(Middleman):
    """One infer-gateway in front of `inferd_url`."""

    def __init__(self, inferd_url, extra=()):
        super().__init__("infer-gateway", GATEWAY_BIN, ["--inferd-url", inferd_url], extra)


class Batcher(Middleman):
    """One infer-batcher in front of `upstream` (HOST:PORT[,...])."""

    def __init__(self, upstream, extra=()):
        super().__init__("infer-batcher", BATCHER_BIN, ["--upstream=" + upstream], extra)

    def stop(self, timeout=20):
        return super().stop(timeout)
