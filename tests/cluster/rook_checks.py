"""Checks of deploy/kubernetes/components/rook-model-store (through the example
overlay overlays/rook) and deploy/kubernetes/rook-object-store, and of the
kubelet's $(VAR) expansion that tests/cluster/kube_env.py reproduces. Run by
test_deploy_configs.py, which imports the classes."""

import os
import re
import unittest

import yaml

import kube_env
from deploy_render import DEPLOY, KUBECTL, by_kind, flag, kustomize_supports_components, render, render_path

COMPONENT = os.path.join(DEPLOY, "kubernetes", "components", "rook-model-store")
OBJECT_STORE = os.path.join(DEPLOY, "kubernetes", "rook-object-store")
# What Rook's bucket provisioner puts in the claim's ConfigMap and Secret
# (both named like the ObjectBucketClaim, in its namespace).
ROOK_CONFIG_MAP_KEYS = {"BUCKET_HOST", "BUCKET_PORT", "BUCKET_NAME", "BUCKET_REGION", "BUCKET_SUBREGION"}
ROOK_SECRET_KEYS = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
REPOSITORY = re.compile(r"s3://http://\$\(BUCKET_HOST\):\$\(BUCKET_PORT\)/\$\(BUCKET_NAME\)/([A-Za-z0-9._/-]+)")


def components_skip():
    if KUBECTL is None:
        return "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)"
    ok, why = kustomize_supports_components()
    return None if ok else why


@unittest.skipIf(components_skip(), components_skip())
class RookModelStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = render("rook")
        cls.dep = by_kind(cls.docs, "Deployment", "inferd")
        cls.pod = cls.dep["spec"]["template"]["spec"]
        cls.container = cls.pod["containers"][0]
        cls.claim = by_kind(cls.docs, "ObjectBucketClaim")

    def test_claim_and_storage_class(self):
        self.assertEqual(self.claim["apiVersion"], "objectbucket.io/v1alpha1")
        self.assertEqual(self.claim["metadata"]["namespace"], "inferd")
        sc = by_kind(self.docs, "StorageClass", self.claim["spec"]["storageClassName"])
        self.assertNotIn("namespace", sc["metadata"], "StorageClass is cluster-scoped")
        self.assertRegex(sc["provisioner"], r"^[a-z0-9-]+\.ceph\.rook\.io/bucket$")
        self.assertEqual(sc["reclaimPolicy"], "Retain", "deleting the claim keeps the models")
        self.assertTrue(self.claim["spec"].get("generateBucketName") or self.claim["spec"].get("bucketName"))
        # The store the class names is the one rook-object-store makes (when used).
        store = by_kind(render_path(OBJECT_STORE), "CephObjectStore")
        self.assertEqual(store["apiVersion"], "ceph.rook.io/v1")
        self.assertEqual(sc["parameters"]["objectStoreName"], store["metadata"]["name"])
        self.assertEqual(sc["parameters"]["objectStoreNamespace"], store["metadata"]["namespace"])
        self.assertTrue(store["spec"]["preservePoolsOnDelete"])
        self.assertGreaterEqual(store["spec"]["gateway"]["instances"], 2)
        # The store is not part of the inferd overlay (it lives in Rook's namespace).
        self.assertNotIn("CephObjectStore", {d["kind"] for d in self.docs})

    def test_environment_only_from_the_claim(self):
        name = self.claim["metadata"]["name"]
        self.assertEqual(self.container.get("envFrom"),
                         [{"configMapRef": {"name": name}}, {"secretRef": {"name": name}}])
        self.assertEqual(self.container.get("env", []), [], "no variable but the claim's")
        # No ConfigMap or Secret of that name in the manifests: Rook makes them.
        for d in self.docs:
            self.assertFalse(d["kind"] in ("ConfigMap", "Secret") and d["metadata"]["name"] == name)

    def test_args_reference_exactly_the_claims_variables(self):
        args = self.container["args"]
        refs = kube_env.references(args + self.container.get("command", []))
        self.assertEqual(refs, {"BUCKET_HOST", "BUCKET_PORT", "BUCKET_NAME"})
        self.assertTrue(refs <= ROOK_CONFIG_MAP_KEYS)
        # Keys never on the command line (visible in every process listing).
        self.assertFalse(refs & ROOK_SECRET_KEYS)
        self.assertRegex(flag(args, "model-repository"), REPOSITORY)
        self.assertEqual(flag(args, "model-control-mode"), "poll")
        self.assertGreater(int(flag(args, "repository-poll-secs")), 0)
        # With the claim's values the args are complete (nothing left unexpanded).
        env = kube_env.container_environment(
            self.container,
            {self.claim["metadata"]["name"]: {k: "x" for k in ROOK_CONFIG_MAP_KEYS}},
            {self.claim["metadata"]["name"]: {k: "y" for k in ROOK_SECRET_KEYS}})
        _, expanded = kube_env.expand_args(self.container, env)
        self.assertFalse([a for a in expanded if "$(" in a], expanded)
        self.assertEqual(set(env), ROOK_CONFIG_MAP_KEYS | ROOK_SECRET_KEYS)

    def test_every_base_flag_kept_once(self):
        with open(os.path.join(DEPLOY, "kubernetes", "base", "deployment.yaml")) as f:
            base = yaml.safe_load(f)["spec"]["template"]["spec"]["containers"][0]["args"]
        names = [a.split("=", 1)[0] for a in self.container["args"]]
        self.assertEqual(len(names), len(set(names)), "a flag given twice")
        for a in base:
            self.assertIn(a.split("=", 1)[0], names)
        cpu = self.container_of(render("cpu"))
        changed = {"--model-repository", "--model-control-mode"}
        for a in cpu["args"]:
            if a.split("=", 1)[0] not in changed:
                self.assertIn(a, self.container["args"])

    @staticmethod
    def container_of(docs):
        return by_kind(docs, "Deployment", "inferd")["spec"]["template"]["spec"]["containers"][0]

    def test_no_shared_volume_and_a_cache(self):
        kinds = {d["kind"] for d in self.docs}
        self.assertNotIn("PersistentVolumeClaim", kinds)
        vols = {v["name"]: v for v in self.pod["volumes"]}
        self.assertNotIn("model-repository", vols)
        for v in vols.values():
            self.assertNotIn("persistentVolumeClaim", v)
        mounts = {m["name"]: m for m in self.container["volumeMounts"]}
        self.assertNotIn("model-repository", mounts)
        self.assertEqual(mounts["model-cache"]["mountPath"], flag(self.container["args"], "model-cache-dir"))
        self.assertIn("sizeLimit", vols["model-cache"]["emptyDir"])
        self.assertIn("tmp", mounts, "the base's other mounts stay")

    def test_patch_tests_before_it_replaces(self):
        """Every replaced arg is tested first, so a changed base fails the build."""
        with open(os.path.join(COMPONENT, "args.yaml")) as f:
            ops = yaml.safe_load(f)
        tested = set()
        for op in ops:
            if op["op"] == "test":
                tested.add(op["path"])
            elif op["op"] in ("replace", "remove"):
                self.assertIn(op["path"], tested, "%s %s without a test" % (op["op"], op["path"]))
        self.assertIn("/spec/template/spec/containers/0/name", tested)
        with open(os.path.join(COMPONENT, "kustomization.yaml")) as f:
            k = yaml.safe_load(f)
        self.assertEqual(k["kind"], "Component")
        self.assertEqual(k["apiVersion"], "kustomize.config.k8s.io/v1alpha1")


class KubeletExpansionTest(unittest.TestCase):
    """kube_env.expand against the rules of Kubernetes' expansion package."""

    def test_rules(self):
        env = {"A": "1", "B": "two", "EMPTY": ""}
        cases = [
            ("$(A)", "1"), ("x$(A)y$(B)z", "x1ytwoz"), ("$(EMPTY)", ""),
            ("$(UNDEFINED)", "$(UNDEFINED)"),               # undefined: kept
            ("$$(A)", "$(A)"), ("$$$(A)", "$1"),            # escaped
            ("$$", "$"), ("a$$b", "a$b"), ("$", "$"), ("a$", "a$"),
            ("$(A", "$(A"), ("$A", "$A"), ("$(A)$(A)", "11"), ("$()", "$()"),
            ("s3://http://$(A):$(B)/x", "s3://http://1:two/x"),
        ]
        for text, want in cases:
            self.assertEqual(kube_env.expand(text, env), want, text)

    def test_env_from_then_env(self):
        c = {"envFrom": [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}, "prefix": "S_"},
                         {"configMapRef": {"name": "gone", "optional": True}}],
             "env": [{"name": "URL", "value": "http://$(HOST):$(PORT)"}, {"name": "HOST", "value": "over"}],
             "args": ["--u=$(URL)", "--h=$(HOST)", "--k=$(S_KEY)", "--bad-key-skipped=$(1X)"]}
        env = kube_env.container_environment(c, {"cm": {"HOST": "h", "PORT": "80", "1X": "no"}}, {"s": {"KEY": "k"}})
        self.assertEqual(env, {"HOST": "over", "PORT": "80", "S_KEY": "k", "URL": "http://h:80"})
        self.assertEqual(kube_env.expand_args(c, env)[1], ["--u=http://h:80", "--h=over", "--k=k", "--bad-key-skipped=$(1X)"])
        with self.assertRaises(KeyError):
            kube_env.container_environment({"envFrom": [{"secretRef": {"name": "missing"}}]})
        self.assertEqual(kube_env.references(["$(A)-$$(B)-$(C"]), {"A"})
