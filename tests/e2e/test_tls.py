#!/usr/bin/python3
"""TLS for HTTP and gRPC: a CA, server and client certificate made with the openssl command line
at test time; inferd serves over TLS, refuses plain text on a TLS port, and with mutual TLS
refuses a client without a certificate."""

import http.client
import json
import os
import shutil
import ssl
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import secure_util  # noqa: E402
from secure_util import grpc  # noqa: E402


def build_repo(root):
    repo = os.path.join(root, "models")
    harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
    return repo


def simple_body():
    req, _ = harness.simple_request(list(range(16)), [1] * 16)
    return json.dumps(req).encode()


class TlsCase(unittest.TestCase):
    MUTUAL = False

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-tls-")
        cls.pki = secure_util.make_pki(os.path.join(cls.tmp, "pki"))
        repo = build_repo(cls.tmp)
        args = []
        for proto in ("http", "grpc"):
            args += ["--%s-use-ssl=true" % proto, "--%s-server-cert" % proto, cls.pki["server.crt"],
                     "--%s-server-key" % proto, cls.pki["server.key"]]
            if cls.MUTUAL:
                args += ["--%s-root-cert" % proto, cls.pki["ca.crt"],
                         "--%s-use-ssl-mutual=true" % proto]
        cls.pb = secure_util.grpc_messages(os.path.join(cls.tmp, "gen")) if grpc else None
        cls.server = secure_util.start_server([repo], args, grpc_on=grpc is not None)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def tearDown(self):
        self.assertTrue(self.server.alive(), self.server.log_tail())

    def https(self, with_client_cert):
        ctx = ssl.create_default_context(cafile=self.pki["ca.crt"])
        if with_client_cert:
            ctx.load_cert_chain(self.pki["client.crt"], self.pki["client.key"])
        return http.client.HTTPSConnection("127.0.0.1", self.server.port, context=ctx, timeout=10)

    def https_infer(self, with_client_cert):
        c = self.https(with_client_cert)
        try:
            c.request("POST", "/v2/models/simple/infer", body=simple_body(),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            return r.status, json.loads(r.read())
        finally:
            c.close()

    def grpc_channel(self, with_client_cert):
        with open(self.pki["ca.crt"], "rb") as f:
            root = f.read()
        key = cert = None
        if with_client_cert:
            with open(self.pki["client.key"], "rb") as f:
                key = f.read()
            with open(self.pki["client.crt"], "rb") as f:
                cert = f.read()
        creds = grpc.ssl_channel_credentials(root_certificates=root, private_key=key,
                                             certificate_chain=cert)
        return grpc.secure_channel("127.0.0.1:%d" % self.server.grpc_port, creds)

    def grpc_infer(self, channel):
        pb = self.pb
        req = pb.ModelInferRequest(model_name="simple")
        for name in ("INPUT0", "INPUT1"):
            req.inputs.add(name=name, datatype="INT32", shape=[1, 16])
        req.raw_input_contents.append(struct.pack("<16i", *range(16)))
        req.raw_input_contents.append(struct.pack("<16i", *([1] * 16)))
        return secure_util.unary(channel, "ModelInfer", req, pb.ModelInferResponse, timeout=10)

    def check_plain_text_refused_http(self):
        # A plain HTTP request to the TLS port gets no HTTP response.
        s = harness.raw_connect(self.server.port, timeout=10)
        try:
            s.sendall(harness.http_request_bytes("GET", "/v2/health/live"))
            s.settimeout(10)
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
            self.assertFalse(data.startswith(b"HTTP/"), data[:200])
        finally:
            s.close()

    def check_plain_text_refused_grpc(self):
        channel = grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port)
        try:
            with self.assertRaises(grpc.RpcError) as e:
                secure_util.unary(channel, "ServerLive", self.pb.ServerLiveRequest(),
                                  self.pb.ServerLiveResponse, timeout=5)
            self.assertIn(e.exception.code(), (grpc.StatusCode.UNAVAILABLE,
                                               grpc.StatusCode.DEADLINE_EXCEEDED))
        finally:
            channel.close()


class TlsTest(TlsCase):
    MUTUAL = False

    def test_https_infer(self):
        status, body = self.https_infer(with_client_cert=False)
        self.assertEqual(status, 200, body)
        out = {o["name"]: o["data"] for o in body["outputs"]}
        self.assertEqual(out["OUTPUT0"], [i + 1 for i in range(16)])

    def test_https_keep_alive(self):
        c = self.https(False)
        try:
            for _ in range(3):
                c.request("GET", "/v2/health/ready")
                r = c.getresponse()
                r.read()
                self.assertEqual(r.status, 200)
        finally:
            c.close()

    def test_https_generate_stream_then_keep_alive(self):
        # A streamed (chunked) response on the TLS stream, then the next request on it.
        c = self.https(False)
        try:
            c.request("POST", "/v2/models/simple/generate_stream",
                      body=json.dumps({"INPUT0": list(range(16)), "INPUT1": [1] * 16}),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            body = r.read()
            self.assertEqual(r.status, 200, body)
            self.assertEqual(r.getheader("Content-Type"), "text/event-stream; charset=utf-8")
            self.assertTrue(body.startswith(b"data: {") and body.endswith(b"}\n\n"), body)
            event = json.loads(body[len(b"data: "):])
            self.assertEqual(event["OUTPUT0"], [i + 1 for i in range(16)])
            c.request("GET", "/v2/health/ready")
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
        finally:
            c.close()

    def test_http_plain_text_refused(self):
        self.check_plain_text_refused_http()

    def test_https_wrong_ca_refused_by_client(self):
        # The server proves its identity: a client trusting another CA refuses it.
        other = secure_util.make_pki(os.path.join(self.tmp, "other"))
        ctx = ssl.create_default_context(cafile=other["ca.crt"])
        c = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=ctx, timeout=10)
        with self.assertRaises(ssl.SSLError):
            c.request("GET", "/v2/health/live")
        c.close()

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_tls_infer(self):
        channel = self.grpc_channel(False)
        try:
            resp = self.grpc_infer(channel)
            self.assertEqual(list(struct.unpack("<16i", resp.raw_output_contents[0])),
                             [i + 1 for i in range(16)])
        finally:
            channel.close()

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_plain_text_refused(self):
        self.check_plain_text_refused_grpc()


class MutualTlsTest(TlsCase):
    MUTUAL = True

    def test_https_with_client_cert(self):
        status, body = self.https_infer(with_client_cert=True)
        self.assertEqual(status, 200, body)

    def test_https_without_client_cert_refused(self):
        with self.assertRaises((ssl.SSLError, ConnectionResetError, BrokenPipeError,
                                http.client.RemoteDisconnected)):
            self.https_infer(with_client_cert=False)

    def test_http_plain_text_refused(self):
        self.check_plain_text_refused_http()

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_with_client_cert(self):
        channel = self.grpc_channel(True)
        try:
            self.assertEqual(len(self.grpc_infer(channel).raw_output_contents), 2)
        finally:
            channel.close()

    @unittest.skipIf(grpc is None, "python3-grpcio is not installed")
    def test_grpc_without_client_cert_refused(self):
        channel = self.grpc_channel(False)
        try:
            with self.assertRaises(grpc.RpcError) as e:
                self.grpc_infer(channel)
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
        finally:
            channel.close()


class TlsFlagErrorsTest(unittest.TestCase):
    def test_missing_key_file_named(self):
        tmp = tempfile.mkdtemp(prefix="inferd-tls-flags-")
        try:
            repo = build_repo(tmp)
            server = harness.Server([repo], ["--http-use-ssl=true", "--http-server-cert",
                                             os.path.join(tmp, "nope.crt"), "--http-server-key",
                                             os.path.join(tmp, "nope.key")])
            with self.assertRaises(harness.ServerError) as e:
                server.start()
            self.assertIn("--http-server-cert", str(e.exception))
            server.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
