"""Checks of deploy/kubernetes/overlays/discovery (inferd-discovery, Envoy over
ADS, infer-gateway over xDS) and deploy/envoy/envoy-ads.yaml. Run by
test_deploy_configs.py, which imports the class."""

import json
import os
import re
import unittest

import yaml

from deploy_render import DEPLOY, KUBECTL, by_kind, flag, host_port, pod_selected, render


@unittest.skipIf(KUBECTL is None, "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)")
class DiscoveryOverlayTest(unittest.TestCase):
    """overlays/discovery: inferd-discovery (deploy/kubernetes/discovery), Envoy
    fed over ADS and infer-gateway as a proxyless gRPC client, checked against
    each other and against the inferd objects they point at."""

    @classmethod
    def setUpClass(cls):
        cls.docs = render("discovery")
        cls.namespace = "inferd"
        dep = by_kind(cls.docs, "Deployment", "inferd-discovery")
        cls.discovery_pod = dep["spec"]["template"]
        cls.discovery = cls.discovery_pod["spec"]["containers"][0]
        cls.args = cls.discovery["args"]

    def discovery_flag(self, name, default=None):
        v = flag(self.args, name)
        return default if v is None else v

    def xds_port(self):
        return int(self.discovery_flag("xds-port", 18000))

    def discovery_service(self):
        return by_kind(self.docs, "Service", "inferd-discovery")

    def config_map_file(self, pod_spec, container, env_or_path):
        """The text of the ConfigMap key a container sees at path `env_or_path`."""
        mounts = {m["mountPath"].rstrip("/"): m["name"] for m in container.get("volumeMounts", [])}
        directory, key = os.path.split(env_or_path)
        self.assertIn(directory, mounts, "%s is not mounted" % directory)
        vols = {v["name"]: v for v in pod_spec["volumes"]}
        cm_name = vols[mounts[directory]]["configMap"]["name"]
        cm = by_kind(self.docs, "ConfigMap", cm_name)
        self.assertIn(key, cm["data"])
        return cm["data"][key]

    def test_rbac_is_exactly_watching_endpoint_slices(self):
        kinds = {d["kind"] for d in self.docs}
        self.assertFalse(kinds & {"ClusterRole", "ClusterRoleBinding"}, "namespaced RBAC only")
        role = by_kind(self.docs, "Role", "inferd-discovery")
        self.assertEqual(len(role["rules"]), 1, role["rules"])
        rule = role["rules"][0]
        self.assertEqual(rule["apiGroups"], ["discovery.k8s.io"])
        self.assertEqual(rule["resources"], ["endpointslices"])
        self.assertEqual(sorted(rule["verbs"]), ["get", "list", "watch"])
        self.assertNotIn("resourceNames", rule)
        binding = by_kind(self.docs, "RoleBinding", "inferd-discovery")
        self.assertEqual(binding["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                              "name": role["metadata"]["name"]})
        sa = by_kind(self.docs, "ServiceAccount", "inferd-discovery")
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                                "namespace": self.namespace}])
        spec = self.discovery_pod["spec"]
        self.assertEqual(spec["serviceAccountName"], sa["metadata"]["name"])
        self.assertIsNot(spec.get("automountServiceAccountToken"), False, "the watch needs the token")
        self.assertIsNot(sa.get("automountServiceAccountToken"), False)
        # Only the discovery pods run under this account; nothing else mounts a token.
        for d in self.docs:
            if d["kind"] == "Deployment" and d["metadata"]["name"] != "inferd-discovery":
                self.assertNotEqual(d["spec"]["template"]["spec"].get("serviceAccountName"),
                                    sa["metadata"]["name"])
                self.assertIs(d["spec"]["template"]["spec"].get("automountServiceAccountToken"), False,
                              d["metadata"]["name"])

    def test_source_names_an_existing_service_port_of_the_inferd_pods(self):
        source = self.discovery_flag("kubernetes-service")
        self.assertIsNotNone(source, self.args)
        m = re.fullmatch(r"([^/]+)/([a-z0-9-]+):([a-z0-9-]+)", source)
        self.assertTrue(m, source)
        namespace, service_name, port = m.groups()
        if namespace.startswith("$("):
            env = {e["name"]: e for e in self.discovery.get("env", [])}
            var = namespace[2:-1]
            self.assertEqual(env[var]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.namespace")
        else:
            self.assertEqual(namespace, self.namespace)
        svc = by_kind(self.docs, "Service", service_name)
        inferd = by_kind(self.docs, "Deployment", "inferd")
        inferd_pod = inferd["spec"]["template"]
        inferd_container = inferd_pod["spec"]["containers"][0]
        self.assertTrue(pod_selected(svc["spec"]["selector"], inferd_pod["metadata"]["labels"]),
                        "%s selects the inferd pods" % service_name)
        self.assertFalse(pod_selected(svc["spec"]["selector"], self.discovery_pod["metadata"]["labels"]))
        key = "port" if port.isdigit() else "name"
        svc_ports = [p for p in svc["spec"]["ports"] if str(p[key]) == port]
        self.assertEqual(len(svc_ports), 1, "Service %s has no port %s" % (service_name, port))
        svc_port = svc_ports[0]
        # The EndpointSlice port is the pod's: it must be inferd's gRPC port.
        container_ports = {p["name"]: p["containerPort"] for p in inferd_container["ports"]}
        target = svc_port["targetPort"]
        target = container_ports[target] if isinstance(target, str) else target
        self.assertEqual(target, int(flag(inferd_container["args"], "grpc-port")))
        # HTTP routes for Envoy: the hosts' HTTP port is inferd's.
        self.assertEqual(self.discovery_flag("inferd-http-port"), flag(inferd_container["args"], "http-port"))
        # Probing once a second, as docs/operations.md says.
        self.assertEqual(self.discovery_flag("poll-interval-ms"), "1000")

    def test_discovery_service_and_probes_match_the_flags(self):
        xds_port, http_port = self.xds_port(), int(self.discovery_flag("http-port", 18080))
        self.assertEqual((xds_port, http_port), (18000, 18080))
        svc = self.discovery_service()
        pod_labels = self.discovery_pod["metadata"]["labels"]
        self.assertTrue(pod_selected(svc["spec"]["selector"], pod_labels))
        inferd_labels = by_kind(self.docs, "Deployment", "inferd")["spec"]["template"]["metadata"]["labels"]
        self.assertFalse(pod_selected(svc["spec"]["selector"], inferd_labels))
        for d in self.docs:   # no inferd Service, PDB or HPA selects the discovery pods
            if d["kind"] in ("Service", "PodDisruptionBudget") and d["metadata"]["name"] != "inferd-discovery":
                sel = d["spec"]["selector"]
                sel = sel.get("matchLabels", sel) if d["kind"] == "PodDisruptionBudget" else sel
                self.assertFalse(pod_selected(sel, pod_labels), d["metadata"]["name"])
        container_ports = {p["name"]: p["containerPort"] for p in self.discovery["ports"]}
        ports = {p["port"]: p for p in svc["spec"]["ports"]}
        self.assertEqual(set(ports), {xds_port, http_port})
        for number, p in ports.items():
            self.assertEqual(container_ports[p["targetPort"]], number, p)
        self.assertEqual(ports[xds_port]["appProtocol"], "grpc")
        self.assertEqual(ports[xds_port]["name"], "grpc-xds")
        self.assertEqual(ports[http_port]["appProtocol"], "http")
        for probe, path in (("readinessProbe", "/health/ready"), ("livenessProbe", "/health/live")):
            get = self.discovery[probe]["httpGet"]
            self.assertEqual(get["path"], path)
            self.assertEqual(container_ports[get["port"]], http_port)
        notes = self.discovery_pod["metadata"]["annotations"]
        self.assertEqual(notes["prometheus.io/scrape"], "true")
        self.assertEqual(int(notes["prometheus.io/port"]), http_port)
        self.assertEqual(notes["prometheus.io/path"], "/metrics")
        dep = by_kind(self.docs, "Deployment", "inferd-discovery")
        self.assertGreaterEqual(dep["spec"]["replicas"], 2)
        self.assertTrue(self.discovery["command"][0].endswith("/inferd-discovery"))
        self.assertTrue(self.discovery["resources"]["limits"]["memory"])
        # Its own image (`make image`), from the same build: the same tag as inferd's.
        inferd = by_kind(self.docs, "Deployment", "inferd")["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(self.discovery["image"],
                         inferd["image"].replace("/inferd:", "/inferd-discovery:"))

    def check_envoy_bootstrap(self, cfg):
        self.assertTrue(cfg["node"]["id"] and cfg["node"]["cluster"], "Envoy's ADS needs node id and cluster")
        self.assertEqual(cfg["admin"]["address"]["socket_address"],
                         {"address": "127.0.0.1", "port_value": 9901})
        dyn = cfg["dynamic_resources"]
        ads = dyn["ads_config"]
        self.assertEqual(ads["api_type"], "GRPC")
        self.assertEqual(ads["transport_api_version"], "V3")
        self.assertEqual([g["envoy_grpc"]["cluster_name"] for g in ads["grpc_services"]], ["xds"])
        for name in ("lds_config", "cds_config"):
            self.assertEqual(dyn[name], {"ads": {}, "resource_api_version": "V3"}, name)
        self.assertNotIn("listeners", cfg.get("static_resources", {}), "listeners come over ADS")
        clusters = {c["name"]: c for c in cfg["static_resources"]["clusters"]}
        self.assertEqual(set(clusters), {"xds"})
        xds = clusters["xds"]
        self.assertIn(xds["type"], ("STRICT_DNS", "LOGICAL_DNS"))
        opts = xds["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
        self.assertEqual(opts["@type"],
                         "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions")
        self.assertIn("http2_protocol_options", opts["explicit_http_config"])
        endpoints = [e["endpoint"]["address"]["socket_address"]
                     for group in xds["load_assignment"]["endpoints"] for e in group["lb_endpoints"]]
        self.assertEqual(len(endpoints), 1)
        self.assert_names_discovery_service(endpoints[0]["address"], endpoints[0]["port_value"])

    def assert_names_discovery_service(self, host, port):
        svc = self.discovery_service()
        name = svc["metadata"]["name"]
        self.assertIn(host, (name, "%s.%s" % (name, self.namespace), "%s.%s.svc" % (name, self.namespace),
                             "%s.%s.svc.cluster.local" % (name, self.namespace)))
        grpc_ports = [p["port"] for p in svc["spec"]["ports"] if p.get("appProtocol") == "grpc"]
        self.assertEqual(grpc_ports, [port])
        self.assertEqual(port, self.xds_port())

    def test_envoy_bootstrap(self):
        path = os.path.join(DEPLOY, "envoy", "envoy-ads.yaml")
        with open(path) as f:
            text = f.read()
        self.check_envoy_bootstrap(yaml.safe_load(text))
        # The overlay's copy (kustomize reads no file outside its directory)
        # is the same file, and it is what the Envoy pods read.
        with open(os.path.join(DEPLOY, "kubernetes", "overlays", "discovery", "envoy-ads.yaml")) as f:
            self.assertEqual(f.read(), text, "overlays/discovery/envoy-ads.yaml differs from %s" % path)
        dep = by_kind(self.docs, "Deployment", "inferd-envoy")
        spec = dep["spec"]["template"]["spec"]
        envoy = next(c for c in spec["containers"] if c["name"] == "envoy")
        config_path = envoy["args"][envoy["args"].index("-c") + 1]
        self.assertEqual(self.config_map_file(spec, envoy, config_path), text)
        self.assertTrue(envoy["image"].startswith("envoyproxy/envoy:"), envoy["image"])
        # Envoy listens where inferd-discovery's listeners say.
        ports = {p["name"]: p["containerPort"] for p in envoy["ports"]}
        self.assertEqual(ports, {"grpc": int(self.discovery_flag("envoy-grpc-port", 8001)),
                                 "http": int(self.discovery_flag("envoy-http-port", 8000))})
        svc = by_kind(self.docs, "Service", "inferd-envoy")
        self.assertTrue(pod_selected(svc["spec"]["selector"], dep["spec"]["template"]["metadata"]["labels"]))
        self.assertEqual({p["targetPort"]: p["port"] for p in svc["spec"]["ports"]}, ports)

    def test_gateway_uses_xds(self):
        dep = by_kind(self.docs, "Deployment", "infer-gateway")
        spec = dep["spec"]["template"]["spec"]
        gw = spec["containers"][0]
        self.assertTrue(gw["command"][0].endswith("/infer-gateway"))
        inferd = by_kind(self.docs, "Deployment", "inferd")["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(gw["image"], inferd["image"].replace("/inferd:", "/infer-gateway:"))
        args = gw["args"]   # infer-gateway takes `--flag value`
        self.assertFalse([a for a in args if a.startswith("--inferd-url=")], "--inferd-url=... is not parsed")
        fleet = self.discovery_flag("fleet-name", "inferd")
        self.assertEqual(args[args.index("--inferd-url") + 1], "xds:///%s" % fleet)
        env = {e["name"]: e.get("value") for e in gw.get("env", [])}
        bootstrap = json.loads(self.config_map_file(spec, gw, env["GRPC_XDS_BOOTSTRAP"]))
        server = bootstrap["xds_servers"][0]
        self.assert_names_discovery_service(*host_port(server["server_uri"]))
        self.assertEqual(server["channel_creds"][0], {"type": "insecure"})
        self.assertIn("xds_v3", server.get("server_features", []))
        self.assertTrue(bootstrap["node"]["id"])
        for field in ("build_version", "user_agent_name", "user_agent_version", "client_features"):
            self.assertNotIn(field, bootstrap["node"], "gRPC fills node.%s itself" % field)
        # The repository's copy is the one in the ConfigMap.
        with open(os.path.join(DEPLOY, "kubernetes", "overlays", "discovery", "xds-bootstrap.json")) as f:
            self.assertEqual(json.load(f), bootstrap)
        ports = {p["name"]: p["containerPort"] for p in gw["ports"]}
        self.assertEqual(str(ports["http"]), args[args.index("--http-port") + 1])
        for probe, path in (("readinessProbe", "/health/ready"), ("livenessProbe", "/health/live")):
            self.assertEqual(gw[probe]["httpGet"]["path"], path)
            self.assertEqual(gw[probe]["httpGet"]["port"], "http")

    def test_security_context(self):
        for d in self.docs:
            if d["kind"] != "Deployment":
                continue
            spec = d["spec"]["template"]["spec"]
            self.assertTrue(spec["securityContext"]["runAsNonRoot"], d["metadata"]["name"])
            for c in spec["containers"]:
                self.assertFalse(c["securityContext"]["allowPrivilegeEscalation"])
                self.assertTrue(c["securityContext"]["readOnlyRootFilesystem"])
                self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])
