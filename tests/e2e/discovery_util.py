"""inferd-discovery for tests and benchmarks: start it on loopback with a
gRPC bootstrap file for its clients, read its snapshot and metrics, stop it;
and follow an infer-perf run window by window (-v). One launcher for the
e2e tests, the cluster test and bench/discovery."""

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import harness

DISCOVERY_BIN = os.environ.get(
    "INFERD_DISCOVERY_BIN", os.path.join(os.path.dirname(harness.INFERD_BIN), "inferd-discovery"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=5, host="127.0.0.1"):
    try:
        with urllib.request.urlopen("http://%s:%d%s" % (host, port, path), timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def metric(text, name):
    """The sum of a metric's samples (every label set) in Prometheus text."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def write_hosts(path, endpoints):
    """A hosts file (--hosts-file) with `endpoints` ("HOST:GRPC_PORT"), replaced at once."""
    with open(path + ".tmp", "w") as f:
        f.write("# inferd hosts (HOST:GRPC_PORT)\n")
        for e in endpoints:
            f.write(e + "\n")
    os.replace(path + ".tmp", path)


class Discovery:
    """inferd-discovery on 127.0.0.1 with `args` (its sources, poll interval...), its
    output in <tmp>/<name>.log, and <tmp>/<name>-bootstrap.json for its clients."""

    def __init__(self, tmp, args, xds_port=None, http_port=None, name="discovery",
                 binary=None):
        self.xds_port, self.http_port = xds_port or free_port(), http_port or free_port()
        self.bootstrap = os.path.join(tmp, name + "-bootstrap.json")
        with open(self.bootstrap, "w") as f:
            json.dump({"xds_servers": [{"server_uri": "127.0.0.1:%d" % self.xds_port,
                                        "channel_creds": [{"type": "insecure"}],
                                        "server_features": ["xds_v3"]}],
                       "node": {"id": "test-" + name, "cluster": "tests"}}, f)
        self.log_path = os.path.join(tmp, name + ".log")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [binary or DISCOVERY_BIN, "--xds-address=127.0.0.1",
                 "--xds-port=%d" % self.xds_port, "--http-address=127.0.0.1",
                 "--http-port=%d" % self.http_port] + list(args),
                stdout=log, stderr=subprocess.STDOUT)

    def env(self):
        """The environment of a client that dials xds:///inferd through this discovery."""
        return dict(os.environ, GRPC_XDS_BOOTSTRAP=self.bootstrap)

    def wait_ready(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("inferd-discovery exited:\n" + self.log())
            try:
                if http_get(self.http_port, "/health/ready", 1)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("inferd-discovery not ready:\n" + self.log())

    def snapshot(self):
        return json.loads(http_get(self.http_port, "/v1/snapshot")[1])

    def hosts(self):
        return {h["id"]: h for h in self.snapshot()["discovery"]["hosts"]}

    def ready_hosts(self, model=None):
        """Ids of the ready hosts (with `model` READY, if given), sorted; [] on no answer."""
        try:
            hosts = self.hosts().values()
        except (OSError, ValueError, KeyError):
            return []
        return sorted(h["id"] for h in hosts
                      if h.get("ready") and (model is None or model in h.get("models", [])))

    def resources(self, suffix):
        for type_url, names in self.snapshot()["discovery"]["resources"].items():
            if type_url.endswith("." + suffix):
                return names
        return []

    def metrics(self):
        return http_get(self.http_port, "/metrics")[1].decode()

    def wait_for(self, pred, timeout=20, what="condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if pred():
                    return
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.1)
        raise AssertionError("%s: not within %ss\n%s\n%s" % (what, timeout, self.snapshot(),
                                                             self.log()[-3000:]))

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


WINDOW_RE = re.compile(r"window (\d+): ([\d.]+) infer/s, (\d+) requests, (\d+) errors")


class PerfWindows:
    """An infer-perf process (`cmd`, which should have -v) whose per-window lines are
    read as they come: `windows` holds (monotonic end, infer/s, requests, errors)."""

    def __init__(self, cmd, env, window_s):
        self.window_s = window_s
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.windows = []
        self.stderr = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.stderr.append(line)
            m = WINDOW_RE.search(line)
            if m:
                self.windows.append((time.monotonic(), float(m.group(2)), int(m.group(3)),
                                     int(m.group(4))))

    def wait(self, timeout):
        """Waits for the end; (exit code, stdout)."""
        out = self.proc.communicate(timeout=timeout)[0]
        self.reader.join(5)
        return self.proc.returncode, out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)

    def between(self, start, end):
        """Windows that began after `start` and ended by `end` (monotonic seconds)."""
        return [w for w in self.windows if w[0] - self.window_s >= start and w[0] <= end]
