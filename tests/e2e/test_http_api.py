#!/usr/bin/python3
"""Health, server/model metadata, model configuration and repository index over HTTP."""

import http.client
import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ServerTestCase  # noqa: E402


class HealthAndMetadataTest(ServerTestCase):
    """Server in the default (none) control mode with the standard repository."""

    def test_health_live(self):
        r = self.client.get("/v2/health/live")
        self.assertOk(r)
        if r.body:  # optional {"live": true}
            self.assertEqual(r.json().get("live"), True, r)

    def test_health_ready(self):
        r = self.client.get("/v2/health/ready")
        self.assertOk(r)
        if r.body:
            self.assertEqual(r.json().get("ready"), True, r)

    def test_health_query_string_ignored(self):
        self.assertOk(self.client.get("/v2/health/live?verbose=1&x=y"))

    def test_server_metadata(self):
        r = self.client.get("/v2")
        self.assertOk(r)
        self.assertIn("json", (r.header("Content-Type") or ""), "Content-Type of GET /v2")
        md = r.json()
        self.assertIsInstance(md.get("name"), str, md)
        self.assertTrue(md["name"], md)
        self.assertIsInstance(md.get("version"), str, md)
        self.assertTrue(md["version"], md)
        self.assertIsInstance(md.get("extensions"), list, md)
        for ext in ("binary_tensor_data", "model_repository", "model_configuration"):
            self.assertIn(ext, md["extensions"])

    def test_model_ready(self):
        for path in ("/v2/models/simple/ready", "/v2/models/simple/versions/1/ready",
                     "/v2/models/identity/ready", "/v2/models/versioned/versions/1/ready",
                     "/v2/models/versioned/versions/2/ready"):
            with self.subTest(path=path):
                self.assertOk(self.client.get(path), path)

    def test_model_ready_unknown_model(self):
        r = self.client.get("/v2/models/no_such_model/ready")
        self.assertStatus(r, (400, 404), "GET /v2/models/no_such_model/ready")

    def test_model_ready_unknown_version(self):
        r = self.client.get("/v2/models/simple/versions/42/ready")
        self.assertStatus(r, (400, 404), "GET /v2/models/simple/versions/42/ready")

    def test_model_metadata_simple(self):
        r = self.client.get("/v2/models/simple")
        self.assertOk(r)
        md = r.json()
        self.assertEqual(md["name"], "simple")
        self.assertEqual(md["versions"], ["1"])
        self.assertEqual(md["platform"], "add_sub")  # platform empty -> backend name
        self.assertEqual(md["inputs"], [
            {"name": "INPUT0", "datatype": "INT32", "shape": [-1, 16]},
            {"name": "INPUT1", "datatype": "INT32", "shape": [-1, 16]}])
        self.assertEqual(md["outputs"], [
            {"name": "OUTPUT0", "datatype": "INT32", "shape": [-1, 16]},
            {"name": "OUTPUT1", "datatype": "INT32", "shape": [-1, 16]}])

    def test_model_metadata_version_path(self):
        r = self.client.get("/v2/models/simple/versions/1")
        self.assertOk(r)
        md = r.json()
        self.assertEqual(md["name"], "simple")
        self.assertEqual(md["versions"], ["1"])

    def test_model_metadata_non_batching(self):
        md = self.client.get("/v2/models/identity").json()
        self.assertEqual(md["platform"], "identity")
        self.assertEqual(md["inputs"], [{"name": "INPUT0", "datatype": "FP32", "shape": [-1]}])
        self.assertEqual(md["outputs"], [{"name": "OUTPUT0", "datatype": "FP32", "shape": [-1]}])

    def test_model_metadata_bytes_and_batching(self):
        md = self.client.get("/v2/models/simple_identity").json()
        self.assertEqual(md["inputs"], [{"name": "INPUT0", "datatype": "BYTES", "shape": [-1, -1]}])
        md = self.client.get("/v2/models/simple_string").json()
        self.assertEqual([i["datatype"] for i in md["inputs"] + md["outputs"]], ["BYTES"] * 4)

    def test_model_metadata_datatypes(self):
        for t in harness.IDENTITY_TYPES:
            with self.subTest(datatype=t):
                r = self.client.get("/v2/models/identity_%s" % t.lower())
                self.assertOk(r)
                md = r.json()
                self.assertEqual(md["inputs"][0]["datatype"], t)
                self.assertEqual(md["outputs"][0]["datatype"], t)

    def test_model_metadata_multiple_versions(self):
        md = self.client.get("/v2/models/versioned").json()
        self.assertEqual(md["versions"], ["1", "2"])
        md = self.client.get("/v2/models/versioned/versions/1").json()
        self.assertEqual(md["versions"], ["1"])

    def test_model_metadata_unknown_model(self):
        r = self.client.get("/v2/models/no_such_model")
        self.assertError(r, 404, "no_such_model")
        self.assertTrue(r.json()["error"].startswith("Request for unknown model"), r)

    def test_model_metadata_unknown_version(self):
        self.assertError(self.client.get("/v2/models/simple/versions/42"), 404)

    def test_model_config_simple(self):
        r = self.client.get("/v2/models/simple/config")
        self.assertOk(r)
        cfg = r.json()
        self.assertEqual(cfg["name"], "simple")
        self.assertEqual(cfg["backend"], "add_sub")
        self.assertEqual(cfg["max_batch_size"], 8)
        self.assertEqual(cfg["version_policy"], {"latest": {"num_versions": 1}})
        self.assertEqual([i["name"] for i in cfg["input"]], ["INPUT0", "INPUT1"])
        self.assertEqual([o["name"] for o in cfg["output"]], ["OUTPUT0", "OUTPUT1"])
        for t in cfg["input"] + cfg["output"]:
            self.assertEqual(t["data_type"], "TYPE_INT32")
            self.assertEqual(t["dims"], [16])  # bare numbers, not "16"
        ig = cfg["instance_group"]
        self.assertIsInstance(ig, list)
        self.assertEqual(len(ig), 1, ig)
        self.assertEqual(ig[0]["count"], 1)
        self.assertEqual(ig[0]["kind"], "KIND_CPU")

    def test_model_config_default_fields_printed(self):
        # PROTOCOL.md 1.7: proto field names; primitive/repeated fields printed even when default.
        cfg = self.client.get("/v2/models/identity/config").json()
        self.assertEqual(cfg["max_batch_size"], 0)
        self.assertEqual(cfg["input"][0]["data_type"], "TYPE_FP32")
        self.assertEqual(cfg["input"][0]["dims"], [-1])
        self.assertEqual(cfg["input"][0].get("format"), "FORMAT_NONE")
        self.assertIs(cfg["input"][0].get("optional"), False)
        self.assertIs(cfg["input"][0].get("is_shape_tensor"), False)
        self.assertEqual(cfg.get("platform"), "")
        self.assertNotIn("maxBatchSize", cfg)
        self.assertNotIn("dataType", cfg["input"][0])

    def test_model_config_version_path_and_policy_all(self):
        r = self.client.get("/v2/models/versioned/versions/2/config")
        self.assertOk(r)
        cfg = r.json()
        self.assertEqual(cfg["name"], "versioned")
        self.assertEqual(cfg["version_policy"], {"all": {}})
        self.assertEqual(cfg["input"][0]["dims"], [4])

    def test_model_config_string_type(self):
        cfg = self.client.get("/v2/models/simple_string/config").json()
        self.assertEqual(cfg["input"][0]["data_type"], "TYPE_STRING")

    def test_model_config_unknown_model(self):
        r = self.client.get("/v2/models/no_such_model/config")
        self.assertError(r, 404)
        self.assertTrue(r.json()["error"].startswith("Request for unknown model"), r)

    def test_model_config_unknown_version(self):
        self.assertError(self.client.get("/v2/models/simple/versions/42/config"), 404)

    def test_repository_index(self):
        r = self.client.post("/v2/repository/index")
        self.assertOk(r)
        idx = r.json()
        self.assertIsInstance(idx, list)
        by = {}
        for e in idx:
            self.assertIsInstance(e, dict, idx)
            by.setdefault(e["name"], []).append(e)
        for m in ("simple", "simple_int8", "simple_string", "simple_identity", "identity"):
            self.assertIn(m, by)
            self.assertEqual([(e.get("version"), e.get("state")) for e in by[m]], [("1", "READY")], by[m])
        self.assertEqual(sorted((e.get("version"), e.get("state")) for e in by["versioned"]),
                         [("1", "READY"), ("2", "READY")])

    def test_repository_index_ready_filter(self):
        r = self.client.post_json("/v2/repository/index", {"ready": True})
        self.assertOk(r)
        idx = r.json()
        self.assertTrue(idx)
        for e in idx:
            self.assertEqual(e.get("state"), "READY", e)

    def test_repository_index_bad_ready_value(self):
        self.assertError(self.client.post_json("/v2/repository/index", {"ready": "yes"}), 400)

    def test_repository_load_unload_refused_in_none_mode(self):
        self.assertError(self.client.post("/v2/repository/models/simple/load"), 503)
        self.assertError(self.client.post("/v2/repository/models/simple/unload"), 503)
        self.assertOk(self.client.get("/v2/models/simple/ready"))

    def test_unknown_route(self):
        # ("/" is the status page: tests/e2e/test_status_page.py.)
        for path in ("/v2/nothing", "/v3", "/inferd", "/v2/models", "/v2/health/dead"):
            with self.subTest(path=path):
                self.assertStatus(self.client.get(path), 404, "GET " + path)

    def test_wrong_method(self):
        self.assertStatus(self.client.get("/v2/models/simple/infer"), 405, "GET .../infer")
        self.assertStatus(self.client.post("/v2/health/live"), 405, "POST /v2/health/live")

    def test_head_or_odd_method_does_not_break_server(self):
        r = harness.raw_request(self.server.port,
                                harness.http_request_bytes("DELETE", "/v2/models/simple"))
        self.assertTrue(r is None or 400 <= r.status <= 501, r)  # 405, or 501 for an unknown method
        self.assertServerAlive()


class ShutdownTest(unittest.TestCase):
    """SIGTERM -> exit code 0 within a few seconds."""

    def _start(self):
        tmp = harness.tempfile.mkdtemp(prefix="inferd-e2e-")
        self.addCleanup(harness.shutil.rmtree, tmp, True)
        repo = os.path.join(tmp, "models")
        harness.write_model(repo, "simple", harness.SIMPLE_CONFIG)
        srv = harness.Server([repo], ["--exit-timeout-secs", "5"])
        srv.start()
        self.addCleanup(srv.stop)
        return srv

    def _assert_stops_cleanly(self, srv, sig=signal.SIGTERM):
        t0 = time.monotonic()
        rc = srv.stop(timeout=10, sig=sig)
        elapsed = time.monotonic() - t0
        self.assertIsNotNone(rc, "inferd did not exit within 10 s of SIGTERM\n" + srv.log_tail())
        self.assertEqual(rc, 0, "inferd exit code after SIGTERM\n" + srv.log_tail())
        self.assertLess(elapsed, 8.0)

    def test_sigterm_exits_zero(self):
        srv = self._start()
        r = srv.client().get("/v2/health/ready")
        self.assertEqual(r.status, 200, r)
        self._assert_stops_cleanly(srv)

    def test_sigterm_with_idle_keepalive_connection(self):
        srv = self._start()
        c = harness.Client(srv.port, persistent=True)
        self.addCleanup(c.close)
        for _ in range(3):
            self.assertEqual(c.get("/v2/health/live").status, 200)
        # connection stays open and idle while the server is told to stop
        self._assert_stops_cleanly(srv)

    def test_sigint_exits_zero(self):
        srv = self._start()
        self._assert_stops_cleanly(srv, signal.SIGINT)

    def test_sigterm_under_load(self):
        srv = self._start()
        stop = threading.Event()
        statuses = []

        def traffic():
            req, _ = harness.simple_request(list(range(16 * 8)), [1] * (16 * 8), batch=8)
            while not stop.is_set():
                try:
                    c = harness.Client(srv.port, persistent=True, timeout=5)
                    for _ in range(50):
                        statuses.append(c.infer("simple", req).status)
                    c.close()
                except (OSError, http.client.HTTPException):
                    if not srv.alive():
                        return
                    time.sleep(0.01)

        threads = [threading.Thread(target=traffic, daemon=True) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        self.assertTrue(statuses, "no traffic reached the server")
        try:
            self._assert_stops_cleanly(srv)
        finally:
            stop.set()
            for t in threads:
                t.join(10)
        # while exiting, answers are 200 or 503 -- never 500
        self.assertFalse([x for x in statuses if x not in (200, 503)], sorted(set(statuses)))

    def test_sigterm_with_half_sent_request(self):
        srv = self._start()
        s = harness.raw_connect(srv.port)
        self.addCleanup(s.close)
        s.sendall(b"POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        time.sleep(0.2)
        self._assert_stops_cleanly(srv)


if __name__ == "__main__":
    unittest.main()
