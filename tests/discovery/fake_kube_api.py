#!/usr/bin/python3
"""A fake Kubernetes API server for the EndpointSlice host source's tests
(kubernetes_source_test.cc): HTTPS on 127.0.0.1 (a throwaway self-signed
certificate made with ``openssl req``), the list and the streaming watch of
discovery.k8s.io/v1 EndpointSlices as the real server speaks them
(newline-delimited JSON events in a chunked response, resourceVersion
replay, bookmarks, ERROR 410 "too old resource version"), and a Bearer
token that must match (401 otherwise).

Usage: fake_kube_api.py DIR TOKEN
  writes DIR/cert.pem (the CA file for the client) and DIR/key.pem, prints
  "port N" once listening, then reads one JSON command per line on stdin and
  answers one JSON line on stdout:
    {"op": "set_slice", "name": N, "slice": {...}, "silent": false}
        add or replace a slice (ADDED/MODIFIED event; silent: no event, as
        if the event had been compacted away) -> {"rv": "..."}
    {"op": "delete_slice", "name": N}          DELETED event -> {"rv"}
    {"op": "bookmark"}                         BOOKMARK event -> {"rv"}
    {"op": "expire"}   history before now is gone: open watches get an ERROR
                       410 event and end; older resourceVersions get it too
    {"op": "gone_http"}                        the next watch gets HTTP 410
    {"op": "drop"}     open watches are cut (TCP shutdown, no final chunk)
    {"op": "token", "token": T}                the token now required
    {"op": "state"}    -> {"requests": [{"watch", "rv", "status", "query"}],
                           "watchers": open watch count}
"""
import http.server
import json
import os
import select
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

PATH_PREFIX = "/apis/discovery.k8s.io/v1/namespaces/"


class State:
    def __init__(self, token):
        self.cond = threading.Condition()
        self.token = token
        self.rv = 1
        self.slices = {}  # name -> object
        self.events = []  # (rv, json line)
        self.compacted = 0
        self.gone_http = False
        self.drop_generation = 0
        self.drop_rv = 0  # events up to here still go out on a dropped watch
        self.expire_generation = 0
        self.watchers = 0
        self.requests = []


STATE = None


def slice_object(name, body, rv):
    obj = dict(body)
    obj["apiVersion"] = "discovery.k8s.io/v1"
    obj["kind"] = "EndpointSlice"
    obj["metadata"] = {"name": name, "resourceVersion": str(rv),
                       "labels": {"kubernetes.io/service-name": "svc"}}
    return obj


def add_event(kind, obj):
    STATE.events.append((STATE.rv, json.dumps({"type": kind, "object": obj}) + "\n"))
    STATE.cond.notify_all()


def command(cmd):
    op = cmd["op"]
    with STATE.cond:
        if op == "set_slice":
            STATE.rv += 1
            name = cmd["name"]
            kind = "MODIFIED" if name in STATE.slices else "ADDED"
            STATE.slices[name] = slice_object(name, cmd["slice"], STATE.rv)
            if not cmd.get("silent"):
                add_event(kind, STATE.slices[name])
            return {"rv": str(STATE.rv)}
        if op == "delete_slice":
            STATE.rv += 1
            obj = STATE.slices.pop(cmd["name"])
            obj["metadata"]["resourceVersion"] = str(STATE.rv)
            add_event("DELETED", obj)
            return {"rv": str(STATE.rv)}
        if op == "bookmark":
            STATE.rv += 1
            add_event("BOOKMARK", {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
                                   "metadata": {"resourceVersion": str(STATE.rv)}})
            return {"rv": str(STATE.rv)}
        if op == "expire":
            STATE.compacted = STATE.rv
            STATE.events = []
            STATE.expire_generation += 1
            STATE.cond.notify_all()
            return {"rv": str(STATE.rv)}
        if op == "gone_http":
            STATE.gone_http = True
            return {}
        if op == "drop":
            STATE.drop_generation += 1
            STATE.drop_rv = STATE.rv
            STATE.cond.notify_all()
            return {}
        if op == "token":
            STATE.token = cmd["token"]
            return {}
        if op == "state":
            return {"requests": list(STATE.requests), "watchers": STATE.watchers}
    return {"error": "unknown op " + op}


GONE = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
        "message": "too old resource version", "code": 410}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        watch = query.get("watch") == "1"
        record = {"watch": watch, "rv": query.get("resourceVersion", ""), "query": url.query}
        with STATE.cond:
            STATE.requests.append(record)
            authorized = self.headers.get("Authorization") == "Bearer " + STATE.token
            gone = watch and authorized and STATE.gone_http
            if gone:
                STATE.gone_http = False
        if not url.path.startswith(PATH_PREFIX) or not url.path.endswith("/endpointslices") \
                or query.get("labelSelector") != "kubernetes.io/service-name=svc":
            record["status"] = 404
            return self.send_json(404, {"kind": "Status", "code": 404})
        if not authorized:
            record["status"] = 401
            return self.send_json(401, {"kind": "Status", "code": 401, "reason": "Unauthorized"})
        if gone:
            record["status"] = 410
            return self.send_json(410, GONE)
        record["status"] = 200
        if not watch:
            with STATE.cond:
                body = {"kind": "EndpointSliceList", "apiVersion": "discovery.k8s.io/v1",
                        "metadata": {"resourceVersion": str(STATE.rv)},
                        "items": list(STATE.slices.values())}
            return self.send_json(200, body)
        self.watch(int(query.get("resourceVersion", "0") or 0),
                   float(query.get("timeoutSeconds", "300")))

    def watch(self, since, timeout):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        deadline = time.monotonic() + timeout
        with STATE.cond:
            STATE.watchers += 1
            drop = STATE.drop_generation
            expire = STATE.expire_generation
        try:
            self.stream(since, deadline, drop, expire)
        except (ConnectionError, ssl.SSLError, OSError):
            self.close_connection = True  # the client went away mid-write
        finally:
            with STATE.cond:
                STATE.watchers -= 1

    def peer_closed(self):
        # A watch client sends nothing after its request: readable means gone.
        readable, _, _ = select.select([self.connection], [], [], 0)
        return bool(readable)

    def stream(self, since, deadline, drop, expire):
        sent = since
        while True:
            with STATE.cond:
                dropped = STATE.drop_generation != drop
                last = STATE.drop_rv if dropped else STATE.rv
                if sent < STATE.compacted or STATE.expire_generation != expire:
                    pending, end = [json.dumps({"type": "ERROR", "object": GONE}) + "\n"], "gone"
                else:
                    pending = [line for rv, line in STATE.events if sent < rv <= last]
                    sent = max([sent] + [rv for rv, _ in STATE.events if sent < rv <= last])
                    end = None
                    if dropped:
                        end = "drop"
                    elif not pending:
                        if self.peer_closed():
                            self.close_connection = True
                            return
                        if time.monotonic() >= deadline:
                            end = "timeout"
                        else:
                            STATE.cond.wait(timeout=min(0.1, deadline - time.monotonic()))
                            continue
            for line in pending:
                self.chunk(line)
            if end == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if end in ("gone", "timeout"):
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return


def make_cert(d):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", os.path.join(d, "key.pem"), "-out", os.path.join(d, "cert.pem")],
                   check=True, capture_output=True)


def main():
    global STATE
    d, token = sys.argv[1], sys.argv[2]
    make_cert(d)
    STATE = State(token)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(d, "cert.pem"), os.path.join(d, "key.pem"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("port %d" % server.server_address[1], flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(command(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
