"""Checks of deploy/kubernetes/batcher (infer-batcher near the clients, in front
of the inferd Service; docs/batcher.md): what it renders to, checked against
the program's own flags, the image build and the inferd objects it points at.
Run by test_deploy_configs.py, which imports the class."""

import os
import re
import subprocess
import unittest

from deploy_render import DEPLOY, KUBECTL, by_kind, flag, host_port, pod_selected, render, render_path

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCHER_BIN = os.environ.get("INFER_BATCHER_BIN", os.path.join(REPO, "build", "bin", "infer-batcher"))


@unittest.skipIf(KUBECTL is None, "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)")
class BatcherManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = render_path(os.path.join(DEPLOY, "kubernetes", "batcher"))
        cls.deployment = by_kind(cls.docs, "Deployment", "infer-batcher")
        cls.pod = cls.deployment["spec"]["template"]
        cls.container = cls.pod["spec"]["containers"][0]
        cls.args = cls.container["args"]

    def test_only_the_batcher_objects(self):
        self.assertEqual(sorted((d["kind"], d["metadata"]["name"]) for d in self.docs),
                         [("Deployment", "infer-batcher"), ("Service", "infer-batcher")])
        for d in self.docs:
            self.assertEqual(d["metadata"]["labels"]["app.kubernetes.io/part-of"], "inferd")

    def test_every_flag_is_one_the_program_takes(self):
        if not os.access(BATCHER_BIN, os.X_OK):
            self.skipTest("infer-batcher not built at %s" % BATCHER_BIN)
        usage = subprocess.run([BATCHER_BIN, "--help"], capture_output=True, text=True,
                               timeout=10).stdout
        self.assertEqual(self.container["command"], ["/opt/inferd/bin/infer-batcher"])
        for a in self.args:
            name = a.split("=", 1)[0]
            self.assertRegex(a, r"^--[a-z-]+=\S+$")
            self.assertRegex(usage, r"(?m)^  %s\b" % re.escape(name), a)

    def test_upstream_is_the_inferd_services_grpc_port(self):
        host, port = host_port(flag(self.args, "upstream"))
        m = re.fullmatch(r"([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local", host)
        self.assertIsNotNone(m, host)
        service_name, namespace = m.groups()
        cpu = render("cpu")
        service = by_kind(cpu, "Service", service_name)
        self.assertEqual(service["metadata"]["namespace"], namespace)
        grpc = [p for p in service["spec"]["ports"] if p["port"] == port]
        self.assertEqual([p["name"] for p in grpc], ["grpc"], service["spec"]["ports"])

    def test_service_ports_and_selector(self):
        service = by_kind(self.docs, "Service", "infer-batcher")
        self.assertTrue(pod_selected(service["spec"]["selector"], self.pod["metadata"]["labels"]))
        self.assertTrue(pod_selected(self.deployment["spec"]["selector"]["matchLabels"],
                                     self.pod["metadata"]["labels"]))
        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        self.assertEqual(ports, {"http": int(flag(self.args, "http-port")),
                                 "grpc": int(flag(self.args, "grpc-port"))})
        # The clients change only the host: inferd's port numbers and protocols.
        self.assertEqual({(p["name"], p["port"], p["targetPort"], p["appProtocol"])
                          for p in service["spec"]["ports"]},
                         {("http", 8000, "http", "http"), ("grpc", 8001, "grpc", "grpc")})
        annotations = self.pod["metadata"]["annotations"]
        self.assertEqual(int(annotations["prometheus.io/port"]), ports["http"])

    def test_probes_shutdown_and_resources(self):
        c = self.container
        self.assertEqual((c["readinessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["port"]),
                         ("/v2/health/ready", "http"))
        self.assertEqual((c["livenessProbe"]["httpGet"]["path"], c["livenessProbe"]["httpGet"]["port"]),
                         ("/v2/health/live", "http"))
        pre_stop = c["lifecycle"]["preStop"]["exec"]["command"]
        self.assertEqual(pre_stop[0], "sleep")
        needed = (int(pre_stop[1]) + int(flag(self.args, "drain-delay-secs"))
                  + int(flag(self.args, "exit-timeout-secs")))
        self.assertGreater(self.pod["spec"]["terminationGracePeriodSeconds"], needed)
        self.assertEqual(c["resources"]["requests"], c["resources"]["limits"])  # Guaranteed
        security = self.pod["spec"]["securityContext"]
        self.assertTrue(security["runAsNonRoot"])
        self.assertEqual(security["runAsUser"], 10001)
        self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])

    def test_the_image_is_one_make_image_builds(self):
        self.assertEqual(self.container["image"], "infer-batcher")
        with open(os.path.join(REPO, "scripts", "build-images.sh")) as f:
            self.assertRegex(f.read(), r"(?m)^image infer-batcher ")
