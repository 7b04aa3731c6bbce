"""End-to-end test harness for inferd (KServe v2 / Triton HTTP protocol).

Standard library only.  Provides:

* ``Server``: the one process launcher of the Python tests.  Starts ``inferd``
  (on 127.0.0.1 with ``--http-port 0`` unless told otherwise; a command prefix,
  gRPC and a log file on request), parses the ``inferd: HTTP listening on
  <address>:<port>`` line from stderr (in any --log-format: ``plain_line``; read
  in a thread; everything else is kept for failure diagnostics), stops it with
  SIGTERM, and fails the stop on a sanitizer report or an unclean exit
  (``SanitizerReport``).
* The canonical test repository (``tests/data/models``): ``copy_test_models``,
  ``read_test_config``, ``standard_repository``; builders for variants on top
  (``write_model``, ``model_config``, ``add_sub_config``, ``identity_config``).
* Tiny HTTP helpers (``Client.get/post/post_json/post_binary/infer``) and a
  raw-socket helper for requests http.client refuses to send.
* Tensor encoding helpers (``pack``/``unpack``) and binary-response parsing.

Environment:
  INFERD_BIN            path to the server binary (default <repo>/build/bin/inferd)
  INFERD_E2E_VERBOSE=1  always print the server's stderr when a server stops
  INFERD_E2E_SHOW_ERRORS=1  print every error message checked by assertError
"""

import http.client
import json
import math
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INFERD_BIN = os.environ.get("INFERD_BIN", os.path.join(REPO_ROOT, "build", "bin", "inferd"))
VERBOSE = os.environ.get("INFERD_E2E_VERBOSE", "") not in ("", "0")
SHOW_ERRORS = os.environ.get("INFERD_E2E_SHOW_ERRORS", "") not in ("", "0")

STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
HTTP_TIMEOUT_S = 15.0
# "inferd: HTTP listening on <address>:<port>" (and gRPC's): the address is what
# --http-address/--grpc-address said, the port the bound one.
LISTEN_RE = re.compile(r"^inferd: HTTP listening on (.+):(\d+)\s*$")
GRPC_LISTEN_RE = re.compile(r"^inferd: gRPC listening on (.+):(\d+)\s*$")
GRPC_NOT_SERVED_RE = re.compile(r"^inferd: gRPC is not served")

# inferd's log formats (--log-format, docs/logging.md): "inferd: ..." lines, the same after an
# ISO 8601 timestamp, or one JSON object per line. plain_line turns a line of any of them into
# the default form, so that the listening lines are found whatever the format.
ISO8601_PREFIX_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z ")
JSON_LEVEL_PREFIX = {"error": "inferd: error: ", "warning": "inferd: warning: ",
                     "info": "inferd: ", "verbose": "inferd: verbose: "}


def plain_line(line):
    """`line` in inferd's default log format (unchanged if it is in it, or not inferd's)."""
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            return line
        if isinstance(obj, dict) and isinstance(obj.get("message"), str):
            return JSON_LEVEL_PREFIX.get(obj.get("level"), "inferd: ") + obj["message"]
        return line
    m = ISO8601_PREFIX_RE.match(line)
    return line[m.end():] if m else line


# --------------------------------------------------------------------------------------------
# Server process
# --------------------------------------------------------------------------------------------


class ServerError(Exception):
    pass


# The first line of an ASan, LSan, TSan or UBSan report (UBSan's is
# "file:line:column: runtime error: ..."), or of a sanitizer's own failure.
SANITIZER_REPORT_RE = re.compile(
    r"(ERROR|WARNING): (Address|Leak|Thread|UndefinedBehavior)Sanitizer"
    r"|Sanitizer CHECK failed|Sanitizer has encountered a fatal error"
    r"|^\S+:\d+:\d+: runtime error: ")


class SanitizerReport(ServerError):
    """inferd printed a sanitizer report, or a signalled stop did not exit 0."""


class Server:
    """One inferd process, by default on 127.0.0.1 with an ephemeral HTTP port.

    The one launcher of the Python tests (e2e, gRPC compatibility, cluster). Options:
    ``prefix`` goes before the binary (e.g. ``["ip", "netns", "exec", ns]``), ``address``
    and ``http_port`` are the HTTP bind address and port (0: the kernel picks; the
    listening line says which), ``grpc_port`` None leaves gRPC off, a number serves it on
    ``address`` (``grpc_port`` is then the bound port, or None in a build without gRPC),
    ``log_path`` also writes every line inferd prints to that file, ``env`` (a dict) is
    added to the environment inferd inherits (e.g. credentials). ``extra_args`` come
    last, so they override the defaults above.
    """

    def __init__(self, repositories, extra_args=(), binary=None, startup_timeout=STARTUP_TIMEOUT_S,
                 prefix=(), address="127.0.0.1", http_port=0, grpc_port=None, log_path=None,
                 env=None):
        if isinstance(repositories, str):
            repositories = [repositories]
        self.repositories = list(repositories)
        self.extra_args = list(extra_args)
        self.binary = binary or INFERD_BIN
        self.startup_timeout = startup_timeout
        self.prefix = list(prefix)
        self.address = address
        self.http_port = http_port
        self.want_grpc_port = grpc_port
        self.log_path = log_path
        self.env = dict(env or {})
        self.proc = None
        self.port = None
        self.grpc_port = None
        self.returncode = None
        self._lines = []
        self._checked = False
        self._signalled = False
        self._log_file = None
        self._lock = threading.Lock()
        self._listening = threading.Event()
        self._threads = []

    # -- lifecycle ---------------------------------------------------------------------------

    def command(self):
        cmd = self.prefix + [self.binary]
        for r in self.repositories:
            cmd += ["--model-repository", r]
        cmd += ["--http-address", self.address, "--http-port", str(self.http_port)]
        if self.want_grpc_port is None:
            cmd += ["--allow-grpc=false"]
        else:
            cmd += ["--grpc-address", self.address, "--grpc-port", str(self.want_grpc_port)]
        cmd += ["--allow-metrics=false"]
        cmd += self.extra_args
        return cmd

    def start(self):
        """Starts inferd and waits for its HTTP listening line (and, with ``grpc_port``, for
        its gRPC line or the line saying this build does not serve gRPC)."""
        if not os.path.isfile(self.binary) or not os.access(self.binary, os.X_OK):
            raise ServerError("inferd binary not found or not executable: %s "
                              "(build it or set INFERD_BIN)" % self.binary)
        if self.log_path:
            self._log_file = open(self.log_path, "w", encoding="utf-8", errors="replace")
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     close_fds=True,
                                     env=dict(os.environ, **self.env) if self.env else None)
        for stream, tag, parse in ((self.proc.stderr, "", True), (self.proc.stdout, "[stdout] ", False)):
            t = threading.Thread(target=self._reader, args=(stream, tag, parse), daemon=True)
            t.start()
            self._threads.append(t)
        deadline = time.monotonic() + self.startup_timeout
        self._wait_listening(deadline)
        if self.want_grpc_port is not None:
            self._wait_grpc(deadline)
        return self

    def _wait_listening(self, deadline):
        while time.monotonic() < deadline:
            if self._listening.wait(0.05):
                break
            if self.proc.poll() is not None:
                # give the reader a moment to collect the last lines
                for t in self._threads:
                    t.join(1.0)
                if self._listening.is_set():
                    break
                raise ServerError("inferd exited with code %s before listening\ncommand: %s\n%s"
                                  % (self.proc.returncode, " ".join(self.command()), self.log_tail()))
        if not self._listening.is_set():
            self.kill()
            raise ServerError("inferd did not print the listening line within %.0f s\ncommand: %s\n%s"
                              % (self.startup_timeout, " ".join(self.command()), self.log_tail()))
        if self.proc.poll() is not None:
            raise ServerError("inferd exited right after listening (code %s)\n%s"
                              % (self.proc.returncode, self.log_tail()))

    def _wait_grpc(self, deadline):
        # gRPC starts right after HTTP; a build without it says so instead.
        while time.monotonic() < deadline:
            for line in map(plain_line, self.log()):
                m = GRPC_LISTEN_RE.match(line)
                if m:
                    self.grpc_port = int(m.group(2))
                    return
                if GRPC_NOT_SERVED_RE.match(line):
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.kill()
        raise ServerError("inferd printed no gRPC listening line\n" + self.log_tail())

    def _reader(self, stream, tag, parse):
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                with self._lock:
                    self._lines.append(tag + line)
                    if self._log_file is not None:
                        self._log_file.write(tag + line + "\n")
                        self._log_file.flush()
                if parse and not self._listening.is_set():
                    m = LISTEN_RE.match(plain_line(line))
                    if m:
                        self.port = int(m.group(2))
                        self._listening.set()
        except (OSError, ValueError):
            pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig):
        """Sends `sig` without waiting: a later wait() or stop() treats the exit as a
        shutdown on a signal (anything but exit code 0 is then unclean)."""
        if self.alive():
            self._signalled = True
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def wait(self, timeout=None):
        """Waits for inferd to exit and returns its exit code (None if it is still running
        after `timeout`). Checks the exit as stop() does, once per server."""
        if self.proc is None:
            return None
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._finish(signalled=self._signalled)
        return self.returncode

    def stop(self, timeout=STOP_TIMEOUT_S, sig=signal.SIGTERM):
        """SIGTERM and wait.  Returns the exit code, or None if it had to be killed.

        Raises SanitizerReport (once per server) when inferd's output holds a
        sanitizer report, or when inferd was serving, got `sig` (here or from
        send_signal) and exited with anything but 0: a leak found at exit or a
        race in shutdown comes after every request was answered, so the test
        would pass without it."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            self.returncode = self.proc.returncode
            self._finish(signalled=self._signalled)
            return self.returncode
        self.send_signal(sig)
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.returncode = None
        self._finish(signalled=True)
        return self.returncode

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def _finish(self, signalled):
        for t in self._threads:
            t.join(2.0)
        for s in (self.proc.stdout, self.proc.stderr):
            try:
                s.close()
            except Exception:
                pass
        with self._lock:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None
            first_check = not self._checked
            self._checked = True
        if VERBOSE:
            sys.stderr.write("\n---- inferd log (%s) ----\n%s\n" % (" ".join(self.command()), self.log_tail(400)))
        if first_check:
            self._raise_on_unclean_exit(signalled)

    def _raise_on_unclean_exit(self, signalled):
        lines = self.log()
        for i, line in enumerate(lines):
            if SANITIZER_REPORT_RE.search(line):
                raise SanitizerReport("inferd's sanitizer reported a problem:\n%s"
                                      % "\n".join(lines[i:i + 40]))
        # None: killed after the stop timeout, which the caller sees.
        if signalled and self.returncode not in (0, None):
            raise SanitizerReport("inferd exited with code %s on a shutdown signal\n%s"
                                  % (self.returncode, self.log_tail()))

    def log(self):
        with self._lock:
            return list(self._lines)

    def plain_log(self):
        """log() with each line in the default format (plain_line)."""
        return [plain_line(line) for line in self.log()]

    def log_tail(self, n=60):
        lines = self.log()
        return "---- inferd output (last %d of %d lines) ----\n%s" % (
            min(n, len(lines)), len(lines), "\n".join(lines[-n:]))

    def client_host(self):
        """Where a client reaches the HTTP (and gRPC) port."""
        return "127.0.0.1" if self.address in ("0.0.0.0", "", "::") else self.address

    def client(self, timeout=HTTP_TIMEOUT_S):
        return Client(self.port, host=self.client_host(), timeout=timeout)


class GrpcServer(Server):
    """Server with the gRPC front end on too (port picked by the kernel unless
    ``grpc_port`` says otherwise); ``grpc_port`` is set once it listens, and a build
    without gRPC fails start()."""

    def __init__(self, repositories, extra_args=(), grpc_port=0, **kwargs):
        super().__init__(repositories, extra_args, grpc_port=grpc_port, **kwargs)

    def start(self):
        super().start()
        if self.grpc_port is None:
            self.kill()
            raise ServerError("this inferd does not serve gRPC\n" + self.log_tail())
        return self


METRICS_LINE = re.compile(r"^inferd: metrics listening on 127\.0\.0\.1:(\d+)\s*$")


class MetricsListener:
    """Mixin for a Server class: the metrics listener on too, on a port the kernel picks;
    ``metrics_port`` is set once it listens (start() fails otherwise)."""

    metrics_port = None

    def command(self):
        cmd = [a for a in super().command() if a != "--allow-metrics=false"]
        return cmd + ["--metrics-address", "127.0.0.1", "--metrics-port", "0"]

    def start(self):
        super().start()
        line = wait_until(lambda: next((m for m in map(METRICS_LINE.match, self.plain_log()) if m),
                                       None), 10, 0.05)
        if not line:
            self.stop()
            raise ServerError("no 'metrics listening' line\n" + self.log_tail())
        self.metrics_port = int(line.group(1))
        return self

    def metrics_client(self):
        return Client(self.metrics_port)


class MetricsServer(MetricsListener, Server):
    """harness.Server with the metrics listener."""


class ServerTestCase(unittest.TestCase):
    """Base class: one server per test class, started in setUpClass and always stopped.

    Subclasses set ``SERVER_ARGS`` and implement ``build_repository(cls, root)`` returning a
    list of repository paths (or a single path). ``start_server`` (how the server is launched)
    and ``open_clients``/``close_clients`` (what talks to it) may be overridden; a failed
    set-up still stops the server and removes ``cls.tmp``.
    """

    SERVER_ARGS = ()
    SERVER_CLASS = None  # harness.Server unless a subclass names another launcher
    server = None
    client = None

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        standard_repository(repo)
        return [repo]

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-e2e-")
        try:
            repos = cls.build_repository(cls.tmp)
            cls.repos = [repos] if isinstance(repos, str) else list(repos)
            cls.server = cls.start_server()
            cls.open_clients()
        except BaseException:
            cls.close_clients()
            if cls.server is not None:
                cls.server.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.close_clients()
            if cls.server is not None:
                cls.server.stop()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def start_server(cls):
        """Launches and returns the server for ``cls.repos`` (set before this is called)."""
        return (cls.SERVER_CLASS or Server)(cls.repos, cls.SERVER_ARGS).start()

    @classmethod
    def open_clients(cls):
        cls.client = cls.server.client()

    @classmethod
    def close_clients(cls):
        """Closes what open_clients opened; called even when set-up failed half-way."""

    # -- assertions --------------------------------------------------------------------------

    def diag(self):
        return "\n" + self.server.log_tail(30) if self.server else ""

    def assertServerAlive(self):
        if not self.server.alive():
            self.fail("inferd process died (exit code %s)%s" % (self.server.proc.returncode, self.diag()))
        try:
            r = self.server.client(timeout=10).get("/v2/health/live")
        except OSError as e:
            self.fail("GET /v2/health/live failed after the test: %r%s" % (e, self.diag()))
        self.assertEqual(r.status, 200, "GET /v2/health/live after the test: %s%s" % (r, self.diag()))

    def assertStatus(self, resp, status, what=""):
        if isinstance(status, int):
            status = (status,)
        if resp.status not in status:
            self.fail("%sexpected HTTP %s, got %s" % (what + ": " if what else "",
                                                      "/".join(map(str, status)), resp))

    def assertOk(self, resp, what=""):
        self.assertStatus(resp, 200, what)

    def assertError(self, resp, status, *needles, what=""):
        """Assert an error status with a JSON body {"error": "<non-empty string>"} containing
        every needle (case-sensitive substrings).  Returns the message."""
        self.assertStatus(resp, status, what)
        try:
            body = resp.json()
        except ValueError:
            self.fail("%serror body is not JSON: %s" % (what + ": " if what else "", resp))
        self.assertIsInstance(body, dict, "error body is not an object: %s" % resp)
        self.assertIn("error", body, "error body lacks 'error': %s" % resp)
        msg = body["error"]
        if SHOW_ERRORS:
            sys.stderr.write("\n  [%s] HTTP %s: %s\n" % (self.id().rsplit(".", 1)[-1], resp.status, msg))
        self.assertIsInstance(msg, str, "'error' is not a string: %s" % resp)
        self.assertTrue(msg.strip(), "'error' message is empty: %s" % resp)
        for n in needles:
            if isinstance(n, (tuple, list)):
                self.assertTrue(any(x in msg for x in n),
                                "error message %r mentions none of %r" % (msg, n))
            else:
                self.assertIn(n, msg, "error message %r does not mention %r" % (msg, n))
        return msg


# --------------------------------------------------------------------------------------------
# HTTP helpers
# --------------------------------------------------------------------------------------------


class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers            # list of (name, value)
        self.body = body                  # bytes (undecoded, possibly compressed)

    def header(self, name, default=None):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return default

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        b = self.body[:400]
        try:
            b = b.decode("utf-8")
        except UnicodeDecodeError:
            pass
        return "<HTTP %s %s body=%r%s>" % (self.status, self.reason, b,
                                          "..." if len(self.body) > 400 else "")

    __str__ = __repr__


class Client:
    """http.client wrapper.  ``persistent=True`` reuses one keep-alive connection."""

    def __init__(self, port, host="127.0.0.1", timeout=HTTP_TIMEOUT_S, persistent=False):
        self.host, self.port, self.timeout, self.persistent = host, port, timeout, persistent
        self._conn = None

    def _connection(self):
        if self.persistent:
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            return self._conn
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method, path, body=None, headers=None):
        conn = self._connection()
        hdrs = dict(headers or {})
        try:
            if body is None and method == "POST":
                body = b""
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            data = r.read()
            resp = Response(r.status, r.reason, r.getheaders(), data)
            if r.will_close and self.persistent:
                self.close()
            return resp
        finally:
            if not self.persistent:
                conn.close()

    def get(self, path, headers=None):
        return self.request("GET", path, None, headers)

    def post(self, path, body=b"", headers=None):
        if isinstance(body, str):
            body = body.encode("utf-8")
        return self.request("POST", path, body, headers)

    def post_json(self, path, obj, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        return self.post(path, json.dumps(obj).encode("utf-8"), h)

    def post_binary(self, path, header_obj, blobs, headers=None, header_bytes=None):
        """POST JSON header + concatenated blobs with Inference-Header-Content-Length."""
        hb = header_bytes if header_bytes is not None else json.dumps(header_obj).encode("utf-8")
        body = hb + b"".join(blobs)
        h = {"Content-Type": "application/octet-stream",
             "Inference-Header-Content-Length": str(len(hb))}
        h.update(headers or {})
        return self.post(path, body, h)

    def infer(self, model, request, version=None, blobs=None, headers=None):
        path = infer_path(model, version)
        if blobs:
            return self.post_binary(path, request, blobs, headers)
        return self.post_json(path, request, headers)


def infer_path(model, version=None):
    if version is None:
        return "/v2/models/%s/infer" % model
    return "/v2/models/%s/versions/%s/infer" % (model, version)


def parse_infer_response(resp):
    """Return (json_header, {output_name: bytes}) for a (possibly binary) infer response.
    Blobs are located by summing binary_data_size in output order."""
    body = resp.body
    hlen = resp.header("Inference-Header-Content-Length")
    if hlen is None:
        return json.loads(body.decode("utf-8")), {}
    hlen = int(hlen)
    if not 0 <= hlen <= len(body):
        raise ValueError("Inference-Header-Content-Length %d outside body of %d bytes" % (hlen, len(body)))
    header = json.loads(body[:hlen].decode("utf-8"))
    blobs = {}
    off = hlen
    for out in header.get("outputs", []):
        size = (out.get("parameters") or {}).get("binary_data_size")
        if size is None:
            continue
        if off + size > len(body):
            raise ValueError("binary output %s (%d bytes) runs past the body" % (out["name"], size))
        blobs[out["name"]] = body[off:off + size]
        off += size
    if off != len(body):
        raise ValueError("%d unaccounted bytes after binary outputs" % (len(body) - off))
    return header, blobs


def outputs_by_name(header):
    return {o["name"]: o for o in header.get("outputs", [])}


# --------------------------------------------------------------------------------------------
# Raw sockets
# --------------------------------------------------------------------------------------------


def raw_connect(port, timeout=10.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


# Bytes read past the end of a response (pipelining), per socket, kept for the next read.
_LEFTOVER = {}


def read_http_response(sock, timeout=10.0):
    """Read one HTTP/1.1 response from a socket.  Returns Response, or None if the peer closed
    the connection before sending a status line.  Raises socket.timeout on timeout."""
    sock.settimeout(timeout)
    buf = _LEFTOVER.pop(sock.fileno(), b"")
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            if not buf:
                return None
            raise ConnectionError("connection closed inside response headers: %r" % buf[:200])
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else ""
    headers = []
    for l in lines[1:]:
        k, _, v = l.partition(":")
        headers.append((k.strip(), v.strip()))
    hd = {k.lower(): v for k, v in headers}

    def need(n):
        nonlocal rest
        while len(rest) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed inside response body")
            rest += chunk

    if "chunked" in hd.get("transfer-encoding", "").lower():
        body = b""
        while True:
            while b"\r\n" not in rest:
                need(len(rest) + 1)
            line, rest = rest.split(b"\r\n", 1)
            size = int(line.split(b";")[0].strip(), 16)
            need(size + 2)
            body += rest[:size]
            rest = rest[size + 2:]
            if size == 0:
                break
    elif "content-length" in hd:
        n = int(hd["content-length"])
        need(n)
        body = rest[:n]
        if len(rest) > n:
            _LEFTOVER[sock.fileno()] = rest[n:]
    else:
        # read to close
        body = rest
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return Response(status, reason, headers, body)


def raw_request(port, data, timeout=10.0):
    """Send raw bytes on a new connection and read one response (None if closed without one)."""
    s = raw_connect(port, timeout)
    try:
        s.sendall(data)
        try:
            return read_http_response(s, timeout)
        except (ConnectionResetError, BrokenPipeError):
            return None
    finally:
        s.close()


def http_request_bytes(method, path, body=b"", headers=None, content_length=None):
    """Build raw HTTP/1.1 request bytes (Content-Length defaults to len(body))."""
    h = [("Host", "127.0.0.1")]
    h += list((headers or {}).items())
    if content_length is None:
        content_length = len(body)
    if content_length is not False:
        h.append(("Content-Length", str(content_length)))
    head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h) + "\r\n"
    return head.encode("latin-1") + body


def metric(text, name, **labels):
    """The value of one series (labels exactly these) in a Prometheus text scrape, or 0."""
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(name + ("{" + want + "}" if want else "") + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def wait_until(pred, timeout, interval=0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    return pred()


# --------------------------------------------------------------------------------------------
# Tensor encoding
# --------------------------------------------------------------------------------------------

CONFIG_TO_PROTOCOL = {
    "TYPE_BOOL": "BOOL", "TYPE_UINT8": "UINT8", "TYPE_UINT16": "UINT16", "TYPE_UINT32": "UINT32",
    "TYPE_UINT64": "UINT64", "TYPE_INT8": "INT8", "TYPE_INT16": "INT16", "TYPE_INT32": "INT32",
    "TYPE_INT64": "INT64", "TYPE_FP16": "FP16", "TYPE_FP32": "FP32", "TYPE_FP64": "FP64",
    "TYPE_STRING": "BYTES", "TYPE_BF16": "BF16",
}
PROTOCOL_TO_CONFIG = {v: k for k, v in CONFIG_TO_PROTOCOL.items()}
_STRUCT = {"BOOL": "?", "UINT8": "B", "UINT16": "H", "UINT32": "I", "UINT64": "Q", "INT8": "b",
           "INT16": "h", "INT32": "i", "INT64": "q", "FP16": "e", "FP32": "f", "FP64": "d"}
ELEMENT_SIZE = {"BOOL": 1, "UINT8": 1, "UINT16": 2, "UINT32": 4, "UINT64": 8, "INT8": 1,
                "INT16": 2, "INT32": 4, "INT64": 8, "FP16": 2, "FP32": 4, "FP64": 8, "BF16": 2}


def pack(datatype, values):
    """Little-endian row-major binary encoding of a flat list."""
    if datatype == "BYTES":
        out = b""
        for v in values:
            if isinstance(v, str):
                v = v.encode("utf-8")
            out += struct.pack("<I", len(v)) + v
        return out
    if datatype == "BF16":
        return b"".join(struct.pack("<f", v)[2:4] for v in values)
    return struct.pack("<%d%s" % (len(values), _STRUCT[datatype]), *values)


def unpack(datatype, data):
    if datatype == "BYTES":
        out, off = [], 0
        while off < len(data):
            if off + 4 > len(data):
                raise ValueError("truncated BYTES length prefix")
            (n,) = struct.unpack_from("<I", data, off)
            off += 4
            if off + n > len(data):
                raise ValueError("BYTES element runs past the end")
            out.append(data[off:off + n])
            off += n
        return out
    if datatype == "BF16":
        return [struct.unpack("<f", b"\x00\x00" + data[i:i + 2])[0] for i in range(0, len(data), 2)]
    size = ELEMENT_SIZE[datatype]
    if len(data) % size:
        raise ValueError("%d bytes is not a multiple of %s size %d" % (len(data), datatype, size))
    return list(struct.unpack("<%d%s" % (len(data) // size, _STRUCT[datatype]), data))


def fp32(x):
    """Round a Python float to the nearest float32 value."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


# --------------------------------------------------------------------------------------------
# Model repositories
# --------------------------------------------------------------------------------------------


def tensor_block(kind, tensors):
    """tensors: list of (name, TYPE_X, dims)."""
    items = []
    for name, dtype, dims in tensors:
        items.append('  {\n    name: "%s"\n    data_type: %s\n    dims: [ %s ]\n  }'
                     % (name, dtype, ", ".join(str(d) for d in dims)))
    return "%s [\n%s\n]\n" % (kind, ",\n".join(items))


def model_config(name, backend, inputs, outputs, max_batch_size=0, extra=""):
    text = 'name: "%s"\nbackend: "%s"\nmax_batch_size: %d\n' % (name, backend, max_batch_size)
    text += tensor_block("input", inputs) + tensor_block("output", outputs)
    if extra:
        text += textwrap.dedent(extra).strip() + "\n"
    return text


def write_model(repo, name, config_text, versions=(1,), files=None):
    """Create <repo>/<name>/config.pbtxt and empty version directories."""
    d = os.path.join(repo, name)
    os.makedirs(d, exist_ok=True)
    if config_text is not None:
        with open(os.path.join(d, "config.pbtxt"), "w") as f:
            f.write(config_text)
    for v in versions:
        os.makedirs(os.path.join(d, str(v)), exist_ok=True)
    for rel, content in (files or {}).items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(content)
    return d


def add_sub_config(name, dtype, dims=(16,), max_batch_size=8, extra=""):
    return model_config(name, "add_sub",
                        [("INPUT0", dtype, dims), ("INPUT1", dtype, dims)],
                        [("OUTPUT0", dtype, dims), ("OUTPUT1", dtype, dims)],
                        max_batch_size, extra)


def identity_config(name, dtype, dims=(-1,), max_batch_size=0, n=1, extra=""):
    if isinstance(dtype, str):
        dtype = [dtype] * n
    return model_config(name, "identity",
                        [("INPUT%d" % i, t, dims) for i, t in enumerate(dtype)],
                        [("OUTPUT%d" % i, t, dims) for i, t in enumerate(dtype)],
                        max_batch_size, extra)


# The canonical test repository: every small model the tests share, defined once
# (tests/data/models; the models that are also examples link to examples/models).
# Launchers copy the ones they need into a temporary repository and add their
# special models (variants, broken configs) on top with write_model.
TEST_MODELS_DIR = os.path.join(REPO_ROOT, "tests", "data", "models")


def read_test_config(name):
    """The config.pbtxt text of a model of the canonical test repository."""
    with open(os.path.join(TEST_MODELS_DIR, name, "config.pbtxt")) as f:
        return f.read()


def copy_test_models(repo, names):
    """Copies models of the canonical test repository into `repo` (links resolved, so
    the copy can be changed freely).  Returns `repo`."""
    os.makedirs(repo, exist_ok=True)
    for name in names:
        src = os.path.join(TEST_MODELS_DIR, name)
        if not os.path.isfile(os.path.join(src, "config.pbtxt")):
            raise ValueError("no model %r in the test repository %s" % (name, TEST_MODELS_DIR))
        shutil.copytree(src, os.path.join(repo, name), dirs_exist_ok=True)
    return repo


# Triton's example "simple" (add_sub, two INT32 [16] inputs, max_batch_size 8).
SIMPLE_CONFIG = read_test_config("simple")

IDENTITY_TYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32",
                  "INT64", "FP16", "FP32", "FP64", "BYTES", "BF16"]

# standard_repository's models: the examples' simple ones, the add_sub and identity
# variants per datatype, and two versions of one model (both served).
STANDARD_MODELS = (["simple", "simple_int8", "simple_fp32", "simple_string", "simple_identity",
                    "identity"]
                   + ["identity_" + t.lower() for t in IDENTITY_TYPES]
                   + ["identity_2d", "identity_pair", "versioned"])


def standard_repository(repo):
    """The example models plus a few extra ones.  Every model here must load."""
    return copy_test_models(repo, STANDARD_MODELS)


def simple_request(in0, in1, batch=1, outputs=None, binary_in=False, binary_out=None, dtype="INT32",
                   request_id=None):
    """Build an infer request (and blobs) for an add_sub model with dims [16]."""
    shape = [batch, 16] if batch is not None else [16]
    req = {"inputs": []}
    blobs = []
    for name, vals in (("INPUT0", in0), ("INPUT1", in1)):
        t = {"name": name, "shape": shape, "datatype": dtype}
        if binary_in:
            b = pack(dtype, vals)
            t["parameters"] = {"binary_data_size": len(b)}
            blobs.append(b)
        else:
            t["data"] = list(vals)
        req["inputs"].append(t)
    if outputs is not None:
        req["outputs"] = []
        for o in outputs:
            e = {"name": o}
            if binary_out is not None:
                e["parameters"] = {"binary_data": bool(binary_out)}
            req["outputs"].append(e)
    if request_id is not None:
        req["id"] = request_id
    return req, blobs


def isclose(a, b, rel=1e-6):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-30)
