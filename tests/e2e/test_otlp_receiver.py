#!/usr/bin/python3
"""The OTLP receiver fixture (otlp_receiver.py) on its own: it decodes an
ExportTraceServiceRequest built with the classes generated from proto/otlp,
records spans as JSON, answers per its mode (503 with Retry-After, hang, 400,
partial success) and refuses bodies that are not OTLP protobuf; otlp_util's
span tree. The tracing tests trust it, so it is tested first."""

import http.client
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otlp_receiver  # noqa: E402
import otlp_util  # noqa: E402


class OtlpReceiverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="otlp-receiver-")
        cls.receiver = None
        try:
            gen = os.path.join(cls.tmp, "gen")
            cls.service_pb, cls.trace_pb = otlp_receiver.generate_messages(gen)
            cls.receiver = otlp_util.OtlpReceiver(gen, retry_after=3).start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.receiver:
            cls.receiver.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.receiver.set_mode("ok")
        self.receiver.reset()

    def request(self, spans):
        req = self.service_pb.ExportTraceServiceRequest()
        rs = req.resource_spans.add()
        kv = rs.resource.attributes.add()
        kv.key, kv.value.string_value = "service.name", "unit"
        ss = rs.scope_spans.add()
        ss.scope.name = "unit-scope"
        for trace_id, span_id, parent, name in spans:
            s = ss.spans.add()
            s.trace_id, s.span_id, s.parent_span_id = trace_id, span_id, parent
            s.name, s.kind = name, self.trace_pb.Span.SPAN_KIND_SERVER
            s.start_time_unix_nano, s.end_time_unix_nano = 10, 20
            a = s.attributes.add()
            a.key, a.value.int_value = "n", 7
            e = s.events.add()
            e.name, e.time_unix_nano = "QUEUE_START", 15
        return req.SerializeToString()

    def post(self, body, content_type="application/x-protobuf", timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.receiver.port, timeout=timeout)
        try:
            conn.request("POST", "/v1/traces", body, {"Content-Type": content_type})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def test_decodes_and_records_a_span_tree(self):
        t = bytes(range(1, 17))
        status, _, body = self.post(self.request([(t, b"\x01" * 8, b"", "root"),
                                                  (t, b"\x02" * 8, b"\x01" * 8, "child")]))
        self.assertEqual(status, 200)
        response = self.service_pb.ExportTraceServiceResponse()
        response.ParseFromString(body)
        self.assertFalse(response.HasField("partial_success"))
        spans = self.receiver.spans()
        self.assertEqual([s["name"] for s in spans], ["root", "child"])
        root = spans[0]
        self.assertEqual(root["trace_id"], t.hex())
        self.assertEqual(root["parent_span_id"], "")
        self.assertEqual(root["kind_name"], "SPAN_KIND_SERVER")
        self.assertEqual(root["attributes"], {"n": 7})
        self.assertEqual(root["events"], [{"name": "QUEUE_START", "time_ns": 15,
                                           "attributes": {}}])
        self.assertEqual(root["resource"], {"service.name": "unit"})
        self.assertEqual(root["scope"], "unit-scope")
        tree = otlp_util.SpanTree(spans)
        self.assertEqual([r["name"] for r in tree.roots()], ["root"])
        self.assertEqual([k["name"] for k in tree.kids(root)], ["child"])
        self.assertIn("child", otlp_util.describe(spans))

    def test_modes(self):
        body = self.request([(b"\x01" * 16, b"\x01" * 8, b"", "s")])
        self.receiver.set_mode("unavailable")
        status, headers, _ = self.post(body)
        self.assertEqual((status, headers.get("Retry-After")), (503, "3"))
        self.receiver.set_mode("bad_request")
        self.assertEqual(self.post(body)[0], 400)
        self.receiver.set_mode("partial")
        status, _, raw = self.post(body)
        response = self.service_pb.ExportTraceServiceResponse()
        response.ParseFromString(raw)
        self.assertEqual((status, response.partial_success.rejected_spans), (200, 1))
        self.assertEqual(self.receiver.spans(), [])  # none accepted
        stats = self.receiver.stats()
        self.assertEqual((stats["requests"], stats["spans"]), (3, 3))
        self.assertEqual(stats["by_status"], {"503": 1, "400": 1, "200": 1})

    def test_hang_holds_the_request_until_the_mode_changes(self):
        self.receiver.set_mode("hang")
        body = self.request([(b"\x01" * 16, b"\x01" * 8, b"", "s")])
        with self.assertRaises(OSError):  # socket.timeout
            self.post(body, timeout=0.5)
        result = {}
        t = threading.Thread(target=lambda: result.update(status=self.post(body)[0]))
        t.start()
        deadline = time.monotonic() + 10
        while self.receiver.stats()["requests"] < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # the second request is held now
        self.receiver.set_mode("ok")
        t.join(10)
        self.assertEqual(result.get("status"), 503)  # released, not accepted

    def test_refuses_what_is_not_otlp_protobuf(self):
        self.assertEqual(self.post(b"\xff\xff\xff")[0], 400)
        self.assertEqual(self.post(b"{}", "application/json")[0], 400)
        self.assertEqual(self.receiver.stats()["bad_bodies"], 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
