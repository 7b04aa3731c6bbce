#!/usr/bin/python3
"""Request limits (docs/security.md), each set low by its flag on a real inferd and driven over
real HTTP or gRPC: refused with an error naming the limit, and the server keeps serving."""

import gzip
import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import secure_util  # noqa: E402
from harness import pack, simple_request  # noqa: E402
from secure_util import grpc  # noqa: E402

SIMPLE = "/v2/models/simple/infer"
IDENTITY = "/v2/models/identity/infer"
STRINGS = "/v2/models/strings/infer"
IN0 = list(range(16))
IN1 = [1] * 16


def build_repo(root):
    repo = os.path.join(root, "models")
    harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
    harness.write_model(repo, "identity", harness.identity_config("identity", "TYPE_FP32"))
    harness.write_model(repo, "strings", harness.identity_config("strings", "TYPE_STRING"))
    return repo


class LimitsCase(harness.ServerTestCase):
    SERVER_ARGS = ()

    @classmethod
    def build_repository(cls, root):
        return [build_repo(root)]

    def tearDown(self):
        self.assertServerAlive()


class RequestShapeLimitsTest(LimitsCase):
    SERVER_ARGS = ("--http-max-json-depth", "5", "--max-request-inputs", "2",
                   "--max-request-outputs", "1", "--max-bytes-elements", "4",
                   "--http-max-header-size", "2048", "--http-max-chunks", "8")

    def test_json_depth(self):
        shallow = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "FP32",
                               "data": [[[1.0]], [[2.0]]]}]}
        self.assertOk(self.client.post_json(IDENTITY, shallow), "data nested 3 deep, limit 5")
        deep = [1.0]
        for _ in range(7):
            deep = [deep]
        r = self.client.post_json(IDENTITY, {"inputs": [{"name": "INPUT0", "shape": [1],
                                                         "datatype": "FP32", "data": deep}]})
        self.assertError(r, 400, "nested deeper than 5")

    def test_input_count(self):
        inputs = [{"name": "INPUT%d" % i, "shape": [1], "datatype": "FP32", "data": [1.0]}
                  for i in range(3)]
        r = self.client.post_json(IDENTITY, {"inputs": inputs})
        self.assertError(r, 400, "3 inputs", "--max-request-inputs")

    def test_output_count(self):
        req, _ = simple_request(IN0, IN1, outputs=["OUTPUT0", "OUTPUT1"])
        self.assertError(self.client.post_json(SIMPLE, req), 400, "2 outputs",
                         "--max-request-outputs")
        req, _ = simple_request(IN0, IN1, outputs=["OUTPUT0"])
        self.assertOk(self.client.post_json(SIMPLE, req))

    def test_bytes_element_count_json(self):
        ok = {"inputs": [{"name": "INPUT0", "shape": [4], "datatype": "BYTES",
                          "data": ["a", "b", "c", "d"]}]}
        self.assertOk(self.client.post_json(STRINGS, ok))
        over = {"inputs": [{"name": "INPUT0", "shape": [5], "datatype": "BYTES",
                            "data": ["a", "b", "c", "d", "e"]}]}
        self.assertError(self.client.post_json(STRINGS, over), 400, "5 BYTES elements",
                         "--max-bytes-elements")

    def test_bytes_element_count_binary(self):
        # Five empty strings: 20 bytes that a backend would turn into five objects.
        blob = struct.pack("<I", 0) * 5
        req = {"inputs": [{"name": "INPUT0", "shape": [5], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blob)}}]}
        self.assertError(self.client.post_binary(STRINGS, req, [blob]), 400,
                         "--max-bytes-elements")

    def test_header_size(self):
        data = (b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 3000 + b"\r\n\r\n")
        r = harness.raw_request(self.server.port, data, timeout=5)
        self.assertIsNotNone(r, "connection closed without an answer to a 3 KB header")
        self.assertError(r, 431, "--http-max-header-size")
        small = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000 + b"\r\n\r\n"
        self.assertOk(harness.raw_request(self.server.port, small, timeout=5))

    def chunked(self, n):
        req, _ = simple_request(IN0, IN1)
        body = json.dumps(req).encode()
        size = -(-len(body) // n)
        parts = [body[i:i + size] for i in range(0, len(body), size)]
        wire = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
        data = harness.http_request_bytes("POST", SIMPLE, wire, {"Transfer-Encoding": "chunked"},
                                          content_length=False)
        return len(parts), harness.raw_request(self.server.port, data, timeout=5)

    def test_chunk_count(self):
        n, r = self.chunked(3)
        self.assertLessEqual(n, 8)
        self.assertOk(r, "%d chunks" % n)
        n, r = self.chunked(40)
        self.assertGreater(n, 8)
        self.assertIsNotNone(r, "connection closed without an answer to %d chunks" % n)
        self.assertError(r, 400, "--http-max-chunks")


class ConnectionLimitTest(LimitsCase):
    SERVER_ARGS = ("--http-max-connections", "4")

    def test_connection_limit(self):
        socks = [harness.raw_connect(self.server.port) for _ in range(4)]
        try:
            time.sleep(0.3)  # the server accepts them
            extra = harness.raw_connect(self.server.port)
            try:
                extra.sendall(harness.http_request_bytes("GET", "/v2/health/live"))
                try:
                    r = harness.read_http_response(extra, timeout=5)
                except (ConnectionResetError, BrokenPipeError):
                    r = None
                if r is not None:  # a 503, unless the reset came first
                    self.assertError(r, 503, "--http-max-connections")
            finally:
                extra.close()
            # One of the four still works.
            socks[0].sendall(harness.http_request_bytes("GET", "/v2/health/live"))
            self.assertOk(harness.read_http_response(socks[0], timeout=5))
        finally:
            for s in socks:
                s.close()
        # Closed connections are counted out again.
        ok = harness.wait_until(lambda: _live(self.server.port), 5)
        self.assertTrue(ok, "no new connection accepted after the others closed")


def _live(port):
    try:
        r = harness.raw_request(port, harness.http_request_bytes("GET", "/v2/health/live"), 2)
        return r is not None and r.status == 200
    except OSError:
        return False


class SlowClientTest(LimitsCase):
    SERVER_ARGS = ("--http-header-timeout-secs", "1", "--http-body-timeout-secs", "1",
                   "--http-idle-timeout-secs", "30")

    def dribble(self, prefix, trickle):
        """Sends prefix, then one byte of trickle every 0.2 s; returns seconds until the server
        closed the connection (None if it never did within 8 s)."""
        s = harness.raw_connect(self.server.port)
        s.settimeout(0.2)
        t0 = time.monotonic()
        try:
            s.sendall(prefix)
            for b in trickle:
                if time.monotonic() - t0 > 8:
                    return None
                try:
                    s.sendall(bytes([b]))
                except (BrokenPipeError, ConnectionResetError):
                    return time.monotonic() - t0
                try:
                    data = s.recv(4096)
                    if not data:
                        return time.monotonic() - t0
                except socket.timeout:
                    pass
                except ConnectionResetError:
                    return time.monotonic() - t0
            return None
        finally:
            s.close()

    def test_slow_header_disconnected_others_served(self):
        result = {}
        t = threading.Thread(target=lambda: result.update(
            t=self.dribble(b"GET /v2/health/live HTTP/1.1\r\n", b"X-Slow: " + b"a" * 200)))
        t.start()
        time.sleep(0.3)
        r = self.server.client(timeout=5).post_json(SIMPLE, simple_request(IN0, IN1)[0])
        self.assertOk(r, "request while a client dribbles its header")
        t.join(15)
        self.assertIsNotNone(result.get("t"), "a client dribbling its header was not disconnected")
        self.assertLess(result["t"], 5)

    def test_slow_body_disconnected(self):
        head = harness.http_request_bytes("POST", SIMPLE, b"", content_length=500)
        elapsed = self.dribble(head, b" " * 200)
        self.assertIsNotNone(elapsed, "a client dribbling its body was not disconnected")
        self.assertLess(elapsed, 5)

    def test_idle_keep_alive_outlives_header_timeout(self):
        # Waiting for the next request is the idle phase, not the header phase.
        c = harness.Client(self.server.port, persistent=True)
        try:
            self.assertOk(c.get("/v2/health/live"))
            time.sleep(1.8)
            self.assertOk(c.get("/v2/health/live"), "keep-alive connection after 1.8 s idle")
        finally:
            c.close()


class GrpcServerCase(unittest.TestCase):
    """One inferd with SERVER_ARGS for the class, its gRPC messages and a channel to it."""
    SERVER_ARGS = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-limits-")
        repo = build_repo(cls.tmp)
        cls.pb = secure_util.grpc_messages(os.path.join(cls.tmp, "gen"))
        cls.server = secure_util.start_server([repo], list(cls.SERVER_ARGS))
        cls.channel = grpc.insecure_channel("127.0.0.1:%d" % cls.server.grpc_port)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class GrpcLimitsTest(GrpcServerCase):
    SERVER_ARGS = ("--grpc-max-message-size", "65536", "--grpc-max-concurrent-streams", "7",
                   "--max-bytes-elements", "4")

    def tearDown(self):
        pb = self.pb
        live = secure_util.unary(self.channel, "ServerLive", pb.ServerLiveRequest(),
                                 pb.ServerLiveResponse)
        self.assertTrue(live.live)

    def infer(self, req, **kw):
        return secure_util.unary(self.channel, "ModelInfer", req, self.pb.ModelInferResponse, **kw)

    def identity_request(self, nbytes):
        req = self.pb.ModelInferRequest(model_name="identity")
        req.inputs.add(name="INPUT0", datatype="FP32", shape=[nbytes // 4])
        req.raw_input_contents.append(b"\0" * nbytes)
        return req

    def test_message_size(self):
        self.assertEqual(len(self.infer(self.identity_request(4096)).raw_output_contents), 1)
        with self.assertRaises(grpc.RpcError) as e:
            self.infer(self.identity_request(200000))
        self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)

    def test_message_size_after_decompression(self):
        req = self.identity_request(400000)  # zeros: a few hundred bytes gzipped
        with self.assertRaises(grpc.RpcError) as e:
            self.infer(req, compression=grpc.Compression.Gzip)
        self.assertEqual(e.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)

    def test_declared_size_checked_against_bytes(self):
        req = self.pb.ModelInferRequest(model_name="identity")
        req.inputs.add(name="INPUT0", datatype="FP32", shape=[1 << 40])
        req.raw_input_contents.append(b"\0" * 16)
        with self.assertRaises(grpc.RpcError) as e:
            self.infer(req)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("INPUT0", e.exception.details())

    def test_bytes_elements(self):
        req = self.pb.ModelInferRequest(model_name="strings")
        req.inputs.add(name="INPUT0", datatype="BYTES", shape=[5])
        req.raw_input_contents.append(struct.pack("<I", 0) * 5)
        with self.assertRaises(grpc.RpcError) as e:
            self.infer(req)
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("--max-bytes-elements", e.exception.details())

    def test_max_concurrent_streams_advertised(self):
        # The server's first HTTP/2 SETTINGS frame carries SETTINGS_MAX_CONCURRENT_STREAMS (0x3).
        s = socket.create_connection(("127.0.0.1", self.server.grpc_port), timeout=5)
        try:
            s.sendall(H2_PREFACE + H2_EMPTY_SETTINGS)
            settings = None
            for ftype, flags, payload in h2_frames(s):
                if ftype == 4 and not flags & 1:
                    settings = {struct.unpack(">H", payload[i:i + 2])[0]:
                                struct.unpack(">I", payload[i + 2:i + 6])[0]
                                for i in range(0, len(payload), 6)}
                    break
        finally:
            s.close()
        self.assertIsNotNone(settings, "connection closed before SETTINGS")
        self.assertEqual(settings.get(3), 7, settings)


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_EMPTY_SETTINGS = b"\0\0\0\x04\0\0\0\0\0"


def h2_frames(sock):
    """(type, flags, payload) of each HTTP/2 frame the server sends, until it closes."""
    buf = b""
    while True:
        while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
            chunk = sock.recv(65536)
            if not chunk:
                return
            buf += chunk
        length = int.from_bytes(buf[:3], "big")
        yield buf[3], buf[4], buf[9:9 + length]
        buf = buf[9 + length:]


def closed_within(sock, seconds):
    """Seconds until the server closed `sock` (reading and discarding), or None."""
    start = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - start < seconds:
        try:
            if not sock.recv(65536):
                return time.monotonic() - start
        except socket.timeout:
            continue
        except ConnectionResetError:
            return time.monotonic() - start
    return None


@unittest.skipIf(grpc is None, "python3-grpcio is not installed")
class GrpcConnectionTimeoutsTest(GrpcServerCase):
    """gRPC 1.51 cannot cap its connections; these bound how long one holds a descriptor."""
    SERVER_ARGS = ("--grpc-idle-timeout-secs", "1", "--grpc-handshake-timeout-secs", "1")

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.server.grpc_port), timeout=5)
        self.addCleanup(s.close)
        return s

    def live(self, channel):
        pb = self.pb
        return secure_util.unary(channel, "ServerLive", pb.ServerLiveRequest(),
                                 pb.ServerLiveResponse, timeout=10).live

    def test_a_silent_connection_is_dropped_after_the_handshake_timeout(self):
        # gRPC's own default would keep it for 120 s.
        self.assertIsNotNone(closed_within(self.connect(), 8), "silent connection kept open")

    def test_a_partial_preface_is_dropped_after_the_handshake_timeout(self):
        s = self.connect()
        s.sendall(H2_PREFACE[:10])
        self.assertIsNotNone(closed_within(s, 8), "connection with half a preface kept open")

    def test_an_idle_connection_gets_goaway_and_the_client_reconnects(self):
        s = self.connect()
        s.sendall(H2_PREFACE + H2_EMPTY_SETTINGS)
        s.settimeout(8)
        start = time.monotonic()
        kinds = []
        for ftype, _, _ in h2_frames(s):
            kinds.append(ftype)
            if ftype == 7:  # GOAWAY
                break
        self.assertIn(7, kinds, "no GOAWAY on an idle connection (frames: %s)" % kinds)
        self.assertLess(time.monotonic() - start, 8)
        # A client's channel outlives the server closing its idle connection.
        channel = grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port)
        try:
            self.assertTrue(self.live(channel))
            time.sleep(2.5)
            self.assertTrue(self.live(channel))
        finally:
            channel.close()


if __name__ == "__main__":
    unittest.main()
