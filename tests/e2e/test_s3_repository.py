#!/usr/bin/python3
"""Model repositories on S3 (Ceph RGW, tests/s3/ceph_rgw.py): the same answers as
from disk, the three control modes, the local cache (reuse across a restart, awkward
keys), pagination, several repositories at once, and the faults: wrong credentials,
another user's bucket, a missing bucket, the store down at start and during polls.
"""

import concurrent.futures
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import s3_util  # noqa: E402
from harness import identity_config, outputs_by_name, simple_request, wait_until  # noqa: E402

IN0 = list(range(16))
IN1 = [2] * 16
POLL_ARGS = ("--model-control-mode", "poll", "--repository-poll-secs", "1")


def identity_req(values=(1, 2, 3, 4)):
    return {"inputs": [{"name": "INPUT0", "shape": [len(values)], "datatype": "INT32",
                        "data": list(values)}]}


def upload_repository(bucket, prefix, local_repo):
    """Every file of a local repository, and a directory marker ("<dir>/") for each
    empty directory (version directories without files), as S3 tools create them."""
    keys = s3_util.upload_tree(bucket, prefix, local_repo)
    for root, dirs, files in os.walk(local_repo):
        if not dirs and not files:
            rel = os.path.relpath(root, local_repo).replace(os.sep, "/")
            s3_util.put(bucket, "%s/%s/" % (prefix, rel), b"")
    return keys


def upload_model(bucket, prefix, name, config, versions=(1,), files=None):
    s3_util.put(bucket, "%s/%s/config.pbtxt" % (prefix, name), config)
    for v in versions:
        s3_util.put(bucket, "%s/%s/%d/" % (prefix, name, v), b"")
    for rel, content in (files or {}).items():
        s3_util.put(bucket, "%s/%s/%s" % (prefix, name, rel), content)


def metrics(server):
    """{(name, frozenset(labels)): value} of one scrape."""
    r = server.metrics_client().get("/metrics")
    assert r.status == 200, r
    out = {}
    for line in r.body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        if not m:
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def metric(server, name, repository, **labels):
    want = dict(labels, repository=repository)
    total = 0.0
    for (n, ls), v in metrics(server).items():
        if n == name and all((k, w) in ls for k, w in want.items()):
            total += v
    return total


class S3TestCase(unittest.TestCase):
    """A bucket per test class, a temporary directory per test, helpers to start inferd."""

    @classmethod
    def setUpClass(cls):
        cls.fx = s3_util.fixture()
        cls.bucket = s3_util.make_bucket(cls.__name__)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="inferd-s3-")
        self.cache = os.path.join(self.tmp, "cache")
        self.servers = []

    def tearDown(self):
        try:
            for s in self.servers:
                if s.alive():
                    s.stop()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def url(self, prefix):
        return s3_util.repository_url(self.bucket, prefix)

    def server(self, repos, *args, env=None, start=True, cache=None):
        s = harness.MetricsServer(repos, ("--model-cache-dir", cache or self.cache) + args,
                                  env=s3_util.server_env() if env is None else env)
        self.servers.append(s)
        return s.start() if start else s

    def failed_start(self, repos, *args, env=None):
        """Starts inferd expecting it to exit: (exit code, output)."""
        s = self.server(repos, *args, env=env, start=False)
        try:
            s.start()
        except harness.ServerError:
            pass
        code = s.wait(60)
        self.assertIsNotNone(code, "inferd did not exit\n" + s.log_tail())
        return code, "\n".join(s.log())

    def assertServes(self, server, model, version=None):
        client = server.client()
        self.assertEqual(client.get("/v2/models/%s/ready" % model).status, 200,
                         "%s not ready\n%s" % (model, server.log_tail()))
        if model.startswith("simple"):
            req, _ = simple_request(IN0, IN1)
            r = client.infer(model, req, version)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [a + 2 for a in IN0])
        else:
            r = client.infer(model, identity_req(), version)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [1, 2, 3, 4])
        return r

    def ready(self, server, model, version=None):
        path = "/v2/models/%s%s/ready" % (model, "/versions/%d" % version if version else "")
        return server.client().get(path).status == 200


class NoneModeTest(S3TestCase):
    """The same repository from disk and from S3 gives the same answers; a restart
    reuses the cache."""

    def test_same_answers_as_from_disk_and_cache_reuse_across_restart(self):
        local = os.path.join(self.tmp, "models")
        harness.copy_test_models(local, ["simple"])
        harness.write_model(local, "ident", identity_config("ident", "TYPE_INT32", dims=(-1,)),
                            versions=(1, 2))
        upload_repository(self.bucket, "none", local)
        url = self.url("none")

        disk = self.server(local, cache=os.path.join(self.tmp, "unused"))
        remote = self.server(url)
        for model in ("simple", "ident"):
            a = self.assertServes(disk, model).json()
            b = self.assertServes(remote, model).json()
            self.assertEqual(outputs_by_name(a), outputs_by_name(b))
        index = lambda s: sorted((e["name"], e.get("version"), e["state"])  # noqa: E731
                                 for e in s.client().post("/v2/repository/index").json())
        self.assertEqual(index(disk), index(remote))
        self.assertGreater(metric(remote, "inferd_repository_fetch_objects_total", url), 0)
        self.assertGreater(metric(remote, "inferd_repository_fetch_bytes_total", url), 0)
        self.assertEqual(metric(disk, "inferd_repository_fetch_objects_total", url), 0)
        remote.stop()

        # A restart: every object is unchanged, nothing is downloaded.
        again = self.server(url)
        self.assertServes(again, "simple")
        self.assertServes(again, "ident", 2)
        self.assertEqual(metric(again, "inferd_repository_fetch_objects_total", url), 0,
                         again.log_tail())
        self.assertGreater(metric(again, "inferd_repository_cache_hits_total", url), 0)

    def test_awkward_keys_survive(self):
        name = "labels with space+plus ünïcödé.txt"
        upload_model(self.bucket, "awkward", "ident",
                     identity_config("ident", "TYPE_INT32", dims=(-1,)),
                     files={name: "cat\ndog\n", "1/" + name: "one"})
        s = self.server(self.url("awkward"))
        self.assertServes(s, "ident")
        found = {}
        for root, _, files in os.walk(self.cache):
            for f in files:
                if f == name:
                    with open(os.path.join(root, f), encoding="utf-8") as fh:
                        found[os.path.basename(root)] = fh.read()
        self.assertEqual(sorted(found.values()), ["cat\ndog\n", "one"], found)

    def test_pagination_lists_every_model(self):
        # 1,100 objects in the first model (a directory that is not a version, so
        # nothing downloads them) push the other models past the first page.
        prefix = "paged"
        upload_model(self.bucket, prefix, "aaa", identity_config("aaa", "TYPE_INT32"))
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: s3_util.put(self.bucket, "%s/aaa/extra/%04d" % (prefix, i),
                                                b"x"), range(1100)))
        for m in ("mmm", "zzz"):
            upload_model(self.bucket, prefix, m, identity_config(m, "TYPE_INT32", dims=(-1,)))
        s = self.server(self.url(prefix), "--model-control-mode", "explicit",
                        "--load-model", "zzz")
        names = {e["name"] for e in s.client().post("/v2/repository/index").json()}
        self.assertEqual(names, {"aaa", "mmm", "zzz"})
        self.assertServes(s, "zzz")


class ExplicitModeTest(S3TestCase):

    def test_load_unload_and_redacted_errors(self):
        prefix = "explicit"
        upload_model(self.bucket, prefix, "ident", identity_config("ident", "TYPE_INT32",
                                                                   dims=(-1,)))
        upload_model(self.bucket, prefix, "broken", "name: \"broken\"\nbackend: \"nope\"\n")
        s = self.server(self.url(prefix), "--model-control-mode", "explicit")
        client = s.client()
        self.assertFalse(self.ready(s, "ident"))
        self.assertEqual(client.post("/v2/repository/models/ident/load").status, 200)
        self.assertServes(s, "ident")
        self.assertEqual(client.post("/v2/repository/models/ident/unload").status, 200)
        self.assertTrue(wait_until(lambda: not self.ready(s, "ident"), 10))
        # Loading again after an unload: nothing changed, nothing is downloaded.
        fetched = metric(s, "inferd_repository_fetch_objects_total", self.url(prefix))
        self.assertEqual(client.post("/v2/repository/models/ident/load").status, 200)
        self.assertEqual(metric(s, "inferd_repository_fetch_objects_total", self.url(prefix)),
                         fetched)
        for model in ("broken", "missing"):
            r = client.post("/v2/repository/models/%s/load" % model)
            self.assertNotEqual(r.status, 200)
            self.assertNotIn(self.cache, r.body.decode(errors="replace"))
            self.assertNotIn(os.path.realpath(self.cache), r.body.decode(errors="replace"))
        for e in client.post("/v2/repository/index").json():
            self.assertNotIn(self.cache, e.get("reason", ""))


class PollModeTest(S3TestCase):

    def test_new_version_changed_config_deleted_model(self):
        prefix = "poll"
        url = self.url(prefix)
        upload_model(self.bucket, prefix, "ident", identity_config("ident", "TYPE_INT32",
                                                                   dims=(-1,)))
        upload_model(self.bucket, prefix, "gone", identity_config("gone", "TYPE_INT32",
                                                                  dims=(-1,)))
        s = self.server(url, *POLL_ARGS)
        self.assertServes(s, "ident")
        self.assertServes(s, "gone")

        # Unchanged passes: one listing each, nothing fetched.
        fetched = metric(s, "inferd_repository_fetch_objects_total", url)
        listings = metric(s, "inferd_repository_listings_total", url)
        time.sleep(3.5)
        self.assertEqual(metric(s, "inferd_repository_fetch_objects_total", url), fetched)
        self.assertGreaterEqual(metric(s, "inferd_repository_listings_total", url) - listings, 2)

        # A new version uploaded while polling.
        s3_util.put(self.bucket, "%s/ident/2/" % prefix, b"")
        self.assertTrue(wait_until(lambda: self.ready(s, "ident", 2), 20), s.log_tail())

        # A changed config: the old versions keep serving until the new ones are ready.
        failures = []
        stop = threading.Event()

        def watch():
            client = s.client()
            while not stop.is_set():
                r = client.infer("ident", identity_req())
                if r.status != 200:
                    failures.append(r)
                time.sleep(0.05)
        t = threading.Thread(target=watch)
        t.start()
        try:
            s3_util.put(self.bucket, "%s/ident/config.pbtxt" % prefix,
                        identity_config("ident", "TYPE_INT32", dims=(-1,),
                                        extra='parameters { key: "rev" value { string_value: "2" } }\n'))

            def reloaded():
                r = s.client().get("/v2/models/ident/config")
                return r.status == 200 and '"rev"' in r.body.decode()
            self.assertTrue(wait_until(reloaded, 20), s.log_tail())
        finally:
            stop.set()
            t.join()
        self.assertEqual(failures, [], "requests failed during the reload")

        # A deleted model goes away; a new one arrives.
        s3_util.delete_prefix(self.bucket, "%s/gone/" % prefix)
        upload_model(self.bucket, prefix, "new", identity_config("new", "TYPE_INT32", dims=(-1,)))
        self.assertTrue(wait_until(lambda: not self.ready(s, "gone"), 20), s.log_tail())
        self.assertTrue(wait_until(lambda: self.ready(s, "new"), 20), s.log_tail())
        self.assertServes(s, "new")

    def test_store_down_during_polls(self):
        prefix = "outage"
        url = self.url(prefix)
        upload_model(self.bucket, prefix, "ident", identity_config("ident", "TYPE_INT32",
                                                                   dims=(-1,)))
        s = self.server(url, *POLL_ARGS)
        self.assertServes(s, "ident")
        s3_util.stop_rgw()
        try:
            warned = wait_until(lambda: any("poll: cannot list model repository" in line
                                            for line in s.log()), 20)
            self.assertTrue(warned, s.log_tail())
            warning = next(line for line in s.log() if "poll: cannot list" in line)
            self.assertIn(self.bucket, warning)
            self.assertIn(self.fx["host_port"], warning)
            self.assertNotIn(self.fx["secret_key"], "\n".join(s.log()))
            self.assertServes(s, "ident")
            self.assertGreater(metric(s, "inferd_repository_fetch_errors_total", url,
                                      kind="unreachable"), 0)
        finally:
            s3_util.start_rgw()
        upload_model(self.bucket, prefix, "after", identity_config("after", "TYPE_INT32",
                                                                   dims=(-1,)))
        self.assertTrue(wait_until(lambda: self.ready(s, "after"), 30), s.log_tail())
        self.assertServes(s, "ident")


class StartupFaultsTest(S3TestCase):

    def test_wrong_credentials(self):
        upload_model(self.bucket, "creds", "ident", identity_config("ident", "TYPE_INT32"))
        secret = "wrongSecretThatMustNotLeak1234567890abc"
        env = dict(s3_util.server_env(), AWS_SECRET_ACCESS_KEY=secret)
        code, out = self.failed_start(self.url("creds"), env=env)
        self.assertNotEqual(code, 0)
        self.assertIn("access denied", out.lower())
        self.assertIn(self.bucket, out)
        self.assertNotIn(secret, out)
        # A valid user without access to the bucket.
        code, out = self.failed_start(self.url("creds"), env=s3_util.server_env(other_user=True))
        self.assertNotEqual(code, 0)
        self.assertIn("access denied", out.lower())
        self.assertNotIn(self.fx["other_secret_key"], out)

    def test_missing_bucket(self):
        bucket = "no-such-bucket-%d" % os.getpid()
        code, out = self.failed_start(s3_util.repository_url(bucket, "models"))
        self.assertNotEqual(code, 0)
        self.assertIn(bucket, out)
        self.assertIn(self.fx["host_port"], out)

    def test_store_down_at_start(self):
        prefix = "down"
        upload_model(self.bucket, prefix, "ident", identity_config("ident", "TYPE_INT32",
                                                                   dims=(-1,)))
        s3_util.stop_rgw()
        try:
            code, out = self.failed_start(self.url(prefix))
            self.assertNotEqual(code, 0)
            self.assertIn(self.bucket, out)
            self.assertIn(self.fx["host_port"], out)
            s = self.server(self.url(prefix), "--exit-on-error=false")
            self.assertFalse(self.ready(s, "ident"))
        finally:
            s3_util.start_rgw()
        self.assertTrue(wait_until(lambda: self.ready(s, "ident"), 60), s.log_tail())
        self.assertServes(s, "ident")


class SeveralRepositoriesTest(S3TestCase):

    def test_local_and_s3(self):
        local = os.path.join(self.tmp, "models")
        harness.write_model(local, "loc", identity_config("loc", "TYPE_INT32", dims=(-1,)))
        harness.write_model(local, "both", identity_config("both", "TYPE_INT32", dims=(-1,)))
        upload_model(self.bucket, "mixed", "rem", identity_config("rem", "TYPE_INT32",
                                                                  dims=(-1,)))
        upload_model(self.bucket, "mixed", "both", identity_config("both", "TYPE_INT32",
                                                                   dims=(-1,)))
        s = self.server([local, self.url("mixed")], "--strict-readiness=false")
        self.assertServes(s, "loc")
        self.assertServes(s, "rem")
        self.assertFalse(self.ready(s, "both"))
        reasons = [e.get("reason", "") for e in s.client().post("/v2/repository/index").json()
                   if e["name"] == "both"]
        self.assertTrue(any("more than one model repository" in r for r in reasons), reasons)

    def test_example_repository_from_the_bucket(self):
        """examples/models (all but the three resnets, 190 MB) served from the bucket
        answers as from disk: TorchScript, ONNX, the image pre-processing pipeline."""
        examples = os.path.join(harness.REPO_ROOT, "examples", "models")
        test_data = os.path.join(harness.REPO_ROOT, "examples", "data", "digits_test.json")
        for path in (os.path.join(examples, "digits", "1", "model.pt"),
                     os.path.join(examples, "digits_onnx", "1", "model.onnx"), test_data):
            if not os.path.exists(path):
                raise AssertionError("%s is missing: run `make models` first" % path)
        local = os.path.join(self.tmp, "examples")
        for name in sorted(os.listdir(examples)):
            if not name.startswith("resnet"):
                shutil.copytree(os.path.join(examples, name), os.path.join(local, name))
        upload_repository(self.bucket, "examples", local)
        disk = self.server(local, cache=os.path.join(self.tmp, "unused"))
        remote = self.server(self.url("examples"))
        index = lambda s: sorted((e["name"], e.get("version"), e["state"])  # noqa: E731
                                 for e in s.client().post("/v2/repository/index").json())
        self.assertEqual(index(disk), index(remote))
        self.assertTrue(all(state == "READY" for _, _, state in index(remote)), index(remote))
        with open(test_data) as f:
            images = json.load(f)["images"][:16]
        flat = [v for img in images for row in img[0] for v in row]
        req = {"inputs": [{"name": "image", "shape": [len(images), 1, 8, 8], "datatype": "FP32",
                           "data": flat}]}
        for model in ("digits", "digits_onnx"):
            a = disk.client().infer(model, req)
            b = remote.client().infer(model, req)
            self.assertEqual(a.status, 200, a)
            self.assertEqual(b.status, 200, b)
            self.assertEqual(outputs_by_name(a.json()), outputs_by_name(b.json()), model)

    def test_libcurl_is_loaded_only_for_s3(self):
        def maps_curl(server):
            with open("/proc/%d/maps" % server.proc.pid) as f:
                return "libcurl" in f.read()

        local = os.path.join(self.tmp, "only_local")
        harness.write_model(local, "loc", identity_config("loc", "TYPE_INT32", dims=(-1,)))
        self.assertFalse(maps_curl(self.server([local])),
                         "a server without s3:// repositories does not load libcurl")
        upload_model(self.bucket, "curl", "rem", identity_config("rem", "TYPE_INT32", dims=(-1,)))
        s = self.server([self.url("curl")])
        self.assertServes(s, "rem")
        self.assertTrue(maps_curl(s))


if __name__ == "__main__":
    unittest.main()
