"""A real Prometheus server for a test (Debian's `prometheus` package), and its HTTP API.

PrometheusProcess(tmp, targets, rule_files) writes a prometheus.yml scraping ``targets``
(host:port strings) every second and evaluating ``rule_files`` every second, stores its data
under ``tmp``, listens on a loopback port it picks, and is ready when start() returns. stop()
ends it (SIGTERM, then SIGKILL) and is safe to call twice or after a failed start. The API
helpers raise PrometheusError with Prometheus's own error text on any answer other than
status "success". One process per object; not thread-safe (one test thread drives it).
"""

import json
import math
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

PROMETHEUS = shutil.which("prometheus")
NOT_INSTALLED = ("the Debian package 'prometheus' is not installed (no prometheus on PATH); "
                 "scripts/install-deps.sh installs it")
SCRAPE_INTERVAL_S = 1


class PrometheusError(AssertionError):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusProcess:
    def __init__(self, tmp, targets, rule_files=(), job="inferd"):
        self.dir = os.path.join(tmp, "prometheus")
        self.targets = list(targets)
        self.rule_files = list(rule_files)
        self.job = job
        self.port = None
        self.proc = None
        self.log = None

    def config_text(self):
        lines = ["global:",
                 "  scrape_interval: %ds" % SCRAPE_INTERVAL_S,
                 "  scrape_timeout: %ds" % SCRAPE_INTERVAL_S,
                 "  evaluation_interval: %ds" % SCRAPE_INTERVAL_S]
        if self.rule_files:
            lines.append("rule_files:")
            lines += ["  - %s" % json.dumps(r) for r in self.rule_files]
        lines += ["scrape_configs:",
                  "  - job_name: %s" % json.dumps(self.job),
                  "    static_configs:",
                  "      - targets: %s" % json.dumps(self.targets)]
        return "\n".join(lines) + "\n"

    def start(self, timeout=20):
        if PROMETHEUS is None:
            raise PrometheusError(NOT_INSTALLED)
        os.makedirs(self.dir, exist_ok=True)
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(self.config_text())
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w+b")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(self.dir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PrometheusError("prometheus exited with %s%s" % (self.proc.returncode,
                                                                        self.log_tail()))
            try:
                with urllib.request.urlopen(self.url("/-/ready"), timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise PrometheusError("prometheus not ready within %d s%s" % (timeout, self.log_tail()))

    def stop(self):
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
        finally:
            if self.log is not None:
                self.log.close()
                self.log = None

    def log_tail(self, n=3000):
        if self.log is None:
            return ""
        self.log.flush()
        self.log.seek(0)
        return "\n---- prometheus log ----\n" + self.log.read().decode("utf-8", "replace")[-n:]

    # -- the HTTP API ------------------------------------------------------------------------

    def url(self, path, params=None):
        query = "?" + urllib.parse.urlencode(params, doseq=True) if params else ""
        return "http://127.0.0.1:%d%s%s" % (self.port, path, query)

    def api(self, path, params):
        """GET /api/v1/<path>; returns "data" of a "success" answer."""
        try:
            with urllib.request.urlopen(self.url("/api/v1/" + path, params), timeout=10) as r:
                body = json.loads(r.read().decode("utf-8"))
        except urllib.error.HTTPError as e:  # 400/422: a bad query, with Prometheus's reason
            body = json.loads(e.read().decode("utf-8") or "{}")
        if body.get("status") != "success":
            raise PrometheusError("%s %s: %s: %s" % (path, params, body.get("errorType"),
                                                     body.get("error")))
        return body["data"]

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = "%.3f" % at
        return self.api("query", params)

    def query_range(self, expr, start, end, step):
        return self.api("query_range", {"query": expr, "start": "%.3f" % start,
                                        "end": "%.3f" % end, "step": "%gs" % step})

    def label_values(self, label, match=None):
        return self.api("label/%s/values" % label, {"match[]": match} if match else None)

    def series(self, match):
        return self.api("series", {"match[]": match})


def values_of(data):
    """Every sample value (floats, NaN included) of a query or query_range answer."""
    if data["resultType"] == "vector":
        return [float(s["value"][1]) for s in data["result"]]
    if data["resultType"] == "matrix":
        return [float(v[1]) for s in data["result"] for v in s["values"]]
    if data["resultType"] == "scalar":
        return [float(data["result"][1])]
    raise PrometheusError("unexpected result type %s" % data["resultType"])


def bucket_quantile(q, buckets):
    """The q-quantile of a classic histogram as PromQL's histogram_quantile computes it (the
    definition inferd's status page follows, docs/metrics.md): ``buckets`` is [(upper bound,
    cumulative count)], +Inf included. Linear interpolation inside the bucket holding the rank
    q * count; the first bucket starts at 0 (at its bound if that is <= 0); a rank beyond every
    finite bound gives the highest finite bound; no observations, no +Inf bucket or fewer than
    two buckets give NaN. Counts are made monotonic first (a scrape can catch a bucket
    mid-update)."""
    if q != q:
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    merged = {}
    for bound, count in buckets:
        merged[bound] = merged.get(bound, 0.0) + count
    bounds = sorted(merged)
    if not bounds or bounds[-1] != math.inf or len(bounds) < 2:
        return math.nan
    counts = []
    for b in bounds:
        counts.append(max(merged[b], counts[-1]) if counts else merged[b])
    observations = counts[-1]
    if observations == 0:
        return math.nan
    rank = q * observations
    i = next((k for k in range(len(bounds) - 1) if counts[k] >= rank), len(bounds) - 1)
    if i == len(bounds) - 1:
        return bounds[-2]
    if i == 0 and bounds[0] <= 0:
        return bounds[0]
    start, count = 0.0, counts[i]
    if i > 0:
        start = bounds[i - 1]
        count -= counts[i - 1]
        rank -= counts[i - 1]
    return start + (bounds[i] - start) * (rank / count)
