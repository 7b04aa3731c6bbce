"""Helpers for the hardening end-to-end tests (limits, TLS, restricted APIs).

Standard library only, plus Debian's python3-grpcio where a test needs a gRPC
client (those tests skip without it).

* ``start_server(repos, args, grpc=True)``: a harness.Server that also serves
  gRPC on a kernel-chosen loopback port; ``server.grpc_port`` says which.
* ``grpc_messages(tmp)``: the generated grpc_service_pb2 module (protoc at test
  time, as test_grpc_compat does).
* ``make_pki(dir)``: a CA, a server certificate for 127.0.0.1/localhost and a
  client certificate, made with the ``openssl`` command line.
"""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import grpc
except ImportError:  # pragma: no cover - callers skip
    grpc = None

GRPC_LINE = re.compile(r"^inferd: gRPC listening on 127\.0\.0\.1:(\d+)\s*$")


def start_server(repos, args=(), grpc_on=True, timeout=30.0):
    extra = list(args)
    if grpc_on:
        extra = ["--allow-grpc=true", "--grpc-address", "127.0.0.1", "--grpc-port", "0"] + extra
    server = harness.Server(repos, extra)
    server.start()
    server.grpc_port = None
    if grpc_on:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and server.grpc_port is None:
            for line in server.log():
                m = GRPC_LINE.match(line)
                if m:
                    server.grpc_port = int(m.group(1))
            if server.grpc_port is None:
                if not server.alive():
                    break
                time.sleep(0.05)
        if server.grpc_port is None:
            server.stop()
            raise harness.ServerError("inferd did not listen for gRPC\n" + server.log_tail())
    return server


def grpc_messages(out_dir):
    """Generates the Python messages for proto/*.proto into out_dir; returns grpc_service_pb2."""
    import importlib
    import shutil
    proto_dir = os.path.join(harness.REPO_ROOT, "proto")
    protos = [os.path.join(proto_dir, p) for p in ("model_config.proto", "grpc_service.proto")]
    os.makedirs(out_dir, exist_ok=True)
    protoc = shutil.which("protoc")
    cmd = [protoc] if protoc else [sys.executable, "-m", "grpc_tools.protoc"]
    done = subprocess.run(cmd + ["--proto_path=" + proto_dir, "--python_out=" + out_dir] + protos,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("protoc failed: " + done.stderr)
    sys.path.insert(0, out_dir)
    return importlib.import_module("grpc_service_pb2")


def unary(channel, method, request, response_class, metadata=None, timeout=20, compression=None):
    call = channel.unary_unary("/inference.GRPCInferenceService/" + method,
                               request_serializer=lambda m: m.SerializeToString(),
                               response_deserializer=response_class.FromString)
    return call(request, timeout=timeout, metadata=metadata, compression=compression)


def _openssl(*args, cwd):
    done = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (" ".join(args), done.stderr))


def make_pki(d):
    """Writes ca.crt/ca.key, server.crt/server.key (CN localhost, SAN 127.0.0.1 and
    localhost) and client.crt/client.key, all signed by the CA; returns a dict of paths."""
    os.makedirs(d, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
             "/CN=inferd test CA", "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for who in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + (
            "localhost" if who == "server" else "inferd test client"),
            "-keyout", who + ".key", "-out", who + ".csr", cwd=d)
        _openssl("x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", who + ".ext", "-out", who + ".crt",
                 cwd=d)
    return {k: os.path.join(d, k) for k in ("ca.crt", "ca.key", "server.crt", "server.key",
                                            "client.crt", "client.key")}
