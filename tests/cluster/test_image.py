#!/usr/bin/python3
"""Smoke test of the OCI images `make image` builds (scripts/build-images.sh,
docs/images.md).

For build/images/inferd.oci.tar: the archive is unpacked by this test
(index.json -> manifest -> layers in order, whiteouts applied) into a
temporary root filesystem, which must hold no compiler and no apt; the image
config must run /opt/inferd/bin/inferd as the non-root user 10001:10001. Then
the image serves `simple` (and a model of the python backend, whose interpreter
and NumPy the image brings, and of the onnx backend when `make models` made
it)
from examples/models, mounted read-only, and answers a real HTTP inference;
SIGTERM stops it. Inside each image, `ldd` finds every shared library of
every program and backend.

It runs under `podman run` where podman can run containers. Where it cannot
(in a sandbox without the right to set resource limits podman's runtimes fail
with `setrlimit ...: Operation not permitted`), the test says so and runs
the same root filesystem the way a container runtime would, without one:
`unshare -m -p -f --mount-proc=ROOT/proc`, /dev and the models bind-mounted in
the new mount namespace, then `chroot --userspec=10001:10001 ROOT
/opt/inferd/bin/inferd ...` on loopback ports the test picks.

infer-gateway.oci.tar, infer-batcher.oci.tar and inferd-discovery.oci.tar are unpacked the same way
and their programs run with --help inside their own root filesystem (their
shared libraries resolve there).

Skipped (exit 77) when the archives are absent: run `make image`. Needs root
(unshare, chroot, mounts). IMAGES_DIR overrides build/images.
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
IMAGES_DIR = os.environ.get("IMAGES_DIR", os.path.join(REPO, "build", "images"))
MODELS = os.path.join(REPO, "examples", "models")
IMAGES = ("inferd", "infer-gateway", "infer-batcher", "inferd-discovery")
UID = 10001
COMPILERS = ("gcc", "cc", "g++", "c++", "clang", "clang++", "x86_64-linux-gnu-gcc-12",
             "x86_64-linux-gnu-g++-12")
APT = ("usr/bin/apt", "usr/bin/apt-get", "var/lib/dpkg/info/apt.list")
BIN_DIRS = ("usr/bin", "usr/sbin", "usr/local/bin", "usr/local/sbin", "bin", "sbin")


def archive(name):
    return os.path.join(IMAGES_DIR, name + ".oci.tar")


class OciImage:
    """An OCI image archive (oci-archive: an OCI layout in a tar)."""

    def __init__(self, path, workdir):
        self.layout = os.path.join(workdir, "layout")
        os.makedirs(self.layout)
        with tarfile.open(path) as t:
            t.extractall(self.layout)
        index = self._json("index.json")
        manifests = index["manifests"]
        if len(manifests) != 1:
            raise AssertionError("%s: %d manifests in index.json, expected one"
                                 % (path, len(manifests)))
        self.manifest = self._blob_json(manifests[0]["digest"])
        self.config = self._blob_json(self.manifest["config"]["digest"])

    def _json(self, rel):
        with open(os.path.join(self.layout, rel)) as f:
            return json.load(f)

    def blob(self, digest):
        algo, hexdigest = digest.split(":", 1)
        return os.path.join(self.layout, "blobs", algo, hexdigest)

    def _blob_json(self, digest):
        with open(self.blob(digest)) as f:
            return json.load(f)

    def layer_digests(self):
        return [layer["digest"] for layer in self.manifest["layers"]]

    def unpack(self, root):
        """The layers in order into root, as a runtime's snapshotter would."""
        os.makedirs(root)
        for layer in self.manifest["layers"]:
            media = layer["mediaType"]
            if not media.startswith(("application/vnd.oci.image.layer.v1.tar",
                                     "application/vnd.docker.image.rootfs.diff.tar")):
                raise AssertionError("unsupported layer type " + media)
            blob = self.blob(layer["digest"])
            # Whiteouts remove what the layers below hold; they apply before
            # this layer's own files are written.
            with tarfile.open(blob, "r:*") as t:
                names = t.getnames()
            for name in names:
                norm = os.path.normpath(name.lstrip("./") or ".")
                if norm.startswith("..") or os.path.isabs(norm):
                    raise AssertionError("layer entry outside the root: " + name)
                base = os.path.basename(norm)
                parent = os.path.join(root, os.path.dirname(norm))
                if base == ".wh..wh..opq":
                    for entry in os.listdir(parent) if os.path.isdir(parent) else []:
                        remove(os.path.join(parent, entry))
                elif base.startswith(".wh."):
                    remove(os.path.join(parent, base[len(".wh."):]))
            # GNU tar for the files: ownership, modes, hard links, device
            # nodes, as root.
            subprocess.run(["tar", "-x", "--numeric-owner", "--same-permissions",
                            "--exclude=.wh.*", "-C", root, "-f", blob], check=True)


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def podman_problem(root):
    """None if podman can run a container here, else why not (one line)."""
    podman = shutil.which("podman")
    if podman is None:
        return "podman is not installed"
    store = tempfile.mkdtemp(prefix="inferd-podman-")
    try:
        # --rootfs: the unpacked root filesystem, so the probe loads nothing.
        r = subprocess.run([podman, "--root", os.path.join(store, "root"),
                            "--runroot", os.path.join(store, "run"),
                            "--storage-driver", "vfs", "run", "--rm", "--network=host",
                            "--rootfs", root, "/opt/inferd/bin/inferd", "--help"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=60)
    except subprocess.TimeoutExpired:
        return "podman run --rootfs did not finish within 60 s"
    finally:
        shutil.rmtree(store, ignore_errors=True)
    if r.returncode == 0:
        return None
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    return "podman run failed (exit %d): %s" % (r.returncode, lines[-1] if lines else "")


def chroot_command(root, argv, binds=()):
    """argv run as 10001:10001 in root: new mount and PID namespaces, /proc
    of the new PID namespace, the host's /dev, binds (host path, path in
    root) read-only."""
    script = ["set -e", 'mount --rbind /dev "$R/dev"']
    for i, (src, dst) in enumerate(binds):
        script.append('mount --bind "$B%d" "$R%s"' % (i, dst))
        script.append('mount -o remount,bind,ro "$R%s"' % dst)
    script.append('exec chroot --userspec=%d:%d "$R" "$@"' % (UID, UID))
    env = dict(os.environ, R=root)
    for i, (src, _) in enumerate(binds):
        env["B%d" % i] = src
    cmd = ["unshare", "-m", "-p", "-f", "--kill-child=SIGKILL",
           "--mount-proc=" + os.path.join(root, "proc"),
           "sh", "-c", "\n".join(script), "sh"] + list(argv)
    return cmd, env


def child_pid(pid):
    """The one child of pid (unshare's forked child: after its execs, the
    program itself), or None."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
    except OSError:
        return None
    return int(kids[0]) if kids else None


@unittest.skipIf(os.geteuid() != 0, "needs root: unshare, chroot and mounts")
class ImageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferd-image-test-")
        cls.images = {}
        cls.roots = {}
        for name in IMAGES:
            work = os.path.join(cls.tmp, name)
            image = OciImage(archive(name), work)
            root = os.path.join(work, "root")
            image.unpack(root)
            cls.images[name] = image
            cls.roots[name] = root

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_shared_base_layer(self):
        first = {name: image.layer_digests()[0] for name, image in self.images.items()}
        self.assertEqual(len(set(first.values())), 1, "one shared root filesystem: %s" % first)

    def test_no_compiler_no_apt(self):
        for name, root in self.roots.items():
            for d in BIN_DIRS:
                for c in COMPILERS:
                    self.assertFalse(os.path.lexists(os.path.join(root, d, c)),
                                     "%s: compiler %s/%s in the image" % (name, d, c))
            for a in APT:
                self.assertFalse(os.path.lexists(os.path.join(root, a)),
                                 "%s: %s in the image" % (name, a))
            # mmdebstrap's clean-up leaves the empty lock and partial/.
            lists = os.path.join(root, "var/lib/apt/lists")
            left = set(os.listdir(lists)) - {"lock", "partial"} if os.path.isdir(lists) else ()
            self.assertFalse(left, "%s: apt lists left in the image" % name)
            # python3-numpy leaves a link to its headers there; no header itself.
            headers = [os.path.join(d, n) for d, _, names in os.walk(os.path.join(root, "usr/include"))
                       for n in names if not os.path.islink(os.path.join(d, n))]
            self.assertFalse(headers, "%s: headers in the image" % name)

    def test_config_non_root(self):
        for name, image in self.images.items():
            config = image.config["config"]
            self.assertEqual(config["User"], "%d:%d" % (UID, UID), name)
            self.assertEqual(config["Entrypoint"], ["/opt/inferd/bin/" + name], name)
            labels = config.get("Labels", {})
            self.assertIn("org.opencontainers.image.version", labels, name)
            self.assertIn("org.opencontainers.image.revision", labels, name)
            with open(os.path.join(self.roots[name], "etc/passwd")) as f:
                users = [line.split(":") for line in f]
            self.assertIn(["inferd", "x", str(UID), str(UID)],
                          [u[:4] for u in users], name + ": user inferd in /etc/passwd")
        self.assertEqual(sorted(self.images["inferd"].config["config"]["ExposedPorts"]),
                         ["8000/tcp", "8001/tcp", "8002/tcp"])

    def test_libraries_resolve(self):
        for name, root in self.roots.items():
            files = []
            for d, _, names in os.walk(os.path.join(root, "opt/inferd")):
                for n in names:
                    path = os.path.join(d, n)
                    with open(path, "rb") as f:
                        if f.read(4) == b"\x7fELF":
                            files.append("/" + os.path.relpath(path, root))
            self.assertIn("/opt/inferd/bin/" + name, files)
            cmd, env = chroot_command(root, ["ldd"] + files)
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, "%s: ldd: %s" % (name, r.stderr))
            self.assertNotIn("not found", r.stdout, "%s: %s" % (name, r.stdout))

    def test_other_programs_start(self):
        # The middleman component starts the gateway through /bin/sh, removing
        # a predecessor's shared-memory objects first
        # (deploy/kubernetes/components/middleman/deployment.yaml): the
        # image's shell and rm must do that.
        gateway = ["/bin/sh", "-c", 'rm -f /dev/shm/inferd-mm-test-*; exec /opt/inferd/bin/infer-gateway "$@"',
                   "infer-gateway", "--help"]
        for name, argv in (("infer-gateway", gateway),
                           ("infer-batcher", ["/opt/inferd/bin/infer-batcher", "--help"]),
                           ("inferd-discovery", ["/opt/inferd/bin/inferd-discovery", "--help"])):
            cmd, env = chroot_command(self.roots[name], argv)
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, "%s --help: %s" % (name, r.stderr))
            self.assertIn("usage: " + name, r.stdout + r.stderr)

    def test_serve_simple(self):
        root = self.roots["inferd"]
        problem = podman_problem(root)
        if problem is None:
            print("running the image with podman run", file=sys.stderr)
        else:
            print("podman cannot run containers here (%s): running the image's root "
                  "filesystem with unshare + chroot instead" % problem, file=sys.stderr)
        http_port, grpc_port, metrics_port = free_port(), free_port(), free_port()
        models = ["simple", "simple_sequence"]
        if os.path.exists(os.path.join(MODELS, "digits_onnx", "1", "model.onnx")):
            models.append("digits_onnx")
        args = ["--model-repository=/models", "--model-control-mode=explicit",
                "--http-address=127.0.0.1", "--grpc-address=127.0.0.1",
                "--http-port=%d" % http_port, "--grpc-port=%d" % grpc_port,
                "--metrics-port=%d" % metrics_port] + ["--load-model=" + m for m in models]
        log = open(os.path.join(self.tmp, "inferd.log"), "w+")
        if problem is None:
            store = os.path.join(self.tmp, "podman")
            podman = ["podman", "--root", store + "/root", "--runroot", store + "/run",
                      "--storage-driver", "vfs"]
            loaded = subprocess.run(podman + ["load", "-q", "-i", archive("inferd")],
                                    capture_output=True, text=True, check=True)
            ref = loaded.stdout.strip().split(": ", 1)[-1]
            proc = subprocess.Popen(podman + ["run", "--rm", "--network=host",
                                              "-v", MODELS + ":/models:ro", ref] + args,
                                    stdout=log, stderr=subprocess.STDOUT)
            server_pid = lambda: proc.pid  # noqa: E731  podman forwards SIGTERM
        else:
            cmd, env = chroot_command(root, ["/opt/inferd/bin/inferd"] + args,
                                      binds=[(MODELS, "/models")])
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
            server_pid = lambda: child_pid(proc.pid)  # noqa: E731
        try:
            self.wait_ready(proc, log, http_port, models)
            self.check_simple(http_port)
            pid = server_pid()
            self.assertIsNotNone(pid, "inferd's process not found")
            os.kill(pid, signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=60), 0, self.log_text(log))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()

    @staticmethod
    def log_text(log):
        log.flush()
        log.seek(0)
        return log.read()[-4000:]

    def wait_ready(self, proc, log, port, models):
        deadline = time.monotonic() + 60
        pending = list(models)
        while pending:
            if proc.poll() is not None:
                self.fail("inferd exited with %d:\n%s" % (proc.returncode, self.log_text(log)))
            if time.monotonic() > deadline:
                self.fail("not ready in 60 s: %s\n%s" % (pending, self.log_text(log)))
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/v2/models/%s/ready" % pending[0])
                if conn.getresponse().status == 200:
                    pending.pop(0)
                    continue
            except OSError:
                pass
            time.sleep(0.2)

    def check_simple(self, port):
        a = list(range(16))
        b = [3] * 16
        body = {"inputs": [
            {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": a},
            {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": b}]}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/v2/models/simple/infer", json.dumps(body),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read()
        self.assertEqual(resp.status, 200, text)
        outputs = {o["name"]: o for o in json.loads(text)["outputs"]}
        self.assertEqual(outputs["OUTPUT0"]["data"], [x + y for x, y in zip(a, b)])
        self.assertEqual(outputs["OUTPUT1"]["data"], [x - y for x, y in zip(a, b)])
        self.assertEqual(outputs["OUTPUT0"]["shape"], [1, 16])


if __name__ == "__main__":
    missing = [archive(n) for n in IMAGES if not os.path.exists(archive(n))]
    if missing:
        print("skipped: no image archives (%s): run `make image`" % ", ".join(missing),
              file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
