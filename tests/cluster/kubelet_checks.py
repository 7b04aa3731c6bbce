"""Checks of deploy/kubernetes/kubelet/kubelet-config.yaml (the KubeletConfiguration
fragment for inferd's nodes) and of the gpu overlay's CPU affinity. Run by
test_deploy_configs.py, which imports the classes.

No kubelet runs here: the checks are the rules the kubelet applies at start that
a mistake in the file would break (the memory manager's reservation sum, whole
cores reserved under full-pcpus-only, string-valued policy options, evictionHard
keeping its defaults) and the field names of KubeletConfiguration v1beta1 the
file may use (a misspelt field is ignored by a lenient decoder and refused by a
strict one)."""

import os
import re
import unittest

import yaml

from deploy_render import DEPLOY, KUBECTL, by_kind, flag, render

KUBELET_CONFIG = os.path.join(DEPLOY, "kubernetes", "kubelet", "kubelet-config.yaml")

# The reference node the file's comment describes: CPU -> NUMA node, and the
# hyper-thread sibling of each CPU.
REFERENCE_CPUS = 64
REFERENCE_NUMA = {c: (0 if c % 32 < 16 else 1) for c in range(REFERENCE_CPUS)}
REFERENCE_SIBLING = {c: (c + 32) % 64 for c in range(REFERENCE_CPUS)}

# The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fields this file may set.
KNOWN_FIELDS = {
    "apiVersion", "kind", "cpuManagerPolicy", "cpuManagerPolicyOptions",
    "cpuManagerReconcilePeriod", "reservedSystemCPUs", "topologyManagerPolicy",
    "topologyManagerScope", "topologyManagerPolicyOptions", "memoryManagerPolicy",
    "reservedMemory", "kubeReserved", "systemReserved", "evictionHard", "featureGates",
    "enforceNodeAllocatable",
}
EVICTION_DEFAULTS = {"memory.available", "nodefs.available", "nodefs.inodesFree",
                     "imagefs.available"}

_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text):
    """A Kubernetes quantity ('2Gi', '512Mi', '1000000') in bytes; percentages refused."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(text).strip())
    if not m:
        raise AssertionError("not an absolute quantity: %r" % text)
    return int(m.group(1)) * _SUFFIX[m.group(2) or ""]


def cpulist(text):
    cpus = set()
    for item in str(text).split(","):
        lo, _, hi = item.strip().partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


class KubeletConfigTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(KUBELET_CONFIG) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        assert len(docs) == 1, "one KubeletConfiguration in %s" % KUBELET_CONFIG
        cls.config = docs[0]

    def test_kind_and_fields(self):
        c = self.config
        self.assertEqual(c["apiVersion"], "kubelet.config.k8s.io/v1beta1")
        self.assertEqual(c["kind"], "KubeletConfiguration")
        self.assertLessEqual(set(c), KNOWN_FIELDS, "unknown fields: %s" % (set(c) - KNOWN_FIELDS))

    def test_static_cpu_manager_on_whole_cores(self):
        c = self.config
        self.assertEqual(c["cpuManagerPolicy"], "static")
        # map[string]string: a YAML boolean would not decode.
        self.assertEqual(c["cpuManagerPolicyOptions"], {"full-pcpus-only": "true"})
        reserved = cpulist(c["reservedSystemCPUs"])
        self.assertTrue(reserved, "the static policy needs reserved CPUs")
        self.assertLessEqual(reserved, set(range(REFERENCE_CPUS)))
        for cpu in reserved:  # full-pcpus-only: whole cores, both hyper-threads
            self.assertIn(REFERENCE_SIBLING[cpu], reserved, "CPU %d without its sibling" % cpu)
        self.assertEqual({REFERENCE_NUMA[cpu] for cpu in reserved}, set(REFERENCE_NUMA.values()),
                         "a reserved core on every NUMA node")
        # reservedSystemCPUs is the CPU reservation; a cpu in these would disagree with it.
        for field in ("kubeReserved", "systemReserved"):
            self.assertNotIn("cpu", c.get(field, {}), field)

    def test_topology_manager_aligns_the_pod_on_one_numa_node(self):
        self.assertEqual(self.config["topologyManagerPolicy"], "single-numa-node")
        self.assertEqual(self.config["topologyManagerScope"], "pod")

    def test_memory_manager_reservation_sums(self):
        c = self.config
        self.assertEqual(c["memoryManagerPolicy"], "Static")
        nodes = [r["numaNode"] for r in c["reservedMemory"]]
        self.assertEqual(sorted(nodes), sorted(set(REFERENCE_NUMA.values())), "one entry per NUMA node")
        for r in c["reservedMemory"]:
            self.assertIsInstance(r["numaNode"], int)
            self.assertEqual(set(r["limits"]), {"memory"}, r)
        reserved = sum(quantity(r["limits"]["memory"]) for r in c["reservedMemory"])
        wanted = (quantity(c["kubeReserved"]["memory"]) + quantity(c["systemReserved"]["memory"]) +
                  quantity(c["evictionHard"]["memory.available"]))
        self.assertEqual(reserved, wanted, "reservedMemory must sum to kubeReserved + systemReserved + "
                                           "evictionHard memory.available (the kubelet refuses otherwise)")

    def test_eviction_keeps_the_defaults(self):
        self.assertLessEqual(EVICTION_DEFAULTS, set(self.config["evictionHard"]))

    def test_feature_gates_are_booleans(self):
        for name, value in self.config.get("featureGates", {}).items():
            self.assertIsInstance(value, bool, name)

    def test_pods_fit_one_numa_node(self):
        """The gpu overlay's CPUs fit the CPUs a NUMA node has left after the reservation
        (single-numa-node admits nothing larger)."""
        if KUBECTL is None:
            self.skipTest("kubectl not installed")
        reserved = cpulist(self.config["reservedSystemCPUs"])
        free = min(sum(1 for c, n in REFERENCE_NUMA.items() if n == node and c not in reserved)
                   for node in set(REFERENCE_NUMA.values()))
        dep = by_kind(render("gpu"), "Deployment", "inferd")
        cpus = sum(int(c["resources"]["limits"]["cpu"]) for c in dep["spec"]["template"]["spec"]["containers"])
        self.assertLessEqual(cpus, free)
        self.assertEqual(cpus % 2, 0, "full-pcpus-only admits whole cores only")


@unittest.skipIf(KUBECTL is None, "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)")
class GpuOverlayAffinityTest(unittest.TestCase):
    def test_cpu_set_auto_added_and_base_args_kept(self):
        dep = by_kind(render("gpu"), "Deployment", "inferd")
        containers = {c["name"]: c for c in dep["spec"]["template"]["spec"]["containers"]}
        args = containers["inferd"]["args"]
        self.assertEqual(flag(args, "cpu-set"), "auto")
        self.assertEqual(sum(a.startswith("--cpu-set") for a in args), 1, args)
        with open(os.path.join(DEPLOY, "kubernetes", "base", "deployment.yaml")) as f:
            base = yaml.safe_load(f)["spec"]["template"]["spec"]["containers"][0]["args"]
        for a in base:
            self.assertIn(a, args, "the JSON patch keeps every base flag")
        # Guaranteed with whole CPUs: the static CPU manager gives exclusive cores.
        res = containers["inferd"]["resources"]
        self.assertEqual(res["requests"], res["limits"])
        self.assertEqual(str(res["limits"]["nvidia.com/gpu"]), "1")
