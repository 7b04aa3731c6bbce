"""Shared pieces of the infer-perf flag tests: a server with HTTP, gRPC and
metrics, its model repository (sequence, delay and identity models), a TCP
relay that counts the connections and bytes a client makes, and a runner."""

import json
import os
import socket
import subprocess
import threading

from harness import GrpcServer, MetricsListener, ServerTestCase, copy_test_models, model_config, write_model

PERF = os.environ.get("INFER_PERF_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin", "infer-perf")

SEQUENCE_EXTRA = """
sequence_batching {
  max_sequence_idle_microseconds: 20000000
  direct { }
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] },
    { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
}
instance_group [ { kind: KIND_CPU count: 2 } ]
"""


class PerfServer(MetricsListener, GrpcServer):
    """inferd with HTTP, gRPC and the metrics listener, each on a free loopback port."""


class Relay:
    """A TCP relay to 127.0.0.1:`port`: counts the connections it accepted and the bytes
    clients sent through it, and keeps the first `keep` bytes of them."""

    def __init__(self, port, keep=1 << 20):
        self.target = port
        self.keep = keep
        self.connections = 0
        self.sent = 0
        self.data = bytearray()
        self._lock = threading.Lock()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src, dst, upstream):
        try:
            while True:
                chunk = src.recv(65536)
                if not chunk:
                    break
                if upstream:
                    with self._lock:
                        self.sent += len(chunk)
                        if len(self.data) < self.keep:
                            self.data += chunk[:self.keep - len(self.data)]
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            src.close()  # each socket is the source of one pump

    def close(self):
        self._listener.close()


class PerfTestCase(ServerTestCase):
    SERVER_CLASS = PerfServer

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        copy_test_models(repo, ["simple", "identity", "identity_bytes"])
        write_model(repo, "accumulator", model_config(
            "accumulator", "accumulator", [("INPUT", "TYPE_INT32", (1,))],
            [("OUTPUT", "TYPE_INT32", (1,))], 8, SEQUENCE_EXTRA))
        # One instance that takes 100 ms a request: latency grows with concurrency.
        write_model(repo, "step100", model_config(
            "step100", "delay", [("INPUT0", "TYPE_INT32", (1,))], [("OUTPUT0", "TYPE_INT32", (1,))],
            0, 'parameters { key: "execute_delay_ms" value { string_value: "100" } }\n'
               'instance_group [ { kind: KIND_CPU count: 1 } ]'))
        return [repo]

    def perf(self, *args, protocol="http", port=None, check=True, short=True):
        """Runs infer-perf against the server (or `port`); returns the process, with
        .report (the --json report) when asked for."""
        if port is None:
            port = self.server.grpc_port if protocol == "grpc" else self.server.port
        cmd = [PERF, "-i", protocol, "-u", "127.0.0.1:%d" % port]
        if short:
            cmd += ["--measurement-interval", "300", "--warmup-ms", "100", "--max-trials", "2"]
        cmd += list(args)
        env = dict(os.environ, INFER_PERF_HTTP_URL="127.0.0.1:%d" % self.server.port)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        if check:
            self.assertEqual(p.returncode, 0, "%s\n%s%s" % (cmd, p.stdout, p.stderr))
        p.report = json.loads(p.stdout) if check and "--json" in args else None
        return p

    def success_count(self, model):
        stats = self.client.get("/v2/models/%s/stats" % model).json()
        return sum(m["inference_stats"]["success"]["count"] for m in stats["model_stats"])
