"""Checks of deploy/kubernetes/overlays/reference, the reference deployment
that docs/operations.md walks: the Rook model store and the middleman
components composed on the cpu overlay, with CPU pinning, and deploy/istio
pointing at what it renders. Run by test_deploy_configs.py, which imports the
class. Each component has its own checks (rook_checks.py,
middleman_component_checks.py); these check that they compose."""

import os
import unittest

import yaml

from deploy_render import DEPLOY, KUBECTL, by_kind, flag, kustomize_supports_components, render, render_path

COMPONENTS_OK, COMPONENTS_WHY = (kustomize_supports_components() if KUBECTL
                                 else (False, "kubectl not installed"))


def flags_named(args, name):
    return [a for a in args if a == "--" + name or a.startswith("--%s=" % name)]


@unittest.skipUnless(COMPONENTS_OK, COMPONENTS_WHY)
class ReferenceOverlayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = render("reference")
        cls.dep = by_kind(cls.docs, "Deployment", "inferd")
        cls.pod = cls.dep["spec"]["template"]["spec"]
        cls.containers = {c["name"]: c for c in cls.pod["containers"]}
        cls.istio = render_path(os.path.join(DEPLOY, "istio"))

    def test_inferd_and_the_gateway_share_the_pod(self):
        self.assertEqual([c["name"] for c in self.pod["containers"]], ["inferd", "infer-gateway"])
        # The image with the image and pytorch backends, which the pipelines need.
        self.assertEqual(self.containers["inferd"]["image"], "registry.example.com/inferd-full:0.1.0")
        self.assertEqual(self.containers["infer-gateway"]["image"],
                         "registry.example.com/infer-gateway:0.1.0")
        # The programs are where the images (scripts/build-images.sh) put them.
        gateway = self.containers["infer-gateway"]
        self.assertIn("/opt/inferd/bin/infer-gateway", " ".join(gateway.get("command", [])))

    def test_inferd_flags_from_every_piece_once(self):
        args = self.containers["inferd"]["args"]
        base = yaml.safe_load(open(os.path.join(DEPLOY, "kubernetes", "base", "deployment.yaml")))
        for a in base["spec"]["template"]["spec"]["containers"][0]["args"]:
            name = a[2:].split("=", 1)[0]
            self.assertEqual(len(flags_named(args, name)), 1, (name, args))
        # The bucket (rook), shared memory (middleman), pinning (this overlay).
        self.assertTrue(flag(args, "model-repository").startswith(
            "s3://http://$(BUCKET_HOST):$(BUCKET_PORT)/$(BUCKET_NAME)/"), args)
        self.assertEqual(flag(args, "model-control-mode"), "poll")
        self.assertEqual(flags_named(args, "allow-client-shm"), ["--allow-client-shm=true"])
        self.assertEqual(flags_named(args, "cpu-set"), ["--cpu-set=auto"])

    def test_no_shared_volume_and_a_memory_dev_shm(self):
        kinds = {d["kind"] for d in self.docs}
        self.assertNotIn("PersistentVolumeClaim", kinds)
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        self.assertNotIn("model-repository", volumes)
        shm = [v for v in volumes.values() if v.get("emptyDir", {}).get("medium") == "Memory"]
        self.assertEqual(len(shm), 1, volumes)
        for c in self.containers.values():
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            self.assertEqual(mounts.get("/dev/shm"), shm[0]["name"], c["name"])
        self.assertIn("/tmp", {m["mountPath"] for m in self.containers["inferd"]["volumeMounts"]})

    def test_guaranteed_with_whole_cpus(self):
        for c in self.containers.values():
            res = c["resources"]
            self.assertEqual(res["requests"], res["limits"], c["name"])
            self.assertEqual(str(res["limits"]["cpu"]), str(int(str(res["limits"]["cpu"]))), c["name"])

    def test_istio_routes_the_rendered_service(self):
        service = by_kind(self.docs, "Service", "inferd")
        ports = {p["port"] for p in service["spec"]["ports"]}
        host = "inferd.inferd.svc.cluster.local"
        rule = by_kind(self.istio, "DestinationRule")
        self.assertEqual(rule["spec"]["host"], host)
        vs = by_kind(self.istio, "VirtualService")
        for route in vs["spec"].get("http", []):
            for dest in route.get("route", []):
                self.assertEqual(dest["destination"]["host"], host)
                if "port" in dest["destination"]:
                    self.assertIn(dest["destination"]["port"]["number"], ports)
        peer = by_kind(self.istio, "PeerAuthentication")
        labels = self.dep["spec"]["template"]["metadata"]["labels"]
        for k, v in peer["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(labels.get(k), v, k)
