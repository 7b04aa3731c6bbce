#!/usr/bin/python3
"""Model control modes (explicit, poll), failed models, version policies, several repositories,
config text format and names/symlinks escaping the repository."""

import os
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (ServerTestCase, write_model, identity_config, add_sub_config,  # noqa: E402
                     simple_request, outputs_by_name, wait_until)

IN0 = list(range(16))
IN1 = [2] * 16


def identity_req(values=(1, 2, 3, 4)):
    return {"inputs": [{"name": "INPUT0", "shape": [len(values)], "datatype": "INT32",
                        "data": list(values)}]}


def index(client):
    r = client.post("/v2/repository/index")
    if r.status != 200:
        raise AssertionError("POST /v2/repository/index: %s" % r)
    return r.json()


def index_entries(client, name):
    return [e for e in index(client) if e.get("name") == name]


class RepoModeTestCase(ServerTestCase):

    def tearDown(self):
        self.assertServerAlive()

    def assertServes(self, model, version=None):
        self.assertOk(self.client.get("/v2/models/%s/ready" % model), "%s ready" % model)
        if model.startswith("simple"):
            req, _ = simple_request(IN0, IN1)
            r = self.client.infer(model, req, version)
            self.assertOk(r, "infer %s" % model)
            self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [a + 2 for a in IN0])
        else:
            r = self.client.infer(model, identity_req(), version)
            self.assertOk(r, "infer %s" % model)
            self.assertEqual(outputs_by_name(r.json())["OUTPUT0"]["data"], [1, 2, 3, 4])
        return r

    def assertNotServed(self, model, ready_status=(400, 404, 503)):
        r = self.client.get("/v2/models/%s/ready" % model)
        self.assertIn(r.status, ready_status, "GET /v2/models/%s/ready -> %s" % (model, r))
        r = self.client.infer(model, identity_req())
        self.assertIn(r.status, (400, 404, 503), "infer %s -> %s" % (model, r))
        return r


# ------------------------------------------------------------------------------------------------


class ExplicitModeTest(RepoModeTestCase):
    SERVER_ARGS = ("--model-control-mode", "explicit", "--load-model", "simple")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        write_model(repo, "ident", identity_config("ident", "TYPE_INT32", dims=(-1,)))
        write_model(repo, "ident2", identity_config("ident2", "TYPE_INT32", dims=(-1,)))
        write_model(repo, "reloadable", identity_config("reloadable", "TYPE_INT32", dims=(-1,)))
        write_model(repo, "churn", identity_config("churn", "TYPE_INT32", dims=(-1,)))
        write_model(repo, "bad_dtype", add_sub_config("bad_dtype", "TYPE_FP64"))
        write_model(repo, "bad_text", "name: \"bad_text\"\nbackend: \"identity\"\ninput [ { name: \n")
        # a valid model outside the repository, reachable by "..", and a symlink to it
        write_model(os.path.join(root, "outside"), "secret", identity_config("secret", "TYPE_INT32"))
        os.symlink(os.path.join(root, "outside", "secret"), os.path.join(repo, "linked"))
        return [repo]

    def test_only_requested_model_loaded(self):
        self.assertServes("simple")
        self.assertNotServed("ident")
        by = {e["name"]: e for e in index(self.client)}
        self.assertEqual(by["simple"].get("state"), "READY")
        self.assertIn("ident", by, "models present in the repository are listed")
        self.assertNotEqual(by["ident"].get("state"), "READY")

    def test_00_server_ready_at_start(self):
        # runs first (alphabetical order): models never loaded do not affect readiness
        self.assertOk(self.client.get("/v2/health/ready"))

    def test_load_and_unload(self):
        r = self.client.post("/v2/repository/models/ident/load")
        self.assertOk(r, "load ident")
        self.assertServes("ident")
        self.assertEqual([(e.get("version"), e.get("state")) for e in index_entries(self.client, "ident")],
                         [("1", "READY")])
        r = self.client.post("/v2/repository/models/ident/unload")
        self.assertOk(r, "unload ident")
        self.assertTrue(wait_until(lambda: self.client.get("/v2/models/ident/ready").status != 200, 5),
                        "ident still ready after unload")
        self.assertNotServed("ident")
        for e in index_entries(self.client, "ident"):
            self.assertNotEqual(e.get("state"), "READY", e)

    def test_load_with_empty_json_body(self):
        self.assertOk(self.client.post_json("/v2/repository/models/ident2/load", {}))
        self.assertServes("ident2")
        self.assertOk(self.client.post_json("/v2/repository/models/ident2/unload",
                                            {"parameters": {"unload_dependents": False}}))

    def test_load_twice_and_reload_new_version(self):
        self.assertOk(self.client.post("/v2/repository/models/reloadable/load"))
        self.assertOk(self.client.post("/v2/repository/models/reloadable/load"), "second load is a no-op")
        r = self.assertServes("reloadable")
        self.assertEqual(r.json()["model_version"], "1")
        os.makedirs(os.path.join(self.repos[0], "reloadable", "2"))
        self.assertOk(self.client.post("/v2/repository/models/reloadable/load"), "reload")
        r = self.assertServes("reloadable")
        self.assertEqual(r.json()["model_version"], "2")
        md = self.client.get("/v2/models/reloadable").json()
        self.assertEqual(md["versions"], ["2"])

    def test_load_unload_under_traffic(self):
        self.assertOk(self.client.post("/v2/repository/models/churn/load"))
        stop = harness.threading.Event()
        bad = []
        counts = {"ok": 0, "refused": 0}

        def traffic():
            c = harness.Client(self.server.port, persistent=True, timeout=10)
            try:
                while not stop.is_set():
                    try:
                        r = c.infer("churn", identity_req())
                    except OSError as e:
                        bad.append("connection error: %r" % e)
                        c.close()
                        continue
                    if r.status == 200:
                        if outputs_by_name(r.json())["OUTPUT0"]["data"] != [1, 2, 3, 4]:
                            bad.append("wrong data: %s" % r)
                        counts["ok"] += 1
                    elif r.status in (400, 404, 503):
                        counts["refused"] += 1
                    else:
                        bad.append(str(r))
            finally:
                c.close()

        threads = [harness.threading.Thread(target=traffic, daemon=True) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            for _ in range(5):
                self.assertOk(self.client.post("/v2/repository/models/churn/unload"))
                time.sleep(0.05)
                self.assertOk(self.client.post("/v2/repository/models/churn/load"))
                time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join(15)
        self.assertEqual(bad[:5], [], "%d bad answers during load/unload" % len(bad))
        self.assertGreater(counts["ok"], 0)
        self.assertServes("churn")

    def test_load_unknown_model(self):
        r = self.client.post("/v2/repository/models/does_not_exist/load")
        self.assertError(r, 500, "failed to load 'does_not_exist', failed to poll from model "
                                 "repository")

    def test_load_failing_model(self):
        r = self.client.post("/v2/repository/models/bad_dtype/load")
        self.assertError(r, 400, "load failed for model 'bad_dtype': ")
        self.assertNotServed("bad_dtype")
        entries = index_entries(self.client, "bad_dtype")
        self.assertTrue(entries)
        self.assertEqual(entries[0].get("state"), "UNAVAILABLE", entries)
        self.assertTrue(entries[0].get("reason"), entries)
        r = self.client.post("/v2/repository/models/bad_text/load")
        self.assertError(r, 500, "failed to load 'bad_text', failed to poll from model repository")
        self.assertServes("simple")

    def test_unload_not_loaded_model(self):
        r = self.client.post("/v2/repository/models/ident2/unload")
        self.assertIn(r.status, (200, 400, 404), r)
        self.assertServes("simple")

    def test_load_names_escaping_repository(self):
        for name in ("..%2Foutside%2Fsecret", "..%2F..%2Foutside%2Fsecret", "%2E%2E", "..", ".", "%2Fetc",
                     "simple%2F..%2F..%2Foutside%2Fsecret"):
            with self.subTest(name=name):
                r = self.client.post("/v2/repository/models/%s/load" % name)
                self.assertIn(r.status, (400, 404), "load %s -> %s" % (name, r))
        self.assertNotServed("secret")
        for e in index(self.client):
            self.assertNotIn("/", e.get("name", ""), e)
            self.assertNotIn(e.get("name"), ("..", "."), e)

    def test_symlink_outside_repository_not_served(self):
        r = self.client.post("/v2/repository/models/linked/load")
        self.assertNotEqual(r.status, 200, "loading a symlink that leaves the repository: %s" % r)
        self.assertNotServed("linked")
        self.assertNotServed("secret")

    def test_repository_name_segment_on_index(self):
        # Refused as on load/unload, and as gRPC's RepositoryIndex refuses a repository_name
        # (docs/decisions.md, "One control plane"): one repository namespace.
        r = self.client.post("/v2/repository/anything/index")
        self.assertError(r, 501, "'repository_name' specification is not supported")


class ExplicitModeLoadAllTest(RepoModeTestCase):
    SERVER_ARGS = ("--model-control-mode=explicit", "--load-model=*")

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        write_model(repo, "ident", identity_config("ident", "TYPE_INT32"))
        return [repo]

    def test_all_loaded(self):
        self.assertServes("simple")
        self.assertServes("ident")


class NoneModeSymlinkTest(RepoModeTestCase):
    """Default mode; the repository holds a symlinked model dir pointing outside it."""

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        write_model(os.path.join(root, "outside"), "secret", identity_config("secret", "TYPE_INT32"))
        os.symlink(os.path.join(root, "outside", "secret"), os.path.join(repo, "linked"))
        return [repo]

    def test_symlinked_model_not_served(self):
        self.assertServes("simple")
        self.assertNotServed("linked")
        self.assertNotServed("secret")

    def test_escaping_names_not_served(self):
        for path in ("/v2/models/..%2Foutside%2Fsecret/ready", "/v2/models/..%2Foutside%2Fsecret",
                     "/v2/models/..%2Foutside%2Fsecret/config"):
            with self.subTest(path=path):
                self.assertIn(self.client.get(path).status, (400, 404))


class PollModeTest(RepoModeTestCase):
    SERVER_ARGS = ("--model-control-mode", "poll", "--repository-poll-secs", "1")
    WAIT_S = 8

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        write_model(repo, "to_remove", identity_config("to_remove", "TYPE_INT32"))
        write_model(repo, "grows", identity_config("grows", "TYPE_INT32"))
        write_model(repo, "changes", identity_config("changes", "TYPE_INT32"))
        write_model(repo, "breaks", identity_config("breaks", "TYPE_INT32"))
        cls.staging = os.path.join(root, "staging")
        os.makedirs(cls.staging)
        return [repo]

    def _stage(self, name, config):
        """Build a model outside the repository and move it in atomically."""
        d = write_model(self.staging, name, config)
        os.rename(d, os.path.join(self.repos[0], name))

    def test_add_model(self):
        self.assertNotServed("added")
        self._stage("added", identity_config("added", "TYPE_INT32"))
        ok = wait_until(lambda: self.client.get("/v2/models/added/ready").status == 200, self.WAIT_S)
        self.assertTrue(ok, "model added to the repository not READY within %d s\n%s"
                        % (self.WAIT_S, self.server.log_tail(20)))
        self.assertServes("added")
        self.assertIn(("added", "1", "READY"),
                      [(e.get("name"), e.get("version"), e.get("state")) for e in index(self.client)])

    def test_remove_model(self):
        self.assertServes("to_remove")
        shutil.rmtree(os.path.join(self.repos[0], "to_remove"))
        ok = wait_until(lambda: self.client.get("/v2/models/to_remove/ready").status != 200, self.WAIT_S)
        self.assertTrue(ok, "removed model still READY after %d s" % self.WAIT_S)
        self.assertNotServed("to_remove")
        for e in index_entries(self.client, "to_remove"):
            self.assertNotEqual(e.get("state"), "READY", e)
        self.assertServes("simple")

    def test_add_version(self):
        self.assertEqual(self.assertServes("grows").json()["model_version"], "1")
        os.makedirs(os.path.join(self.repos[0], "grows", "2"))
        ok = wait_until(lambda: self.client.infer("grows", identity_req()).json().get("model_version") == "2",
                        self.WAIT_S)
        self.assertTrue(ok, "new version 2 not served within %d s" % self.WAIT_S)

    def test_config_change_reloads(self):
        self.assertServes("changes")
        cfg = identity_config("changes", "TYPE_INT32", max_batch_size=4)
        path = os.path.join(self.repos[0], "changes", "config.pbtxt")
        with open(path + ".tmp", "w") as f:
            f.write(cfg)
        os.replace(path + ".tmp", path)
        ok = wait_until(lambda: self.client.get("/v2/models/changes/config").json().get("max_batch_size") == 4,
                        self.WAIT_S)
        self.assertTrue(ok, "config change not picked up within %d s" % self.WAIT_S)

    def test_broken_config_keeps_old_model(self):
        # PROTOCOL 3.5: in poll mode a failed reload keeps the old model serving.
        self.assertServes("breaks")
        path = os.path.join(self.repos[0], "breaks", "config.pbtxt")
        with open(path + ".tmp", "w") as f:
            f.write("this is { not valid")
        os.replace(path + ".tmp", path)
        time.sleep(3.5)  # several poll cycles
        self.assertServes("breaks")

    def test_load_unload_refused(self):
        self.assertError(self.client.post("/v2/repository/models/simple/load"), 503)
        self.assertError(self.client.post("/v2/repository/models/simple/unload"), 503)
        self.assertServes("simple")


class FailedModelTest(RepoModeTestCase):
    """Models that fail to load are UNAVAILABLE with a reason; the others serve; strict readiness."""

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "simple", harness.SIMPLE_CONFIG)
        write_model(repo, "bad_dtype", add_sub_config("bad_dtype", "TYPE_FP64"))
        write_model(repo, "bad_text", "this is { not a model config")
        write_model(repo, "bad_backend", identity_config("bad_backend", "TYPE_INT32").replace(
            'backend: "identity"', 'backend: "no_such_backend"'))
        write_model(repo, "name_mismatch", identity_config("another_name", "TYPE_INT32"))
        write_model(repo, "no_versions", identity_config("no_versions", "TYPE_INT32"), versions=())
        return [repo]

    BROKEN = ("bad_dtype", "bad_text", "bad_backend", "name_mismatch", "no_versions")

    def test_good_model_serves(self):
        self.assertServes("simple")

    def test_live_but_not_ready(self):
        self.assertOk(self.client.get("/v2/health/live"))
        self.assertStatus(self.client.get("/v2/health/ready"), 400, "strict readiness with failed models")

    def test_index_reports_failures(self):
        idx = index(self.client)
        by = {}
        for e in idx:
            by.setdefault(e.get("name"), []).append(e)
        self.assertEqual([e.get("state") for e in by.get("simple", [])], ["READY"])
        for name in self.BROKEN:
            with self.subTest(model=name):
                self.assertIn(name, by, "failed model missing from the index: %s" % idx)
                for e in by[name]:
                    self.assertEqual(e.get("state"), "UNAVAILABLE", e)
                    self.assertIsInstance(e.get("reason"), str, e)
                    self.assertTrue(e["reason"], e)

    def test_broken_models_not_served(self):
        self.assertNotServed("bad_dtype", ready_status=(400,))
        for name in self.BROKEN:
            with self.subTest(model=name):
                self.assertNotServed(name)

    def test_index_ready_filter_excludes_failures(self):
        r = self.client.post_json("/v2/repository/index", {"ready": True})
        self.assertOk(r)
        self.assertEqual(sorted(e["name"] for e in r.json()), ["simple"])


class VersionPolicyTest(RepoModeTestCase):

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        ic = lambda n, extra="": identity_config(n, "TYPE_INT32", dims=(-1,), extra=extra)  # noqa: E731
        write_model(repo, "v_default", ic("v_default"), versions=(1, 2, 3))
        write_model(repo, "v_all", ic("v_all", "version_policy: { all { } }"), versions=(1, 2, 3, 10))
        write_model(repo, "v_latest2", ic("v_latest2", "version_policy: { latest: { num_versions: 2 } }"),
                    versions=(1, 2, 3))
        write_model(repo, "v_specific", ic("v_specific", "version_policy: { specific: { versions: [1, 3] } }"),
                    versions=(1, 2, 3))
        # non-version directories are ignored
        write_model(repo, "v_junk", ic("v_junk", "version_policy: { all { } }"), versions=(1, 2))
        for d in ("abc", "configs", "warmup", "01"):
            os.makedirs(os.path.join(repo, "v_junk", d))
        with open(os.path.join(repo, "v_junk", "5"), "w") as f:  # a file, not a directory
            f.write("not a version dir")
        return [repo]

    CASES = {"v_default": ["3"], "v_all": ["1", "2", "3", "10"], "v_latest2": ["2", "3"],
             "v_specific": ["1", "3"], "v_junk": ["1", "2"]}

    def test_metadata_versions(self):
        for model, versions in self.CASES.items():
            with self.subTest(model=model):
                r = self.client.get("/v2/models/%s" % model)
                self.assertOk(r)
                self.assertEqual(r.json()["versions"], versions)

    def test_latest_version_used_without_version(self):
        for model, versions in self.CASES.items():
            with self.subTest(model=model):
                self.assertEqual(self.assertServes(model).json()["model_version"], versions[-1])

    def test_each_loaded_version_served(self):
        for model, versions in self.CASES.items():
            for v in versions:
                with self.subTest(model=model, version=v):
                    self.assertEqual(self.assertServes(model, version=v).json()["model_version"], v)
                    self.assertOk(self.client.get("/v2/models/%s/versions/%s/ready" % (model, v)))
                    md = self.client.get("/v2/models/%s/versions/%s" % (model, v)).json()
                    self.assertEqual(md["versions"], [v])

    def test_unloaded_versions_not_served(self):
        for model, v in (("v_default", 1), ("v_default", 2), ("v_latest2", 1), ("v_specific", 2),
                         ("v_all", 4), ("v_junk", 5), ("v_junk", 1000)):
            with self.subTest(model=model, version=v):
                r = self.client.infer(model, identity_req(), version=v)
                self.assertError(r, 404)
                self.assertIn(self.client.get("/v2/models/%s/versions/%d/ready" % (model, v)).status,
                              (400, 404))
                self.assertError(self.client.get("/v2/models/%s/versions/%d" % (model, v)), 404)

    def test_config_version_policy(self):
        cfg = lambda m: self.client.get("/v2/models/%s/config" % m).json()  # noqa: E731
        self.assertEqual(cfg("v_default")["version_policy"], {"latest": {"num_versions": 1}})
        self.assertEqual(cfg("v_all")["version_policy"], {"all": {}})
        self.assertEqual(cfg("v_latest2")["version_policy"], {"latest": {"num_versions": 2}})
        self.assertEqual(cfg("v_specific")["version_policy"], {"specific": {"versions": [1, 3]}})

    def test_index_lists_versions(self):
        idx = index(self.client)
        got = sorted(e.get("version") for e in idx if e.get("name") == "v_all" and e.get("state") == "READY")
        self.assertEqual(got, ["1", "10", "2", "3"])

    def test_server_ready(self):
        self.assertOk(self.client.get("/v2/health/ready"))


class MultipleRepositoriesTest(RepoModeTestCase):

    @classmethod
    def build_repository(cls, root):
        a = os.path.join(root, "repo_a")
        b = os.path.join(root, "repo_b")
        write_model(a, "simple", harness.SIMPLE_CONFIG)
        write_model(b, "ident_b", identity_config("ident_b", "TYPE_INT32"))
        write_model(a, "dup", identity_config("dup", "TYPE_INT32"))
        write_model(b, "dup", identity_config("dup", "TYPE_INT32"))
        return [a, b]

    def test_models_from_both_repositories(self):
        self.assertServes("simple")
        self.assertServes("ident_b")

    def test_duplicate_name_not_served(self):
        self.assertNotServed("dup")
        entries = index_entries(self.client, "dup")
        self.assertTrue(entries, "duplicate model missing from the index")
        for e in entries:
            self.assertEqual(e.get("state"), "UNAVAILABLE", e)
            self.assertTrue(e.get("reason"), e)


class ConfigTextFormatTest(RepoModeTestCase):
    """protobuf text-format variants Triton repositories use."""

    @classmethod
    def build_repository(cls, root):
        repo = os.path.join(root, "models")
        write_model(repo, "fmt_common", """\
# comment line
name: "fmt_common"   # trailing comment
backend: "identity"
max_batch_size: 0
input: [
  { name: "INPUT0", data_type: TYPE_INT32, dims: [ -1 ] }
]
output { name: "OUTPUT0" data_type: TYPE_INT32 dims: -1 }
instance_group [ { count: 1 kind: KIND_CPU } ]
version_policy { latest { num_versions: 1 } }
""")
        write_model(repo, "fmt_exotic", """\
name: 'fmt_exotic'
backend: "identity"
input < name: "INPUT0"; data_type: TYPE_INT32; dims: [-1] >
output: [ { name: "OUTPUT0", data_type: TYPE_INT32, dims: [-1] } ]
parameters { key: "k" value { string_value: "v" } }
""")
        write_model(repo, "fmt_no_name", """\
backend: "identity"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
""")
        return [repo]

    def test_variants_load(self):
        for m in ("fmt_common", "fmt_no_name"):
            with self.subTest(model=m):
                self.assertServes(m)

    def test_exotic_text_format_loads(self):
        # single quotes, ';' separators, <...> message delimiters, map fields: valid text format
        self.assertServes("fmt_exotic")

    def test_name_defaults_to_directory(self):
        cfg = self.client.get("/v2/models/fmt_no_name/config").json()
        self.assertEqual(cfg["name"], "fmt_no_name")
        self.assertEqual(cfg["max_batch_size"], 0)


if __name__ == "__main__":
    unittest.main()
