"""Checks of deploy/kubernetes/components/middleman (infer-gateway in the inferd
pod, sharing /dev/shm) through its example overlay (overlays/middleman) and
combined with the gpu and s3-repository overlays. Run by
test_deploy_configs.py, which imports the class; the two-process test of the
same pod is test_middleman_pod.py.

Skipped, with the reason, when kubectl's kustomize cannot render components
(kustomize < v3.7, e.g. Debian 12's kubernetes-client 1.20)."""

import os
import re
import shutil
import tempfile
import unittest

import yaml

from deploy_render import (DEPLOY, KUBECTL, REPO_ROOT, by_kind, flag, kustomize_supports_components,
                           render, render_path)

COMPONENTS_OK, COMPONENTS_WHY = kustomize_supports_components() if KUBECTL else (False, "")
GATEWAY_DRAIN_S = 5      # middleman::Service::Stop's default drain (src/middleman/service.h)
SHM_FLAG = "--allow-client-shm=true"
KEY_VAR = "INFERD_SHM_API_KEY"
RESTRICTIONS = ["--grpc-restricted-protocol=shared-memory:shm-key=$(%s)" % KEY_VAR,
                "--http-restricted-api=shared-memory:shm-key=$(%s)" % KEY_VAR]


def quantity_bytes(q):
    """A Kubernetes memory quantity ('80Mi', '1G', '512') in bytes."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTE]i?)?", str(q))
    if not m:
        raise AssertionError("not a memory quantity: %r" % q)
    unit = m.group(2) or ""
    base = 1024 if unit.endswith("i") else 1000
    power = " KMGTE".index(unit[:1]) if unit else 0
    return float(m.group(1)) * base ** power


def gateway_flag(args, name):
    """The value after `--name` (infer-gateway takes `--flag value`)."""
    for i, a in enumerate(args[:-1]):
        if a == "--" + name:
            return args[i + 1]
    return None


def prestop_seconds(container):
    hook = container.get("lifecycle", {}).get("preStop")
    if not hook:
        return 0.0
    if "sleep" in hook:          # Kubernetes' native sleep action
        return float(hook["sleep"]["seconds"])
    cmd = hook["exec"]["command"]
    assert cmd[0] == "sleep", cmd
    return float(cmd[-1])


def pod_of(docs):
    dep = by_kind(docs, "Deployment", "inferd")
    spec = dep["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    return dep, spec, containers


def base_inferd_args():
    with open(os.path.join(DEPLOY, "kubernetes", "base", "deployment.yaml")) as f:
        return yaml.safe_load(f)["spec"]["template"]["spec"]["containers"][0]["args"]


def render_with_component(overlay):
    """`overlay` plus the component, through a temporary kustomization that
    sits beside the real ones (kustomize reads nothing outside the tree it
    renders, so the whole deploy/kubernetes tree is copied)."""
    tmp = tempfile.mkdtemp(prefix="inferd-mm-combo-")
    try:
        tree = os.path.join(tmp, "kubernetes")
        shutil.copytree(os.path.join(DEPLOY, "kubernetes"), tree)
        combo = os.path.join(tree, "combo")
        os.makedirs(combo)
        with open(os.path.join(combo, "kustomization.yaml"), "w") as f:
            yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                            "resources": ["../overlays/" + overlay],
                            "components": ["../components/middleman"],
                            "images": [{"name": "infer-gateway", "newName": "example/infer-gateway",
                                        "newTag": "t"}]}, f)
        return render_path(combo)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@unittest.skipIf(KUBECTL is None, "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)")
@unittest.skipUnless(COMPONENTS_OK, COMPONENTS_WHY)
class MiddlemanComponentTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = render("middleman")
        cls.combined = {o: render_with_component(o) for o in ("gpu", "s3-repository")}
        cls.plain = {o: render(o) for o in ("cpu", "gpu", "s3-repository")}

    def all_pods(self):
        """(name, docs) of every rendering that includes the component."""
        return [("middleman", self.docs)] + sorted(self.combined.items())

    def test_both_containers_share_a_memory_emptydir_at_dev_shm(self):
        for name, docs in self.all_pods():
            _, spec, cs = pod_of(docs)
            self.assertEqual(sorted(cs), ["infer-gateway", "inferd"], name)
            mounted = set()
            for c in cs.values():
                at = [m for m in c["volumeMounts"] if m["mountPath"] == "/dev/shm"]
                self.assertEqual(len(at), 1, "%s: %s mounts /dev/shm once" % (name, c["name"]))
                self.assertFalse(at[0].get("readOnly", False), "%s: both write /dev/shm" % name)
                mounted.add(at[0]["name"])
            self.assertEqual(len(mounted), 1, "%s: the same volume in both containers" % name)
            vol = {v["name"]: v for v in spec["volumes"]}[mounted.pop()]
            self.assertEqual(vol["emptyDir"]["medium"], "Memory", name)
            limit = quantity_bytes(vol["emptyDir"]["sizeLimit"])
            args = cs["infer-gateway"]["args"]
            self.assertEqual(gateway_flag(args, "shared-memory"), "system", name)
            slots = int(gateway_flag(args, "shm-slots") or 16)
            slot_bytes = int(gateway_flag(args, "shm-slot-bytes") or 1 << 20)
            self.assertGreaterEqual(slot_bytes, 3 * 224 * 224 * 4, "a slot holds a resnet50 input")
            self.assertGreaterEqual(limit, slots * slot_bytes,
                                    "%s: /dev/shm %s < %d slots x %d bytes"
                                    % (name, vol["emptyDir"]["sizeLimit"], slots, slot_bytes))
            # The slots' pages are charged to the gateway, which touches them first.
            self.assertLess(slots * slot_bytes,
                            quantity_bytes(cs["infer-gateway"]["resources"]["limits"]["memory"]))

    def test_gateway_dials_inferds_grpc_port_on_loopback(self):
        for name, docs in self.all_pods():
            _, _, cs = pod_of(docs)
            grpc_port = {p["name"]: p["containerPort"] for p in cs["inferd"]["ports"]}["grpc"]
            self.assertEqual(flag(cs["inferd"]["args"], "grpc-port"), str(grpc_port), name)
            self.assertEqual(gateway_flag(cs["infer-gateway"]["args"], "inferd-url"),
                             "127.0.0.1:%d" % grpc_port, name)

    def test_inferd_args_are_the_overlays_plus_the_flag_once(self):
        plain_args = {o: pod_of(d)[2]["inferd"]["args"] for o, d in self.plain.items()}
        for name, docs in self.all_pods():
            args = pod_of(docs)[2]["inferd"]["args"]
            self.assertEqual(args.count(SHM_FLAG), 1, name)
            self.assertEqual([a for a in args if a.startswith("--allow-client-shm")], [SHM_FLAG], name)
            under = "cpu" if name == "middleman" else name
            # Nothing of the overlay's list lost, reordered or changed.
            self.assertEqual(args, plain_args[under] + [SHM_FLAG] + RESTRICTIONS, name)
        base_names = {a.split("=", 1)[0] for a in base_inferd_args()}
        names = {a.split("=", 1)[0] for a in pod_of(self.docs)[2]["inferd"]["args"]}
        self.assertLessEqual(base_names, names)

    def test_shared_memory_api_needs_the_gateways_key(self):
        for name, docs in self.all_pods():
            cs = pod_of(docs)[2]
            refs = {}
            for c in cs.values():
                env = {e["name"]: e for e in c.get("env", [])}
                self.assertIn(KEY_VAR, env, "%s: %s" % (name, c["name"]))
                refs[c["name"]] = env[KEY_VAR]["valueFrom"]["secretKeyRef"]
                # Never in a ConfigMap or the manifests: a Secret the operator creates.
                self.assertNotIn("value", env[KEY_VAR])
            self.assertEqual(refs["inferd"], refs["infer-gateway"], name)
            self.assertFalse([d for d in docs if d["kind"] == "Secret"], name)
            args = cs["inferd"]["args"]
            restricted = {}
            for a in args:
                m = re.match(r"--(grpc-restricted-protocol|http-restricted-api)=([^:]+):([^=]+)=(.*)$", a)
                if m:
                    self.assertNotIn(m.group(1), restricted, "%s: one restriction per front end" % name)
                    self.assertIn("shared-memory", m.group(2).split(","), a)
                    restricted[m.group(1)] = (m.group(3), m.group(4))
            self.assertEqual(set(restricted), {"grpc-restricted-protocol", "http-restricted-api"}, name)
            key, value = restricted["grpc-restricted-protocol"]
            self.assertEqual(value, "$(%s)" % KEY_VAR)
            # The gateway sends exactly that metadata (inferd wants
            # triton-grpc-protocol-<key> on gRPC) with the same value.
            headers = [cs["infer-gateway"]["args"][i + 1] for i, a in enumerate(cs["infer-gateway"]["args"])
                       if a == "--inferd-header"]
            self.assertIn("triton-grpc-protocol-%s: $(%s)" % (key, KEY_VAR), headers, name)

    def test_the_overlays_own_settings_survive(self):
        gpu = pod_of(self.combined["gpu"])[2]["inferd"]
        self.assertEqual(str(gpu["resources"]["limits"].get("nvidia.com/gpu")), "1")
        s3 = pod_of(self.combined["s3-repository"])
        self.assertIn({"secretRef": {"name": "inferd-s3-credentials"}}, s3[2]["inferd"].get("envFrom", []))
        vols = {v["name"] for v in s3[1]["volumes"]}
        self.assertIn("model-cache", vols)
        self.assertNotIn("model-repository", vols)
        for name, docs in self.all_pods():
            self.assertEqual(pod_of(docs)[2]["infer-gateway"]["image"].split(":")[0].rsplit("/", 1)[-1],
                             "infer-gateway", name)
        self.assertEqual(pod_of(self.docs)[2]["infer-gateway"]["image"],
                         "registry.example.com/infer-gateway:0.1.0")

    def test_probes_target_existing_ports_and_gateway_routes(self):
        with open(os.path.join(REPO_ROOT, "src", "middleman", "service.cc")) as f:
            routes = set(re.findall(r'Route\("GET", "([^"]+)"', f.read()))
        for name, docs in self.all_pods():
            cs = pod_of(docs)[2]
            ports = {}
            for c in cs.values():
                for p in c["ports"]:
                    self.assertNotIn(p["name"], ports, "%s: port names are unique in a pod" % name)
                    ports[p["name"]] = (c["name"], p["containerPort"])
            g = cs["infer-gateway"]
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                get = g[probe]["httpGet"]
                self.assertEqual(ports[get["port"]][0], "infer-gateway", (name, probe))
                self.assertIn(get["path"], routes, (name, probe))
            self.assertEqual(g["readinessProbe"]["httpGet"]["path"], "/health/ready")
            self.assertEqual(g["livenessProbe"]["httpGet"]["path"], "/health/live")
            gw_ports = {p["name"]: p["containerPort"] for p in g["ports"]}
            self.assertEqual(gateway_flag(g["args"], "http-port"), str(gw_ports["http-gateway"]))
            self.assertEqual(gateway_flag(g["args"], "grpc-port"), str(gw_ports["grpc-gateway"]))

    def test_services_expose_the_gateway_with_protocol_names(self):
        _, _, cs = pod_of(self.docs)
        port_names = {p["name"] for c in cs.values() for p in c["ports"]}
        for svc_name in ("inferd", "inferd-headless"):
            svc = by_kind(self.docs, "Service", svc_name)
            ports = {p["name"]: p for p in svc["spec"]["ports"]}
            self.assertEqual(ports["http-gateway"]["port"], 8080, svc_name)
            self.assertEqual(ports["grpc-gateway"]["port"], 8081, svc_name)
            self.assertLessEqual({"http", "grpc", "metrics"}, set(ports), "inferd's ports stay")
            for p in ports.values():
                self.assertIn(p["targetPort"], port_names, (svc_name, p))
                self.assertRegex(p["name"], r"^(http|grpc)(-|$)|^metrics$")

    def test_guaranteed_qos_for_both_containers(self):
        for name, docs in self.all_pods():
            for c in pod_of(docs)[2].values():
                req, lim = c["resources"]["requests"], c["resources"]["limits"]
                self.assertEqual(req, lim, "%s: %s requests = limits" % (name, c["name"]))
                self.assertRegex(str(lim["cpu"]), r"^[1-9][0-9]*$", "%s: whole CPUs" % c["name"])
                self.assertIn("memory", lim)
            self.assertNotIn("nvidia.com/gpu", pod_of(docs)[2]["infer-gateway"]["resources"]["limits"])

    def test_security_context_like_inferds(self):
        for name, docs in self.all_pods():
            _, spec, cs = pod_of(docs)
            self.assertTrue(spec["securityContext"]["runAsNonRoot"])
            self.assertEqual(spec["securityContext"]["runAsUser"], 10001)
            for c in cs.values():
                sc = c["securityContext"]
                self.assertFalse(sc["allowPrivilegeEscalation"], c["name"])
                self.assertTrue(sc["readOnlyRootFilesystem"], c["name"])
                self.assertEqual(sc["capabilities"]["drop"], ["ALL"], c["name"])

    def test_shutdown_order(self):
        for name, docs in self.all_pods():
            _, spec, cs = pod_of(docs)
            inferd, gw = cs["inferd"], cs["infer-gateway"]
            drain = float(flag(inferd["args"], "drain-delay-secs") or 0)
            exit_timeout = float(flag(inferd["args"], "exit-timeout-secs") or 30)
            inferd_hook, gw_hook = prestop_seconds(inferd), prestop_seconds(gw)
            # inferd accepts new calls until its hook + drain delay; the
            # gateway's last calls start before its hook + its own drain.
            self.assertLessEqual(gw_hook + GATEWAY_DRAIN_S, inferd_hook + drain, name)
            self.assertGreater(gw_hook, 0, "%s: the gateway serves while endpoints drop the pod" % name)
            self.assertGreaterEqual(spec["terminationGracePeriodSeconds"],
                                    inferd_hook + drain + exit_timeout + 5, name)

    def test_gateway_command_runs_the_gateway_with_its_args(self):
        g = pod_of(self.docs)[2]["infer-gateway"]
        cmd = g["command"]
        self.assertEqual(cmd[:2], ["/bin/sh", "-c"])
        # Only the pool's own objects are removed, then the binary replaces
        # the shell (pid 1 gets SIGTERM) and receives the args.
        self.assertRegex(cmd[2], r'^rm -f /dev/shm/inferd-mm-\*; exec /\S+/infer-gateway "\$@"$')
        self.assertEqual(len(cmd), 4)
