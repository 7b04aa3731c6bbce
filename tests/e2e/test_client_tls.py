#!/usr/bin/python3
"""inferd's own clients against a hardened inferd: `infer` and `infer-perf` (HTTP and gRPC),
infer-gateway and infer-batcher (gRPC to inferd) over TLS and mutual TLS with the CA of the TLS server tests
(secure_util.make_pki), and with the restricted-API keys as headers / metadata.

Each case asserts the exit code and the words of the outcome: success with the right CA (and
client certificate), a clear refusal with another CA, with no CA (the system's roots do not
know the test CA), without the client certificate, with the wrong server name, with an unreadable
file, and a restricted deployment refusing without -H and serving with it."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pipeline_util as pu  # noqa: E402
import secure_util  # noqa: E402

BIN_DIR = os.path.dirname(harness.INFERD_BIN)
INFER = os.environ.get("INFER_BIN") or os.path.join(BIN_DIR, "infer")
PERF = os.environ.get("INFER_PERF_BIN") or os.path.join(BIN_DIR, "infer-perf")
TIMEOUT = 60
KEY = "letmein"


def build_repo(root):
    repo = os.path.join(root, "models")
    harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
    return repo


def tls_args(pki, mutual):
    args = []
    for proto in ("http", "grpc"):
        args += ["--%s-use-ssl=true" % proto, "--%s-server-cert" % proto, pki["server.crt"],
                 "--%s-server-key" % proto, pki["server.key"]]
        if mutual:
            args += ["--%s-root-cert" % proto, pki["ca.crt"], "--%s-use-ssl-mutual=true" % proto]
    return args


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                          env=dict(os.environ, **(env or {})))


SIMPLE_INPUTS = ["--input", "INPUT0:INT32:1,16:[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]",
                 "--input", "INPUT1:INT32:1,16:[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]"]
PERF_SHORT = ["-m", "simple", "--measurement-interval", "200", "--warmup-ms", "50",
              "--max-trials", "2", "--json"]


class ServerCase(unittest.TestCase):
    """One inferd (HTTP and gRPC) per class, with SERVER_ARGS(pki)."""

    @classmethod
    def server_args(cls, pki):
        return []

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-client-tls-")
        cls.server = None
        try:
            cls.pki = secure_util.make_pki(os.path.join(cls.tmp, "pki"))
            cls.other = secure_util.make_pki(os.path.join(cls.tmp, "other"))
            cls.server = secure_util.start_server([build_repo(cls.tmp)], cls.server_args(cls.pki))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.server:
            cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def tearDown(self):
        self.assertTrue(self.server.alive(), self.server.log_tail())

    def http_url(self, scheme="https://"):
        return "%s127.0.0.1:%d" % (scheme, self.server.port)

    def grpc_url(self):
        return "127.0.0.1:%d" % self.server.grpc_port

    def infer(self, protocol, *args, expect=0):
        url = self.grpc_url() if protocol == "grpc" else self.http_url(self.SCHEME)
        cmd = [INFER, "-i", protocol, "-u", url] + list(args)
        p = run(cmd)
        self.assertEqual(p.returncode, expect, "%s\nstdout: %s\nstderr: %s" % (cmd, p.stdout,
                                                                              p.stderr))
        return p

    def perf(self, protocol, *args, expect=0):
        url = self.grpc_url() if protocol == "grpc" else self.http_url(self.SCHEME)
        # gRPC runs read the server's statistics over HTTP(S) at this URL.
        env = {"INFER_PERF_HTTP_URL": self.http_url(self.SCHEME)}
        cmd = [PERF, "-i", protocol, "-u", url] + PERF_SHORT + list(args)
        p = run(cmd, env)
        self.assertEqual(p.returncode, expect, "%s\nstdout: %s\nstderr: %s" % (cmd, p.stdout,
                                                                              p.stderr))
        if expect == 0:
            d = json.loads(p.stdout)
            self.assertGreater(d["results"][0]["requests"], 0)
            self.assertEqual(d["results"][0]["errors"], 0)
        return p


class TlsTest(ServerCase):
    """TLS without client certificates."""
    SCHEME = "https://"

    @classmethod
    def server_args(cls, pki):
        return tls_args(pki, mutual=False)

    def test_infer_with_the_right_ca(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                ssl = ["--ssl"] if protocol == "grpc" else []
                p = self.infer(protocol, *ssl, "--ca", self.pki["ca.crt"], "health")
                self.assertEqual(p.stdout, "live: yes\nready: yes\n")
                p = self.infer(protocol, "--ca", self.pki["ca.crt"], "--json", "infer", "simple",
                               *SIMPLE_INPUTS)
                out = {o["name"]: o["data"] for o in json.loads(p.stdout)["outputs"]}
                self.assertEqual(out["OUTPUT0"], list(range(1, 17)))
        # localhost is in the certificate too, and https:// alone turns TLS on
        p = run([INFER, "-u", "https://localhost:%d" % self.server.port, "--ca",
                 self.pki["ca.crt"], "health"])
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_infer_with_another_ca_or_none_is_refused_clearly(self):
        for ca in (["--ca", self.other["ca.crt"]], []):
            with self.subTest(ca=ca):
                p = self.infer("http", *ca, "health", expect=3)
                self.assertIn("TLS handshake with 127.0.0.1:%d failed: the server's certificate "
                              "was refused" % self.server.port, p.stderr)
                self.assertIn("check the CA file", p.stderr)
                p = self.infer("grpc", "--ssl", *ca, "health", expect=3)
                self.assertIn("gRPC UNAVAILABLE", p.stderr)
                self.assertIn("certificate verify failed", p.stderr)

    def test_a_name_the_certificate_lacks_is_refused(self):
        p = self.infer("http", "--ca", self.pki["ca.crt"], "--server-name", "example.com",
                       "health", expect=3)
        self.assertIn("hostname mismatch (it is not for 'example.com')", p.stderr)
        p = self.infer("grpc", "--ca", self.pki["ca.crt"], "--server-name", "example.com",
                       "health", expect=3)
        self.assertIn("example.com is not in peer certificate", p.stderr)
        # --insecure (HTTPS only) accepts it, as tritonclient's HTTP examples do
        p = self.infer("http", "--insecure", "--server-name", "example.com", "health")
        self.assertEqual(p.stdout, "live: yes\nready: yes\n")

    def test_unreadable_files_and_plain_text_are_clear_errors(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                missing = os.path.join(self.tmp, "missing.pem")
                p = self.infer(protocol, "--ca", missing, "health", expect=2)
                self.assertIn("cannot read the CA file '%s': No such file or directory" % missing,
                              p.stderr)
                p = self.infer(protocol, "--ca", self.pki["ca.crt"], "--cert",
                               self.pki["client.crt"], "health", expect=2)
                self.assertIn("a client certificate needs its private key file", p.stderr)
                p = self.infer(protocol, "--ca", os.path.join(self.tmp, "pki", "server.ext"),
                               "health", expect=2)
                self.assertIn("is not PEM", p.stderr)
        p = run([INFER, "-u", self.http_url("http://"), "health"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("if the server uses TLS, use https://", p.stderr)
        p = run([INFER, "-u", self.http_url("http://"), "--ssl", "health"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("the URL says http:// but TLS is on", p.stderr)

    def test_infer_perf_with_the_right_ca(self):
        self.perf("http", "--ssl-https-ca-certificates-file", self.pki["ca.crt"])
        self.perf("grpc", "--ssl-grpc-use-ssl", "--ssl-grpc-root-certifications-file",
                  self.pki["ca.crt"], "--ssl-https-ca-certificates-file", self.pki["ca.crt"])

    def test_infer_perf_with_another_ca_or_none_fails_clearly(self):
        for ca in (["--ssl-https-ca-certificates-file", self.other["ca.crt"]], []):
            p = self.perf("http", *ca, expect=1)
            self.assertIn("cannot get metadata of model 'simple'", p.stderr)
            self.assertIn("the server's certificate was refused", p.stderr)
        p = self.perf("grpc", "--ssl-grpc-use-ssl", "--ssl-grpc-root-certifications-file",
                      self.other["ca.crt"], expect=1)
        self.assertIn("certificate verify failed", p.stderr)
        # verify-peer 0 (perf_analyzer's switch) accepts any certificate
        self.perf("http", "--ssl-https-verify-peer=0")

    def test_infer_perf_refuses_flags_it_would_ignore(self):
        cases = [
            (["-u", self.http_url("http://"), "--ssl-https-ca-certificates-file",
              self.pki["ca.crt"]], "--ssl-https-* flags need -u https://HOST:PORT"),
            (["--ssl-grpc-root-certifications-file", self.pki["ca.crt"], "-i", "grpc"],
             "--ssl-grpc-*-file flags need --ssl-grpc-use-ssl"),
            (["--ssl-grpc-use-ssl"], "--ssl-grpc-* flags need -i grpc"),
            (["--ssl-https-client-certificate-type=DER"], "DER is not supported"),
            (["--ssl-https-verify-host", "3"], "--ssl-https-verify-host must be 0..2"),
            (["-H", "no-colon"], "-H: header 'no-colon' is not 'name: value'"),
            (["-i", "grpc", "-H", "Bad Name: x"], "has characters a name cannot have"),
        ]
        for args, words in cases:
            with self.subTest(args=args):
                p = run([PERF, "-m", "simple", "-u", self.http_url()] + args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(words, p.stderr)


class MutualTlsTest(ServerCase):
    SCHEME = "https://"

    @classmethod
    def server_args(cls, pki):
        return tls_args(pki, mutual=True)

    def client_cert(self):
        return ["--ca", self.pki["ca.crt"], "--cert", self.pki["client.crt"], "--key",
                self.pki["client.key"]]

    def test_infer_with_the_client_certificate(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                p = self.infer(protocol, *self.client_cert(), "--json", "infer", "simple",
                               *SIMPLE_INPUTS)
                out = {o["name"]: o["data"] for o in json.loads(p.stdout)["outputs"]}
                self.assertEqual(out["OUTPUT1"], list(range(-1, 15)))

    def test_infer_without_the_client_certificate_is_refused(self):
        p = self.infer("http", "--ca", self.pki["ca.crt"], "health", expect=3)
        self.assertIn("certificate required", p.stderr)
        p = self.infer("grpc", "--ca", self.pki["ca.crt"], "health", expect=3)
        self.assertIn("gRPC UNAVAILABLE", p.stderr)
        self.assertIn("whether the server wants a client certificate", p.stderr)
        # a certificate of another CA is refused too
        p = self.infer("http", "--ca", self.pki["ca.crt"], "--cert", self.other["client.crt"],
                       "--key", self.other["client.key"], "health", expect=3)
        self.assertIn("alert", p.stderr)

    def test_infer_perf_with_and_without_the_client_certificate(self):
        https = ["--ssl-https-ca-certificates-file", self.pki["ca.crt"],
                 "--ssl-https-client-certificate-file", self.pki["client.crt"],
                 "--ssl-https-client-certificate-type=PEM",
                 "--ssl-https-private-key-file", self.pki["client.key"],
                 "--ssl-https-private-key-type", "PEM", "--ssl-https-verify-host=2"]
        grpc = ["--ssl-grpc-use-ssl", "--ssl-grpc-root-certifications-file", self.pki["ca.crt"],
                "--ssl-grpc-certificate-chain-file", self.pki["client.crt"],
                "--ssl-grpc-private-key-file", self.pki["client.key"]]
        p = self.perf("http", *https)
        self.assertIn("server_queue_us", p.stdout)
        self.perf("grpc", *grpc, *https)
        p = self.perf("http", "--ssl-https-ca-certificates-file", self.pki["ca.crt"], expect=1)
        self.assertIn("certificate required", p.stderr)
        p = self.perf("grpc", *grpc[:3], expect=1)
        self.assertIn("cannot get metadata of model 'simple'", p.stderr)

    def gateway(self, *flags):
        return pu.Gateway(self.grpc_url(), list(flags)).start()

    def test_gateway_to_inferd_over_mutual_tls(self):
        cases = [
            (["--inferd-ca", self.pki["ca.crt"], "--inferd-cert", self.pki["client.crt"],
              "--inferd-key", self.pki["client.key"]], 200),
            (["--inferd-ssl"], 503),                               # system roots
            (["--inferd-ca", self.other["ca.crt"], "--inferd-cert", self.pki["client.crt"],
              "--inferd-key", self.pki["client.key"]], 503),       # another CA
            (["--inferd-ca", self.pki["ca.crt"]], 503),            # no client certificate
            ([], 503),                                             # plain text
        ]
        for flags, ready in cases:
            with self.subTest(flags=flags):
                g = self.gateway(*flags)
                try:
                    c = harness.Client(g.ports["HTTP"])
                    self.assertEqual(c.get("/health/ready").status, ready, g.log())
                    r = c.post("/v1/classify/simple", b"x")
                    if ready == 200:
                        # inferd answered the metadata call: simple is no image pipeline
                        self.assertEqual(r.status, 400, r)
                        self.assertIn("not an image pipeline", r.json()["error"])
                    else:
                        self.assertEqual(r.status, 503, r)
                finally:
                    self.assertEqual(g.stop(), 0, g.log())

    def test_gateway_refuses_unreadable_files_at_start(self):
        missing = os.path.join(self.tmp, "missing.pem")
        p = run([pu.GATEWAY_BIN, "--inferd-url", self.grpc_url(), "--inferd-ca", missing])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("cannot read the CA file '%s'" % missing, p.stderr)
        p = run([pu.GATEWAY_BIN, "--inferd-url", self.grpc_url(), "--inferd-cert",
                 self.pki["client.crt"]])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("a client certificate and its private key go together", p.stderr)
        p = run([pu.GATEWAY_BIN, "--inferd-url", self.grpc_url(), "--inferd-header", "grpc-x: 1"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("header 'grpc-x' cannot be set as gRPC metadata", p.stderr)

    def test_batcher_to_inferd_over_mutual_tls(self):
        request = {"inputs": [
            {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
            {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}
        good = ["--inferd-ca", self.pki["ca.crt"], "--inferd-cert", self.pki["client.crt"],
                "--inferd-key", self.pki["client.key"]]
        cases = [(good, 200),
                 (["--inferd-ca", self.pki["ca.crt"]], 503),   # no client certificate
                 (["--inferd-ca", self.other["ca.crt"]] + good[2:], 503),  # another CA
                 ([], 503)]                                     # plain text
        for flags, status in cases:
            with self.subTest(flags=flags):
                b = pu.Batcher(self.grpc_url(), flags).start()
                try:
                    r = harness.Client(b.ports["HTTP"]).post_json("/v2/models/simple/infer",
                                                                  request)
                    self.assertEqual(r.status, status, "%s\n%s" % (r.body, b.log()))
                    if status == 200:
                        out = {o["name"]: o["data"] for o in r.json()["outputs"]}
                        self.assertEqual(out["OUTPUT0"], list(range(1, 17)))
                    else:
                        self.assertIn("error", r.json())
                finally:
                    self.assertEqual(b.stop(), 0, b.log())
        missing = os.path.join(self.tmp, "missing.pem")
        p = run([pu.BATCHER_BIN, "--upstream", self.grpc_url(), "--inferd-ca", missing])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("cannot read the CA file '%s'" % missing, p.stderr)


class RestrictedApiHeadersTest(ServerCase):
    """Plain text; health, metadata and inference restricted to a key on both protocols."""
    SCHEME = "http://"

    @classmethod
    def server_args(cls, pki):
        groups = "health,metadata,inference:infer-key=" + KEY
        return ["--http-restricted-api=" + groups, "--grpc-restricted-protocol=" + groups]

    HEADER = {"http": "infer-key: " + KEY, "grpc": "triton-grpc-protocol-infer-key: " + KEY}

    def test_infer_needs_the_header(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                p = self.infer(protocol, "metadata", "simple", expect=1)
                self.assertIn("PERMISSION_DENIED" if protocol == "grpc" else "HTTP 403", p.stderr)
                self.assertIn("infer-key", p.stderr)
                self.assertNotIn(KEY, p.stderr)
                p = self.infer(protocol, "-H", self.HEADER[protocol], "--json", "infer",
                               "simple", *SIMPLE_INPUTS)
                self.assertEqual(json.loads(p.stdout)["model_name"], "simple")
                # the wrong value is refused like none
                p = self.infer(protocol, "-H", self.HEADER[protocol] + "x", "metadata", "simple",
                               expect=1)
                self.assertIn("infer-key", p.stderr)

    def test_infer_perf_needs_the_header(self):
        for protocol in ("http", "grpc"):
            with self.subTest(protocol=protocol):
                p = self.perf(protocol, expect=1)
                self.assertIn("cannot get metadata of model 'simple'", p.stderr)
                self.assertIn("infer-key", p.stderr)
                # perf_analyzer's form is "Header:Value"
                self.perf(protocol, "-H", self.HEADER[protocol].replace(": ", ":"))

    def test_gateway_sends_the_metadata(self):
        for flags, ready in (([], 503),
                             (["--inferd-header", "Triton-GRPC-Protocol-Infer-Key: " + KEY], 200)):
            with self.subTest(flags=flags):
                g = pu.Gateway(self.grpc_url(), flags).start()
                try:
                    c = harness.Client(g.ports["HTTP"])
                    self.assertEqual(c.get("/health/ready").status, ready, g.log())
                    r = c.post("/v1/classify/simple", b"x")
                    if ready == 200:
                        self.assertEqual(r.status, 400, r)
                        self.assertIn("not an image pipeline", r.json()["error"])
                    else:
                        self.assertNotEqual(r.status, 200, r)
                        self.assertIn("infer-key", r.json()["error"])
                finally:
                    self.assertEqual(g.stop(), 0, g.log())


if __name__ == "__main__":
    unittest.main()
