"""Checks of deploy/istio (DestinationRule, VirtualService, PeerAuthentication,
Telemetry, the meshConfig fragment) against the inferd objects they point at,
and of every Service port of every overlay for Istio's protocol selection.
Run by test_deploy_configs.py, which imports the classes. No cluster and no
Istio here: the checks hold the files to what docs/istio.md says they do."""

import glob
import os
import re
import unittest

import yaml

from deploy_render import (DEPLOY, KUBECTL, by_kind, flag, kustomize_supports_components, pod_selected,
                           render, render_path)

ISTIO = os.path.join(DEPLOY, "istio")
OVERLAYS = os.path.join(DEPLOY, "kubernetes", "overlays")
NAMESPACE = "inferd"

API_VERSIONS = {
    # v1 from Istio 1.22; the older versions carry the same fields (docs/istio.md).
    "DestinationRule": {"networking.istio.io/v1", "networking.istio.io/v1beta1"},
    "VirtualService": {"networking.istio.io/v1", "networking.istio.io/v1beta1"},
    "PeerAuthentication": {"security.istio.io/v1", "security.istio.io/v1beta1"},
    "Telemetry": {"telemetry.istio.io/v1", "telemetry.istio.io/v1alpha1"},
    "IstioOperator": {"install.istio.io/v1alpha1"},
}
APPLIED_KINDS = {"DestinationRule", "VirtualService", "PeerAuthentication", "Telemetry"}
MESH_CONFIG = "mesh-config.yaml"   # merged into the mesh's installation, not applied

# Istio's protocol names (pkg/config/protocol): a Service port's appProtocol,
# or else the part of its name before the first '-'. appProtocol wins over the
# name when present, so an appProtocol Istio does not know hides a good name.
ISTIO_PROTOCOLS = {"http", "http2", "https", "tcp", "tls", "grpc", "grpc-web", "mongo", "mysql", "redis"}

# Retry conditions a route may use (docs/istio.md, "Retries"); `reset` and
# status codes only on reads.
RETRY_ANY_ROUTE = {"connect-failure", "refused-stream", "unavailable"}
RETRY_READS_ONLY = {"reset", "503"}
# Conditions under which Envoy retries a try that timed out (per-try timeout).
RETRY_AFTER_TIMEOUT = {"reset", "5xx", "gateway-error"}
GRPC_READS = {"ServerLive", "ServerReady", "ModelReady", "ServerMetadata", "ModelMetadata", "ModelConfig",
              "ModelStatistics", "RepositoryIndex"}
GRPC_SERVICE = "/inference.GRPCInferenceService/"
STREAM_PATH = GRPC_SERVICE + "ModelStreamInfer"


# The fields of Istio's API (istio.io/latest/docs/reference/config/) that an
# object may use, nested as in YAML: a typo in a custom resource is pruned
# without a word by the API server, silently dropping the setting. A tuple of
# strings is an enum; LIST marks a list of the inner shape; ANY_KEY a map.
LIST, ANY_KEY = "list", "*"
DURATION, NUMBER, TEXT, BOOL = "duration", "number", "text", "bool"
LOAD_BALANCER = {"simple": ("UNSPECIFIED", "RANDOM", "PASSTHROUGH", "ROUND_ROBIN", "LEAST_REQUEST", "LEAST_CONN"),
                 "consistentHash": dict, "localityLbSetting": dict, "warmupDurationSecs": DURATION}
CONNECTION_POOL = {
    "tcp": {"maxConnections": NUMBER, "connectTimeout": DURATION, "maxConnectionDuration": DURATION,
            "idleTimeout": DURATION, "tcpKeepalive": {"probes": NUMBER, "time": DURATION, "interval": DURATION}},
    "http": {"http1MaxPendingRequests": NUMBER, "http2MaxRequests": NUMBER, "maxRequestsPerConnection": NUMBER,
             "maxRetries": NUMBER, "idleTimeout": DURATION, "useClientProtocol": BOOL,
             "maxConcurrentStreams": NUMBER, "h2UpgradePolicy": ("DEFAULT", "DO_NOT_UPGRADE", "UPGRADE")}}
OUTLIER = {"splitExternalLocalOriginErrors": BOOL, "consecutiveLocalOriginFailures": NUMBER,
           "consecutiveGatewayErrors": NUMBER, "consecutive5xxErrors": NUMBER, "interval": DURATION,
           "baseEjectionTime": DURATION, "maxEjectionPercent": NUMBER, "minHealthPercent": NUMBER}
TRAFFIC_POLICY = {"loadBalancer": LOAD_BALANCER, "connectionPool": CONNECTION_POOL, "outlierDetection": OUTLIER,
                  "tls": dict, "portLevelSettings": (LIST, {"port": {"number": NUMBER}, "loadBalancer": LOAD_BALANCER,
                                                            "connectionPool": CONNECTION_POOL,
                                                            "outlierDetection": OUTLIER, "tls": dict})}
STRING_MATCH = {"exact": TEXT, "prefix": TEXT, "regex": TEXT}
SELECTOR = {"matchLabels": (ANY_KEY, TEXT)}
FIELDS = {
    "DestinationRule": {"host": TEXT, "trafficPolicy": TRAFFIC_POLICY, "subsets": (LIST, dict),
                        "exportTo": (LIST, TEXT), "workloadSelector": SELECTOR},
    "VirtualService": {"hosts": (LIST, TEXT), "gateways": (LIST, TEXT), "exportTo": (LIST, TEXT),
                       "tls": (LIST, dict), "tcp": (LIST, dict),
                       "http": (LIST, {
                           "name": TEXT, "timeout": DURATION,
                           "match": (LIST, {"name": TEXT, "uri": STRING_MATCH, "scheme": STRING_MATCH,
                                            "method": STRING_MATCH, "authority": STRING_MATCH,
                                            "headers": (ANY_KEY, STRING_MATCH), "port": NUMBER,
                                            "queryParams": (ANY_KEY, STRING_MATCH), "ignoreUriCase": BOOL,
                                            "sourceLabels": (ANY_KEY, TEXT), "gateways": (LIST, TEXT),
                                            "sourceNamespace": TEXT, "statPrefix": TEXT}),
                           "route": (LIST, {"destination": {"host": TEXT, "subset": TEXT, "port": {"number": NUMBER}},
                                            "weight": NUMBER, "headers": dict}),
                           "retries": {"attempts": NUMBER, "perTryTimeout": DURATION, "retryOn": TEXT,
                                       "retryRemoteLocalities": BOOL, "retryIgnorePreviousHosts": BOOL,
                                       "backoff": DURATION},
                           "rewrite": dict, "redirect": dict, "headers": dict, "fault": dict, "mirror": dict,
                           "mirrors": (LIST, dict), "mirrorPercentage": dict, "corsPolicy": dict})},
    "PeerAuthentication": {"selector": SELECTOR,
                           "mtls": {"mode": ("UNSET", "DISABLE", "PERMISSIVE", "STRICT")},
                           "portLevelMtls": (ANY_KEY, {"mode": ("UNSET", "DISABLE", "PERMISSIVE", "STRICT")})},
    "Telemetry": {"selector": SELECTOR, "targetRef": dict, "targetRefs": (LIST, dict),
                  "metrics": (LIST, dict), "accessLogging": (LIST, dict),
                  "tracing": (LIST, {"match": dict, "providers": (LIST, {"name": TEXT}),
                                     "randomSamplingPercentage": NUMBER, "disableSpanReporting": BOOL,
                                     "customTags": dict, "useRequestIdForTraceSampling": BOOL})},
    "IstioOperator": {"meshConfig": {"enableTracing": BOOL, "extensionProviders": (LIST, {
        "name": TEXT, "opentelemetry": {"service": TEXT, "port": NUMBER, "maxTagLength": NUMBER, "http": dict,
                                        "grpc": dict, "resourceDetectors": dict, "dynatraceSampler": dict}})}},
}


def schema_errors(value, shape, path="spec"):
    """Where `value` does not fit `shape` (the FIELDS notation): unknown
    fields, values outside an enum, wrong types, unparsable durations."""
    errors = []
    if shape is dict:
        return [] if isinstance(value, dict) else ["%s: not an object" % path]
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return ["%s: not an object" % path]
        for k, v in value.items():
            if k not in shape:
                errors.append("%s.%s: no such field" % (path, k))
            else:
                errors += schema_errors(v, shape[k], "%s.%s" % (path, k))
        return errors
    if isinstance(shape, tuple) and shape and shape[0] in (LIST, ANY_KEY):
        if shape[0] == LIST:
            if not isinstance(value, list):
                return ["%s: not a list" % path]
            for i, v in enumerate(value):
                errors += schema_errors(v, shape[1], "%s[%d]" % (path, i))
        else:
            if not isinstance(value, dict):
                return ["%s: not a map" % path]
            for k, v in value.items():
                errors += schema_errors(v, shape[1], "%s[%s]" % (path, k))
        return errors
    if isinstance(shape, tuple):
        return [] if value in shape else ["%s: %r is not one of %s" % (path, value, "|".join(shape))]
    if shape == DURATION:
        ok = isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?(ms|s|m|h)", value)
        return [] if ok else ["%s: %r is not a duration" % (path, value)]
    if shape == NUMBER:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else ["%s: %r is not a number" % (path, value)]
    if shape == BOOL:
        return [] if isinstance(value, bool) else ["%s: %r is not a boolean" % (path, value)]
    return [] if isinstance(value, str) else ["%s: %r is not a string" % (path, value)]


def seconds(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(text).strip())
    if not m:
        raise AssertionError("not an Istio duration: %r" % text)
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def istio_protocol(port):
    """The protocol Istio selects for a Service port, or None (left to detection)."""
    if port.get("protocol", "TCP") == "UDP":
        return "udp"
    name = port.get("appProtocol") or port.get("name") or ""
    if name.lower().startswith("grpc-web"):
        return "grpc-web"
    prefix = name.split("-", 1)[0].lower()
    return prefix if prefix in ISTIO_PROTOCOLS else None


def istio_files():
    """{file name: [documents]} for every YAML file in deploy/istio."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ISTIO, "*.yaml"))):
        with open(path) as f:
            out[os.path.basename(path)] = [d for d in yaml.safe_load_all(f) if d]
    return out


def overlay_names():
    return sorted(d for d in os.listdir(OVERLAYS) if os.path.isfile(os.path.join(OVERLAYS, d, "kustomization.yaml")))


def uses_components(overlay):
    """Whether an overlay (or a kustomization it builds on) lists components."""
    seen, todo = set(), [os.path.join(OVERLAYS, overlay)]
    while todo:
        d = os.path.realpath(todo.pop())
        if d in seen or not os.path.isfile(os.path.join(d, "kustomization.yaml")):
            continue
        seen.add(d)
        with open(os.path.join(d, "kustomization.yaml")) as f:
            k = yaml.safe_load(f) or {}
        if k.get("components"):
            return True
        todo += [os.path.join(d, r) for r in (k.get("bases") or []) + (k.get("resources") or [])
                 if os.path.isdir(os.path.join(d, r))]
    return False


@unittest.skipIf(KUBECTL is None, "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)")
class IstioManifestTest(unittest.TestCase):
    """deploy/istio against the cpu overlay's inferd Service and pods."""

    @classmethod
    def setUpClass(cls):
        cls.files = istio_files()
        cls.rendered = render_path(ISTIO)
        cls.inferd_docs = render("cpu")
        cls.service = by_kind(cls.inferd_docs, "Service", "inferd")
        dep = by_kind(cls.inferd_docs, "Deployment", "inferd")
        cls.pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        cls.container = dep["spec"]["template"]["spec"]["containers"][0]
        cls.host = "%s.%s.svc.cluster.local" % (cls.service["metadata"]["name"], cls.service["metadata"]["namespace"])
        cls.ports = {p["port"]: p for p in cls.service["spec"]["ports"]}
        cls.port_by_name = {p["name"]: p for p in cls.service["spec"]["ports"]}
        cls.container_ports = {p["name"]: p["containerPort"] for p in cls.container["ports"]}

    def one(self, kind):
        return by_kind(self.rendered, kind)

    def test_files_parse_with_known_kinds_and_versions(self):
        with open(os.path.join(ISTIO, "kustomization.yaml")) as f:
            listed = set(yaml.safe_load(f)["resources"])
        manifests = set(self.files) - {"kustomization.yaml"}
        # Every manifest is applied, except the mesh's own configuration.
        self.assertEqual(listed, manifests - {MESH_CONFIG})
        for name, docs in self.files.items():
            if name == "kustomization.yaml":
                continue
            self.assertTrue(docs, "%s is empty" % name)
            for d in docs:
                self.assertIn(d.get("kind"), API_VERSIONS, name)
                self.assertIn(d["apiVersion"], API_VERSIONS[d["kind"]], "%s: %s" % (name, d["kind"]))
                self.assertIsInstance(d.get("spec"), dict, "%s: %s has no spec" % (name, d["kind"]))
                self.assertEqual(schema_errors(d["spec"], FIELDS[d["kind"]]), [], "%s: %s" % (name, d["kind"]))
                if name != MESH_CONFIG:
                    self.assertIn(d["kind"], APPLIED_KINDS)
                    self.assertTrue(d["metadata"]["name"])
        # Rendered: one of each, in the inferd namespace.
        self.assertEqual(sorted(d["kind"] for d in self.rendered), sorted(APPLIED_KINDS))
        for d in self.rendered:
            self.assertEqual(d["metadata"].get("namespace"), NAMESPACE, d["kind"])

    def test_destination_rule(self):
        dr = self.one("DestinationRule")
        self.assertEqual(dr["spec"]["host"], self.host)
        policy = dr["spec"]["trafficPolicy"]
        self.check_policy(policy, "top level")
        # The HTTP port speaks HTTP/1.1 only (inferd has no h2c on it).
        self.assertEqual(policy["connectionPool"]["http"]["h2UpgradePolicy"], "DO_NOT_UPGRADE")
        grpc_port = self.port_by_name["grpc"]["port"]
        levels = {p["port"]["number"]: p for p in policy.get("portLevelSettings", [])}
        self.assertIn(grpc_port, levels, "port-level settings for the gRPC port")
        for number, p in levels.items():
            self.assertIn(number, self.ports, "port-level settings for a port the Service lacks")
            # Port-level settings inherit nothing from the top level: complete.
            self.check_policy(p, "port %d" % number)
        self.assertNotEqual(levels[grpc_port]["connectionPool"]["http"]["h2UpgradePolicy"], "DO_NOT_UPGRADE")

    def check_policy(self, p, where):
        self.assertEqual(p["loadBalancer"]["simple"], "LEAST_REQUEST", where)
        pool = p["connectionPool"]
        self.assertLessEqual(seconds(pool["tcp"]["connectTimeout"]), 2, where)
        self.assertGreater(pool["tcp"]["maxConnections"], 0)
        http = pool["http"]
        for k in ("http2MaxRequests", "maxRequestsPerConnection"):
            self.assertIn(k, http, where)
        # The client side closes idle connections first (HTTP and gRPC).
        idle = seconds(http["idleTimeout"])
        self.assertLess(idle, float(flag(self.container["args"], "http-idle-timeout-secs") or 60), where)
        self.assertLess(idle, float(flag(self.container["args"], "grpc-idle-timeout-secs") or 60), where)
        od = p["outlierDetection"]
        self.assertTrue(od["splitExternalLocalOriginErrors"], where)
        self.assertGreater(od["consecutiveLocalOriginFailures"], 0, where)
        self.assertGreater(od["consecutiveGatewayErrors"], 1, where)
        self.assertEqual(od["consecutive5xxErrors"], 0, "%s: a model's 500 must not eject pods" % where)
        self.assertLessEqual(od["maxEjectionPercent"], 50, where)
        self.assertGreater(seconds(od["baseEjectionTime"]), 0)
        self.assertGreater(seconds(od["interval"]), 0)

    def route_port(self, route):
        ports = {m.get("port") for m in route.get("match", [])}
        self.assertEqual(len(ports), 1, "%s: each route matches one port" % route.get("name"))
        port = ports.pop()
        self.assertIsNotNone(port, "%s: a route without a port match applies to every port" % route.get("name"))
        return port

    def is_read(self, route, port):
        """Reads: HTTP GETs, the metrics port, the gRPC read RPCs."""
        name = self.ports[port]["name"]
        if name == "metrics":
            return True
        matches = route["match"]
        if name == "http":
            return all(m.get("method") == {"exact": "GET"} for m in matches)
        for m in matches:
            uri = m.get("uri", {})
            if "exact" in uri and uri["exact"] == "/grpc.health.v1.Health/Check":
                continue
            rx = uri.get("regex", "")
            m2 = re.fullmatch(r"/inference\\\.GRPCInferenceService/\(([A-Za-z|]+)\)", rx)
            if not m2 or not set(m2.group(1).split("|")) <= GRPC_READS:
                return False
        return True

    def test_virtual_service_routes(self):
        vs = self.one("VirtualService")
        self.assertEqual(vs["spec"]["hosts"], [self.host])
        self.assertNotIn("gateways", vs["spec"], "mesh routes (sidecars), not an ingress gateway's")
        routes = vs["spec"]["http"]
        seen_catch_all = set()
        with open(os.path.join(DEPLOY, "envoy", "envoy.yaml")) as f:
            envoy = self.envoy_retry_on(yaml.safe_load(f))
        for r in routes:
            name = r.get("name")
            port = self.route_port(r)
            self.assertIn(port, self.ports, "%s: route port %s is not a port of Service inferd" % (name, port))
            self.assertNotIn(port, seen_catch_all, "%s: after the catch-all route of port %d" % (name, port))
            if all(set(m) == {"port"} for m in r["match"]):
                seen_catch_all.add(port)
            self.assertEqual([d["destination"]["host"] for d in r["route"]], [self.host], name)
            self.assertEqual([d["destination"]["port"]["number"] for d in r["route"]], [port], name)
            self.assertIn("retries", r, "%s: without `retries` Istio's default policy applies" % name)
            self.assertIn("timeout", r, name)
            self.check_retries(r, port, envoy)
        self.assertEqual(seen_catch_all, set(self.ports), "every Service port has a catch-all route")
        stream = [r for r in routes if any(m.get("uri", {}).get("exact") == STREAM_PATH for m in r["match"])]
        self.assertEqual(len(stream), 1, "a route for ModelStreamInfer")
        self.assertEqual(stream[0]["retries"], {"attempts": 0})
        self.assertEqual(seconds(stream[0]["timeout"]), 0, "a stream lives as long as the client wants")

    def check_retries(self, r, port, envoy):
        name, retries = r.get("name"), r["retries"]
        timeout = seconds(r["timeout"])
        attempts = retries.get("attempts", 0)
        if attempts == 0:
            return
        on = set(retries["retryOn"].split(","))
        read = self.is_read(r, port)
        allowed = RETRY_ANY_ROUTE | (RETRY_READS_ONLY if read else set())
        self.assertTrue(on <= allowed, "%s: unsafe retryOn %s" % (name, sorted(on - allowed)))
        if self.ports[port]["name"] == "http":
            self.assertNotIn("unavailable", on, "%s: a gRPC status on an HTTP route" % name)
        per_try = seconds(retries["perTryTimeout"])
        self.assertGreater(timeout, 0, name)
        if on & RETRY_AFTER_TIMEOUT:
            # A try cut by its per-try timeout is retried: every try fits.
            self.assertLessEqual((attempts + 1) * per_try, timeout, "%s: tries do not fit the timeout" % name)
        else:
            # Nothing retries a try that may have run: it gets the whole timeout.
            self.assertEqual(per_try, timeout, "%s: the per-try timeout would cut an inference short" % name)
        if not read:
            # The same retries as envoy.yaml's inference routes, the same timeout.
            kind = self.ports[port]["name"]
            self.assertTrue(on <= envoy[kind][0], "%s: retries %s beyond envoy.yaml's %s" % (name, on, envoy[kind][0]))
            self.assertEqual(timeout, envoy[kind][1], name)

    @staticmethod
    def envoy_retry_on(cfg):
        """{'http'|'grpc': (retry_on set, timeout s)} of envoy.yaml's catch-all routes."""
        out = {}
        for listener in cfg["static_resources"]["listeners"]:
            hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
            for vh in hcm["route_config"]["virtual_hosts"]:
                for route in vh["routes"]:
                    if route["match"].get("prefix") == "/":
                        kind = "grpc" if "grpc" in listener["name"] else "http"
                        out[kind] = (set(route["route"]["retry_policy"]["retry_on"].split(",")),
                                     seconds(route["route"]["timeout"]))
        return out

    def test_peer_authentication(self):
        pa = self.one("PeerAuthentication")
        self.assertEqual(pa["spec"]["mtls"]["mode"], "STRICT")
        selector = pa["spec"]["selector"]["matchLabels"]
        self.assertTrue(pod_selected(selector, self.pod_labels), "selects the inferd pods")
        # Only the metrics port may take plain text (Prometheus outside the mesh).
        levels = {int(k): v["mode"] for k, v in pa["spec"].get("portLevelMtls", {}).items()}
        self.assertTrue(set(levels) <= {self.container_ports["metrics"]}, levels)
        for number, mode in levels.items():
            self.assertIn(mode, ("PERMISSIVE", "STRICT"))
        for name in ("http", "grpc"):
            self.assertNotIn(self.container_ports[name], levels)

    def test_selectors_match_the_inferd_pods_of_every_overlay(self):
        """The workload selectors pick the inferd pods, and only them, in every overlay."""
        selectors = {d["kind"]: d["spec"]["selector"]["matchLabels"] for d in self.rendered if "selector" in d["spec"]}
        self.assertEqual(set(selectors), {"PeerAuthentication", "Telemetry"})
        for overlay in overlay_names():
            if uses_components(overlay) and not kustomize_supports_components()[0]:
                continue
            for d in render(overlay):
                if d["kind"] != "Deployment":
                    continue
                labels = d["spec"]["template"]["metadata"]["labels"]
                for kind, sel in selectors.items():
                    self.assertEqual(pod_selected(sel, labels), d["metadata"]["name"] == "inferd",
                                     "%s selector on %s/%s" % (kind, overlay, d["metadata"]["name"]))

    def test_telemetry_and_mesh_provider(self):
        tel = self.one("Telemetry")
        tracing = tel["spec"]["tracing"]
        self.assertEqual(len(tracing), 1)
        names = [p["name"] for p in tracing[0]["providers"]]
        providers = {p["name"]: p for d in self.files[MESH_CONFIG] for p in d["spec"]["meshConfig"]["extensionProviders"]}
        for n in names:
            self.assertIn(n, providers, "provider %s is not defined in %s" % (n, MESH_CONFIG))
            otel = providers[n]["opentelemetry"]
            self.assertTrue(otel["service"].endswith(".svc.cluster.local"), otel["service"])
            self.assertIsInstance(otel["port"], int)
        # The same share as inferd's own sampling: 1 in `rate` (default 1000).
        rate = 1000.0
        for a in self.container["args"]:
            m = re.fullmatch(r"--trace-config=(?:opentelemetry,)?rate=(\d+)", a)
            if m:
                rate = float(m.group(1))
        self.assertAlmostEqual(float(tracing[0]["randomSamplingPercentage"]), 100.0 / rate)


@unittest.skipIf(KUBECTL is None, "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)")
class ServicePortProtocolTest(unittest.TestCase):
    """Every Service port of every overlay has a protocol Istio selects
    explicitly (appProtocol, else `<protocol>[-<suffix>]` names), so no port
    relies on protocol detection."""

    def test_every_service_port_names_its_protocol(self):
        can_components, why = kustomize_supports_components()
        checked = []
        for overlay in overlay_names():
            if uses_components(overlay) and not can_components:
                print("istio_checks: overlay %s not checked: %s" % (overlay, why))
                continue
            with self.subTest(overlay=overlay):
                for svc in (d for d in render(overlay) if d["kind"] == "Service"):
                    for p in svc["spec"]["ports"]:
                        self.assertIsNotNone(istio_protocol(p), "%s: Service %s port %s (%s) names no protocol Istio knows"
                                             % (overlay, svc["metadata"]["name"], p.get("name"), p.get("appProtocol")))
                        # The gRPC ports are gRPC (HTTP/2) to the mesh.
                        if p.get("name", "").startswith("grpc"):
                            self.assertEqual(istio_protocol(p), "grpc", (overlay, svc["metadata"]["name"], p))
                checked.append(overlay)
        for must in ("cpu", "gpu", "s3-repository", "discovery"):
            self.assertIn(must, checked)

    def test_schema_finds_typos(self):
        # The field check itself: what it must refuse.
        dr = FIELDS["DestinationRule"]
        self.assertEqual(schema_errors({"host": "h", "trafficPolicy": {"outlierDetection": {"consecutiveGatewayError": 5}}}, dr),
                         ["spec.trafficPolicy.outlierDetection.consecutiveGatewayError: no such field"])
        self.assertTrue(schema_errors({"trafficPolicy": {"loadBalancer": {"simple": "LEAST_REQUESTS"}}}, dr))
        self.assertTrue(schema_errors({"trafficPolicy": {"connectionPool": {"http": {"idleTimeout": 30}}}}, dr))
        self.assertTrue(schema_errors({"http": [{"retries": {"attempts": "2"}}]}, FIELDS["VirtualService"]))
        self.assertEqual(schema_errors({"portLevelMtls": {"8002": {"mode": "PERMISSIVE"}}}, FIELDS["PeerAuthentication"]), [])

    def test_protocol_rules(self):
        # The rule itself, as Istio applies it: appProtocol first, then the name.
        self.assertEqual(istio_protocol({"name": "grpc-xds"}), "grpc")
        self.assertEqual(istio_protocol({"name": "metrics"}), None)
        self.assertEqual(istio_protocol({"name": "metrics", "appProtocol": "http"}), "http")
        self.assertEqual(istio_protocol({"name": "grpc", "appProtocol": "kubernetes.io/h2c"}), None)
        self.assertEqual(istio_protocol({"name": "grpc-web-x"}), "grpc-web")
