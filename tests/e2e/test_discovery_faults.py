#!/usr/bin/python3
"""inferd-discovery against bad hosts, bad input and faults, through the real
binaries on loopback.

  - Hosts that hang (accept TCP, never answer), answer garbage, or refuse
    (a closed port), next to a real inferd: each bad one is not ready with a
    reason, the real one ready; discovery keeps polling and serving, counts
    the failures, and publishes only the real host (grpcio over
    xds:///inferd: every call succeeds).
  - A host that speaks gRPC but answers nonsense (a grpcio generic server):
    a ModelStatistics answer that does not parse makes it not ready; model
    names that could inject routes ('/', '..', control characters, 300
    bytes) are not published, a valid one next to them is.
  - The control plane restarts under load: clients keep their last
    assignment while it is down (0 failed calls) and subscribe again.
  - 1,000 hosts (1,000 loopback addresses of one fake inferd): one poll round
    makes them all ready, quickly, and /health/ready answers during it.
  - Bad command lines exit 2 naming the problem; a hosts file that cannot
    be read is not fatal (an empty set, logged, read again later).

The fake inferd and the xDS client run as child processes of this file
(`fake-inferd`, `xds-client`), so that their threads do not compete with
the test's for the GIL, and each xDS client reads its own bootstrap.
Skipped without the inferd-discovery binary or grpcio."""

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pb_wire  # noqa: E402
import discovery_util  # noqa: E402
from discovery_util import Discovery, free_port, http_get, metric  # noqa: E402

try:
    import grpc
except ImportError:
    grpc = None

DISCOVERY_BIN = discovery_util.DISCOVERY_BIN
SERVICE = "/inference.GRPCInferenceService/"
MODEL = "simple"
POLL_MS = 200
BAD_NAMES = ["a/b", "../etc", "x..y", "ctl\x01name", "del\x7f", "back\\slash", "n" * 300, ""]
VALID_NAME = "valid_model"


# ---- protobuf by hand (no generated code) ----------------------------------------------

_varint, _field = pb_wire.varint, pb_wire.field


def index_response(names):
    """RepositoryIndexResponse: models { name version state=READY }."""
    return b"".join(_field(1, _field(1, n) + _field(2, "1") + _field(3, "READY")) for n in names)


def metadata_request(name):
    return _field(1, name)


# ---- child processes: a fake inferd and an xDS client ----------------------------------

def fake_inferd_main(mode, bind):
    """A gRPC server answering ServerReady, RepositoryIndex, ModelStatistics,
    ModelMetadata and ModelInfer with raw bytes; prints its port; ends when
    stdin closes. mode: good | bad-stats | bad-names."""
    from concurrent import futures
    names = {"good": ["fake"], "bad-stats": ["fake"], "bad-names": BAD_NAMES + [VALID_NAME]}[mode]
    answers = {
        "ServerReady": b"\x08\x01",
        "RepositoryIndex": index_response(names),
        # A field 1 of 127 bytes with 1 byte there: does not parse.
        "ModelStatistics": b"\x0a\x7f\x01" if mode == "bad-stats" else b"",
        "ModelMetadata": b"",
        "ModelInfer": b"",
    }

    def handler(answer):
        return grpc.unary_unary_rpc_method_handler(
            lambda request, context: answer,
            request_deserializer=None, response_serializer=None)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64),
                         options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "inference.GRPCInferenceService", {k: handler(v) for k, v in answers.items()})])
    port = server.add_insecure_port("%s:0" % bind)
    server.start()
    print(port, flush=True)
    sys.stdin.read()
    server.stop(0)


def xds_client_main(model, threads, count):
    """ModelMetadata(model) over xds:///inferd ($GRPC_XDS_BOOTSTRAP) on `threads`
    threads, every other one with the `inferd-model` header; prints "ready",
    then "OK ERRORS" lines, and a JSON summary after `count` calls (or, with
    count 0, when stdin closes)."""
    channel = grpc.insecure_channel("xds:///inferd")
    call = channel.unary_unary(SERVICE + "ModelMetadata")
    header = (("inferd-model", model),)
    call(metadata_request(model), metadata=header, timeout=20, wait_for_ready=True)
    print("ready", flush=True)
    lock = threading.Lock()
    state = {"ok": 0, "errors": {}, "first_error": None, "stop": False, "started": 0}

    def worker(i):
        while True:
            with lock:
                if state["stop"] or (count and state["started"] >= count):
                    return
                state["started"] += 1
            try:
                call(metadata_request(model), metadata=header if i % 2 else (), timeout=10)
                with lock:
                    state["ok"] += 1
            except grpc.RpcError as e:
                with lock:
                    state["errors"][e.code().name] = state["errors"].get(e.code().name, 0) + 1
                    state["first_error"] = state["first_error"] or e.details()

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    if not count:
        def stopper():
            sys.stdin.read()
            state["stop"] = True
        threading.Thread(target=stopper, daemon=True).start()
    while any(w.is_alive() for w in workers):
        with lock:
            print(state["ok"], sum(state["errors"].values()), flush=True)
        time.sleep(0.1)
    state.pop("stop")
    state.pop("started")
    print(json.dumps(state), flush=True)
    channel.close()


def child(args, env=None):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__)] + args, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


class FakeInferd:
    def __init__(self, mode, bind="127.0.0.1"):
        self.proc = child(["fake-inferd", mode, bind])
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError("fake inferd did not start")
        self.port = int(line)

    def stop(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


class XdsClient:
    """A child running xds_client_main; `progress` is its latest (ok, errors)."""

    def __init__(self, bootstrap, model=MODEL, threads=4, count=0):
        self.proc = child(["xds-client", model, str(threads), str(count)],
                          env=dict(os.environ, GRPC_XDS_BOOTSTRAP=bootstrap))
        self.progress = (0, 0)
        self.result = None
        if self.proc.stdout.readline().strip() != "ready":
            self.finish()
            raise AssertionError("xDS client never got an answer: %s" % self.result)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.result = json.loads(line)
            elif line.strip():
                self.progress = tuple(int(x) for x in line.split())

    def finish(self, timeout=30):
        self.proc.stdin.close()
        self.proc.wait(timeout)
        if getattr(self, "reader", None):
            self.reader.join(5)
        self.proc.stdout.close()
        return self.result


# ---- hosts that are not inferd ----------------------------------------------------------

class RawServer:
    """Accepts TCP on loopback; `hang`: holds each connection and never writes;
    `garbage`: answers HTTP/1.1 text and random bytes, then closes."""

    def __init__(self, kind):
        self.kind = kind
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.kind == "hang":
                self.held.append(conn)
                continue
            try:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\n\r\nnope\n" +
                             os.urandom(512))
            except OSError:
                pass
            conn.close()

    def stop(self):
        self.sock.close()
        for c in self.held:
            c.close()


@unittest.skipUnless(os.access(DISCOVERY_BIN, os.X_OK), "inferd-discovery not built: " + DISCOVERY_BIN)
@unittest.skipUnless(grpc is not None, "no grpcio")
class DiscoveryFaultsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # 1,000 hosts: a channel each in discovery, a connection each in the fake.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 8192 if hard == resource.RLIM_INFINITY else min(hard, 8192)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        cls.tmp = tempfile.mkdtemp(prefix="inferd-discovery-faults-")
        cls.hosts = []
        try:
            for i in range(2):
                repo = harness.copy_test_models(os.path.join(cls.tmp, "repo%d" % i), [MODEL])
                cls.hosts.append(harness.GrpcServer([repo]).start())
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for h in cls.hosts:
            h.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.cleanups = []

    def tearDown(self):
        for stop in reversed(self.cleanups):
            stop()

    def discovery(self, args, **kwargs):
        d = Discovery(self.tmp, args, name=self.id().rsplit(".", 1)[1], **kwargs)
        self.cleanups.append(d.stop)
        return d

    def real(self, i=0):
        return "127.0.0.1:%d" % self.hosts[i].grpc_port

    def test_hung_garbage_and_closed_hosts(self):
        hung, garbage = RawServer("hang"), RawServer("garbage")
        self.cleanups += [hung.stop, garbage.stop]
        closed = "127.0.0.1:%d" % free_port()
        bad_stats = FakeInferd("bad-stats")
        self.cleanups.append(bad_stats.stop)
        ids = {"hung": "127.0.0.1:%d" % hung.port, "garbage": "127.0.0.1:%d" % garbage.port,
               "closed": closed, "bad_stats": "127.0.0.1:%d" % bad_stats.port}
        d = self.discovery(["--hosts=" + ",".join([self.real()] + list(ids.values())),
                            "--poll-interval-ms=%d" % POLL_MS, "--probe-timeout-ms=500"])
        d.wait_ready()
        d.wait_for(lambda: d.hosts()[self.real()]["ready"], what="the real host ready")
        hosts = d.hosts()
        self.assertEqual(hosts[self.real()]["models"], [MODEL], hosts)
        for kind, host_id in ids.items():
            h = hosts[host_id]
            self.assertFalse(h["ready"], h)
            self.assertTrue(h.get("reason"), h)
            self.assertEqual(h["weight"], 0, h)
        # The deadline, or gRPC's own connect timeout (the prober's short backoff).
        self.assertRegex(hosts[ids["hung"]]["reason"],
                         r"^ServerReady: (no answer within 500 ms|.*timed out)")
        for kind in ("garbage", "closed"):
            reason = hosts[ids[kind]]["reason"]
            self.assertTrue(reason.startswith("ServerReady: "), hosts[ids[kind]])
        # The answer that does not parse: INTERNAL, named by the call.
        self.assertEqual(hosts[ids["bad_stats"]]["reason"],
                         "ModelStatistics: an answer that does not parse")

        # Discovery keeps going: rounds advance, failures are counted, ready stays ready.
        rounds, errors = d.snapshot()["discovery"]["rounds"], metric(
            d.metrics(), "discovery_poll_errors_total")
        self.assertGreaterEqual(errors, 4)
        time.sleep(4 * POLL_MS / 1000 + 1)
        self.assertGreater(d.snapshot()["discovery"]["rounds"], rounds)
        text = d.metrics()
        self.assertGreater(metric(text, "discovery_poll_errors_total"), errors)
        self.assertEqual(metric(text, 'discovery_hosts{state="ready"}'), 1, text)
        self.assertEqual(http_get(d.http_port, "/health/ready")[0], 200)
        self.assertEqual(http_get(d.http_port, "/health/live")[0], 200)
        self.assertEqual(sorted(d.resources("Cluster")), ["inferd", "inferd/" + MODEL])

        # Only the real host is published: every call through xDS succeeds.
        result = XdsClient(d.bootstrap, threads=2, count=40).finish()
        self.assertEqual((result["ok"], result["errors"]), (40, {}), result)
        self.assertIsNone(d.proc.poll())

    def test_model_names_that_are_not_publishable(self):
        fake = FakeInferd("bad-names")
        self.cleanups.append(fake.stop)
        host_id = "127.0.0.1:%d" % fake.port
        d = self.discovery(["--hosts=" + host_id, "--poll-interval-ms=%d" % POLL_MS])
        d.wait_ready()
        d.wait_for(lambda: d.hosts()[host_id]["ready"], what="the fake host ready")
        self.assertEqual(d.hosts()[host_id]["models"], [VALID_NAME])
        want = ["inferd", "inferd/" + VALID_NAME]
        self.assertEqual(sorted(d.resources("Cluster")), want)
        self.assertEqual(sorted(d.resources("ClusterLoadAssignment")), want)
        log = d.log()
        self.assertIn("lists a model named 'a/b', which is not published", log)
        self.assertIn("which is not published", log)
        self.assertNotIn("\x01", log)  # control characters are escaped in the log
        # The valid model is routed: calls with its header reach the fake.
        result = XdsClient(d.bootstrap, model=VALID_NAME, threads=2, count=20).finish()
        self.assertEqual((result["ok"], result["errors"]), (20, {}), result)

    def test_control_plane_restart_under_load(self):
        hosts = "--hosts=%s,%s" % (self.real(0), self.real(1))
        d = self.discovery([hosts, "--poll-interval-ms=%d" % POLL_MS])
        d.wait_ready()
        d.wait_for(lambda: all(h["ready"] for h in d.hosts().values()) and len(d.hosts()) == 2,
                   what="both hosts ready")
        client = XdsClient(d.bootstrap, threads=4)
        self.cleanups.append(lambda: client.proc.poll() is None and client.finish())
        d.wait_for(lambda: d.snapshot()["xds"]["streams"] >= 1, what="the client's stream")
        time.sleep(0.5)
        self.assertEqual(d.stop(), 0, d.log())
        down_from = client.progress[0]
        time.sleep(2)
        self.assertGreater(client.progress[0], down_from + 10,
                           "calls continue while the control plane is down")
        self.assertEqual(client.progress[1], 0)

        d2 = self.discovery([hosts, "--poll-interval-ms=%d" % POLL_MS],
                            xds_port=d.xds_port, http_port=d.http_port)
        d2.wait_ready()
        # gRPC's xDS client retries its stream with a backoff (1 s, x1.6).
        d2.wait_for(lambda: d2.snapshot()["xds"]["streams"] >= 1, timeout=30,
                    what="the client subscribes again")
        again = client.progress[0]
        time.sleep(1)
        result = client.finish()
        self.assertGreater(result["ok"], again)
        self.assertEqual(result["errors"], {}, result)
        self.assertIsNone(d2.proc.poll())

    def test_a_thousand_hosts(self):
        fake = FakeInferd("good", bind="0.0.0.0")
        self.cleanups.append(fake.stop)
        hosts_file = os.path.join(self.tmp, "thousand.hosts")
        ids = ["127.0.%d.%d:%d" % (1 + i // 250, 1 + i % 250, fake.port) for i in range(1000)]
        with open(hosts_file, "w") as f:
            f.write("\n".join(ids) + "\n")
        d = self.discovery(["--hosts-file=" + hosts_file, "--poll-interval-ms=1000",
                            "--probe-timeout-ms=5000"])
        d.wait_ready(timeout=30)
        d.wait_for(lambda: sum(h["ready"] for h in d.hosts().values()) == 1000, timeout=30,
                   what="1,000 hosts ready")
        hosts = d.hosts()
        self.assertEqual(sorted(hosts), sorted(ids))
        self.assertTrue(all(h["models"] == ["fake"] and h["weight"] > 0 for h in hosts.values()))
        self.assertEqual(sorted(d.resources("ClusterLoadAssignment")), ["inferd", "inferd/fake"])

        # Steady rounds are quick, and /health/ready answers while they run.
        before = d.metrics()
        latencies = []
        end = time.monotonic() + 3
        while time.monotonic() < end:
            start = time.monotonic()
            self.assertEqual(http_get(d.http_port, "/health/ready", timeout=5)[0], 200)
            latencies.append(time.monotonic() - start)
            time.sleep(0.05)
        after = d.metrics()
        self.assertLess(max(latencies), 1.0, latencies)
        name = "discovery_poll_duration_seconds"
        rounds = metric(after, name + "_count") - metric(before, name + "_count")
        self.assertGreaterEqual(rounds, 1)
        mean = (metric(after, name + "_sum") - metric(before, name + "_sum")) / rounds
        self.assertLess(mean, 3.0, "mean poll round of 1,000 hosts: %.2f s" % mean)
        self.assertEqual(metric(after, 'discovery_hosts{state="ready"}'), 1000)
        # A proxyless client gets the 1,000-endpoint assignment and calls through it.
        result = XdsClient(d.bootstrap, model="fake", threads=4, count=40).finish(timeout=60)
        self.assertEqual((result["ok"], result["errors"]), (40, {}), result)

    def test_unreadable_hosts_file_is_not_fatal(self):
        fake = FakeInferd("good")
        self.cleanups.append(fake.stop)
        path = os.path.join(self.tmp, "later.hosts")
        d = self.discovery(["--hosts-file=" + path, "--poll-interval-ms=%d" % POLL_MS])
        d.wait_ready()
        self.assertEqual(d.hosts(), {})
        d.wait_for(lambda: "cannot open " + path in d.log(), what="the failure logged")
        with open(path, "w") as f:
            f.write("127.0.0.1:%d\n" % fake.port)
        d.wait_for(lambda: d.hosts()["127.0.0.1:%d" % fake.port]["ready"],
                   what="the file read again")
        self.assertIn("reading again", d.log())

    def test_bad_command_lines(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        cases = [
            ([], "no source of hosts"),
            (["--hosts=127.0.0.1:1", "--xds-port=70000"], "--xds-port: wants an integer"),
            (["--hosts=127.0.0.1:1", "--http-port=-1"], "--http-port: wants an integer"),
            (["--hosts=127.0.0.1:1", "--bogus=1"], "unknown flag --bogus"),
            (["--hosts=127.0.0.1"], "no port"),
            (["--hosts=127.0.0.1:0"], "the port must be a number from 1 to 65535"),
            (["--hosts=127.0.0.1:1", "--poll-interval-ms"], "missing value after"),
            (["--kubernetes-service=default/inferd:8001"], "not in a Kubernetes pod"),
            (["--kubernetes-service=Default/inferd:8001"], "NAMESPACE and NAME must be"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                p = subprocess.run([DISCOVERY_BIN] + args, capture_output=True, text=True,
                                   timeout=20, env=env)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(needle, p.stderr)
                self.assertIn("usage: inferd-discovery", p.stderr)
        # A port that is taken: a start-up failure (1), not a usage error.
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            p = subprocess.run([DISCOVERY_BIN, "--hosts=127.0.0.1:1", "--xds-address=127.0.0.1",
                                "--http-address=127.0.0.1", "--http-port=0",
                                "--xds-port=%d" % taken.getsockname()[1]],
                               capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("inferd-discovery:", p.stderr)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "fake-inferd":
        return fake_inferd_main(sys.argv[2], sys.argv[3])
    if len(sys.argv) > 1 and sys.argv[1] == "xds-client":
        return xds_client_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    unittest.main(verbosity=2 if harness.VERBOSE else 1, argv=sys.argv[:1])


if __name__ == "__main__":
    main()
