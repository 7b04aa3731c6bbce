#!/usr/bin/python3
"""The middleman pod (deploy/kubernetes/overlays/middleman: inferd and
infer-gateway in one pod, images through shared memory) run as two processes
on this host, with the container args taken from the rendered overlay.

Only what a host cannot have is substituted, each substitution checked to
apply: the ports (0, the kernel's pick, instead of 8000-8002 and 8080-8081,
and the gateway's --inferd-url pointing at the port inferd got), the bind
addresses (127.0.0.1), the model repository (examples/models instead of the
/models volume, explicit control mode loading the two pipelines and their
steps instead of `none` loading all 20 models), inferd's drain delay (0: the test stops it)
and the pipeline labels. Every other flag runs as rendered: the shared-memory
flags of both sides above all.

The key of the shared-memory API (Secret inferd-shm-api-key) is made up
here and resolved into both containers' args as the kubelet expands them.

Checks: both pipelines answer through the gateway as inferd answers them
directly (digits_pipeline with its labels, resnet50_pipeline's logits); the
gateway's inputs went through shared memory (gateway_inputs_total), inferd's
/v2/systemsharedmemory/status lists the gateway's regions over its object in
/dev/shm, and refuses its shared-memory API to callers without the key;
SIGTERM to the gateway unregisters them and removes the object.

Needs INFERD_BIN and INFER_GATEWAY_BIN (ctest sets them), kubectl with
kustomize >= v3.7, and `make models` (examples/models, examples/data)."""

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from deploy_render import KUBECTL, by_kind, kustomize_supports_components, render  # noqa: E402
from harness import INFERD_BIN, Client, metric, parse_infer_response  # noqa: E402
import kube_env  # noqa: E402
import pipeline_util as pu  # noqa: E402

LABELS = os.path.join(pu.EXAMPLES, "digits_pipeline", "labels.txt")
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
HAVE_RESNET = os.path.exists(os.path.join(pu.EXAMPLES, "resnet50", "1", "model.pt"))


def why_skip():
    if KUBECTL is None:
        return "kubectl not installed (scripts/install-deps.sh installs kubernetes-client)"
    ok, why = kustomize_supports_components()
    if not ok:
        return why
    return pu.examples_missing()


def replace_flag(args, name, value, style):
    """args with the value of --name replaced (style '=': --name=v; ' ': two
    items); the flag must be there exactly once."""
    out, hits = [], 0
    i = 0
    while i < len(args):
        a = args[i]
        if style == "=" and a.startswith("--%s=" % name):
            out.append("--%s=%s" % (name, value))
            hits += 1
        elif style == " " and a == "--" + name:
            out += [a, str(value)]
            hits += 1
            i += 1
        else:
            out.append(a)
        i += 1
    if hits != 1:
        raise AssertionError("--%s appears %d times in the rendered args %s" % (name, hits, args))
    return out


def pod_containers(docs):
    pod = by_kind(docs, "Deployment", "inferd")["spec"]["template"]["spec"]
    return {c["name"]: c for c in pod["containers"]}


def with_secret(container, secrets):
    """`container` with each env secretKeyRef resolved from `secrets`
    ({name: {key: value}}) and its args expanded as the kubelet does."""
    env = {}
    for e in container.get("env", []):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        env[e["name"]] = secrets[ref["name"]][ref["key"]] if ref else kube_env.expand(e.get("value", ""), env)
    _, args = kube_env.expand_args(container, env)
    if [a for a in args if "$(" in a]:
        raise AssertionError("unexpanded references in %s" % args)
    return dict(container, args=args)


def inferd_command(cs, repo, models):
    """inferd's argv from the rendered container: ports 0 (the kernel picks;
    the listening lines say which), loopback addresses, `repo` instead of
    the /models volume, explicit mode loading `models`, no drain delay."""
    a = list(cs["inferd"]["args"])
    a = replace_flag(a, "model-repository", repo, "=")
    a = replace_flag(a, "model-control-mode", "explicit", "=")
    a = replace_flag(a, "drain-delay-secs", 0, "=")
    for name in ("http", "grpc", "metrics"):
        a = replace_flag(a, name + "-port", 0, "=")
    a += ["--load-model=" + m for m in models]
    a += ["--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1"]
    return [INFERD_BIN] + a


def gateway_command(cs, inferd_grpc_port):
    """The gateway's argv from the rendered container: it must dial inferd's
    gRPC containerPort on the pod's loopback, which becomes the port inferd
    got here; its own ports 0, loopback addresses, the digits labels."""
    g = list(cs["infer-gateway"]["args"])
    rendered = {p["name"]: p["containerPort"] for p in cs["inferd"]["ports"]}["grpc"]
    url = g[g.index("--inferd-url") + 1]
    if url != "127.0.0.1:%d" % rendered:
        raise AssertionError("the gateway dials %s, not inferd's 127.0.0.1:%d" % (url, rendered))
    g = replace_flag(g, "inferd-url", "127.0.0.1:%d" % inferd_grpc_port, " ")
    g = replace_flag(g, "http-port", 0, " ")
    g = replace_flag(g, "grpc-port", 0, " ")
    g += ["--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1",
          "--labels", "digits_pipeline=" + LABELS]
    return [pu.GATEWAY_BIN] + g


def wait_until(predicate, timeout, what, process=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out after %.0f s waiting for %s%s"
                         % (timeout, what, "\n" + process.log() if process else ""))


class Process:
    """A child with its stderr in a file (read by the test, no reader thread)."""

    def __init__(self, argv, log_path):
        self.argv = argv
        self.log_path = log_path
        self.log_file = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=subprocess.STDOUT)

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def port(self, program, what):
        """The port of `program: WHAT listening on 127.0.0.1:PORT`, once printed."""
        m = re.search(r"^%s: %s listening on 127\.0\.0\.1:(\d+)$" % (program, what), self.log(), re.M)
        return int(m.group(1)) if m else None

    def stop(self, timeout=30):
        """SIGTERM, wait; returns the exit code (None if it had to be killed)."""
        code = self.proc.poll()
        if code is None:
            self.proc.terminate()
            try:
                code = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                code = None
        self.log_file.close()
        return code


SKIP = why_skip()


@unittest.skipIf(SKIP, SKIP)
class MiddlemanPodTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-mm-pod-")
        cls.inferd = cls.gateway = None
        # Explicit mode loads what it is told, ensembles' steps included.
        models = list(pu.DIGITS_MODELS)
        if HAVE_RESNET:
            models += ["resnet50_preprocess", "resnet50", "resnet50_pipeline"]
        # The Secret the operator creates (overlays/middleman), as the
        # kubelet would hand it to both containers.
        cls.api_key = "k-%d-%d" % (os.getpid(), time.monotonic_ns())
        secrets = {"inferd-shm-api-key": {"key": cls.api_key}}
        cs = {n: with_secret(c, secrets) for n, c in pod_containers(render("middleman")).items()}
        cls.inferd_argv = inferd_command(cs, pu.EXAMPLES, models)
        try:
            cls.inferd = Process(cls.inferd_argv, os.path.join(cls.tmp, "inferd.log"))
            # inferd listens once its models have loaded.
            wait_until(lambda: cls.inferd.proc.poll() is not None or (
                cls.inferd.port("inferd", "HTTP") and cls.inferd.port("inferd", "gRPC")),
                120, "inferd listening", cls.inferd)
            if cls.inferd.proc.poll() is not None:
                raise AssertionError("inferd exited:\n" + cls.inferd.log())
            cls.direct = Client(cls.inferd.port("inferd", "HTTP"), persistent=True)
            wait_until(lambda: _ok(cls.direct, "/v2/health/ready"), 30, "inferd ready", cls.inferd)
            cls.gateway_argv = gateway_command(cs, cls.inferd.port("inferd", "gRPC"))
            cls.gateway = Process(cls.gateway_argv, os.path.join(cls.tmp, "gateway.log"))
            wait_until(lambda: cls.gateway.proc.poll() is not None or cls.gateway.port("infer-gateway", "HTTP"),
                       30, "the gateway listening", cls.gateway)
            if cls.gateway.proc.poll() is not None:
                raise AssertionError("infer-gateway exited:\n" + cls.gateway.log())
            cls.gw = Client(cls.gateway.port("infer-gateway", "HTTP"), persistent=True)
            wait_until(lambda: _ok(cls.gw, "/health/ready"), 30, "the gateway ready", cls.gateway)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.gateway:
                cls.gateway.stop()
        finally:
            if cls.inferd:
                cls.inferd.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def regions(self):
        r = self.direct.get("/v2/systemsharedmemory/status", {"shm-key": self.api_key})
        self.assertEqual(r.status, 200, r)
        return [x for x in r.json() if x["name"].startswith("inferd-mm-%d-" % self.gateway.proc.pid)]

    def output_name(self, pipeline):
        r = self.direct.get("/v2/models/" + pipeline)
        self.assertEqual(r.status, 200, r)
        outputs = r.json()["outputs"]
        self.assertEqual(len(outputs), 1, outputs)
        return outputs[0]["name"]

    def direct_scores(self, pipeline, image):
        """inferd's own answer for `image`: the pipeline's FP32 scores."""
        blob = pu.bytes_element(image)
        req = {"inputs": [{"name": "IMAGE", "shape": [1, 1], "datatype": "BYTES",
                           "parameters": {"binary_data_size": len(blob)}}],
               "outputs": [{"name": self.output_name(pipeline), "parameters": {"binary_data": True}}]}
        r = self.direct.infer(pipeline, req, blobs=[blob])
        self.assertEqual(r.status, 200, r)
        _, blobs = parse_infer_response(r)
        raw = next(iter(blobs.values()))
        return struct.unpack("<%df" % (len(raw) // 4), raw)

    def assertSameAnswer(self, pipeline, image, k):
        r = self.gw.post("/v1/classify/%s?top_k=%d" % (pipeline, k), image,
                         {"Content-Type": "application/octet-stream"})
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(body["model"], pipeline)
        scores = self.direct_scores(pipeline, image)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
        self.assertEqual([c["index"] for c in body["classes"]], order)
        for c in body["classes"]:
            self.assertAlmostEqual(c["score"], scores[c["index"]], delta=1e-5 * max(1, abs(c["score"])))
        return body

    def test_1_pod_answers_through_shared_memory(self):
        # The flags that make the path, as rendered (not substituted).
        self.assertIn("--allow-client-shm=true", self.inferd_argv)
        g = self.gateway_argv
        self.assertEqual(g[g.index("--shared-memory") + 1], "system")
        slots = int(g[g.index("--shm-slots") + 1])
        slot_bytes = int(g[g.index("--shm-slot-bytes") + 1])

        # The gateway registers its slots at start; inferd lists them, each
        # a slot of one object in /dev/shm.
        regions = wait_until(lambda: len(self.regions()) == slots and self.regions(), 15,
                             "%d regions registered" % slots)
        keys = {x["key"] for x in regions}
        self.assertEqual(len(keys), 1, keys)
        self.key = keys.pop()
        self.assertTrue(os.path.exists("/dev/shm" + self.key), self.key)
        self.assertEqual(sorted(int(x["offset"]) for x in regions),
                         [i * slot_bytes for i in range(slots)])
        self.assertTrue(all(int(x["byte_size"]) == slot_bytes for x in regions))
        type(self).key = self.key

        images = pu.digit_images(".png")[:20]
        # The gateway uses the slots once its last registration has answered,
        # a moment after inferd lists them: until then inputs go inline.
        wait_until(lambda: (self.gw.post("/v1/classify/digits_pipeline", images[0][0]).status == 200
                            and metric(self.gw.get("/metrics").body.decode(), "gateway_inputs_total",
                                       path="shared_memory") > 0), 15, "an input through shared memory")
        before = self.gw.get("/metrics").body.decode()
        sent = 0
        for data, label in images:
            body = self.assertSameAnswer("digits_pipeline", data, 3)
            top = body["classes"][0]
            self.assertEqual(top["label"], WORDS[top["index"]])
            sent += 1
        if HAVE_RESNET:
            # A 224x224 RGB image: resnet50_pipeline decodes, resizes and
            # normalises it in inferd, then runs resnet50.
            img = pu.png([sum(([(x + y) % 256, (x * 3) % 256, (y * 5) % 256] for x in range(224)), [])
                          for y in range(224)], 3)
            body = self.assertSameAnswer("resnet50_pipeline", img, 5)
            self.assertEqual(len(body["classes"]), 5)
            sent += 1
        after = self.gw.get("/metrics").body.decode()
        for path, want in (("shared_memory", sent), ("inline", 0)):
            self.assertEqual(metric(after, "gateway_inputs_total", path=path)
                             - metric(before, "gateway_inputs_total", path=path), want, path)
        self.assertEqual(metric(after, "middleman_shm_register_failures_total"), 0)

    def test_1b_shared_memory_api_needs_the_key(self):
        # The gateway has the key (it registered); anyone else is refused,
        # over either front end, and cannot map the gateway's object.
        regions = self.regions()
        self.assertTrue(regions)
        key = regions[0]["key"]
        for path, body in (("/v2/systemsharedmemory/status", None),
                           ("/v2/systemsharedmemory/region/intruder/register",
                            {"key": key, "offset": 0, "byte_size": 64})):
            r = (self.direct.get(path) if body is None else self.direct.post_json(path, body))
            self.assertEqual(r.status, 403, r)
            self.assertNotIn(self.api_key, r.body.decode())
        r = self.direct.get("/v2/systemsharedmemory/status", {"shm-key": "wrong"})
        self.assertEqual(r.status, 403, r)
        self.assertNotIn("intruder", [x["name"] for x in self.regions()])

    def test_2_sigterm_unregisters_and_unlinks(self):
        key = getattr(type(self), "key", None)
        if key is None:
            self.skipTest("test_1 did not get as far as the registration")
        pid = self.gateway.proc.pid
        self.assertEqual(self.gateway.stop(), 0, self.gateway.log())
        type(self).gateway = None
        left = [x for x in self.direct.get("/v2/systemsharedmemory/status", {"shm-key": self.api_key}).json()
                if x["name"].startswith("inferd-mm-%d-" % pid)]
        self.assertEqual(left, [])
        self.assertFalse(os.path.exists("/dev/shm" + key), "%s left in /dev/shm" % key)
        self.assertTrue(re.match(r"^/inferd-mm-%d-\d+$" % pid, key), key)


def _ok(client, path):
    try:
        return client.get(path).status == 200
    except OSError:
        client.close()
        return False


if __name__ == "__main__":
    # ctest counts a skip (exit 77) apart from a pass.
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    if SKIP:
        print("SKIPPED: " + SKIP)
        sys.exit(77)
