"""Helpers of the tracing tests (standard library only): the OTLP receiver
process (otlp_receiver.py) started and stopped, its recorded spans fetched,
and span trees built from them."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

RECEIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "otlp_receiver.py")
LINE = re.compile(r"^otlp-receiver: listening on 127\.0\.0\.1:(\d+)\s*$")


class OtlpReceiver:
    """One otlp_receiver.py process on a loopback port chosen by the kernel."""

    def __init__(self, gen_dir, mode="ok", retry_after=None):
        self.cmd = [sys.executable, RECEIVER, "--port", "0", "--gen-dir", gen_dir,
                    "--mode", mode]
        if retry_after is not None:
            self.cmd += ["--retry-after", str(retry_after)]
        self.proc = None
        self.port = None
        self.lines = []
        self._ready = threading.Event()

    def start(self, timeout=20):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(timeout):
            self.stop()
            raise RuntimeError("otlp receiver did not start:\n" + "\n".join(self.lines))
        return self

    def _read(self):
        try:
            for raw in iter(self.proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip()
                self.lines.append(line)
                m = LINE.match(line)
                if m:
                    self.port = int(m.group(1))
                    self._ready.set()
        except (OSError, ValueError):
            pass

    @property
    def url(self):
        return "http://127.0.0.1:%d/v1/traces" % self.port

    def _request(self, method, path, body=None):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=body,
                                     method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read()

    def spans(self):
        return json.loads(self._request("GET", "/spans"))["spans"]

    def stats(self):
        return json.loads(self._request("GET", "/stats"))

    def set_mode(self, mode):
        self._request("POST", "/mode", mode.encode())

    def reset(self):
        self._request("POST", "/reset", b"")

    def wait_for(self, predicate, timeout=20, what="spans"):
        """Polls the recorded spans until predicate(spans) is true; returns them."""
        deadline = time.monotonic() + timeout
        spans = []
        while time.monotonic() < deadline:
            spans = self.spans()
            if predicate(spans):
                return spans
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s; have %d spans:\n%s"
                             % (what, len(spans), describe(spans)))

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc.stdout.close()
        self.proc = None


def of_trace(spans, trace_id):
    return [s for s in spans if s["trace_id"] == trace_id]


class SpanTree:
    """The spans of one trace by id, with their children."""

    def __init__(self, spans):
        self.spans = {s["span_id"]: s for s in spans}
        self.children = {}
        for s in spans:
            self.children.setdefault(s["parent_span_id"], []).append(s)
        for kids in self.children.values():
            kids.sort(key=lambda s: s["start_ns"])

    def roots(self):
        """Spans whose parent is not in this trace's recorded spans (a root, or
        the child of a remote caller's span)."""
        return sorted((s for s in self.spans.values() if s["parent_span_id"] not in self.spans),
                      key=lambda s: s["start_ns"])

    def kids(self, span, name=None):
        out = self.children.get(span["span_id"], [])
        return [s for s in out if name is None or s["name"] == name]

    def parent(self, span):
        return self.spans.get(span["parent_span_id"])

    def named(self, name):
        return sorted((s for s in self.spans.values() if s["name"] == name),
                      key=lambda s: s["start_ns"])

    def descendants(self, span):
        out = []
        for k in self.kids(span):
            out.append(k)
            out.extend(self.descendants(k))
        return out


def describe(spans):
    """The spans as an indented tree per trace, for failure messages."""
    lines = []
    for trace_id in sorted({s["trace_id"] for s in spans}):
        tree = SpanTree(of_trace(spans, trace_id))
        lines.append("trace " + trace_id)

        def walk(span, depth):
            lines.append("%s%s [%s] %s parent=%s service=%s" % (
                "  " * (depth + 1), span["name"], span["kind_name"], span["span_id"],
                span["parent_span_id"] or "-", span["resource"].get("service.name")))
            for k in tree.kids(span):
                walk(k, depth + 1)

        for r in tree.roots():
            walk(r, 0)
    return "\n".join(lines)
