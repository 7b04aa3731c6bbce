"""inferd's --cpu-set (docs/operations.md, "CPU pinning and NUMA"; issue 27 §5).

Reads every thread's affinity from /proc/<pid>/task/*/status (Cpus_allowed_list) and
name from .../comm (instance threads are "inst<i>:<model>"):

- --cpu-set=<one CPU>: every thread of the process is on that CPU, and the automatic
  layout counts one hardware thread (one instance, one thread).
- --cpu-set=<two CPUs>: every thread on the two; a model with an explicit count of 2
  has both instance threads on the whole set; the automatic layout has 2 instances
  (1 x 2 before load, instance 0 on both CPUs) and, once the load makes it choose
  2 x 1, each instance on its own CPU.
- Under `taskset -c <cpu>`: --cpu-set=auto uses only that CPU; no --cpu-set leaves the
  threads alone but sizes the layout by that one CPU (not the machine's count); a list
  naming a CPU outside it stops inferd with exit status 2 and a message naming the CPU.
- Bad values: exit status 2, the message names --cpu-set.

Needs two CPUs (the test skips on one) and taskset (util-linux).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import INFERD_BIN, Client, Server, model_config, wait_until, write_model  # noqa: E402
import test_instance_layout as layout_test  # noqa: E402  (its Load and model config)

ALLOWED = sorted(os.sched_getaffinity(0))
TASKSET = shutil.which("taskset")


def parse_cpulist(text):
    cpus = set()
    for item in text.strip().split(","):
        lo, _, hi = item.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def threads(pid):
    """{tid: (comm, allowed CPUs, CPU last run on)} of a live process."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        base = "/proc/%d/task/%s/" % (pid, tid)
        try:
            with open(base + "comm") as f:
                comm = f.read().strip()
            with open(base + "status") as f:
                allowed = parse_cpulist(re.search(r"^Cpus_allowed_list:\s*(\S+)", f.read(), re.M).group(1))
            with open(base + "stat") as f:
                # Field 39 (processor), counted after the ")" that ends comm.
                processor = int(f.read().rsplit(")", 1)[1].split()[36])
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        out[int(tid)] = (comm, allowed, processor)
    return out


def instance_threads(pid, model):
    """{instance index: allowed CPUs} of `model`'s instance threads."""
    found = {}
    for comm, allowed, processor in threads(pid).values():
        m = re.fullmatch(r"inst(\d+):(.*)", comm)
        if m and model.startswith(m.group(2)):
            found.setdefault(int(m.group(1)), []).append((allowed, processor))
    return found


def fixed_config(name):
    return model_config(name, "delay", [("INPUT0", "TYPE_INT32", (1,))],
                        [("OUTPUT0", "TYPE_INT32", (1,))], 0,
                        'parameters { key: "execute_delay_ms" value { string_value: "1" } }\n'
                        "instance_group { count: 2 kind: KIND_CPU }")


def request(value):
    return {"inputs": [{"name": "INPUT0", "shape": [1], "datatype": "INT32", "data": [value]}]}


def cpulist(cpus):
    return ",".join(str(c) for c in sorted(cpus))


@unittest.skipIf(len(ALLOWED) < 2, "needs two CPUs (this process may use %s)" % ALLOWED)
class CpuAffinityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-cpu-affinity-")
        cls.repo = os.path.join(cls.tmp, "models")
        write_model(cls.repo, "fixed2", fixed_config("fixed2"))
        write_model(cls.repo, "amdahl", layout_test.amdahl_config("amdahl"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def start(self, args, prefix=()):
        # Every front end on (gRPC, metrics), so that their threads exist too.
        server = Server(self.repo, ["--allow-metrics=true", "--metrics-port=0"] + list(args),
                        prefix=list(prefix), grpc_port=0).start()
        self.addCleanup(server.stop)
        client = Client(server.port)
        for model in ("fixed2", "amdahl"):
            for i in range(4):  # so that the instances have run
                r = client.infer(model, request(i))
                self.assertEqual(r.status, 200, r.body)
        return server, client

    def layout(self, client):
        r = client.post("/v2/repository/index")
        self.assertEqual(r.status, 200, r.body)
        return {e["name"]: e for e in r.json()}["amdahl"]["instance_layout"]

    def assert_every_thread_on(self, pid, cpus):
        ts = threads(pid)
        self.assertGreater(len(ts), 3)
        for tid, (comm, allowed, processor) in ts.items():
            self.assertEqual(allowed, set(cpus), "thread %d (%s)" % (tid, comm))
            self.assertIn(processor, cpus, "thread %d (%s) last ran elsewhere" % (tid, comm))

    def assert_instance_threads(self, pid, model, want):
        """`want`: {instance index: allowed CPUs}."""
        found = instance_threads(pid, model)
        self.assertEqual(sorted(found), sorted(want), "instance threads of %s: %s" % (model, found))
        for index, seen in found.items():
            for allowed, processor in seen:
                self.assertEqual(allowed, set(want[index]), "%s instance %d" % (model, index))
                self.assertIn(processor, want[index], "%s instance %d ran elsewhere" % (model, index))

    def test_one_cpu(self):
        cpu = ALLOWED[-1]
        server, client = self.start(["--cpu-set=%d" % cpu])
        self.assert_every_thread_on(server.proc.pid, {cpu})
        self.assert_instance_threads(server.proc.pid, "fixed2", {0: {cpu}, 1: {cpu}})
        # One CPU: the automatic layout has one instance with one thread.
        self.assertEqual(self.layout(client),
                         {"instances": 1, "active_instances": 1, "threads_per_instance": 1})
        self.assertTrue(any("CPU set: %d, 1 of the %d CPU(s)" % (cpu, len(ALLOWED)) in line
                            for line in server.plain_log()), server.log_tail())

    def test_two_cpus_and_the_automatic_layouts_slices(self):
        a, b = ALLOWED[0], ALLOWED[1]
        server, client = self.start(["--cpu-set=%d,%d" % (a, b)])
        pid = server.proc.pid
        self.assert_every_thread_on(pid, {a, b})
        self.assert_instance_threads(pid, "fixed2", {0: {a, b}, 1: {a, b}})
        # Two hardware threads: 2 instances, before any load 1 x 2 with instance 0 on both.
        self.assertEqual(self.layout(client),
                         {"instances": 2, "active_instances": 1, "threads_per_instance": 2})
        self.assertEqual({i: s[0][0] for i, s in instance_threads(pid, "amdahl").items()},
                         {0: {a, b}, 1: {a, b}})
        # Heavy load makes it choose 2 x 1 (test_instance_layout.py): then each
        # instance runs on its own CPU.
        with layout_test.Load(server.port, "amdahl", 8) as load:
            chose = wait_until(lambda: load.errors or any(
                "instance layout 2 instance(s) x 1 thread(s): chose it" in line
                for line in server.plain_log()), 40, 0.2)
            self.assertFalse(load.errors, load.errors[:1])
            self.assertTrue(chose, "no 2 x 1 decision\n" + server.log_tail())

            def sliced():
                found = instance_threads(pid, "amdahl")
                return {i: s[0][0] for i, s in found.items()} == {0: {a}, 1: {b}}
            self.assertTrue(wait_until(sliced, 15, 0.1),
                            "instance threads: %s" % instance_threads(pid, "amdahl"))
        self.assert_instance_threads(pid, "amdahl", {0: {a}, 1: {b}})
        self.assertEqual(self.layout(client),
                         {"instances": 2, "active_instances": 2, "threads_per_instance": 1})
        # The other threads stay on the whole set.
        for tid, (comm, allowed, _) in threads(pid).items():
            if not comm.startswith("inst"):
                self.assertEqual(allowed, {a, b}, "thread %d (%s)" % (tid, comm))

    @unittest.skipIf(TASKSET is None, "taskset (util-linux) not installed")
    def test_auto_under_taskset_uses_only_the_allowed_cpu(self):
        cpu = ALLOWED[-1]
        server, client = self.start(["--cpu-set=auto"], prefix=[TASKSET, "-c", str(cpu)])
        self.assert_every_thread_on(server.proc.pid, {cpu})
        self.assert_instance_threads(server.proc.pid, "fixed2", {0: {cpu}, 1: {cpu}})
        self.assertEqual(self.layout(client)["instances"], 1)

    @unittest.skipIf(TASKSET is None, "taskset (util-linux) not installed")
    def test_default_sizes_layouts_by_the_allowed_cpus(self):
        cpu = ALLOWED[-1]
        server, client = self.start([], prefix=[TASKSET, "-c", str(cpu)])
        # Not pinned by inferd (taskset's mask is inherited as it is), but the
        # layout counts the one CPU the process may use, not the machine's.
        self.assertEqual(self.layout(client)["instances"], 1)
        self.assertTrue(any("CPU set: none (threads not pinned)" in line
                            for line in server.plain_log()), server.log_tail())
        for tid, (comm, allowed, _) in threads(server.proc.pid).items():
            self.assertEqual(allowed, {cpu}, "thread %d (%s)" % (tid, comm))

    def run_inferd(self, args, prefix=()):
        r = subprocess.run(list(prefix) + [INFERD_BIN, "--model-repository", self.repo,
                                           "--http-port=0", "--allow-grpc=false",
                                           "--allow-metrics=false"] + args,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        return r.returncode, r.stderr.decode(errors="replace")

    @unittest.skipIf(TASKSET is None, "taskset (util-linux) not installed")
    def test_a_cpu_outside_the_allowed_set_is_refused(self):
        a, b = ALLOWED[0], ALLOWED[1]
        code, err = self.run_inferd(["--cpu-set=%d-%d" % (a, b) if b == a + 1 else
                                     "--cpu-set=%d,%d" % (a, b)], prefix=[TASKSET, "-c", str(b)])
        self.assertEqual(code, 2, err)
        self.assertIn("CPU %d is not among the CPUs this process may use (%d" % (a, b), err)
        self.assertNotIn("listening", err)

    def test_bad_values_are_flag_errors(self):
        for value, says in (("", "none, auto or a CPU list"), ("banana", "none, auto or a CPU list"),
                            ("3-1", "reversed"), ("0,,1", "CPU list"), ("4096", "CPU list")):
            code, err = self.run_inferd(["--cpu-set=" + value])
            self.assertEqual(code, 2, (value, err))
            self.assertIn("--cpu-set", err, value)
            self.assertIn(says, err, value)
        code, err = self.run_inferd(["--cpu-set=%d" % (max(ALLOWED) + 1)])
        self.assertEqual(code, 2, err)
        self.assertIn("CPU %d is not among" % (max(ALLOWED) + 1), err)


if __name__ == "__main__":
    unittest.main()
