#!/usr/bin/python3
"""The status page (GET /, docs/status_page.md) in a real browser, and its JSON.

One inferd in explicit mode serves simple, versioned (two versions), slow
(300 ms per request) and broken (a backend that does not exist: UNAVAILABLE
with a reason), with a system shared-memory region registered, under load
from background clients. Headless Chromium (tests/e2e/chromium_util.py)
opens the page; the tests read its DOM: the models with their states, the
reason, numbers present and moving between two reads, uptime and extensions;
screenshots at 1280x800 and 390x844 are non-blank PNGs and the phone layout
does not scroll sideways; the keyboard reaches the skip link and the
load/unload buttons, which work. Static checks on the served HTML (lang,
viewport, labels, table headers, no external URL). A restricted
model-repository API hides those parts and the page asks for the header;
--status-page=false answers 404.

Without Chromium the browser tests skip and the run exits 77 (ctest: skipped)
once the others have passed.
"""

import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

from chromium_util import Browser, DomTree, find_chromium
from harness import Client, Server, copy_test_models, wait_until, write_model

CHROMIUM = find_chromium()
NO_CHROMIUM = "chromium not found (apt-get install chromium; INFERD_CHROMIUM names another)"
RESTRICT = "admin-key=s3cret"
SIMPLE = {"inputs": [
    {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": list(range(16))},
    {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1] * 16}]}
SLOW = {"inputs": [{"name": "INPUT0", "shape": [2], "datatype": "FP32", "data": [1, 2]}]}
BROKEN = """name: "broken"
backend: "no_such_backend"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]
"""


def build_repository(root):
    repo = os.path.join(root, "models")
    copy_test_models(repo, ["simple", "versioned", "slow"])
    write_model(repo, "broken", BROKEN)
    return repo


class Load:
    """Background clients: simple as fast as a short pause allows, and three on slow
    (so that slow always has requests queued and in flight). Errors (a model
    unloaded by a test) are counted, not raised."""

    def __init__(self, port):
        self.port = port
        self.stop_event = threading.Event()
        self.ok = 0
        self.errors = 0
        self.threads = [threading.Thread(target=self._run, args=(m, b, p), daemon=True)
                        for m, b, p in [("simple", SIMPLE, 0.004), ("simple", SIMPLE, 0.004),
                                        ("slow", SLOW, 0), ("slow", SLOW, 0), ("slow", SLOW, 0)]]

    def _run(self, model, body, pause):
        client = Client(self.port, timeout=10, persistent=True)
        while not self.stop_event.is_set():
            try:
                resp = client.post_json("/v2/models/%s/infer" % model, body)
                if resp.status == 200:
                    self.ok += 1
                else:
                    self.errors += 1
                    time.sleep(0.05)
            except OSError:
                self.errors += 1
                client.close()
                client = Client(self.port, timeout=10, persistent=True)
                time.sleep(0.05)
            if pause:
                time.sleep(pause)
        client.close()

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join(timeout=15)


def rows_of(tree):
    """{(model, version): {field: (text, data-value), "state": ..., ...}} from the DOM."""
    out = {}
    for tr in tree.root.find_all(lambda e: e.tag == "tr" and "data-model" in e.attrs):
        cells = {}
        for cell in tr.find_all(lambda e: "data-field" in e.attrs and e is not tr):
            cells[cell.attrs["data-field"]] = (cell.text(), cell.attrs.get("data-value"))
        cells["_buttons"] = [b for b in tr.find_all(lambda e: "data-action" in e.attrs)]
        cells["_tr"] = tr
        out[(tr.attrs["data-model"], tr.attrs.get("data-version", ""))] = cells
    return out


def text_of(tree, id_):
    e = tree.root.by_id(id_)
    return e.text() if e is not None else None


class StatusPageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-status-page-")
        cls.server = cls.load = cls.shm_path = cls.browser = None
        try:
            repo = build_repository(cls.tmp)
            cls.server = Server(repo, ["--model-control-mode=explicit", "--load-model=simple",
                                       "--load-model=versioned", "--load-model=slow",
                                       "--load-model=broken", "--allow-client-shm=true",
                                       "--id=status-test"]).start()
            cls.client = cls.server.client()
            cls.shm_path = "/dev/shm/inferd_status_page_%d" % os.getpid()
            with open(cls.shm_path, "wb") as f:
                f.truncate(4096)
            resp = cls.client.post_json("/v2/systemsharedmemory/region/page_region/register",
                                        {"key": "/" + os.path.basename(cls.shm_path),
                                         "byte_size": 1024, "offset": 0})
            assert resp.status == 200, resp
            cls.load = Load(cls.server.port).start()
            if CHROMIUM is not None:
                cls.browser = Browser(CHROMIUM)
                cls.browser.start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.browser is not None:
                cls.browser.close()
            if cls.load is not None:
                cls.load.stop()
            if cls.server is not None:
                cls.server.stop()
        finally:
            if cls.shm_path and os.path.exists(cls.shm_path):
                os.unlink(cls.shm_path)
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def url(self, path="/"):
        return "http://127.0.0.1:%d%s" % (self.server.port, path)

    def status(self, headers=None):
        resp = self.client.get("/inferd/status", headers=headers)
        self.assertEqual(resp.status, 200, resp)
        return resp.json()

    # ---- the JSON and the HTML, without a browser ----------------------------------------------------

    def test_json_states_numbers_and_shared_memory(self):
        wait_until(lambda: any(m["name"] == "simple" and (m.get("window") or {}).get(
            "inferences_per_s", 0) > 0 for m in self.status()["models"]), 20)
        data = self.status()
        self.assertEqual(data["server"]["id"], "status-test")
        self.assertIn("model_repository", data["server"]["extensions"])
        self.assertIn("generate", data["server"]["extensions"])
        self.assertEqual(data["model_control_mode"], "explicit")
        self.assertEqual(data["restricted"], {})
        self.assertEqual((data["window_s"], data["sample_interval_s"]), (60, 1))
        models = {(m["name"], m["version"]): m for m in data["models"]}
        for key in [("simple", "1"), ("versioned", "1"), ("versioned", "2"), ("slow", "1")]:
            self.assertEqual(models[key]["state"], "READY", key)
            self.assertGreaterEqual(models[key]["instances"], 1)
        broken = [m for m in data["models"] if m["name"] == "broken"]
        self.assertEqual([m["state"] for m in broken], ["UNAVAILABLE"])
        self.assertIn("no_such_backend", broken[0]["reason"])
        self.assertNotIn("instances", broken[0])
        simple = models[("simple", "1")]["window"]
        self.assertGreater(simple["inferences_per_s"], 0)
        self.assertGreater(simple["p99_s"], 0)
        self.assertLessEqual(simple["p50_s"], simple["p99_s"])
        self.assertIsNone(models[("versioned", "1")]["window"]["p50_s"])  # no requests: no value
        self.assertEqual(models[("versioned", "1")]["window"]["inferences_per_s"], 0)
        # slow: 300 ms per request, three clients: requests queue and are in flight.
        wait_until(lambda: [m for m in self.status()["models"] if m["name"] == "slow"][0]
                   ["inflight"] >= 1, 10)
        self.assertEqual([r["name"] for r in data["shared_memory"]["system"]], ["page_region"])
        self.assertEqual(data["shared_memory"]["cuda"], [])

    def test_json_matches_the_statistics_extension(self):
        # The windowed numbers come from the same counters as /v2/models/stats.
        stats = self.client.get("/v2/models/simple/stats").json()["model_stats"][0]
        data = self.status()
        simple = [m for m in data["models"] if m["name"] == "simple"][0]
        self.assertGreaterEqual(simple["inferences_total"], stats["inference_count"])
        self.assertLessEqual(simple["inferences_total"] - stats["inference_count"], 10000)

    def test_page_is_self_contained_and_accessible_html(self):
        resp = self.client.get("/")
        self.assertEqual(resp.status, 200)
        self.assertTrue(resp.header("Content-Type").startswith("text/html"))
        self.assertIn("default-src 'none'", resp.header("Content-Security-Policy"))
        self.assertIn("frame-ancestors 'none'", resp.header("Content-Security-Policy"))
        source = resp.body.decode("utf-8")
        tree = DomTree(source)
        html = tree.root.find_all(lambda e: e.tag == "html")[0]
        self.assertEqual(html.attrs.get("lang"), "en")
        viewport = tree.root.find_all(lambda e: e.tag == "meta" and e.attrs.get("name") ==
                                      "viewport")
        self.assertIn("width=device-width", viewport[0].attrs["content"])
        self.assertTrue(text_of(tree, "models-h"))
        for tag in ("header", "main", "footer"):
            self.assertTrue(tree.root.find_all(lambda e, t=tag: e.tag == t), tag)
        # Nothing loaded from elsewhere: no src/href/action outside this origin, no
        # stylesheet or script file, no CSS import or url().
        for e in tree.root.iter():
            for attr in ("src", "href", "action", "xlink:href"):
                value = e.attrs.get(attr)
                if value is not None:
                    self.assertFalse("//" in value or value.startswith("data:"), (e.tag, value))
            self.assertNotEqual(e.tag, "link")
            if e.tag == "script":
                self.assertNotIn("src", e.attrs)
        style = " ".join(e.text() for e in tree.root.find_all(lambda e: e.tag == "style"))
        self.assertNotIn("@import", style)
        self.assertNotIn("url(", style)
        # Skip link to an existing target; every input labelled; buttons are buttons;
        # column headers are <th scope=col>.
        skip = tree.root.find_all(lambda e: e.tag == "a" and "skip" in e.attrs.get("class", ""))
        self.assertEqual(skip[0].attrs["href"], "#models")
        self.assertIsNotNone(tree.root.by_id("models"))
        labels = {e.attrs.get("for") for e in tree.root.find_all(lambda e: e.tag == "label")}
        for inp in tree.root.find_all(lambda e: e.tag in ("input", "select", "textarea")):
            self.assertIn(inp.attrs.get("id"), labels, inp.attrs)
        for b in tree.root.find_all(lambda e: e.tag == "button"):
            self.assertIn(b.attrs.get("type"), ("button", "submit"), b.attrs)
        self.assertFalse(tree.root.find_all(lambda e: e.attrs.get("role") == "button"))
        self.assertFalse([e for e in tree.root.iter() if any(a.startswith("on") for a in e.attrs)])
        for table in tree.root.find_all(lambda e: e.tag == "table"):
            headers = table.find_all(lambda e: e.tag == "th" and e.parent.parent.tag == "thead")
            self.assertTrue(headers)
            self.assertTrue(all(h.attrs.get("scope") == "col" for h in headers))

    def test_status_page_flag_off_is_404(self):
        server = Server(self.server.repositories, ["--status-page=false"]).start()
        try:
            client = server.client()
            self.assertEqual(client.get("/").status, 404)
            self.assertEqual(client.get("/inferd/status").status, 404)
            self.assertEqual(client.get("/v2").status, 200)
        finally:
            server.stop()

    def test_restricted_parts_withheld_from_the_json(self):
        server = Server(self.server.repositories, [
            "--model-control-mode=explicit", "--load-model=simple",
            "--http-restricted-api=model-repository,shared-memory:" + RESTRICT]).start()
        try:
            client = server.client()
            data = client.get("/inferd/status").json()
            self.assertEqual(sorted(data["restricted"]), ["model-repository", "shared-memory"])
            self.assertIn("admin-key", data["restricted"]["model-repository"])
            self.assertNotIn("s3cret", json.dumps(data))
            self.assertNotIn("model_control_mode", data)
            self.assertNotIn("shared_memory", data)
            self.assertEqual([(m["name"], "state" in m) for m in data["models"]],
                             [("simple", False)])  # statistics: served, without states
            full = client.get("/inferd/status", headers={"admin-key": "s3cret"}).json()
            self.assertEqual(full["restricted"], {})
            self.assertEqual(full["model_control_mode"], "explicit")
        finally:
            server.stop()


    # ---- in Chromium ---------------------------------------------------------------------

    def open_page(self, width=1280, height=800, mobile=False, url=None):
        page = self.browser.new_page()
        page.viewport(width, height, mobile)
        page.navigate(url or self.url())
        page.wait_for("Number(document.body.dataset.updates) >= 1", timeout=30)
        return page

    def check_png(self, png, width, height, name):
        try:
            from PIL import Image, ImageStat
        except ImportError:
            self.skipTest("python3-pil is not installed")
        image = Image.open(io.BytesIO(png))
        self.assertEqual(image.size, (width, height), name)
        gray = image.convert("L")
        self.assertGreater(ImageStat.Stat(gray).stddev[0], 10, name + " is blank")
        self.assertGreater(len(gray.getcolors()), 16, name)  # text, not a flat fill
        keep = os.environ.get("INFERD_BUILD_DIR")
        if keep:  # kept for a human to look at: <build>/test-artifacts/
            os.makedirs(os.path.join(keep, "test-artifacts"), exist_ok=True)
            with open(os.path.join(keep, "test-artifacts", name), "wb") as f:
                f.write(png)

    @unittest.skipIf(CHROMIUM is None, NO_CHROMIUM)
    def test_models_states_and_moving_numbers(self):
        page = self.open_page()
        # Wait until the window holds simple's requests.
        page.wait_for("(() => { const c = document.querySelector("
                      "'tr[data-model=simple] [data-field=rate]');"
                      " return c && Number(c.dataset.value) > 0; })()", timeout=30)
        first = DomTree(page.outer_html())
        updates = int(page.evaluate("document.body.dataset.updates"))
        page.wait_for("Number(document.body.dataset.updates) >= %d" % (updates + 2), timeout=30)
        second = DomTree(page.outer_html())
        self.check_png(page.screenshot(), 1280, 800, "status_page_1280x800.png")
        self.assertEqual(page.evaluate("document.documentElement.scrollWidth <= innerWidth"), True)

        rows = rows_of(second)
        self.assertEqual(sorted(rows), [("broken", "1"), ("simple", "1"), ("slow", "1"),
                                        ("versioned", "1"), ("versioned", "2")])
        for key in [("simple", "1"), ("slow", "1"), ("versioned", "1"), ("versioned", "2")]:
            self.assertEqual(rows[key]["state-text"][0], "READY", key)
            self.assertGreaterEqual(int(rows[key]["instances"][1]), 1, key)
        self.assertEqual(rows[("broken", "1")]["state-text"][0], "UNAVAILABLE")
        self.assertIn("no_such_backend", rows[("broken", "1")]["reason"][0])
        simple = rows[("simple", "1")]
        for field in ("rate", "p50", "p99"):
            self.assertTrue(simple[field][1], field)  # a number, not "—"
            self.assertGreater(float(simple[field][1]), 0, field)
        self.assertIn("polyline", [e.tag for e in simple["_tr"].iter()])  # the chart
        self.assertGreaterEqual(int(rows[("slow", "1")]["inflight"][1]), 1)
        self.assertEqual(rows[("versioned", "1")]["p50"][0], "—")  # no requests, no value
        # Explicit mode: real buttons, once per model.
        buttons = simple["_buttons"]
        self.assertEqual([(b.tag, b.attrs["data-action"]) for b in buttons],
                         [("button", "load"), ("button", "unload")])
        self.assertEqual(rows[("versioned", "2")]["_buttons"], [])
        # Server facts.
        self.assertEqual(text_of(second, "server-id"), "status-test")
        self.assertIn("model_repository", text_of(second, "extensions"))
        self.assertIn("statistics", text_of(second, "extensions"))
        self.assertEqual(text_of(second, "control-mode"), "explicit")
        self.assertIn("page_region", text_of(second, "shm-system"))
        # Moving: uptime, and simple's numbers, between the two reads.
        up1 = float(first.root.by_id("uptime").attrs["data-value"])
        up2 = float(second.root.by_id("uptime").attrs["data-value"])
        self.assertGreater(up2, up1)
        total = lambda t: int(rows_of(t)[("simple", "1")]["_tr"].attrs["data-inferences-total"])
        self.assertGreater(total(second), total(first))

    @unittest.skipIf(CHROMIUM is None, NO_CHROMIUM)
    def test_phone_layout(self):
        page = self.open_page(390, 844, mobile=True)
        self.assertEqual(page.evaluate("innerWidth"), 390)
        # No sideways scrolling of the page: everything fits the width.
        self.assertEqual(page.evaluate(
            "document.documentElement.scrollWidth <= innerWidth &&"
            " document.body.scrollWidth <= innerWidth"), True)
        # The rows became cards (the table's header row is visually hidden).
        self.assertEqual(page.evaluate(
            "getComputedStyle(document.querySelector('#models-body tr')).display"), "block")
        self.check_png(page.screenshot(), 390, 844, "status_page_390x844.png")

    @unittest.skipIf(CHROMIUM is None, NO_CHROMIUM)
    def test_keyboard_unload_and_load(self):
        page = self.open_page()
        page.press("Tab")
        self.assertEqual(page.evaluate("document.activeElement.className"), "skip")
        self.assertNotEqual(page.evaluate("getComputedStyle(document.activeElement).outlineStyle"),
                            "none")  # a visible focus indicator
        page.press("Enter")
        self.assertEqual(page.evaluate("document.activeElement.id"), "models")
        # Tab to simple's Unload button (a bounded number of steps).
        target = ("(() => { const a = document.activeElement; return a.tagName === 'BUTTON' &&"
                  " a.dataset.action === '%s' && a.closest('tr').dataset.model === 'simple'; })()")
        for _ in range(12):
            page.press("Tab")
            if page.evaluate(target % "unload"):
                break
        self.assertTrue(page.evaluate(target % "unload"), page.evaluate(
            "document.activeElement.outerHTML"))
        page.press("Enter")
        page.wait_for("document.getElementById('action-result').textContent === 'Unloaded simple.'")
        page.wait_for("document.querySelector('tr[data-model=simple]').dataset.state"
                      " === 'UNAVAILABLE'")
        # The rows are updated in place: focus stays on the button through refreshes.
        updates = int(page.evaluate("document.body.dataset.updates"))
        page.wait_for("Number(document.body.dataset.updates) >= %d" % (updates + 1))
        self.assertTrue(page.evaluate(target % "unload"))
        page.press("Tab", shift=True)
        self.assertTrue(page.evaluate(target % "load"))
        page.press("Enter")
        page.wait_for("document.getElementById('action-result').textContent === 'Loaded simple.'")
        page.wait_for("document.querySelector('tr[data-model=simple]').dataset.state === 'READY'")
        # A refused call shows the server's words.
        page.evaluate("document.querySelector('tr[data-model=broken] [data-action=load]').click()")
        page.wait_for("document.getElementById('action-result').className.includes('error')")
        message = page.evaluate("document.getElementById('action-result').textContent")
        self.assertIn("Load of broken refused (HTTP", message)
        self.assertIn("no_such_backend", message)

    @unittest.skipIf(CHROMIUM is None, NO_CHROMIUM)
    def test_restricted_page_asks_for_the_header(self):
        server = Server(self.server.repositories, [
            "--model-control-mode=explicit", "--load-model=simple",
            "--http-restricted-api=model-repository:" + RESTRICT]).start()
        try:
            page = self.open_page(url="http://127.0.0.1:%d/" % server.port)
            tree = DomTree(page.outer_html())
            self.assertFalse("hidden" in tree.root.by_id("restricted").attrs)
            listed = text_of(tree, "restricted-list")
            self.assertIn("model-repository", listed)
            self.assertIn("admin-key", listed)
            self.assertEqual(rows_of(tree)[("simple", "1")]["_buttons"], [])  # mode unknown
            # The user gives the header: states and buttons appear.
            page.evaluate("document.getElementById('header-name').value = 'admin-key';"
                          "document.getElementById('header-value').value = 's3cret';"
                          "document.querySelector('#header-form [type=submit]').click()")
            page.wait_for("document.getElementById('control-mode').textContent === 'explicit'")
            page.wait_for("document.querySelector('tr[data-model=simple]').dataset.state"
                          " === 'READY'")
            tree = DomTree(page.outer_html())
            self.assertEqual(text_of(tree, "restricted-list"), "")
            self.assertEqual(len(rows_of(tree)[("simple", "1")]["_buttons"]), 2)
        finally:
            server.stop()


def main():
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    if CHROMIUM is None:
        print("SKIPPED the browser tests: " + NO_CHROMIUM)
        sys.exit(77)


if __name__ == "__main__":
    main()
