#!/usr/bin/python3
"""Checks the deployment files in deploy/ without a cluster.

- The Kubernetes overlays (cpu, gpu, s3-repository, discovery) render with `kubectl kustomize` (offline), and the
  rendered objects have what docs/operations.md promises: probes on the
  health endpoints, a startup probe long enough for model loading, Guaranteed
  QoS with whole CPUs, a GPU only in the gpu overlay, a grace period that
  covers drain delay + exit timeout, maxUnavailable 0, Services for HTTP,
  gRPC and metrics, a headless Service, the HPA on the queue-time metric,
  a PodDisruptionBudget and the model repository volume (s3-repository: the
  bucket URL, credentials from a Secret only, the cache on an emptyDir).
- The discovery overlay (inferd-discovery, Envoy over ADS, infer-gateway over
  xDS) holds together: RBAC is exactly get/list/watch on EndpointSlices in the
  namespace; the discovery flags name a Service and port that exist and select
  the inferd pods; the discovery Service exposes the flags' ports; Envoy's
  bootstrap (deploy/envoy/envoy-ads.yaml) and the gRPC bootstrap point at that
  Service with ADS/V3 over HTTP/2 (insecure for gRPC); the gateway dials
  xds:///<fleet name>.
- The timeouts agree across files: the balancers' upstream idle timeouts
  (nginx, Envoy) are below the server's --http-idle-timeout-secs.
- deploy/nginx/nginx.conf (with a rendered upstreams.conf) passes `nginx -t`.
- deploy/envoy/envoy.yaml parses and retries only what is safe (Envoy itself
  is not packaged in Debian 12 and is not run here).

Needs kubectl (Debian's kubernetes-client or any other), nginx and
python3-yaml (scripts/install-deps.sh). KUBECTL overrides the kubectl used.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nginx_local  # noqa: E402
from deploy_render import DEPLOY, KUBECTL, by_kind, flag, render  # noqa: E402
# The discovery overlay's checks live in their own file; importing the class
# runs them with the rest.
from discovery_overlay_checks import DiscoveryOverlayTest  # noqa: E402,F401
# deploy/istio and the Istio protocol of every Service port (istio_checks.py).
from istio_checks import IstioManifestTest, ServicePortProtocolTest  # noqa: E402,F401
# The Rook model store component and the kubelet's $(VAR) expansion (rook_checks.py).
from rook_checks import KubeletExpansionTest, RookModelStoreTest  # noqa: E402,F401
# The kubelet fragment (deploy/kubernetes/kubelet/) and the gpu overlay's --cpu-set.
from kubelet_checks import GpuOverlayAffinityTest, KubeletConfigTest  # noqa: E402,F401
# The middleman component (infer-gateway in the inferd pod, middleman_component_checks.py).
from middleman_component_checks import MiddlemanComponentTest  # noqa: E402,F401
# The reference deployment: both components composed (reference_overlay_checks.py).
from reference_overlay_checks import ReferenceOverlayTest  # noqa: E402,F401
# infer-batcher's own manifests (batcher_manifest_checks.py).
from batcher_manifest_checks import BatcherManifestTest  # noqa: E402,F401

# The imported check classes, named so that pyflakes sees them used (unittest
# finds them in this module's namespace).
IMPORTED_CHECKS = (DiscoveryOverlayTest, IstioManifestTest, ServicePortProtocolTest, KubeletExpansionTest,
                   RookModelStoreTest, GpuOverlayAffinityTest, KubeletConfigTest, MiddlemanComponentTest,
                   ReferenceOverlayTest, BatcherManifestTest)

QUEUE_METRIC = "inferd:queue_time_per_request_us"


def seconds(text):
    """'30s', '1m', '30' -> seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", str(text).strip())
    if not m:
        raise AssertionError("not a duration: %r" % text)
    v = float(m.group(1))
    return v * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def server_idle_timeout():
    """The server's keep-alive idle timeout as the base Deployment sets it."""
    with open(os.path.join(DEPLOY, "kubernetes", "base", "deployment.yaml")) as f:
        dep = yaml.safe_load(f)
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    return float(flag(args, "http-idle-timeout-secs") or 60)


@unittest.skipIf(KUBECTL is None, "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)")
class KustomizeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The discovery overlay is the cpu overlay plus the xDS pieces: every
        # check of the inferd objects holds for it too (DiscoveryOverlayTest
        # checks the rest).
        cls.rendered = {o: render(o) for o in ("cpu", "gpu", "s3-repository", "discovery")}

    def container(self, docs):
        dep = by_kind(docs, "Deployment", "inferd")
        return dep, dep["spec"]["template"]["spec"]["containers"][0]

    def test_every_object_in_namespace_and_labelled(self):
        for overlay, docs in self.rendered.items():
            for d in docs:
                self.assertEqual(d["metadata"].get("namespace"), "inferd", (overlay, d["kind"]))
                self.assertEqual(d["metadata"]["labels"]["app.kubernetes.io/name"], "inferd")

    def test_probes(self):
        for overlay, docs in self.rendered.items():
            _, c = self.container(docs)
            self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/v2/health/ready", overlay)
            self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/v2/health/live", overlay)
            sp = c["startupProbe"]
            self.assertIn(sp["httpGet"]["path"], ("/v2/health/live", "/v2/health/ready"))
            budget = sp["periodSeconds"] * sp["failureThreshold"]
            self.assertGreaterEqual(budget, 600, "%s: startup probe allows %d s for loading" % (overlay, budget))
            for p in ("readinessProbe", "livenessProbe", "startupProbe"):
                self.assertEqual(c[p]["httpGet"]["port"], "http")
        gpu = self.container(self.rendered["gpu"])[1]["startupProbe"]
        cpu = self.container(self.rendered["cpu"])[1]["startupProbe"]
        self.assertGreater(gpu["failureThreshold"] * gpu["periodSeconds"],
                           cpu["failureThreshold"] * cpu["periodSeconds"])

    def test_guaranteed_qos_whole_cpus_and_gpu_only_in_gpu_overlay(self):
        for overlay, docs in self.rendered.items():
            _, c = self.container(docs)
            req, lim = c["resources"]["requests"], c["resources"]["limits"]
            self.assertEqual(req, lim, "%s: requests must equal limits (Guaranteed QoS)" % overlay)
            self.assertRegex(str(lim["cpu"]), r"^[1-9][0-9]*$", "%s: whole CPUs for pinning" % overlay)
            self.assertIn("memory", lim)
            if overlay == "gpu":
                self.assertEqual(str(lim.get("nvidia.com/gpu")), "1")
            else:
                self.assertNotIn("nvidia.com/gpu", lim)
        cpu_lim = self.container(self.rendered["cpu"])[1]["resources"]["limits"]
        self.assertEqual(str(cpu_lim["cpu"]), "4")
        gpu_pod = by_kind(self.rendered["gpu"], "Deployment")["spec"]["template"]["spec"]
        self.assertTrue(any(t.get("key") == "nvidia.com/gpu" for t in gpu_pod.get("tolerations", [])))

    def test_shutdown_timing(self):
        for overlay, docs in self.rendered.items():
            dep, c = self.container(docs)
            pod = dep["spec"]["template"]["spec"]
            drain = float(flag(c["args"], "drain-delay-secs") or 0)
            exit_timeout = float(flag(c["args"], "exit-timeout-secs") or 30)
            prestop = 0.0
            hook = c.get("lifecycle", {}).get("preStop")
            if hook:
                cmd = hook.get("exec", {}).get("command", [])
                self.assertTrue(cmd and "sleep" in cmd[0], "preStop is a sleep: %s" % cmd)
                prestop = float(cmd[-1])
                if "sleep" in hook:   # Kubernetes 1.29+ native sleep action
                    prestop = float(hook["sleep"]["seconds"])
            self.assertGreater(drain + prestop, 0, "%s: a drain delay or a preStop sleep" % overlay)
            self.assertGreaterEqual(pod["terminationGracePeriodSeconds"], drain + prestop + exit_timeout + 5,
                                    "%s: grace period covers drain + preStop + exit timeout + 5 s" % overlay)
            strategy = dep["spec"]["strategy"]
            self.assertEqual(strategy["type"], "RollingUpdate")
            self.assertEqual(strategy["rollingUpdate"]["maxUnavailable"], 0)
            self.assertGreaterEqual(strategy["rollingUpdate"]["maxSurge"], 1)

    def test_ports_and_services(self):
        for overlay, docs in self.rendered.items():
            dep, c = self.container(docs)
            ports = {p["name"]: p["containerPort"] for p in c["ports"]}
            self.assertEqual(ports, {"http": 8000, "grpc": 8001, "metrics": 8002})
            self.assertEqual(flag(c["args"], "http-port"), "8000")
            self.assertEqual(flag(c["args"], "grpc-port"), "8001")
            self.assertEqual(flag(c["args"], "metrics-port"), "8002")
            pod_labels = dep["spec"]["template"]["metadata"]["labels"]
            svc = by_kind(docs, "Service", "inferd")
            self.assertEqual({p["name"]: p["port"] for p in svc["spec"]["ports"]},
                             {"http": 8000, "grpc": 8001, "metrics": 8002})
            headless = by_kind(docs, "Service", "inferd-headless")
            self.assertEqual(headless["spec"]["clusterIP"], "None")
            self.assertIn("grpc", [p["name"] for p in headless["spec"]["ports"]])
            for s in (svc, headless):
                for k, v in s["spec"]["selector"].items():
                    self.assertEqual(pod_labels.get(k), v, "%s selects the pods" % s["metadata"]["name"])
            self.assertTrue(c["image"].startswith("registry.example.com/inferd:"), c["image"])

    def test_hpa_on_queue_time(self):
        for overlay, docs in self.rendered.items():
            hpa = by_kind(docs, "HorizontalPodAutoscaler", "inferd")
            self.assertEqual(hpa["spec"]["scaleTargetRef"]["kind"], "Deployment")
            self.assertEqual(hpa["spec"]["scaleTargetRef"]["name"], "inferd")
            metrics = hpa["spec"]["metrics"]
            self.assertEqual(len(metrics), 1)
            m = metrics[0]
            self.assertEqual(m["type"], "External")
            self.assertEqual(m["external"]["metric"]["name"], QUEUE_METRIC)
            # The metric is an average already: compare it as a value.
            self.assertEqual(m["external"]["target"]["type"], "Value")
            self.assertGreater(float(m["external"]["target"]["value"]), 0)
            self.assertGreaterEqual(hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"], 300)
            self.assertGreaterEqual(hpa["spec"]["maxReplicas"], hpa["spec"]["minReplicas"])
        self.assertLess(by_kind(self.rendered["gpu"], "HorizontalPodAutoscaler")["spec"]["maxReplicas"],
                        by_kind(self.rendered["cpu"], "HorizontalPodAutoscaler")["spec"]["maxReplicas"])
        with open(os.path.join(DEPLOY, "kubernetes", "prometheus-adapter", "rules.yaml")) as f:
            rules = yaml.safe_load(f)["rules"]["external"]
        self.assertTrue(any(r["name"]["as"] == QUEUE_METRIC and QUEUE_METRIC in r["seriesQuery"]
                            for r in rules))

    def test_pdb_and_model_volume(self):
        for overlay, docs in self.rendered.items():
            dep, c = self.container(docs)
            pod_labels = dep["spec"]["template"]["metadata"]["labels"]
            pdb = by_kind(docs, "PodDisruptionBudget", "inferd")
            for k, v in pdb["spec"]["selector"]["matchLabels"].items():
                self.assertEqual(pod_labels.get(k), v)
            self.assertEqual(pdb["spec"].get("maxUnavailable"), 1)
            vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
            if overlay == "s3-repository":
                continue  # test_s3_repository_overlay
            claim = vols["model-repository"]["persistentVolumeClaim"]["claimName"]
            pvc = by_kind(docs, "PersistentVolumeClaim", claim)
            self.assertIn("ReadOnlyMany", pvc["spec"]["accessModes"])
            mounts = {m["name"]: m for m in c["volumeMounts"]}
            self.assertEqual(mounts["model-repository"]["mountPath"], flag(c["args"], "model-repository"))
            self.assertTrue(mounts["model-repository"]["readOnly"])

    def test_s3_repository_overlay(self):
        docs = self.rendered["s3-repository"]
        dep, c = self.container(docs)
        repository = flag(c["args"], "model-repository")
        self.assertTrue(repository.startswith("s3://"), repository)
        self.assertEqual(flag(c["args"], "model-control-mode"), "poll")
        # Credentials only through the Secret, never a literal in the manifest.
        self.assertEqual([e["secretRef"]["name"] for e in c.get("envFrom", [])],
                         ["inferd-s3-credentials"])
        for e in c.get("env", []):
            self.assertNotIn(e["name"], ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))
        self.assertNotIn("Secret", {d["kind"] for d in docs})
        # The cache on an emptyDir at --model-cache-dir; no shared model volume.
        vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
        self.assertNotIn("model-repository", vols)
        self.assertNotIn("PersistentVolumeClaim", {d["kind"] for d in docs})
        self.assertIn("sizeLimit", vols["model-cache"]["emptyDir"])
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        self.assertNotIn("model-repository", mounts)
        self.assertEqual(mounts["model-cache"]["mountPath"], flag(c["args"], "model-cache-dir"))
        # The base's writable /tmp stays (the root file system is read-only).
        self.assertEqual(mounts["tmp"]["mountPath"], "/tmp")
        # Every other flag of the base is still there (a patch replaces the list).
        with open(os.path.join(DEPLOY, "kubernetes", "base", "deployment.yaml")) as f:
            base = yaml.safe_load(f)["spec"]["template"]["spec"]["containers"][0]["args"]
        names = {a.split("=", 1)[0] for a in c["args"]}
        for a in base:
            self.assertIn(a.split("=", 1)[0], names)

    def test_security_context(self):
        for overlay, docs in self.rendered.items():
            dep, c = self.container(docs)
            self.assertTrue(dep["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"])
            self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])
            self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])


class QueueMetricRuleTest(unittest.TestCase):
    """The HPA reads QUEUE_METRIC as one External value per deployment: the
    recording rule (owned by deploy/prometheus/) must aggregate over pods and
    models (at most by job or namespace)."""

    def test_rule_is_one_series_per_deployment(self):
        path = os.path.join(DEPLOY, "prometheus", "inferd.rules.yml")
        with open(path) as f:
            groups = yaml.safe_load(f).get("groups", [])
        rules = [r for g in groups for r in g.get("rules", []) if r.get("record") == QUEUE_METRIC]
        # (tests/e2e/test_grafana_queries.py runs the adapter's query on real data.)
        self.assertEqual(len(rules), 1, "%s must be recorded once in deploy/prometheus/"
                         "inferd.rules.yml: the HPA has no metric otherwise" % QUEUE_METRIC)
        for by in re.findall(r"by\s*\(([^)]*)\)", rules[0]["expr"]):
            labels = {x.strip() for x in by.split(",") if x.strip()}
            self.assertTrue(labels <= {"job", "namespace"},
                            "one series per deployment expected, not by (%s)" % by)


class BalancerTest(unittest.TestCase):
    def test_nginx_upstream_idle_timeout_below_server(self):
        out = subprocess.run([os.path.join(DEPLOY, "nginx", "render-upstreams.sh"), "10.0.0.1"],
                             check=True, stdout=subprocess.PIPE).stdout.decode()
        timeouts = [seconds(t) for t in re.findall(r"keepalive_timeout (\S+);", out)]
        self.assertEqual(len(timeouts), 2, out)
        for t in timeouts:
            self.assertLess(t, server_idle_timeout())
        self.assertIn("max_fails=", out)
        self.assertIn("fail_timeout=", out)

    def test_nginx_retries_only_unsent_requests(self):
        with open(os.path.join(DEPLOY, "nginx", "inferd.conf")) as f:
            conf = re.sub(r"#.*", "", f.read())
        for directive in ("proxy_next_upstream", "grpc_next_upstream"):
            values = re.findall(r"\b%s\s+([^;]+);" % directive, conf)
            self.assertEqual(len(values), 1, directive)
            self.assertNotIn("non_idempotent", values[0])
            self.assertFalse(re.search(r"http_\d+", values[0]), "%s retries on statuses" % directive)
        self.assertIn("grpc_pass grpc://inferd_grpc", conf)
        self.assertRegex(conf, r"listen 8001 http2")
        self.assertIn('proxy_set_header Connection ""', conf)

    @unittest.skipIf(nginx_local.find_nginx() is None, "nginx not installed")
    def test_nginx_config_passes_nginx_t(self):
        tmp = tempfile.mkdtemp(prefix="inferd-nginx-t-")
        try:
            os.makedirs(os.path.join(tmp, "inferd"))
            with open(os.path.join(DEPLOY, "nginx", "nginx.conf")) as f:
                main = f.read()
            # Only the host paths move into the temporary prefix.
            main = re.sub(r"^user .*$", "", main, flags=re.M)
            main = main.replace("/run/nginx.pid", os.path.join(tmp, "nginx.pid"))
            main = main.replace("/var/log/nginx/", tmp + "/")
            with open(os.path.join(tmp, "nginx.conf"), "w") as f:
                f.write(main)
            shutil.copy(os.path.join(DEPLOY, "nginx", "inferd.conf"), os.path.join(tmp, "inferd"))
            with open(os.path.join(tmp, "inferd", "upstreams.conf"), "wb") as f:
                f.write(subprocess.run([os.path.join(DEPLOY, "nginx", "render-upstreams.sh"),
                                        "10.0.0.1", "10.0.0.2"], check=True, stdout=subprocess.PIPE).stdout)
            r = subprocess.run([nginx_local.find_nginx(), "-t", "-e", os.path.join(tmp, "error.log"),
                                "-p", tmp, "-c", os.path.join(tmp, "nginx.conf")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(r.returncode, 0, r.stdout.decode(errors="replace"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_envoy_config(self):
        with open(os.path.join(DEPLOY, "envoy", "envoy.yaml")) as f:
            cfg = yaml.safe_load(f)
        clusters = {c["name"]: c for c in cfg["static_resources"]["clusters"]}
        self.assertEqual(set(clusters), {"inferd_http", "inferd_grpc"})
        for name, c in clusters.items():
            opts = c["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
            self.assertLess(seconds(opts["common_http_protocol_options"]["idle_timeout"]),
                            server_idle_timeout(), name)
            od = c["outlier_detection"]
            self.assertTrue(od["split_external_local_origin_errors"])
            self.assertEqual(od["enforcing_consecutive_5xx"], 0, "%s: no ejection for HTTP statuses" % name)
            hc = c["health_checks"][0]["http_health_check"]
            self.assertEqual(hc["path"], "/v2/health/ready")
        self.assertIn("http2_protocol_options", clusters["inferd_grpc"]["typed_extension_protocol_options"]
                      ["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]["explicit_http_config"])
        for listener in cfg["static_resources"]["listeners"]:
            hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
            for vh in hcm["route_config"]["virtual_hosts"]:
                for route in vh["routes"]:
                    policy = route["route"].get("retry_policy")
                    if not policy:
                        continue
                    on = set(policy["retry_on"].split(","))
                    self.assertTrue(on <= {"connect-failure", "refused-stream", "unavailable"},
                                    "unsafe retry_on %s" % on)


if __name__ == "__main__":
    unittest.main(verbosity=2)
