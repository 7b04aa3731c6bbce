#!/usr/bin/python3
"""A real OTLP/HTTP trace receiver for the tracing tests: a process of its own
(Python's http.server, HTTP/1.1 keep-alive) that decodes each
``POST /v1/traces`` body as an ``ExportTraceServiceRequest`` with the Python
classes protoc generates from inferd's own ``proto/otlp/*.proto`` (the messages
inferd's exporter is built from) and records every span as JSON.

    otlp_receiver.py --port 0 --gen-dir DIR [--mode ok|unavailable|hang|bad_request|partial]

prints ``otlp-receiver: listening on 127.0.0.1:<port>`` once it serves, then:

* ``POST /v1/traces``: the export. ``ok`` answers 200 with an empty
  ``ExportTraceServiceResponse``; ``unavailable`` answers 503 (with
  ``Retry-After`` when ``--retry-after`` is set); ``hang`` reads the request and
  never answers (until the mode changes or the receiver stops); ``bad_request``
  answers 400; ``partial`` answers 200 with ``partial_success.rejected_spans``
  = the span count. A body that is not a valid ``ExportTraceServiceRequest`` or
  not ``application/x-protobuf`` is answered 400 and counted in ``bad_bodies``.
* ``GET /spans``: ``{"spans": [...]}``, every span of every accepted request
  (``ok`` mode only), oldest first, each ``{"trace_id", "span_id",
  "parent_span_id"`` (lower-case hex, "" for a root), ``"trace_state", "flags",
  "name", "kind"`` (the number), ``"kind_name", "start_ns", "end_ns",
  "attributes"`` (a dict), ``"events"`` (``[{"name", "time_ns",
  "attributes"}]``), ``"status": {"code", "message"}, "resource"`` (the
  resource attributes, a dict), ``"scope"}``.
* ``GET /stats``: ``{"requests", "spans", "by_status": {code: n}, "bad_bodies",
  "mode"}`` (``requests``/``spans`` count every export received, any mode).
* ``POST /mode`` with the mode's name as the body: switches mode (a hanging
  request is released with 503 when the mode changes).
* ``POST /reset``: forgets the spans and the counts.

``otlp_util.py`` starts and stops it and builds span trees.
"""

import argparse
import importlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROTO_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "proto", "otlp")
PROTOS = ("otlp_common.proto", "otlp_resource.proto", "otlp_trace.proto",
          "otlp_trace_service.proto")
MODES = ("ok", "unavailable", "hang", "bad_request", "partial")


def generate_messages(gen_dir):
    """Runs protoc on proto/otlp into gen_dir and imports the service module."""
    os.makedirs(gen_dir, exist_ok=True)
    done = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--python_out=" + gen_dir]
                          + [os.path.join(PROTO_DIR, p) for p in PROTOS],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("protoc failed: " + done.stderr)
    if gen_dir not in sys.path:
        sys.path.insert(0, gen_dir)
    return (importlib.import_module("otlp_trace_service_pb2"),
            importlib.import_module("otlp_trace_pb2"))


def any_value(v):
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, which)


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


class Receiver:
    def __init__(self, service_pb, trace_pb, mode, retry_after):
        self.service_pb = service_pb
        self.trace_pb = trace_pb
        self.mode = mode
        self.retry_after = retry_after
        self.lock = threading.Condition()
        self.spans = []
        self.requests = 0
        self.span_count = 0
        self.by_status = {}
        self.bad_bodies = 0

    def decode(self, body):
        """The spans of one request as dicts (raises on a bad body)."""
        request = self.service_pb.ExportTraceServiceRequest()
        request.ParseFromString(body)
        kind_names = self.trace_pb.Span.SpanKind
        out = []
        for rs in request.resource_spans:
            resource = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    out.append({
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "trace_state": s.trace_state,
                        "flags": s.flags,
                        "name": s.name,
                        "kind": s.kind,
                        "kind_name": kind_names.Name(s.kind),
                        "start_ns": s.start_time_unix_nano,
                        "end_ns": s.end_time_unix_nano,
                        "attributes": attributes(s.attributes),
                        "events": [{"name": e.name, "time_ns": e.time_unix_nano,
                                    "attributes": attributes(e.attributes)} for e in s.events],
                        "status": {"code": s.status.code, "message": s.status.message},
                        "resource": resource,
                        "scope": ss.scope.name,
                    })
        return out

    def count(self, status):
        self.by_status[str(status)] = self.by_status.get(str(status), 0) + 1


def make_handler(receiver):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as collectors do

        def log_message(self, *args):
            pass

        def reply(self, status, body=b"", content_type="application/x-protobuf", headers=()):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def reply_json(self, obj):
            self.reply(200, json.dumps(obj).encode(), "application/json")

        def read_body(self):
            return self.rfile.read(int(self.headers.get("Content-Length", "0")))

        def do_GET(self):
            with receiver.lock:
                if self.path == "/spans":
                    return self.reply_json({"spans": list(receiver.spans)})
                if self.path == "/stats":
                    return self.reply_json({"requests": receiver.requests,
                                            "spans": receiver.span_count,
                                            "by_status": dict(receiver.by_status),
                                            "bad_bodies": receiver.bad_bodies,
                                            "mode": receiver.mode})
            self.reply(404, b"no such path", "text/plain")

        def do_POST(self):
            body = self.read_body()
            if self.path == "/mode":
                mode = body.decode().strip()
                if mode not in MODES:
                    return self.reply(400, b"unknown mode", "text/plain")
                with receiver.lock:
                    receiver.mode = mode
                    receiver.lock.notify_all()
                return self.reply(200, b"", "text/plain")
            if self.path == "/reset":
                with receiver.lock:
                    receiver.spans.clear()
                    receiver.requests = receiver.span_count = receiver.bad_bodies = 0
                    receiver.by_status.clear()
                return self.reply(200, b"", "text/plain")
            if self.path != "/v1/traces":
                return self.reply(404, b"no such path", "text/plain")
            try:
                if self.headers.get("Content-Type") != "application/x-protobuf":
                    raise ValueError("Content-Type %r" % self.headers.get("Content-Type"))
                spans = receiver.decode(body)
            except Exception as e:  # noqa: BLE001 - any decode failure is the sender's
                with receiver.lock:
                    receiver.bad_bodies += 1
                    receiver.count(400)
                return self.reply(400, str(e).encode(), "text/plain")
            with receiver.lock:
                receiver.requests += 1
                receiver.span_count += len(spans)
                mode = receiver.mode
                if mode == "hang":
                    # Held until the mode changes or the receiver stops.
                    while receiver.mode == "hang":
                        receiver.lock.wait(0.5)
                    mode = "unavailable"
                if mode == "ok":
                    receiver.spans.extend(spans)
                    receiver.count(200)
                elif mode == "partial":
                    receiver.count(200)
                elif mode == "unavailable":
                    receiver.count(503)
                else:
                    receiver.count(400)
            if mode == "ok":
                self.reply(200, receiver.service_pb.ExportTraceServiceResponse()
                           .SerializeToString())
            elif mode == "partial":
                response = receiver.service_pb.ExportTraceServiceResponse()
                response.partial_success.rejected_spans = len(spans)
                response.partial_success.error_message = "rejected by the test"
                self.reply(200, response.SerializeToString())
            elif mode == "unavailable":
                headers = [("Retry-After", str(receiver.retry_after))] \
                    if receiver.retry_after is not None else []
                self.reply(503, b"", headers=headers)
            else:
                self.reply(400, b"")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--gen-dir", required=True, help="where protoc writes the classes")
    parser.add_argument("--mode", choices=MODES, default="ok")
    parser.add_argument("--retry-after", type=int, default=None)
    args = parser.parse_args()
    service_pb, trace_pb = generate_messages(args.gen_dir)
    receiver = Receiver(service_pb, trace_pb, args.mode, args.retry_after)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(receiver))
    server.daemon_threads = True
    print("otlp-receiver: listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
