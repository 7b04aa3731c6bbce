#!/usr/bin/python3
"""--grpc-max-connections: with a cap of 2, two clients connected, a third client's call fails
UNAVAILABLE while the first two keep working; once one closes, a new client gets in. The same
over TLS (the connection is refused before its handshake). Without the flag there is no cap."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import secure_util  # noqa: E402
from harness import wait_until  # noqa: E402
from secure_util import grpc  # noqa: E402


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class CapCase(unittest.TestCase):
    TLS = False
    CAP = 2

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-grpc-conn-")
        repo = os.path.join(cls.tmp, "models")
        harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
        args = ["--log-verbose=1"]
        if cls.CAP:
            args.append("--grpc-max-connections=%d" % cls.CAP)
        if cls.TLS:
            cls.pki = secure_util.make_pki(os.path.join(cls.tmp, "pki"))
            args += ["--grpc-use-ssl=true", "--grpc-server-cert", cls.pki["server.crt"],
                     "--grpc-server-key", cls.pki["server.key"]]
        cls.pb = secure_util.grpc_messages(os.path.join(cls.tmp, "gen"))
        cls.server = secure_util.start_server([repo], args)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def tearDown(self):
        self.assertTrue(self.server.alive(), self.server.log_tail())

    def channel(self):
        # A subchannel pool of its own: each channel is one TCP connection of its own.
        options = [("grpc.use_local_subchannel_pool", 1)]
        target = "127.0.0.1:%d" % self.server.grpc_port
        if not self.TLS:
            return grpc.insecure_channel(target, options=options)
        with open(self.pki["ca.crt"], "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        return grpc.secure_channel(target, creds, options=options)

    def live(self, channel):
        return secure_util.unary(channel, "ServerLive", self.pb.ServerLiveRequest(),
                                 self.pb.ServerLiveResponse, timeout=5).live

    def metadata(self, channel):
        return secure_util.unary(channel, "ModelMetadata", self.pb.ModelMetadataRequest(
            name="simple"), self.pb.ModelMetadataResponse, timeout=5).name

    def refused(self, channel):
        try:
            self.live(channel)
        except grpc.RpcError as e:
            return e.code() == grpc.StatusCode.UNAVAILABLE
        return False


class GrpcConnectionCapTest(CapCase):
    def test_third_connection_refused_until_one_closes(self):
        first, second = self.channel(), self.channel()
        try:
            self.assertTrue(self.live(first))
            self.assertTrue(self.live(second))
            third = self.channel()
            try:
                self.assertTrue(self.refused(third), "a third connection is refused")
                # The client may see the refusal before the server has written its log line.
                line = "connection closed at accept: 2 open (--grpc-max-connections)"
                self.assertTrue(wait_until(lambda: line in "\n".join(self.server.log()), 5),
                                self.server.log_tail())
                # The first two keep working.
                self.assertEqual(self.metadata(first), "simple")
                self.assertTrue(self.live(second))
            finally:
                third.close()
            first.close()
            first = None
            fourth = self.channel()
            try:
                # The closed connection stops counting once the server sees it end.
                self.assertTrue(wait_until(lambda: not self.refused(fourth), 10),
                                self.server.log_tail())
                self.assertEqual(self.metadata(fourth), "simple")
                self.assertTrue(self.live(second))
            finally:
                fourth.close()
        finally:
            for c in (first, second):
                if c is not None:
                    c.close()


class GrpcConnectionCapTlsTest(GrpcConnectionCapTest):
    TLS = True


class GrpcNoCapTest(CapCase):
    CAP = 0

    def test_no_cap_by_default(self):
        channels = [self.channel() for _ in range(5)]
        try:
            for c in channels:
                self.assertTrue(self.live(c))
        finally:
            for c in channels:
                c.close()


if __name__ == "__main__":
    unittest.main()
