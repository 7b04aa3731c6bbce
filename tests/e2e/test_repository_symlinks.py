#!/usr/bin/python3
"""Symbolic links in model repositories (docs/operations.md, "Symbolic links"): version and
model directories linked inside any repository load and infer over HTTP and gRPC; links whose
target lies outside every repository load only with --repository-follow-external-symlinks=true,
and otherwise the model is UNAVAILABLE with a reason naming the link; dangling links are named;
in poll mode a link pointed elsewhere reloads the model."""

import os
import shutil
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import secure_util  # noqa: E402
from harness import ServerTestCase, write_model, identity_config, wait_until  # noqa: E402
from secure_util import grpc  # noqa: E402

ALL_VERSIONS = "version_policy: { all { } }"
FLAG = "--repository-follow-external-symlinks=true"


def ident(name, extra=ALL_VERSIONS):
    return identity_config(name, "TYPE_INT32", dims=(-1,), extra=extra)


def build_links(root):
    """Two repositories and a directory outside both; returns (repo, repo2, outside)."""
    repo, repo2, outside = (os.path.join(root, d) for d in ("models", "models2", "outside"))
    # Version directories kept in a hidden store (not a model) of each repository.
    for d in (os.path.join(repo, ".store", "v2"), os.path.join(repo2, ".store", "v1"),
              os.path.join(outside, "ext_v1")):
        os.makedirs(d)
    # version 2 linked inside the same repository (relative), version 1 a plain directory
    write_model(repo, "versions_linked", ident("versions_linked"), versions=(1,))
    os.symlink("../.store/v2", os.path.join(repo, "versions_linked", "2"))
    # a version linked into the other repository (absolute)
    write_model(repo, "cross_repo", ident("cross_repo"), versions=())
    os.symlink(os.path.join(repo2, ".store", "v1"), os.path.join(repo, "cross_repo", "1"))
    # a model directory linked inside the repository
    write_model(os.path.join(repo, ".store"), "aliased", ident("aliased"), versions=(3,))
    os.symlink(os.path.join(".store", "aliased"), os.path.join(repo, "aliased"))
    # links outside every repository: a version directory and a whole model
    write_model(repo, "ext_version", ident("ext_version"), versions=())
    os.symlink(os.path.join(outside, "ext_v1"), os.path.join(repo, "ext_version", "1"))
    write_model(outside, "ext_model", ident("ext_model"), versions=(1,))
    os.symlink(os.path.join(outside, "ext_model"), os.path.join(repo, "ext_model"))
    # a dangling version link
    write_model(repo, "dangling", ident("dangling"), versions=())
    os.symlink("../.store/missing", os.path.join(repo, "dangling", "1"))
    write_model(repo2, "plain", ident("plain"))
    return repo, repo2, outside


class SymlinkCase(ServerTestCase):
    SERVER_CLASS = harness.GrpcServer

    @classmethod
    def build_repository(cls, root):
        repo, repo2, cls.outside = build_links(root)
        return [repo, repo2]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.pb = secure_util.grpc_messages(os.path.join(cls.tmp, "gen")) if grpc else None

    def tearDown(self):
        self.assertServerAlive()

    def index_by_name(self):
        r = self.client.post("/v2/repository/index")
        self.assertEqual(r.status, 200, r)
        out = {}
        for e in r.json():
            out.setdefault(e["name"], []).append(e)
        return out

    def assertInfers(self, model, version):
        values = [3, 1, 4, 1, 5]
        body = {"inputs": [{"name": "INPUT0", "shape": [5], "datatype": "INT32", "data": values}]}
        r = self.client.infer(model, body, str(version))
        self.assertEqual(r.status, 200, "HTTP infer %s v%s: %s" % (model, version, r))
        self.assertEqual(r.json()["model_version"], str(version))
        self.assertEqual(r.json()["outputs"][0]["data"], values)
        if grpc is None:
            return
        pb = self.pb
        req = pb.ModelInferRequest(model_name=model, model_version=str(version))
        req.inputs.add(name="INPUT0", datatype="INT32", shape=[5])
        req.raw_input_contents.append(struct.pack("<5i", *values))
        with grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port) as channel:
            resp = secure_util.unary(channel, "ModelInfer", req, pb.ModelInferResponse)
        self.assertEqual(resp.model_version, str(version))
        self.assertEqual(resp.raw_output_contents[0], struct.pack("<5i", *values))

    def assertUnavailable(self, model, *needles):
        entries = self.index_by_name()[model]
        self.assertEqual([e.get("state") for e in entries], ["UNAVAILABLE"], entries)
        for needle in needles:
            self.assertIn(needle, entries[0].get("reason", ""))
        self.assertEqual(self.client.get("/v2/models/%s/ready" % model).status, 400)
        if grpc is not None:
            pb = self.pb
            with grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port) as channel:
                ready = secure_util.unary(channel, "ModelReady", pb.ModelReadyRequest(name=model),
                                          pb.ModelReadyResponse)
            self.assertFalse(ready.ready)
        return entries[0]["reason"]


class LinksInsideRepositoriesTest(SymlinkCase):
    def test_version_linked_in_the_same_repository(self):
        self.assertInfers("versions_linked", 1)
        self.assertInfers("versions_linked", 2)

    def test_version_linked_into_another_repository(self):
        self.assertInfers("cross_repo", 1)

    def test_model_directory_linked_inside(self):
        self.assertInfers("aliased", 3)

    def test_version_linked_outside_is_refused_naming_the_link(self):
        reason = self.assertUnavailable(
            "ext_version", "version directory '1' is a symbolic link to '%s'"
            % os.path.join(os.path.realpath(self.outside), "ext_v1"),
            "outside every model repository", "start inferd with " + FLAG)
        self.assertNotIn("at least one version", reason)

    def test_model_linked_outside_is_refused_naming_the_link(self):
        self.assertUnavailable("ext_model", "model directory 'ext_model' is a symbolic link to",
                               "outside every model repository", FLAG)

    def test_dangling_link_is_named(self):
        self.assertUnavailable("dangling", "version directory '1' is a symbolic link to "
                                           "'../.store/missing', which does not exist")

    def test_other_models_serve(self):
        self.assertInfers("plain", 1)


class FollowExternalLinksTest(SymlinkCase):
    SERVER_ARGS = (FLAG,)

    def test_links_outside_are_followed(self):
        self.assertInfers("ext_version", 1)
        self.assertInfers("ext_model", 1)
        self.assertInfers("versions_linked", 2)

    def test_dangling_link_still_refused(self):
        self.assertUnavailable("dangling", "version directory '1'", "which does not exist")


class ExplicitLoadNamesTheLinkTest(SymlinkCase):
    SERVER_ARGS = ("--model-control-mode=explicit",)

    def test_load_error_names_the_link(self):
        r = self.client.post("/v2/repository/models/ext_version/load")
        self.assertNotEqual(r.status, 200, r)
        self.assertIn("version directory '1' is a symbolic link to", r.json()["error"])
        self.assertIn(FLAG, r.json()["error"])
        if grpc is not None:
            pb = self.pb
            with grpc.insecure_channel("127.0.0.1:%d" % self.server.grpc_port) as channel:
                with self.assertRaises(grpc.RpcError) as e:
                    secure_util.unary(channel, "RepositoryModelLoad",
                                      pb.RepositoryModelLoadRequest(model_name="dangling"),
                                      pb.RepositoryModelLoadResponse)
            self.assertIn("version directory '1' is a symbolic link to '../.store/missing', "
                          "which does not exist", e.exception.details())
        self.assertOk(self.client.post("/v2/repository/models/cross_repo/load"))
        self.assertInfers("cross_repo", 1)


class PollRetargetedLinkTest(SymlinkCase):
    SERVER_ARGS = ("--model-control-mode=poll", "--repository-poll-secs=1", "--log-verbose=1")

    def log_count(self, needle):
        return sum(needle in line for line in self.server.log())

    def test_retargeted_version_link_reloads(self):
        self.assertInfers("versions_linked", 2)
        loads = self.log_count("loading model 'versions_linked' version 2")
        # Point version 2 outside: the poll notices (the fingerprint holds link targets) and
        # the reload fails naming the link; the loaded versions keep serving, as for any
        # failed reload.
        link = os.path.join(self.repos[0], "versions_linked", "2")
        os.remove(link)
        os.symlink(os.path.join(self.outside, "ext_v1"), link)
        refused = "model 'versions_linked' failed to load: version directory '2' is a " \
                  "symbolic link to '%s'" % os.path.join(os.path.realpath(self.outside), "ext_v1")
        self.assertTrue(wait_until(lambda: self.log_count(refused) > 0, 10),
                        self.server.log_tail())
        self.assertInfers("versions_linked", 2)
        # Back inside, to another target: the model reloads from it.
        os.remove(link)
        os.symlink(os.path.join(self.repos[1], ".store", "v1"), link)
        self.assertTrue(wait_until(
            lambda: self.log_count("loading model 'versions_linked' version 2") > loads, 10),
            self.server.log_tail())
        self.assertTrue(wait_until(lambda: all(
            e.get("state") == "READY" for e in self.index_by_name()["versions_linked"]), 10),
            self.index_by_name()["versions_linked"])
        self.assertInfers("versions_linked", 2)


if __name__ == "__main__":
    unittest.main()
